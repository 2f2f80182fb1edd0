"""The emulated ``cupy`` and ``cupyx`` modules: CuPy's names, NumPy's math, CuPy's rules.

Every public name of the API table becomes an attribute: dtypes and constants are NumPy's own (as in
CuPy), functions and ufuncs run NumPy's on the device arrays' memory through :func:`array.call`, with
the keyword arguments CuPy accepts and no others. A name CuPy lacks is an ``AttributeError``; a name
NumPy lacks (CuPy-only API) is a clear ``NotImplementedError`` unless emulated below.
"""

from __future__ import annotations

import math
import statistics

import numpy

from . import api
from .array import READS_BACK, TAKES_HOST_DATA, call, count_reads, host_value, ndarray, quiet, unwrap, wrap
from .counters import count_launch

__all__ = ["cupy_module", "cupyx_module", "ufunc"]

# NOTE: the functions that copy host data to the device (so take NumPy arrays and lists of device arrays)
FROM_HOST = frozenset({"array", "asarray", "asanyarray", "frombuffer", "fromiter", "fromstring", "loadtxt",
                       "genfromtxt"})
# NOTE: NumPy answers these with a Python bool or int; CuPy with a 0-d device array (reading it is a sync)
DEVICE_SCALAR = frozenset({"allclose", "array_equal", "array_equiv", "count_nonzero"})
ALLOCATE_ONLY = frozenset({"empty", "empty_like"})
SUBMODULES = ("linalg", "fft", "random", "lib", "lib.stride_tricks", "testing")


# NOTE: the keyword arguments CuPy's ufunc methods take
_METHOD_KEYWORDS = {"reduce": frozenset({"axis", "dtype", "out", "keepdims"}),
                    "accumulate": frozenset({"axis", "dtype", "out"}),
                    "reduceat": frozenset({"axis", "dtype", "out"})}


class ufunc:  # noqa: N801 - CuPy's name
    """A CuPy ufunc: NumPy's, with the methods CuPy implements and CuPy's dtype rules for ``at``.

    Args:
        name: the ufunc's NumPy name (CuPy calls it ``cupy_<name>``).
        spec: its table entry.
    """

    def __init__(self, name, spec):
        self._name = name
        self.__name__ = self.name = f"cupy_{name}"
        self._numpy = getattr(numpy, name)
        self._spec = spec
        self._methods = api.ufunc_methods(name)
        self.nin, self.nout, self.nargs = self._numpy.nin, self._numpy.nout, self._numpy.nargs
        self.types = self._numpy.types

    def __repr__(self):
        return f"<ufunc '{self.name}'>"

    def __call__(self, *args, **kwargs):
        api.check_keywords(f"cupy.{self._name}", kwargs, self._spec)
        for a in args:
            if not isinstance(a, (ndarray, int, float, complex, bool, numpy.generic)):
                raise TypeError(f"Unsupported type {type(a)}")
        return call(self._numpy, args, kwargs, name=self._name, launches=1)

    def _method(self, method, kwargs=None):
        """NumPy's ``method`` of this ufunc, or CuPy's error where CuPy does not implement it."""
        if method not in self._methods:
            raise NotImplementedError(f"`{self.name}.{method}` is not supported yet")
        allowed = _METHOD_KEYWORDS.get(method, frozenset())
        for key in kwargs or ():
            if key not in allowed:
                raise TypeError(f"ufunc.{method}() got an unexpected keyword argument '{key}' (CuPy "
                                f"{api.version()} has no such argument)")
        return getattr(self._numpy, method)

    def reduce(self, *args, **kwargs):
        """NumPy's ``reduce``, where CuPy has it (add and multiply)."""
        return call(self._method("reduce", kwargs), args, kwargs, name=f"{self._name}.reduce", launches=1)

    def accumulate(self, *args, **kwargs):
        """NumPy's ``accumulate``, where CuPy has it (add and multiply)."""
        return call(self._method("accumulate", kwargs), args, kwargs, name=f"{self._name}.accumulate", launches=1)

    def outer(self, A, B, **kwargs):  # noqa: N803 - CuPy's names
        """CuPy's ``outer``: copies of ``A`` and ``B`` reshaped to broadcast against each other, then the ufunc.

        Args:
            A: the first operand (copied to the device, as ``cupy.array``).
            B: the second.
            **kwargs: the ufunc's keyword arguments.
        """
        cupy = cupy_module()
        A, B = cupy.array(A), cupy.array(B)  # noqa: N806
        a_ndim = A.ndim
        A = A.reshape(A.shape + (1,) * B.ndim)  # noqa: N806
        B = B.reshape((1,) * a_ndim + B.shape)  # noqa: N806
        return self(A, B, **kwargs)

    def reduceat(self, *args, **kwargs):
        """NumPy's ``reduceat``, where CuPy has it (add)."""
        return call(self._method("reduceat", kwargs), args, kwargs, name=f"{self._name}.reduceat", launches=1)

    def at(self, a, indices, b=None):
        """``a[indices] (op)= b`` unbuffered, for the dtypes CuPy's ``at`` accepts.

        Args:
            a: the device array changed in place.
            indices: the index (device or NumPy arrays: CuPy copies host data itself).
            b: the values (likewise).
        """
        self._method("at")
        check_at_dtype(self._name, a.dtype)
        key = unwrap(indices, "at", refuse_host=False)
        args = () if b is None else (unwrap(b, "at", refuse_host=False),)
        with quiet():
            self._numpy.at(host_value(a), key, *args)
        count_launch()


def check_at_dtype(ufunc_name, dtype):
    """Raise CuPy's ``TypeError`` when ``ufunc.at`` / ``cupyx.scatter_*`` does not take ``dtype``.

    Args:
        ufunc_name: ``"add"``, ``"maximum"``, ... (``cupyx.scatter_add`` is ``cupy.add.at``).
        dtype: the target array's dtype.
    """
    allowed = api.at_dtypes(ufunc_name)
    if numpy.dtype(dtype).name not in allowed:
        names = [n for n in ("int32", "int64", "float16", "float32", "float64", "uint32", "uint64") if n in allowed]
        raise TypeError(f"cupy.{ufunc_name}.at only supports {', '.join(names)} as data type")


ABSENT = object()
"""What :func:`_numpy_attr` answers for a name NumPy lacks (None is a value: ``cupy.newaxis``)."""

# NOTE: names CuPy 14 still has that NumPy 2 dropped from its top level, with CuPy's values
_NUMPY_1_NAMES = {"Inf": numpy.inf, "Infinity": numpy.inf, "infty": numpy.inf, "PINF": numpy.inf,
                  "NINF": -numpy.inf, "NAN": numpy.nan, "NaN": numpy.nan, "PZERO": 0.0, "NZERO": -0.0,
                  "float_": numpy.float64, "complex_": numpy.complex128, "cfloat": numpy.complex128,
                  "singlecomplex": numpy.complex64}


def _numpy_attr(path, name):
    """NumPy's twin of ``cupy.<path>.<name>`` (``path`` '' for the top level), or :data:`ABSENT`."""
    target = numpy
    for part in filter(None, path.split(".")):
        target = getattr(target, part, None)
        if target is None:
            return ABSENT
    value = getattr(target, name, ABSENT)
    if value is ABSENT and not path:  # NOTE: CuPy's AxisError & co. are NumPy 2's numpy.exceptions ones
        value = _NUMPY_1_NAMES.get(name, getattr(numpy.exceptions, name, ABSENT))
    return value


def _function(module, name, spec):
    where = f"{module}.{name}"
    numpy_function = _numpy_attr(module.partition(".")[2], name)
    if numpy_function is ABSENT:
        return _missing(where)
    if name in DEVICE_SCALAR:
        numpy_function = _as_array(numpy_function)
    launches = 0 if name in ALLOCATE_ONLY else None

    def function(*args, **kwargs):
        api.check_keywords(where, kwargs, spec)
        one_argument_where = name == "where" and len(args) + len(kwargs) == 1
        count_reads(where, 1 if one_argument_where else READS_BACK.get(name, 0))
        if name in FROM_HOST:
            return _from_host(numpy_function, args, kwargs, where)
        return call(numpy_function, args, kwargs, name=where, launches=launches,
                    refuse_host=name not in TAKES_HOST_DATA)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"CuPy's ``{where}`` (NumPy's, on the device memory)."
    return function


def _copied(numpy_function):
    """``numpy_function`` whose result owns fresh memory (host data is copied to the device, never shared)."""
    def copied(*args, **kwargs):
        return numpy.array(numpy_function(*args, **kwargs), copy=True)

    return copied


def _as_array(numpy_function):
    """``numpy_function`` whose Python-scalar result becomes a NumPy scalar (then a 0-d device array)."""
    def as_array(*args, **kwargs):
        return numpy.asarray(numpy_function(*args, **kwargs))[()]

    return as_array


def _from_host(numpy_function, args, kwargs, where):
    """``cupy.array``/``asarray``...: host data is copied to the device; device arrays follow ``copy``.

    A device array is returned as it is when no copy is asked for and none is needed (``asarray``);
    ``cupy.array`` copies by default. A list of device arrays is stacked; a list mixing device arrays
    with anything else needs NumPy to convert them, which CuPy refuses.
    """
    kwargs = {k: v for k, v in kwargs.items() if k != "blocking"}  # NOTE: CuPy's own: the copy is synchronous
    if args and isinstance(args[0], ndarray):
        # NOTE: CuPy's copy=False means "copy only if needed" (astype(copy=False)): NumPy's copy=None
        copy = kwargs.get("copy", where.endswith(".array"))
        return call(numpy_function, args, {**kwargs, "copy": True if copy else None}, name=where)
    if args and type(args[0]) in (list, tuple):
        leaves = _leaves(args[0], [])
        devices = [x for x in leaves if isinstance(x, ndarray)]
        if devices and (len(devices) < len(leaves) or len({x.shape for x in devices}) > 1):
            raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                            "Please use `.get()` to construct a NumPy array explicitly.")
    kwargs.pop("copy", None)  # NOTE: host data is always copied, whatever copy= says
    return call(_copied(numpy_function), args, kwargs, name=where, refuse_host=False, launches=1)


def _leaves(value, found):
    if type(value) in (list, tuple):
        for v in value:
            _leaves(v, found)
    else:
        found.append(value)
    return found


def _missing(where):
    def function(*args, **kwargs):
        raise NotImplementedError(f"cuda-emulated: {where} exists in CuPy but has no NumPy twin, so the "
                                  "emulated device does not run it")

    function.__name__ = where.rpartition(".")[2]
    return function


def _attribute(module, name, spec):
    kind = spec.get("kind")
    if kind == "ufunc":
        return ufunc(name, spec) if isinstance(getattr(numpy, name, None), numpy.ufunc) else _missing(name)
    if kind == "function":
        return _function(module, name, spec)
    return _numpy_attr(module.partition(".")[2], name)


def _namespace(module):
    space = api.Namespace(module)
    for name, spec in api.names(module).items():
        value = _attribute(module, name, spec)
        if value is not ABSENT:
            setattr(space, name, value)
    return space


# ---- CuPy-only API ---------------------------------------------------------------------------------------
def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """A NumPy copy of a device array (one host sync); NumPy input is returned as an array.

    Args:
        a: a device array, or anything NumPy takes.
        stream: ignored.
        order: the copy's memory order.
        out: a NumPy array to copy into.
        blocking: ignored.
    """
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return numpy.asarray(a, order=order)


def get_array_module(*args):
    """The emulated ``cupy`` if any argument is a device array, else ``numpy``.

    Args:
        *args: arrays or other values.
    """
    return cupy_module() if any(isinstance(a, ndarray) for a in args) else numpy


_registry: dict = {}


def cupy_module():
    """The emulated ``cupy`` module (built once)."""
    if "cupy" not in _registry:
        _registry["cupy"] = _build_cupy()
    return _registry["cupy"]


def cupyx_module():
    """The emulated ``cupyx`` module (built once): ``scatter_add/max/min`` and ``scipy.special``."""
    if "cupyx" not in _registry:
        _registry["cupyx"] = _build_cupyx()
    return _registry["cupyx"]


def _build_cupy():
    from . import kernels, random, runtime  # noqa: PLC0415 - the module is built on first use

    cupy = _namespace("cupy")
    cupy.__version__ = api.version()
    cupy.__file__ = __file__
    cupy.ndarray = ndarray
    cupy.ufunc = ufunc
    cupy.asnumpy = asnumpy
    cupy.get_array_module = get_array_module
    cupy.cuda = runtime.cuda_namespace()
    cupy.get_default_memory_pool = runtime.default_memory_pool
    cupy.get_default_pinned_memory_pool = runtime.default_pinned_memory_pool
    cupy.RawModule = kernels.RawModule
    cupy.RawKernel = kernels.RawKernel
    for sub in ("linalg", "fft"):
        setattr(cupy, sub, _namespace(f"cupy.{sub}"))
    cupy.random = random.random_namespace()
    cupy.lib = api.Namespace("cupy.lib")
    cupy.lib.stride_tricks = _namespace("cupy.lib.stride_tricks")
    return cupy


def scatter(reduce_name, ufunc_name):
    """``cupyx.scatter_<reduce_name>(a, slices, value)``: ``numpy.<ufunc>.at`` with CuPy's dtype rule."""
    numpy_ufunc = getattr(numpy, ufunc_name)

    def scatter_op(a, slices, value):
        check_at_dtype(ufunc_name, a.dtype)
        key = unwrap(slices, f"scatter_{reduce_name}", refuse_host=False)
        with quiet():
            numpy_ufunc.at(host_value(a), key, unwrap(value, f"scatter_{reduce_name}", refuse_host=False))
        count_launch()

    scatter_op.__name__ = f"scatter_{reduce_name}"
    scatter_op.__doc__ = f"CuPy's ``cupyx.scatter_{reduce_name}``: ``a[slices] {ufunc_name}= value``, unbuffered."
    return scatter_op


def _vectorized(scalar_function, name, types):
    """``cupyx.scipy.special.<name>``: ``scalar_function`` on each element, typed by CuPy's loops.

    Args:
        scalar_function: the float64 function of one element.
        name: the function's name.
        types: CuPy's loops (``"e->d"``: float16 in, float64 out), tried in order: the first whose input
            type the argument casts to safely is taken, as CuPy's ufuncs choose.
    """
    def special(x):
        host = host_value(x) if isinstance(x, ndarray) else numpy.asarray(x)
        loop = next((t for t in types if numpy.can_cast(host.dtype, t[0])), None)
        if loop is None:
            raise TypeError(f"Wrong type ({(host.dtype,)}) of arguments for cupyx_scipy_special_{name}")
        out = numpy.vectorize(scalar_function, otypes=[numpy.float64])(host.astype(loop[0]).astype(numpy.float64))
        count_launch()
        return wrap(out.astype(loop[-1]), None)

    special.__name__ = name
    return special


def _erfinv(y):
    # NOTE: erfinv(y) = Phi^-1((y + 1) / 2) / sqrt(2); statistics.NormalDist's inverse is exact to ~1e-15
    if y == 1.0 or y == -1.0:
        return math.copysign(math.inf, y)
    if not -1.0 < y < 1.0:
        return math.nan
    return statistics.NormalDist().inv_cdf((y + 1.0) / 2.0) / math.sqrt(2.0)


def _build_cupyx():
    cupyx = api.Namespace("cupyx")
    cupyx.scatter_add = scatter("add", "add")
    cupyx.scatter_max = scatter("max", "maximum")
    cupyx.scatter_min = scatter("min", "minimum")
    special = api.Namespace("cupyx.scipy.special")
    special.erf = _vectorized(math.erf, "erf", ("e->d", "f->f", "d->d"))
    special.erfinv = _vectorized(_erfinv, "erfinv", ("f->f", "d->d"))
    cupyx.scipy = api.Namespace("cupyx.scipy")
    cupyx.scipy.special = special
    return cupyx

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
from .array import call, host_value, ndarray, unwrap, wrap
from .counters import count_launch, count_sync
from .rules import SIZED_BY_DATA, Namespace, check_at_dtype, check_keywords

__all__ = ["cupy_module", "cupyx_module", "ufunc"]

# NOTE: the functions that copy host data to the device (so take NumPy arrays and lists of device arrays)
FROM_HOST = frozenset({"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "frombuffer",
                       "fromiter", "fromstring", "loadtxt", "genfromtxt"})
ALLOCATE_ONLY = frozenset({"empty", "empty_like"})
SUBMODULES = ("linalg", "fft", "random", "lib", "lib.stride_tricks", "testing")


class ufunc:  # noqa: N801 - CuPy's name
    """A CuPy ufunc: NumPy's, with the methods CuPy implements and CuPy's dtype rules for ``at``.

    Args:
        name: the ufunc's name.
        spec: its table entry.
    """

    def __init__(self, name, spec):
        self.__name__ = name
        self._numpy = getattr(numpy, name)
        self._spec = spec
        self._methods = api.ufunc_methods(name)
        self.nin, self.nout, self.nargs = self._numpy.nin, self._numpy.nout, self._numpy.nargs
        self.types = self._numpy.types

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def __call__(self, *args, **kwargs):
        check_keywords(f"cupy.{self.__name__}", kwargs, self._spec)
        for a in args:
            if not isinstance(a, (ndarray, int, float, complex, bool, numpy.generic)):
                raise TypeError(f"Unsupported type {type(a)}")
        return call(self._numpy, args, kwargs, name=self.__name__, launches=1)

    def _method(self, method):
        if method not in self._methods:
            raise AttributeError(f"'cupy.ufunc' object has no attribute '{method}' (CuPy {api.version()} "
                                 f"implements {sorted(self._methods) or 'none'} for {self.__name__})")
        return getattr(self._numpy, method)

    def reduce(self, *args, **kwargs):
        """NumPy's ``reduce``, where CuPy has it."""
        return call(self._method("reduce"), args, kwargs, name=f"{self.__name__}.reduce", launches=1)

    def accumulate(self, *args, **kwargs):
        """NumPy's ``accumulate``, where CuPy has it."""
        return call(self._method("accumulate"), args, kwargs, name=f"{self.__name__}.accumulate", launches=1)

    def outer(self, *args, **kwargs):
        """NumPy's ``outer``, where CuPy has it."""
        return call(self._method("outer"), args, kwargs, name=f"{self.__name__}.outer", launches=1)

    def reduceat(self, *args, **kwargs):
        """NumPy's ``reduceat``, where CuPy has it."""
        return call(self._method("reduceat"), args, kwargs, name=f"{self.__name__}.reduceat", launches=1)

    def at(self, a, indices, b=None):
        """``a[indices] (op)= b`` unbuffered, for the dtypes CuPy's ``at`` accepts.

        Args:
            a: the device array changed in place.
            indices: the index.
            b: the values.
        """
        self._method("at")
        check_at_dtype(f"cupy.{self.__name__}.at", self.__name__, a.dtype)
        key = unwrap(indices, "at", refuse_host=False)
        args = () if b is None else (unwrap(b, "at"),)
        self._numpy.at(host_value(a), key, *args)
        count_launch()


def _numpy_attr(path, name):
    """NumPy's twin of ``cupy.<path>.<name>`` (``path`` '' for the top level), or None."""
    target = numpy
    for part in filter(None, path.split(".")):
        target = getattr(target, part, None)
        if target is None:
            return None
    return getattr(target, name, None)


def _function(module, name, spec):
    where = f"{module}.{name}"
    numpy_function = _numpy_attr(module.partition(".")[2], name)
    if numpy_function is None:
        return _missing(where)
    from_host = name in FROM_HOST
    launches = 0 if name in ALLOCATE_ONLY else None

    def function(*args, **kwargs):
        check_keywords(where, kwargs, spec)
        if name in SIZED_BY_DATA or (name == "where" and len(args) == 1):
            count_sync(f"{where}: the result's size is read back")
        if from_host:
            return _from_host(numpy_function, args, kwargs, where)
        return call(numpy_function, args, kwargs, name=where, launches=launches)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"CuPy's ``{where}`` (NumPy's, on the device memory)."
    return function


def _from_host(numpy_function, args, kwargs, where):
    """``cupy.array``/``asarray``...: host data is copied to the device; device arrays stay (or are stacked)."""
    if args and isinstance(args[0], ndarray) and not kwargs.get("copy", False):
        source = args[0]
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        if dtype is None or numpy.dtype(dtype) == source.dtype:
            if where.endswith("ascontiguousarray") and not source.flags.c_contiguous:
                return call(numpy_function, args, kwargs, name=where, launches=1)
            return source
    if args and type(args[0]) in (list, tuple):
        leaves = _leaves(args[0], [])
        if any(isinstance(x, ndarray) for x in leaves) and not all(isinstance(x, ndarray) for x in leaves):
            raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                            "Please use `.get()` to construct a NumPy array explicitly.")
    return call(numpy_function, args, kwargs, name=where, refuse_host=False, launches=1)


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
    twin = _numpy_attr(module.partition(".")[2], name)
    return twin if twin is not None else None


def _namespace(module):
    space = Namespace(module)
    for name, spec in api.names(module).items():
        value = _attribute(module, name, spec)
        if value is not None:
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
    from . import kernels, random, runtime  # noqa: PLC0415 - they import this module

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
    cupy.lib = Namespace("cupy.lib")
    cupy.lib.stride_tricks = _namespace("cupy.lib.stride_tricks")
    return cupy


def scatter(reduce_name, ufunc_name):
    """``cupyx.scatter_<reduce_name>(a, slices, value)``: ``numpy.<ufunc>.at`` with CuPy's dtype rule."""
    numpy_ufunc = getattr(numpy, ufunc_name)

    def scatter_op(a, slices, value):
        check_at_dtype(f"cupyx.scatter_{reduce_name}", ufunc_name, a.dtype)
        key = unwrap(slices, f"scatter_{reduce_name}", refuse_host=False)
        numpy_ufunc.at(host_value(a), key, unwrap(value, f"scatter_{reduce_name}"))
        count_launch()

    scatter_op.__name__ = f"scatter_{reduce_name}"
    scatter_op.__doc__ = f"CuPy's ``cupyx.scatter_{reduce_name}``: ``a[slices] {ufunc_name}= value``, unbuffered."
    return scatter_op


def _vectorized(scalar_function, name):
    def special(x):
        host = host_value(x)
        out = numpy.vectorize(scalar_function, otypes=[numpy.float64])(host.astype(numpy.float64))
        count_launch()
        return wrap(out.astype(host.dtype), None)

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
    cupyx = Namespace("cupyx")
    cupyx.scatter_add = scatter("add", "add")
    cupyx.scatter_max = scatter("max", "maximum")
    cupyx.scatter_min = scatter("min", "minimum")
    special = Namespace("cupyx.scipy.special")
    special.erf = _vectorized(math.erf, "erf")
    special.erfinv = _vectorized(_erfinv, "erfinv")
    cupyx.scipy = Namespace("cupyx.scipy")
    cupyx.scipy.special = special
    return cupyx

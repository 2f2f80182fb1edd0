"""The emulated device's array: NumPy memory behind CuPy's rules.

:class:`ndarray` holds a NumPy array (``_host``) but is not a ``numpy.ndarray``: NumPy cannot
convert it implicitly (``numpy.asarray(x)`` raises CuPy's ``TypeError``), every read of its values
by the host is explicit and counted, and reductions return 0-d device arrays, never scalars. Its
methods are those CuPy's ``ndarray`` has, with CuPy's keyword arguments (from the API table);
each is NumPy's method on the memory, its result wrapped again.

The wrapping rules, shared with the module functions (:func:`call`):

* arguments: device arrays are unwrapped (inside lists, tuples and dicts too); a ``numpy.ndarray``
  is refused as CuPy refuses it (``Unsupported type``), except where CuPy copies host data;
* results: NumPy arrays and scalars become device arrays; a result that shares memory with an
  argument is a view, whose ``.base`` is the argument's memory owner, as in CuPy;
* launches: a call that makes new values launches one kernel; a view or an allocation launches none.
"""

from __future__ import annotations

import operator
import warnings

import numpy

from . import api
from .counters import count_launch, count_sync
from .runtime import LIVE, Device

__all__ = ["ndarray", "wrap", "unwrap", "call", "host_value", "IMPLICIT_CONVERSION", "READS_BACK",
           "TAKES_HOST_DATA", "quiet", "count_reads"]

IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed. "
                       "Please use `.get()` to construct a NumPy array explicitly.")
"""CuPy's message, word for word, for ``numpy.asarray(cupy_array)``."""


# NOTE: CuPy reads the device inside these (to size a result, or to check its input): how many times on
# the common path; its documentation says "may synchronize" for each (histograms, ix_ of booleans and
# interp with host bounds also read back, by cases not counted here)
READS_BACK = {"nonzero": 1, "argwhere": 1, "flatnonzero": 1, "extract": 1, "compress": 1, "delete": 1, "place": 1,
              "mask_indices": 1, "unique": 1, "unique_values": 1, "unique_counts": 1, "unique_inverse": 1,
              "unique_all": 1, "nanmax": 1, "nanmin": 1, "asarray_chkfinite": 1, "trim_zeros": 2, "bincount": 2,
              "unravel_index": 2}
# NOTE: CuPy copies NumPy index and value arrays of these to the device itself, so they take them
TAKES_HOST_DATA = frozenset({"take", "put"})

def quiet():
    """NumPy's floating-point warnings off (a fresh context each time): a GPU kernel never warns."""
    return numpy.errstate(all="ignore")



class MemoryPointer:
    """``ndarray.data``: where the memory starts (``ptr``), as CuPy's ``cupy.cuda.MemoryPointer``."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


def _root(a):
    """The NumPy array that owns ``a``'s memory."""
    while isinstance(a.base, numpy.ndarray):
        a = a.base
    return a


class ndarray:  # noqa: N801 - CuPy's name
    """A device array of the emulated CUDA device (see the module doc).

    Args:
        shape: its shape.
        dtype: its dtype (float64 by default, as CuPy).
        order: ``"C"`` or ``"F"``.
    """

    __slots__ = ("_host", "_base", "__weakref__")
    __array_priority__ = 100.0  # NOTE: NumPy's binary operators defer to ours
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("cuda-emulated: ndarray(memptr=..., strides=...) is not emulated")
        self._host = numpy.empty(shape, dtype, order=order)
        self._base = None
        LIVE[id(self)] = self

    # ---- what CuPy refuses, and the explicit host reads it allows -------------------------------------
    def __array__(self, *args, **kwargs):
        raise TypeError(IMPLICIT_CONVERSION)

    def get(self, stream=None, order="C", out=None, blocking=True):
        """A NumPy copy of the values (one host sync).

        Args:
            stream: ignored (CuPy's stream).
            order: the copy's memory order.
            out: a NumPy array to copy into.
            blocking: ignored.
        """
        count_sync(f"ndarray.get: {self.shape} {self.dtype}")
        if out is not None:
            numpy.copyto(out, self._host)
            return out
        return numpy.array(self._host, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy a NumPy array of the same shape and dtype into this one (host to device: no sync).

        Args:
            arr: the NumPy array.
            stream: ignored.
        """
        if not isinstance(arr, numpy.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if not (self._host.flags.c_contiguous or self._host.flags.f_contiguous):
            raise RuntimeError("Cannot set to non-contiguous array")
        count_launch()  # NOTE: a host-to-device copy counts as one launch
        self._host[...] = arr

    def item(self):
        """The one element as a Python scalar (one host sync); CuPy's ``item`` takes no index."""
        if self._host.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        count_sync(f"ndarray.item: {self.shape} {self.dtype}")
        return self._host.item()

    def tolist(self):
        """The values as nested Python lists (one host sync)."""
        count_sync(f"ndarray.tolist: {self.shape} {self.dtype}")
        return self._host.tolist()

    def _scalar_read(self, convert, what):
        # NOTE: CuPy's int(x) is int(x.get()): NumPy's conversion rules, after the read
        count_sync(f"{what}: {self.shape} {self.dtype}")
        return convert(self._host)

    def __float__(self):
        return self._scalar_read(float, "float()")

    def __int__(self):
        return self._scalar_read(int, "int()")

    def __complex__(self):
        return self._scalar_read(complex, "complex()")

    def __bool__(self):
        # NOTE: as CuPy: an empty array warns and is False, a larger one raises, neither reads the device
        if self._host.size == 0:
            warnings.warn("The truth value of an empty array is ambiguous. Returning False, but in future this "
                          "will result in an error. Use `array.size > 0` to check that an array is not empty.",
                          DeprecationWarning, stacklevel=2)
            return False
        if self._host.size > 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. "
                             "Use a.any() or a.all()")
        return self._scalar_read(bool, "bool()")

    # NOTE: no __index__: CuPy leaves it out on purpose (it would hide a host read), so
    # range(x) and list[x] raise TypeError for a device scalar

    def __repr__(self):
        count_sync(f"repr: {self.shape} {self.dtype}")
        return repr(self._host)

    def __str__(self):
        count_sync(f"str: {self.shape} {self.dtype}")
        return str(self._host)

    def __format__(self, spec):
        return self._scalar_read(lambda host: format(host, spec), "format()")

    def __reduce__(self):
        count_sync(f"pickle: {self.shape} {self.dtype}")
        return _from_host, (numpy.array(self._host),)

    # ---- metadata: no launch, no sync -----------------------------------------------------------------
    shape = property(lambda self: self._host.shape, doc="The shape.")
    dtype = property(lambda self: self._host.dtype, doc="The dtype.")
    ndim = property(lambda self: self._host.ndim, doc="The number of dimensions.")
    size = property(lambda self: self._host.size, doc="The number of elements.")
    itemsize = property(lambda self: self._host.itemsize, doc="Bytes per element.")
    nbytes = property(lambda self: self._host.nbytes, doc="Bytes in all.")
    strides = property(lambda self: self._host.strides, doc="Bytes between elements, per dimension.")
    flags = property(lambda self: self._host.flags, doc="Contiguity flags.")
    data = property(lambda self: MemoryPointer(self._host.__array_interface__["data"][0]),
                    doc="Where the memory starts (``.data.ptr``).")
    base = property(lambda self: self._base, doc="The array owning this view's memory, or None.")

    @property
    def device(self):
        """The device the array is on (always device 0 of the emulated GPU)."""
        return Device(0)

    @property
    def __cuda_array_interface__(self):
        interface = self._host.__array_interface__
        return {"shape": interface["shape"], "typestr": interface["typestr"], "data": interface["data"],
                "strides": interface["strides"], "version": 3}

    @property
    def T(self):  # noqa: N802 - NumPy's name
        """The transpose (a view)."""
        return call(numpy.transpose, (self,), {})

    @property
    def real(self):
        """The real part (a view for complex arrays, the array itself otherwise)."""
        return call(lambda a: a.real, (self,), {})

    @property
    def imag(self):
        """The imaginary part."""
        return call(lambda a: a.imag, (self,), {})

    def __len__(self):
        return len(self._host)

    def __iter__(self):
        if self._host.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._host)))

    # ---- indexing ---------------------------------------------------------------------------------------
    def __getitem__(self, key):
        key = _unwrap_index(key)
        if _has_mask(key):  # NOTE: CuPy reads the mask's count to size the result
            count_sync(f"boolean mask index: {self.shape} {self.dtype}")
        return call(_getitem, (self, key), {}, name="__getitem__", refuse_host=False)

    def __setitem__(self, key, value):
        key = _unwrap_index(key)
        if _has_mask(key):  # NOTE: CuPy reads the mask's count here too
            count_sync(f"boolean mask assignment: {self.shape} {self.dtype}")
        value = value._host if isinstance(value, ndarray) else value
        count_launch()
        with quiet():
            self._host[key] = value

    # ---- copies ----------------------------------------------------------------------------------------
    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NOTE: as CuPy's: NumPy's out tuple unfolded, then cupy.<name> (or cupyx.scipy.special.<name>),
        # whatever it is; a NumPy array among the inputs is left for CuPy's function to refuse
        if "out" in kwargs:
            if len(kwargs["out"]) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs = {**kwargs, "out": kwargs["out"][0]}
        fake = _cupy_twin(ufunc.__name__)
        if method != "__call__":
            fake = getattr(fake, method, None)
        inout = (*inputs, *([kwargs["out"]] if "out" in kwargs else []))
        if fake is None or not all(isinstance(x, (ndarray, numpy.ndarray, *_SCALARS)) for x in inout):
            return NotImplemented
        return fake(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        fake = _function_for(func)
        return NotImplemented if fake is None else fake(*args, **kwargs)


def _cupy_twin(name):
    """``cupy.<name>``, else ``cupyx.scipy.special.<name>``, else None: what CuPy's ``__array_ufunc__`` calls."""
    # NOTE: the emulated cupy is built above this module, as CuPy's __array_ufunc__ imports cupy when called
    from . import cupy, cupyx  # noqa: PLC0415

    for space in (cupy(), cupyx().scipy.special):
        value = getattr(space, name, None)
        if value is not None:
            return value
    return None


def _function_for(numpy_function):
    """The emulated twin of a NumPy function (``numpy.sum`` -> ``cupy.sum``), or None where CuPy lacks it."""
    from . import cupy  # noqa: PLC0415 - see _cupy_twin

    space = cupy()
    for part in (getattr(numpy_function, "__module__", None) or "numpy").split(".")[1:]:
        if part.startswith("_"):
            break
        space = getattr(space, part, None)
        if space is None:
            return None
    name = numpy_function.__name__
    return getattr(space, name, None) if name in vars(space) else None


def _from_host(host):
    return wrap(host, owner=None)


def _getitem(host, key):
    """``host[key]``, where integers alone give a 0-d view (as CuPy), not NumPy's scalar copy."""
    result = host[key]
    if isinstance(result, numpy.generic):
        result = host[(*key, Ellipsis) if isinstance(key, tuple) else (key, Ellipsis)]
    return result


def _has_mask(key):
    """True when ``key`` holds a non-empty boolean array (or list of bools): CuPy must count its True values."""
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, list):
            k = numpy.asarray(k)
        if isinstance(k, numpy.ndarray) and k.dtype == numpy.bool_ and k.ndim > 0 and k.size > 0:
            return True
    return False


def _unwrap_index(key):
    if isinstance(key, ndarray):
        return key._host
    if isinstance(key, tuple):
        return tuple(k._host if isinstance(k, ndarray) else k for k in key)
    if isinstance(key, list):
        return [k._host if isinstance(k, ndarray) else k for k in key]
    return key


# ---- wrapping -------------------------------------------------------------------------------------------
def wrap(host, owner):
    """A device array over the NumPy array ``host``.

    Args:
        host: the NumPy array (or scalar, which becomes a 0-d array).
        owner: the device array whose memory ``host`` views, or None when it owns its memory.
    """
    out = object.__new__(ndarray)
    out._host = host if isinstance(host, numpy.ndarray) else numpy.asarray(host)
    out._base = owner
    if owner is None:
        LIVE[id(out)] = out
    return out


def count_reads(where, n):
    """Count the ``n`` host syncs CuPy makes inside ``where`` (see :data:`READS_BACK`).

    Args:
        where: the call.
        n: how many reads.
    """
    for _ in range(n):
        count_sync(f"{where}: CuPy reads the device inside")


def host_value(x):
    """The NumPy array behind a device array (for the emulator's own code: no sync is counted).

    Args:
        x: a device array.
    """
    return x._host


def unwrap(value, where, refuse_host=True):
    """``value`` with every device array replaced by its NumPy memory (in lists, tuples and dicts too).

    Args:
        value: an argument of an array-module call.
        where: the call's name, for the error.
        refuse_host: raise CuPy's ``TypeError`` for a ``numpy.ndarray`` (CuPy copies host data only in
            ``array``/``asarray`` and friends).
    """
    if isinstance(value, ndarray):
        return value._host
    if isinstance(value, numpy.ndarray):
        if refuse_host:
            raise TypeError(f"Unsupported type {type(value)} (cuda-emulated: {where} was given a NumPy array; "
                            "CuPy needs a device array: copy it with cupy.asarray first)")
        return value
    if type(value) in (list, tuple):
        return type(value)(unwrap(v, where, refuse_host) for v in value)
    if type(value) is dict:
        return {k: unwrap(v, where, refuse_host) for k, v in value.items()}
    return value


def _device_arrays(value, found):
    if isinstance(value, ndarray):
        found.append(value)
    elif type(value) in (list, tuple):
        for v in value:
            _device_arrays(v, found)
    elif type(value) is dict:
        for v in value.values():
            _device_arrays(v, found)
    return found


def _owners(inputs):
    """``{id(NumPy array): device array}`` for the device arrays among ``inputs``.

    Keyed by each one's memory object (a result that is that object is that very device array) and by
    the root of its memory (a result viewing the root is a view whose ``.base`` is the owner).
    """
    owners = {}
    for a in _device_arrays(inputs, []):
        owners[id(_root(a._host))] = a._base if a._base is not None else a
    for a in _device_arrays(inputs, []):
        owners[id(a._host)] = a
    return owners


def _rewrap(result, owners, launched):
    if isinstance(result, numpy.ndarray):
        same = owners.get(id(result))
        if same is not None and same._host is result:  # NOTE: NumPy handed an input back (out=, copy=False)
            return same
        owner = owners.get(id(_root(result)))
        if owner is None:
            launched.append(True)
        return wrap(result, owner)
    if isinstance(result, numpy.generic):
        launched.append(True)
        return wrap(result, None)
    if type(result) in (list, tuple):
        return type(result)(_rewrap(r, owners, launched) for r in result)
    if isinstance(result, tuple):  # NOTE: NumPy's named results (linalg.qr, svd, eigh): CuPy gives plain tuples
        return tuple(_rewrap(r, owners, launched) for r in result)
    return result


def call(function, args, kwargs, name=None, refuse_host=True, launches=None):
    """Run a NumPy ``function`` on device arrays by CuPy's rules (see the module doc) and count its launch.

    Args:
        function: the NumPy function or method to run.
        args: the positional arguments (device arrays among them).
        kwargs: the keyword arguments.
        name: the call's name for errors (``function.__name__`` by default).
        refuse_host: refuse NumPy arrays among the arguments (see :func:`unwrap`).
        launches: count exactly this many launches instead of the rule of the module doc.
    """
    where = name or getattr(function, "__name__", "call")
    host_args = unwrap(args, where, refuse_host)
    host_kwargs = unwrap(kwargs, where, refuse_host)
    with quiet():
        result = function(*host_args, **host_kwargs)
    launched = []
    out = _rewrap(result, _owners((args, kwargs)), launched)
    if launches is not None:
        count_launch(launches)
    elif launched or "out" in kwargs:
        count_launch()
    return out


# ---- methods from the table -------------------------------------------------------------------------------
_EXPLICIT = set(vars(ndarray))
_HOST_ONLY = {"dump", "dumps", "tofile", "tobytes", "byteswap", "setflags", "getfield", "setfield", "ctypes",
              "__dlpack__", "__dlpack_device__", "toDlpack", "scatter_add", "scatter_max", "scatter_min"}
_MUTATING = {"fill", "sort", "partition", "put", "resize"}


def _method(name, spec):
    numpy_method = getattr(numpy.ndarray, name)
    launches = 1 if name in _MUTATING else None

    def method(self, *args, **kwargs):
        api.check_keywords(f"ndarray.{name}", kwargs, spec)
        count_reads(f"ndarray.{name}", READS_BACK.get(name, 0))
        return call(numpy_method, (self, *args), kwargs, name=f"ndarray.{name}", launches=launches,
                    refuse_host=name not in TAKES_HOST_DATA)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"CuPy's ``ndarray.{name}`` (NumPy's, on the device memory)."
    return method


_OPERATORS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul, "__truediv__": operator.truediv,
    "__floordiv__": operator.floordiv, "__mod__": operator.mod, "__pow__": operator.pow,
    "__matmul__": operator.matmul, "__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor,
    "__lshift__": operator.lshift, "__rshift__": operator.rshift, "__divmod__": divmod,
    "__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt, "__ge__": operator.ge,
    "__eq__": operator.eq, "__ne__": operator.ne,
}
_UNARY = {"__neg__": operator.neg, "__pos__": operator.pos, "__abs__": operator.abs, "__invert__": operator.invert}


_SCALARS = (int, float, complex, bool, numpy.generic)


def _is_operand(other):
    # NOTE: CuPy's operators take device arrays and scalars; a list, a NumPy array or None is refused
    return isinstance(other, (ndarray, *_SCALARS))


def _equals_no_element(other):
    # NOTE: as CuPy: None, or an object with object's __eq__, equals no element (an all-False array)
    return other is None or (type(other).__eq__ is object.__eq__ and not isinstance(other, ndarray))


def _binary(name, op):
    def forward(self, other):
        if name in ("__eq__", "__ne__") and _equals_no_element(other):
            return call(numpy.full, (self.shape, name == "__ne__"), {}, name=name, launches=1)
        if not _is_operand(other):
            return NotImplemented
        return call(op, (self, other), {}, name=name, launches=1)

    def reflected(self, other):
        if not _is_operand(other):
            return NotImplemented
        return call(op, (other, self), {}, name=name, launches=1)

    def in_place(self, other):
        if not _is_operand(other):
            return NotImplemented
        host = self._host
        with quiet():
            result = getattr(host, name.replace("__", "__i", 1))(other._host if isinstance(other, ndarray) else other)
        count_launch()
        if result is not host:
            return NotImplemented
        return self

    return forward, reflected, in_place


def _unary(name, op):
    def method(self):
        return call(op, (self,), {}, name=name, launches=1)

    method.__name__ = name
    return method


def _install_methods():
    for name, op in _OPERATORS.items():
        forward, reflected, in_place = _binary(name, op)
        setattr(ndarray, name, forward)
        if name not in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
            setattr(ndarray, name.replace("__", "__r", 1), reflected)
            if name != "__divmod__":
                setattr(ndarray, name.replace("__", "__i", 1), in_place)
    for name, op in _UNARY.items():
        setattr(ndarray, name, _unary(name, op))
    for name, spec in api.names("ndarray").items():
        if name.startswith("_") or name in _EXPLICIT or name in _HOST_ONLY or spec.get("kind") != "method":
            continue
        if callable(getattr(numpy.ndarray, name, None)):
            setattr(ndarray, name, _method(name, spec))


_install_methods()

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
import weakref

import numpy

from . import api
from .counters import count_launch, count_sync
from .device import Device
from .rules import SIZED_BY_DATA, check_at_dtype, check_keywords

__all__ = ["ndarray", "wrap", "unwrap", "call", "host_value", "IMPLICIT_CONVERSION"]

IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed. "
                       "Please use `.get()` to construct a NumPy array explicitly.")
"""CuPy's message, word for word, for ``numpy.asarray(cupy_array)``."""


LIVE = weakref.WeakValueDictionary()
"""The device arrays that own their memory (the emulated memory pool's ``used_bytes`` sums them)."""


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
        if not isinstance(arr, numpy.ndarray) or arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError("ndarray.set: expected a numpy.ndarray of shape "
                             f"{self.shape} and dtype {self.dtype}, got {type(arr).__name__}")
        count_launch()
        self._host[...] = arr

    def item(self, *args):
        """One element as a Python scalar (one host sync).

        Args:
            *args: NumPy's ``item`` index.
        """
        count_sync(f"ndarray.item: {self.shape} {self.dtype}")
        return self._host.item(*args)

    def tolist(self):
        """The values as nested Python lists (one host sync)."""
        count_sync(f"ndarray.tolist: {self.shape} {self.dtype}")
        return self._host.tolist()

    def _scalar_read(self, convert, what):
        count_sync(f"{what}: {self.shape} {self.dtype}")
        if self._host.size != 1:
            raise TypeError("only length-1 arrays can be converted to Python scalars")
        return convert(self._host.reshape(()).item())

    def __float__(self):
        return self._scalar_read(float, "float()")

    def __int__(self):
        return self._scalar_read(int, "int()")

    def __complex__(self):
        return self._scalar_read(complex, "complex()")

    def __bool__(self):
        if self._host.size != 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous.")
        return self._scalar_read(bool, "bool()")

    def __index__(self):
        if self._host.dtype.kind not in "biu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return self._scalar_read(operator.index, "index()")

    def __repr__(self):
        count_sync(f"repr: {self.shape} {self.dtype}")
        return repr(self._host)

    def __str__(self):
        count_sync(f"str: {self.shape} {self.dtype}")
        return str(self._host)

    def __format__(self, spec):
        if self._host.ndim == 0:
            return format(self._scalar_read(lambda v: v, "format()"), spec)
        return format(str(self), spec)

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
        if _has_bool_array(key):  # NOTE: CuPy reads the mask's count to size the result
            count_sync(f"boolean mask index: {self.shape} {self.dtype}")
        return call(operator.getitem, (self, key), {}, name="__getitem__", refuse_host=False)

    def __setitem__(self, key, value):
        key = _unwrap_index(key)
        value = value._host if isinstance(value, ndarray) else value
        count_launch()
        self._host[key] = value

    # ---- copies ----------------------------------------------------------------------------------------
    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NOTE: numpy.exp(x) on a device array runs CuPy's exp, if CuPy has one (NotImplemented: TypeError)
        spec = api.entry("cupy", ufunc.__name__)
        if spec is None or spec.get("kind") != "ufunc" or (method != "__call__" and
                                                            method not in api.ufunc_methods(ufunc.__name__)):
            return NotImplemented
        where = f"cupy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        check_keywords(where, kwargs, spec if method == "__call__" else None)
        if method == "at":
            check_at_dtype(where, ufunc.__name__, inputs[0].dtype)
        function = ufunc if method == "__call__" else getattr(ufunc, method)
        return call(function, inputs, kwargs, name=where, launches=1)

    def __array_function__(self, func, types, args, kwargs):
        # NOTE: numpy.sum(x) on a device array runs CuPy's sum, if CuPy has one (NotImplemented: TypeError)
        module = _cupy_module_of(func)
        spec = api.entry(module, func.__name__) if module else None
        if spec is None or spec.get("kind") not in ("function", "ufunc"):
            return NotImplemented
        check_keywords(f"{module}.{func.__name__}", kwargs, spec)
        if func.__name__ in SIZED_BY_DATA:
            count_sync(f"{module}.{func.__name__}: the result's size is read back")
        return call(func, args, kwargs, name=f"{module}.{func.__name__}")


def _cupy_module_of(numpy_function):
    """``numpy.linalg`` -> ``cupy.linalg`` (None for NumPy's private modules)."""
    path = getattr(numpy_function, "__module__", None) or "numpy"
    parts = path.split(".")
    if parts[0] != "numpy" or any(p.startswith("_") for p in parts[1:]):
        return "cupy" if parts[0] == "numpy" else None
    return ".".join(["cupy", *parts[1:]])


def _from_host(host):
    return wrap(host, owner=None)


def _has_bool_array(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, numpy.ndarray) and k.dtype == numpy.bool_ and k.ndim > 0 for k in keys)


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
    """``{id(root NumPy array): device array owning it}`` for the device arrays among ``inputs``."""
    return {id(_root(a._host)): (a._base if a._base is not None else a) for a in _device_arrays(inputs, [])}


def _rewrap(result, owners, launched):
    if isinstance(result, numpy.ndarray):
        owner = owners.get(id(_root(result)))
        if owner is None:
            launched.append(True)
        return wrap(result, owner)
    if isinstance(result, numpy.generic):
        launched.append(True)
        return wrap(result, None)
    if type(result) in (list, tuple):
        return type(result)(_rewrap(r, owners, launched) for r in result)
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


def _check_keywords(where, kwargs, spec):
    allowed = api.keywords_allowed(spec)
    if allowed is not None:
        for key in kwargs:
            if key not in allowed:
                raise TypeError(f"{where}() got an unexpected keyword argument '{key}' (CuPy "
                                f"{api.version()} has no such argument)")


def _method(name, spec):
    numpy_method = getattr(numpy.ndarray, name)
    launches = 1 if name in _MUTATING else None

    def method(self, *args, **kwargs):
        _check_keywords(f"ndarray.{name}", kwargs, spec)
        return call(numpy_method, (self, *args), kwargs, name=f"ndarray.{name}", launches=launches)

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


def _is_operand(other):
    # NOTE: CuPy's operators take device arrays and scalars; a list, a NumPy array or None is refused
    return isinstance(other, (ndarray, int, float, complex, bool, numpy.generic))


def _binary(name, op):
    def forward(self, other):
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

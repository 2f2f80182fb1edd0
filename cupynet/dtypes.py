"""The dtypes cupynet speaks: NumPy dtype objects, with bfloat16 from ml_dtypes; and ``dtype``, their public face.

Inside, cupynet computes with NumPy dtypes: ``cupynet.dtypes.float32`` *is* ``numpy.dtype("float32")``,
and arrays carry them. What a program sees (``cupynet.float32``, ``Tensor.dtype``, ``torch.float32`` under
``cupynet run``) is a ``dtype``: one object per NumPy dtype that wraps it, carries PyTorch's
attributes (``is_floating_point``, ``is_complex``, ``is_signed``, ``itemsize``, ``to_real``, ``to_complex``)
and stands for its NumPy dtype everywhere: it compares and hashes equal to it (``x.dtype == numpy.float32``,
dict lookups), and NumPy and CuPy accept it wherever they take a dtype (its ``.dtype`` attribute is the
NumPy dtype, the protocol NumPy reads). bfloat16 comes from ``ml_dtypes`` (NumPy has none); CuPy 14
understands the same dtype.
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy

float16 = numpy.dtype("float16")
bfloat16 = numpy.dtype(ml_dtypes.bfloat16)
float32 = numpy.dtype("float32")
float64 = numpy.dtype("float64")
int8 = numpy.dtype("int8")
uint8 = numpy.dtype("uint8")
int16 = numpy.dtype("int16")
int32 = numpy.dtype("int32")
int64 = numpy.dtype("int64")
bool_ = numpy.dtype("bool")
complex64 = numpy.dtype("complex64")
complex128 = numpy.dtype("complex128")

half, float, double, long, int = float16, float32, float64, int64, int32  # noqa: A001 - torch aliases

FLOATING = (float16, bfloat16, float32, float64)
LOW_PRECISION = (float16, bfloat16)
_BY_NAME = {
    "float16": float16, "half": float16, "bfloat16": bfloat16, "float32": float32,
    "float": float32, "float64": float64, "double": float64, "int8": int8, "uint8": uint8,
    "int16": int16, "int32": int32, "int64": int64, "long": int64, "bool": bool_,
    "complex64": complex64, "cfloat": complex64, "complex128": complex128, "cdouble": complex128,
}

__all__ = [
    "float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
    "bool_", "complex64", "complex128",
    "FLOATING", "LOW_PRECISION", "as_dtype", "is_dtype_like", "is_floating", "is_low_precision",
    "result_type", "compute_dtype", "get_default_dtype", "set_default_dtype", "finfo", "iinfo",
    "TORCH_SCALAR_NAMES", "torch_scalar_name", "dtype", "public",
]


class _DefaultDtype:
    """The dtype Python floats become (``torch.get_default_dtype``): process-wide, as in PyTorch."""

    value = float32


def get_default_dtype() -> dtype:
    """The floating dtype that Python floats and float-producing factories default to (float32 at start)."""
    return public(_DefaultDtype.value)


def set_default_dtype(dtype) -> None:
    """Set the floating dtype for Python floats and factories such as ``zeros``, ``randn``, ``nn.Linear``.

    Like ``torch.set_default_dtype`` it is process-wide, and NumPy arrays keep their own dtype.

    Args:
        dtype: a floating dtype (float16, bfloat16, float32 or float64).
    """
    d = as_dtype(dtype)
    if d not in FLOATING:
        raise TypeError(f"set_default_dtype: only floating dtypes are supported "
                        f"(float16, bfloat16, float32, float64), got {d}")
    _DefaultDtype.value = d


# NOTE: PyTorch's scalar-type names ("Float", "Long"): its error texts and its legacy type names
# ("torch.FloatTensor") use them
TORCH_SCALAR_NAMES = {float32: "Float", float64: "Double", float16: "Half", bfloat16: "BFloat16", uint8: "Byte",
                      int8: "Char", int16: "Short", int32: "Int", int64: "Long", bool_: "Bool",
                      complex64: "ComplexFloat", complex128: "ComplexDouble"}


_COMPLEX_OF = {"float32": "complex64", "bfloat16": "complex64", "float64": "complex128"}
_REAL_OF = {"complex64": "float32", "complex128": "float64"}


class dtype:  # noqa: N801 - PyTorch's name (torch.dtype)
    """A tensor element type as PyTorch shows it, standing for (and equal to) its NumPy dtype.

    NOTE: the one object per NumPy dtype (``public``); it hashes as its NumPy dtype and compares equal to
    anything NumPy reads as that dtype (``numpy.float32``, ``"float32"``, ``numpy.dtype("float32")``), and
    NumPy/CuPy take it as a dtype through its ``__numpy_dtype__`` (NumPy 2.4) or ``dtype`` attribute. Other
    NumPy dtype attributes (``kind``, ``name``, ``type`` ...) are the NumPy dtype's.

    Args:
        numpy_dtype: the NumPy dtype it stands for.
    """

    __slots__ = ("dtype", "__numpy_dtype__", "kind", "itemsize", "name", "is_floating_point", "is_complex",
                 "is_signed")

    def __init__(self, numpy_dtype):
        d = numpy.dtype(numpy_dtype)
        object.__setattr__(self, "dtype", d)
        object.__setattr__(self, "__numpy_dtype__", d)  # NOTE: the protocol NumPy 2.4 reads first
        object.__setattr__(self, "kind", d.kind)
        object.__setattr__(self, "itemsize", d.itemsize)
        object.__setattr__(self, "name", "bool" if d == numpy.bool_ else d.name)
        object.__setattr__(self, "is_floating_point", d.kind == "f" or d == bfloat16)
        object.__setattr__(self, "is_complex", d.kind == "c")
        object.__setattr__(self, "is_signed", d.kind in "ifc" or d == bfloat16)

    def __setattr__(self, name, value):
        raise AttributeError(f"cupynet.{self.name} is immutable")

    def __getattr__(self, name):
        return getattr(self.dtype, name)

    def __eq__(self, other):
        if other is self:
            return True
        return self.dtype == (other.dtype if type(other) is dtype else other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.dtype)

    def __str__(self):
        return str(self.dtype)

    def __repr__(self):
        return f"cupynet.{self.name}"

    def __reduce__(self):
        return public, (self.dtype.str if self.dtype != bfloat16 else "bfloat16",)

    def to_real(self):
        """The real dtype of a complex one (complex64 -> float32); any other dtype itself."""
        return public(_REAL_OF[self.name]) if self.is_complex else self

    def to_complex(self):
        """The complex dtype with this dtype's real parts (float32 -> complex64, float64 -> complex128)."""
        if self.is_complex:
            return self
        if self.name not in _COMPLEX_OF:
            what = "complex32 (cupynet has none)" if self.name == "float16" else "a complex dtype"
            raise RuntimeError(f"Unknown Complex ScalarType for {torch_scalar_name(self.dtype)}: {self.name} has no "
                               f"{what}")
        return public(_COMPLEX_OF[self.name])


_PUBLIC = {}


def public(numpy_dtype) -> dtype:
    """The ``dtype`` object standing for a NumPy dtype (one per dtype; what ``Tensor.dtype`` returns).

    Args:
        numpy_dtype: a NumPy dtype, or anything ``numpy.dtype`` reads (``"bfloat16"`` names ml_dtypes' one).
    """
    found = _PUBLIC.get(numpy_dtype)
    if found is None:
        d = bfloat16 if isinstance(numpy_dtype, str) and numpy_dtype == "bfloat16" else numpy.dtype(numpy_dtype)
        found = _PUBLIC.setdefault(d, dtype(d))
        _PUBLIC.setdefault(numpy_dtype, found)
    return found


def torch_scalar_name(dtype) -> str:
    """PyTorch's scalar-type name of a dtype (``Float``, ``Long``, ``BFloat16``), else the dtype's own name.

    Args:
        dtype: a NumPy dtype.
    """
    return TORCH_SCALAR_NAMES.get(dtype, str(dtype))


def as_dtype(dtype) -> numpy.dtype:
    """Normalise a dtype spelling (a name, a NumPy dtype or scalar type) to a NumPy dtype.

    Args:
        dtype: ``"float16"``, ``cupynet.float32``, ``numpy.float64``, ``bool``, ...
    """
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.").removeprefix("cupynet.")
        if name not in _BY_NAME:
            raise TypeError(f"unknown dtype {dtype!r}; expected one of {sorted(_BY_NAME)}")
        return _BY_NAME[name]
    try:
        d = numpy.dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; expected a cupynet dtype such as cupynet.float32") from None
    if d not in _BY_NAME.values():
        raise TypeError(f"dtype {d} is not supported by cupynet; expected one of {sorted(_BY_NAME)}")
    return d


def is_dtype_like(value) -> bool:
    """True when ``value`` names a dtype cupynet supports (what ``.to(...)`` tells apart from a device).

    Args:
        value: anything: a dtype, a dtype name, a device name, a Device...
    """
    try:
        as_dtype(value)
    except TypeError:
        return False
    return True


def is_floating(dtype) -> bool:
    """True for float16, bfloat16, float32 and float64.

    Args:
        dtype: a NumPy dtype.
    """
    return dtype in FLOATING


def is_low_precision(dtype) -> bool:
    """True for float16 and bfloat16, the autocast dtypes.

    Args:
        dtype: a NumPy dtype.
    """
    return dtype in LOW_PRECISION


def result_type(*dtypes) -> numpy.dtype:
    """Type promotion as PyTorch does it for tensors of these dtypes.

    NOTE: NumPy promotes float16 + bfloat16 to float32 (as PyTorch does) but has
    no rule for bfloat16 + int; floats always win over ints and bools here.

    Args:
        *dtypes: NumPy dtypes.
    """
    if any(d.kind == "c" for d in dtypes):  # NOTE: complex wins; bfloat16/float16 meet it as float32
        return numpy.result_type(*(float32 if d in LOW_PRECISION else d for d in dtypes))
    floats = [d for d in dtypes if d in FLOATING]
    if floats:
        if len(set(floats)) == 1:
            return floats[0]
        if bfloat16 in floats:
            widest = max((d for d in floats if d != bfloat16), key=lambda d: d.itemsize)
            return float32 if widest.itemsize <= 4 else float64
        return numpy.result_type(*floats)
    return numpy.result_type(*dtypes)


def compute_dtype(dtype) -> numpy.dtype:
    """The dtype arithmetic runs in: float32 for half types, the dtype itself otherwise.

    NOTE: half-precision math computes in fp32 and rounds once at the end, which
    is what tensor cores (fp32 accumulation) and CUDA's half intrinsics do.

    Args:
        dtype: a NumPy dtype.
    """
    return float32 if dtype in LOW_PRECISION else dtype


def _name(dtype) -> str:
    return "bool" if dtype == bool_ else dtype.name


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype (``torch.finfo``): bits, eps, max, min, tiny, resolution.

    Args:
        type: a floating dtype (float16, bfloat16, float32, float64; default: ``get_default_dtype()``).
    """

    def __init__(self, type=None):  # noqa: A002 - PyTorch's argument name
        dtype = get_default_dtype() if type is None else as_dtype(type)
        if not is_floating(dtype):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            f"'torch.finfo' (got {_name(dtype)})")
        info = ml_dtypes.finfo(dtype)
        real = builtins.float  # NOTE: this module's `float` is the dtype alias
        self.dtype, self.bits = _name(dtype), builtins.int(info.bits)
        self.eps, self.max, self.min = real(info.eps), real(info.max), real(info.min)
        self.tiny = self.smallest_normal = real(info.smallest_normal)
        self.resolution = 10.0 ** -builtins.int(info.precision)  # NOTE: as torch: exactly 10^-digits

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - PyTorch's name
    """Limits of an integer dtype (``torch.iinfo``): bits, min, max.

    Args:
        type: an integer dtype (int8, uint8, int16, int32, int64).
    """

    def __init__(self, type):  # noqa: A002 - PyTorch's argument name
        dtype = as_dtype(type)
        if dtype.kind not in "iu":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            f"'torch.iinfo' (got {_name(dtype)})")
        info = numpy.iinfo(dtype)
        whole = builtins.int  # NOTE: this module's `int` is the dtype alias
        self.dtype, self.bits, self.min, self.max = _name(dtype), whole(info.bits), whole(info.min), whole(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

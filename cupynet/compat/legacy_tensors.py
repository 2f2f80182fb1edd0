"""PyTorch's legacy typed constructors: ``torch.FloatTensor(2, 3)``, ``torch.LongTensor([1, 2])``, ...

Each is a class whose call builds a CPU Tensor of its dtype through the legacy constructor's rules
(``cupynet.tensor.legacy_array``: sizes are zeros, a sequence is copied, a Tensor of that dtype is
shared), and whose ``isinstance`` asks PyTorch's question: is it a CPU Tensor of that dtype.
``cupynet.FloatTensor`` & co. (and ``torch.FloatTensor`` under ``cupynet run``) are these, loaded on
first use. ``Tensor(data)`` itself, the untyped legacy constructor, is the core ``Tensor`` class's own
behaviour (tensor.py).
"""

from __future__ import annotations

from cupynet import dtypes
from cupynet.tensor import Tensor, legacy_array

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
           "IntTensor", "LongTensor", "BoolTensor"]


class _LegacyTensorType(type):
    """The metaclass of ``FloatTensor`` & co.: calling one builds a CPU Tensor of its dtype, and
    ``isinstance(x, FloatTensor)`` asks whether ``x`` is a CPU float32 Tensor (PyTorch's meaning)."""

    def __call__(cls, *args):
        return Tensor(legacy_array(cls.__name__, cls.dtype, args))

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.array.dtype == cls.dtype and obj.device.type == "cpu"


def _legacy_type(name, dtype):
    doc = f"""``torch.{name}``: ``{name}(*sizes)`` zeros, ``{name}(data)`` a copy, ``{name}(tensor)`` an alias
    (see ``cupynet.tensor.legacy_array``), always a CPU Tensor of dtype {dtypes.as_dtype(dtype)}.

    Args:
        *args: sizes (ints or one tuple), or one sequence of numbers, or one Tensor of this dtype.
    """
    return _LegacyTensorType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": __name__})


FloatTensor = _legacy_type("FloatTensor", dtypes.float32)
DoubleTensor = _legacy_type("DoubleTensor", dtypes.float64)
HalfTensor = _legacy_type("HalfTensor", dtypes.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", dtypes.bfloat16)
ByteTensor = _legacy_type("ByteTensor", dtypes.uint8)
CharTensor = _legacy_type("CharTensor", dtypes.int8)
ShortTensor = _legacy_type("ShortTensor", dtypes.int16)
IntTensor = _legacy_type("IntTensor", dtypes.int32)
LongTensor = _legacy_type("LongTensor", dtypes.int64)
BoolTensor = _legacy_type("BoolTensor", dtypes.bool_)

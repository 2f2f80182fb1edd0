"""The ``meta`` device: tensors with a shape and a dtype and no values (PyTorch's ``device="meta"``).

What it is for (PyTorch's ``module_load_state_dict_tips`` recipe, which programs follow): build a module without
allocating or initialising its parameters, then give it real ones with
``load_state_dict(state_dict, assign=True)``::

    with cupynet.device("meta"):
        model = Net()                              # parameters: shapes only, nothing allocated
    model.load_state_dict(state_dict, assign=True)  # the loaded tensors become the parameters

What works on meta tensors: the factories (``empty``, ``zeros``, ``ones``, ``full``, ...),
``shape``/``dtype``/``device``/``repr``, the ``nn.init`` fills (they do nothing: there are no values),
``load_state_dict(..., assign=True)``. Anything that needs values (arithmetic, ``.numpy()``, moving to
another device) raises a clear error, where PyTorch would infer shapes through the op: cupynet's ops
have no shape-only path.
"""

from __future__ import annotations

import math

import numpy

__all__ = ["MetaArray", "META", "meta_error"]


def meta_error(what: str) -> NotImplementedError:
    """The error for an operation that needs values a meta tensor does not have.

    Args:
        what: the operation, for the message.
    """
    return NotImplementedError(
        f"{what}: a tensor on the meta device has a shape and a dtype but no values; create it on 'cpu' or "
        "'cuda', or give a module real parameters with load_state_dict(state_dict, assign=True)")


class _NoValuesError(AttributeError):
    """An attribute a meta array does not have (an AttributeError, so ``hasattr`` still answers False)."""


class MetaArray:
    """The storage of a meta tensor: a shape and a dtype, no memory.

    Args:
        shape: the dimensions.
        dtype: a NumPy dtype (or anything ``numpy.dtype`` takes).
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = numpy.dtype(dtype)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element (of a real array of this dtype)."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes a real array of this shape would take (a meta array takes none)."""
        return self.size * self.dtype.itemsize

    def astype(self, dtype, copy=True):
        """The same shape in another dtype.

        Args:
            dtype: the new dtype.
            copy: accepted for NumPy's signature.
        """
        return MetaArray(self.shape, dtype)

    def reshape(self, *shape):
        """The same elements in another shape (one ``-1`` inferred).

        Args:
            *shape: the new shape, as ints or one tuple.
        """
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        known = math.prod(s for s in shape if s != -1)
        shape = tuple(self.size // max(known, 1) if s == -1 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape a meta array of size {self.size} into shape {shape}")
        return MetaArray(shape, self.dtype)

    def __getattr__(self, name):
        raise _NoValuesError(str(meta_error(f"'{name}' of a meta array")))

    def __array__(self, dtype=None, copy=None):
        raise meta_error("converting a meta tensor to an array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise meta_error(f"numpy.{ufunc.__name__}")

    def __array_function__(self, func, types, args, kwargs):
        raise meta_error(f"numpy.{func.__name__}")

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


def _refuse(name):
    def refused(self, *args, **kwargs):
        raise meta_error(f"'{name}' of a meta array")
    refused.__name__ = name
    return refused


# NOTE: Python's operators look their methods up on the class (not through __getattr__): refuse each clearly
for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod",
            "pow", "rpow", "matmul", "rmatmul", "neg", "abs", "lt", "le", "gt", "ge", "and", "or", "xor", "invert",
            "iadd", "isub", "imul", "itruediv", "getitem", "setitem", "iter", "float", "int", "bool"):
    setattr(MetaArray, f"__{_op}__", _refuse(f"__{_op}__"))
del _op


class _MetaArrayModule:
    """The array module of the meta device: the factories make ``MetaArray``s, everything else is refused."""

    __name__ = "cupynet.meta"

    @staticmethod
    def _shape(shape):
        return (shape,) if isinstance(shape, int) else tuple(shape)

    def empty(self, shape, dtype=float, **_):
        """A meta array (the factories' shared form).

        Args:
            shape: the dimensions.
            dtype: its dtype.
            **_: NumPy's other keywords, ignored.
        """
        return MetaArray(self._shape(shape), dtype)

    zeros = ones = empty

    def full(self, shape, fill_value, dtype=None, **_):
        """A meta array (there is no fill value to keep).

        Args:
            shape: the dimensions.
            fill_value: ignored.
            dtype: its dtype (that of ``fill_value`` when None).
            **_: NumPy's other keywords, ignored.
        """
        return MetaArray(self._shape(shape), numpy.asarray(fill_value).dtype if dtype is None else dtype)

    def __getattr__(self, name):
        raise _NoValuesError(str(meta_error(name)))


META = _MetaArrayModule()

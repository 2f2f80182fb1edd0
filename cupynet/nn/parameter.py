"""``Parameter``: a Tensor that a ``Module`` registers as learnable when assigned as an attribute."""

from __future__ import annotations

from .. import backend
from ..tensor import Tensor

__all__ = ["Parameter", "as_array"]


def as_array(value, what: str):
    """The raw array behind a Tensor, NumPy/CuPy array, or a duck-typed foreign tensor (e.g. torch).

    NOTE: torch tensors are read through ``detach().cpu().numpy()`` when they have
    those methods, else through ``__array__``; torch itself is never imported.

    Args:
        value: a cupynet Tensor, an array, or an object with ``numpy()`` / ``__array__``.
        what: what the value is, for the error message.
    """
    import numpy  # noqa: PLC0415 - keep the module namespace small

    if isinstance(value, Tensor):
        return value.array
    if isinstance(value, numpy.ndarray):
        return value
    cupy = backend.cupy_or_none()
    if cupy is not None and isinstance(value, cupy.ndarray):
        return value
    if hasattr(value, "numpy") and hasattr(value, "detach"):
        detached = value.detach()
        detached = detached.cpu() if hasattr(detached, "cpu") else detached
        return numpy.asarray(detached.numpy())
    if hasattr(value, "__array__") and not isinstance(value, (str, bytes)):
        return numpy.asarray(value)
    raise TypeError(f"{what}: expected a cupynet Tensor, a NumPy/CuPy array or a tensor with .numpy(), "
                    f"got {type(value).__name__}")


class Parameter(Tensor):
    """A leaf Tensor that modules register as a learnable parameter.

    Args:
        data: a Tensor or NumPy/CuPy array (shared, not copied); None gives an empty float32 tensor.
        requires_grad: whether it records gradients (default True).
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            import numpy  # noqa: PLC0415
            data = numpy.zeros((0,), dtype=numpy.float32)
        array = as_array(data, "Parameter")
        super().__init__(array, requires_grad=False)
        if isinstance(data, Tensor):
            self._vc = data._vc  # NOTE: share the version counter, as the memory is shared too
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.array, self.requires_grad))

    def __deepcopy__(self, memo):
        import copy  # noqa: PLC0415
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.array.copy(), requires_grad=self.requires_grad)
        if self.grad is not None:
            result.grad = copy.deepcopy(self.grad, memo)
        memo[id(self)] = result
        return result


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad=requires_grad)

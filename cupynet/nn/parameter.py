"""``Parameter``: a Tensor that a ``Module`` registers as learnable when assigned as an attribute."""

from __future__ import annotations

from .. import backend
from ..tensor import Tensor

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "as_array"]


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


_UNINITIALIZED = ("Can't access the shape of an uninitialized parameter or buffer: call materialize(shape) "
                  "(torch's lazy modules do it in their first forward) before reading it")


class _Uninitialized:
    """What torch's lazy parameters and buffers share: no shape until ``materialize`` gives one."""

    __slots__ = ()
    _materialized_class = Tensor

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED)

    def size(self, dim=None):
        """Refused, as ``shape``: an uninitialized tensor has no size yet.

        Args:
            dim: the dimension torch would report.
        """
        raise RuntimeError(_UNINITIALIZED)

    def materialize(self, shape, device=None, dtype=None):
        """Give the tensor its shape (uninitialized memory, as ``torch.empty``) and make it the plain class.

        Args:
            shape: the shape (a tuple or an int).
            device: the device (default: where it is now).
            dtype: the element dtype (default: the one it was made with, float32).
        """
        from .. import dtypes  # noqa: PLC0415
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        xp = backend.get_array_module(self.array) if device is None else backend.array_module_for(
            backend.device(device))
        dt = self.array.dtype if dtype is None else dtypes.as_dtype(dtype)
        self.array = xp.empty(shape, dtype=dt)
        self.__class__ = self._materialized_class

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """``torch.nn.parameter.UninitializedParameter``: a parameter of a lazy module before its first forward.

    Args:
        requires_grad: whether it records gradients once materialized (default True).
        device: ignored until ``materialize`` (the CPU until then).
        dtype: the dtype ``materialize`` gives it (default float32).
    """

    __slots__ = ()
    _materialized_class = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        del device
        import numpy  # noqa: PLC0415

        from .. import dtypes  # noqa: PLC0415
        dt = numpy.float32 if dtype is None else dtypes.as_dtype(dtype)
        super().__init__(numpy.zeros((0,), dtype=dt), requires_grad=requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """``torch.nn.parameter.UninitializedBuffer``: a buffer of a lazy module before its first forward.

    Args:
        requires_grad: whether it records gradients (default False).
        device: ignored until ``materialize``.
        dtype: the dtype ``materialize`` gives it (default float32).
    """

    __slots__ = ()

    def __init__(self, requires_grad=False, device=None, dtype=None):
        del device
        import numpy  # noqa: PLC0415

        from .. import dtypes  # noqa: PLC0415
        dt = numpy.float32 if dtype is None else dtypes.as_dtype(dtype)
        super().__init__(numpy.zeros((0,), dtype=dt), requires_grad=requires_grad)

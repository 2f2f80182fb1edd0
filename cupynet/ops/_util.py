"""Small helpers shared by the op families (no ops here)."""

from __future__ import annotations

import numbers

import numpy

from .. import backend, dtypes
from ..tensor import Tensor


def xp_of(*values):
    """The array module (numpy or cupy) of the Tensors among ``values``.

    Args:
        *values: Tensors, arrays or scalars.
    """
    cupy = backend.cupy_or_none()
    if cupy is None:  # NOTE: the CPU-only fast path: no need to look at the values
        return numpy
    for v in values:
        if isinstance(v.data if isinstance(v, Tensor) else v, cupy.ndarray):
            return cupy
    return numpy


# NOTE: the unsigned integer of each float width, for bit masks.
_UINT_OF_WIDTH = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}


def zero_where_not(mask, grad, xp):
    """``where(mask, grad, 0)``: keep ``grad`` where ``mask`` is true, +0 elsewhere (inf and NaN too).

    NOTE (speed): NumPy's ``where`` branches per element and runs about 7x
    slower than a multiply on a random mask, but ``grad * mask`` turns an inf
    or NaN under a false mask into NaN. On NumPy the mask is widened to all-ones
    or all-zeros words and ANDed with the gradient's bits: branch-free and exact.
    CuPy's ``where`` is already a branch-free kernel.

    Args:
        mask: boolean array broadcastable to ``grad``'s shape.
        grad: floating array.
        xp: the array module of ``grad``.
    """
    uint = _UINT_OF_WIDTH.get(grad.dtype.itemsize)
    if xp is not numpy or uint is None or mask.shape != grad.shape or grad.ndim == 0:
        # NOTE: 0-d: NumPy hands back scalars there, which the in-place bit trick below cannot write into
        return xp.where(mask, grad, grad.dtype.type(0))
    bits = mask.astype(uint)
    numpy.negative(bits, out=bits)  # 1 -> all ones (unsigned wrap-around), 0 -> 0
    grad_bits = numpy.ascontiguousarray(grad).view(uint)
    return numpy.bitwise_and(grad_bits, bits, out=bits).view(grad.dtype)


def lift(value, like: Tensor | None = None):
    """Turn an array into a Tensor on ``like``'s device; keep Python scalars and Tensors as they are.

    Args:
        value: a Tensor, a Python number, or a NumPy/CuPy array.
        like: a Tensor whose device an array should move to.
    """
    if isinstance(value, (Tensor, numbers.Number)):
        return value
    if like is None:
        return Tensor(backend.get_array_module(value).asarray(value))
    xp = like.data.__class__.__module__.split(".")[0]
    return Tensor(backend.to_numpy(value) if xp == "numpy" else backend.cupy_or_none().asarray(value))


def data(value):
    """``value.data`` for a Tensor, the value itself otherwise (scalars stay Python scalars).

    Args:
        value: a Tensor or a scalar.
    """
    return value.data if isinstance(value, Tensor) else value


def fix_float_dtype(result, *inputs):
    """Undo NumPy's widening where PyTorch keeps the tensors' dtype.

    An int tensor with a float number gives NumPy's float64, PyTorch's default float32;
    a bfloat16 tensor with a Python number gives float32 (ml_dtypes), PyTorch's bfloat16
    (rounding the float32 result once, as PyTorch's bfloat16 kernels do).

    Args:
        result: the computed array.
        *inputs: the op's inputs (Tensors or scalars).
    """
    dtype = result.dtype
    if dtype == dtypes.float32:
        if any(isinstance(v, Tensor) and v.dtype == dtypes.bfloat16 for v in inputs) and \
                all(not isinstance(v, Tensor) or v.dtype == dtypes.bfloat16 for v in inputs):
            return result.astype(dtypes.bfloat16)
        return result
    if dtype != dtypes.float64 or any(isinstance(v, Tensor) and v.dtype == dtypes.float64 for v in inputs):
        return result
    return result.astype(dtypes.float32)


def require_floating(op_name: str, t: Tensor, what: str = "input"):
    """Raise a clear TypeError when a float-only op gets an integer or bool tensor.

    Args:
        op_name: the op, for the message.
        t: the tensor to check.
        what: which argument it is, for the message.
    """
    if not dtypes.is_floating(t.dtype):
        raise TypeError(f"{op_name}: expected a floating point {what} (float16, bfloat16, float32 or float64), "
                        f"got {t.dtype}")


def normalize_dim(op_name: str, dim: int, ndim: int) -> int:
    """Turn a possibly negative dim into an index in ``[0, ndim)``, with a clear error when out of range.

    Args:
        op_name: the op, for the message.
        dim: the dimension.
        ndim: the number of dimensions of the tensor.
    """
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(dim, int) or not lo <= dim <= hi:
        raise IndexError(f"{op_name}: Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {dim})")
    return dim % max(ndim, 1)


def compute_in_fp32(array):
    """The array in the dtype its math should run in (float32 for float16/bfloat16).

    NOTE: half-precision math that accumulates (matmul, reductions) runs in fp32
    and is rounded once at the end, matching tensor cores and CUDA reductions.

    Args:
        array: a NumPy or CuPy array.
    """
    return array.astype(dtypes.float32) if array.dtype in dtypes.LOW_PRECISION else array

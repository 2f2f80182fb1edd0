"""Matrix products. ``matmul`` is a ``lower`` op: under autocast it runs in fp16/bf16.

NOTE (numerics): half-precision products accumulate in fp32 and round once.
On the GPU a 2-D float16 ``cupy.matmul`` is cublasGemmEx with fp32 compute
(tensor cores); CuPy upcasts *batched* float16 matmul to fp32 internally, so a
batched product whose right side is a plain matrix is reshaped to 2-D first.
On the CPU the product is computed in fp32 and rounded, which is the same math.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ._util import xp_of
from .shape import reshape, squeeze, sum_to, unsqueeze

__all__ = ["matmul"]


def matmul_arrays(a, b):
    """``a @ b`` on raw arrays with fp32 accumulation for half dtypes (see the module note).

    Args:
        a: left array.
        b: right array.
    """
    xp = xp_of(a, b)
    low = a.dtype in dtypes.LOW_PRECISION
    if xp.__name__ == "numpy" and low:
        return xp.matmul(a.astype(dtypes.float32), b.astype(dtypes.float32)).astype(a.dtype)
    if low and a.ndim > 2 and b.ndim == 2:
        lead = a.shape[:-1]
        return xp.matmul(a.reshape(-1, a.shape[-1]), b).reshape(lead + (b.shape[-1],))
    return xp.matmul(a, b)


def _check(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        raise RuntimeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                           f"({ka} != {kb})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"matmul: expected both inputs to have the same dtype, but got {a.dtype} and "
                           f"{b.dtype}")


class Matmul(Function):
    """``a @ b`` with NumPy's rules for 1-D and batched operands."""

    op_name = "matmul"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, a, b):
        _check(a, b)
        ctx.save_for_backward(a, b)
        return matmul_arrays(a.data, b.data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        a2 = unsqueeze(a, 0) if a.ndim == 1 else a
        b2 = unsqueeze(b, -1) if b.ndim == 1 else b
        g = grad
        if a.ndim == 1:
            g = unsqueeze(g, -2)
        if b.ndim == 1:
            g = unsqueeze(g, -1)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sum_to(matmul(g, b2.mT), a2.shape)
            ga = squeeze(ga, 0) if a.ndim == 1 else ga
            ga = reshape(ga, a.shape)
        if ctx.needs_input_grad[1]:
            gb = _sum_batch(matmul(a2.mT, g), b2.shape)
            gb = reshape(gb, b.shape)
        return ga, gb


def _sum_batch(g, shape):
    return sum_to(g, shape)


def matmul(input, other):  # noqa: A002
    """Matrix product with broadcasting batch dimensions (``input @ other``).

    Args:
        input: a Tensor with at least 1 dimension.
        other: a Tensor with at least 1 dimension.
    """
    return Matmul.apply(input, other)


METHODS = {"matmul": matmul}

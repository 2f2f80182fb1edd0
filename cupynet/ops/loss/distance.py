"""Similarity and distance of vectors: ``cosine_similarity`` and ``pairwise_distance`` (the triplet loss's distance)."""

from __future__ import annotations

from ...autograd.function import Function
from ...tensor import Tensor
from .._util import normalize_dim, xp_of
from ..arith import maximum
from ..reduce import norm as norm_
from ..reduce import sum as sum_
from ..shape import broadcast_to, unsqueeze
from .arguments import broadcast_shape, check_number, check_tensor
from .reduction import back_to, compute_arrays, fp32

__all__ = ["cosine_similarity", "pairwise_distance"]


class CosineSimilarity(Function):
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (fp32 under autocast)."""

    op_name = "cosine_similarity"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x1, x2, dim=1, eps=1e-8):
        (a, b), out_dtype = compute_arrays(x1, x2)
        xp = xp_of(a)
        d1 = xp.maximum(xp.sqrt((a * a).sum(axis=dim, keepdims=True)), eps)
        d2 = xp.maximum(xp.sqrt((b * b).sum(axis=dim, keepdims=True)), eps)
        ctx.dim, ctx.eps = dim, eps
        ctx.save_for_backward(x1, x2)
        return ((a / d1) * (b / d2)).sum(axis=dim).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x1, x2 = ctx.saved_tensors
        a, b, dim = fp32(x1), fp32(x2), ctx.dim
        g = unsqueeze(fp32(grad), dim)
        n1, n2 = (sum_(v * v, dim=dim, keepdim=True) ** 0.5 for v in (a, b))
        d1, d2 = maximum(n1, ctx.eps), maximum(n2, ctx.eps)
        u, v = a / d1, b / d2
        cos = sum_(u * v, dim=dim, keepdim=True)
        # NOTE: d(x / ||x||) . w = (w - u (u . w)) / ||x||; where ||x|| <= eps the denominator is the constant eps
        gx1 = gx2 = None
        if ctx.needs_input_grad[0]:
            gx1 = back_to(g * (v - Tensor((n1.array > ctx.eps).astype(a.dtype)) * u * cos) / d1, x1.dtype)
        if ctx.needs_input_grad[1]:
            gx2 = back_to(g * (u - Tensor((n2.array > ctx.eps).astype(b.dtype)) * v * cos) / d2, x2.dtype)
        return gx1, gx2


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (inputs broadcast together).

    Args:
        x1: a floating Tensor.
        x2: a floating Tensor broadcastable with ``x1``.
        dim: the dimension holding the vectors.
        eps: the smallest norm used as a denominator.
    """
    check_tensor("cosine_similarity", "x1", x1)
    check_tensor("cosine_similarity", "x2", x2)
    try:
        shape = tuple(xp_of(x1).broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    except ValueError:
        raise ValueError(f"cosine_similarity: x1 of shape {tuple(x1.shape)} and x2 of shape {tuple(x2.shape)} "
                         "do not broadcast together") from None
    check_number("cosine_similarity", "eps", eps, 0.0)
    dim = normalize_dim("cosine_similarity", dim, max(len(shape), 1))
    return CosineSimilarity.apply(broadcast_to(x1, shape), broadcast_to(x2, shape), dim=dim, eps=float(eps))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` along the last dimension (inputs broadcast together).

    Composite, as in PyTorch: under autocast its norm runs in fp32.

    Args:
        x1: a floating Tensor (..., D).
        x2: a floating Tensor broadcastable with ``x1``.
        p: the norm's order (> 0, or inf).
        eps: added to the difference so that the norm's gradient stays finite at x1 == x2.
        keepdim: keep the last dimension with size 1.
    """
    check_tensor("pairwise_distance", "x1", x1)
    check_tensor("pairwise_distance", "x2", x2)
    check_number("pairwise_distance", "p", p, 0.0)
    check_number("pairwise_distance", "eps", eps)
    shape = broadcast_shape("pairwise_distance", (("x1", tuple(x1.shape)), ("x2", tuple(x2.shape))))
    dim = -1 if shape else None
    return norm_(x1 - x2 + eps, p, dim=dim, keepdim=keepdim)


METHODS = {}  # NOTE: losses are functions only, not Tensor methods

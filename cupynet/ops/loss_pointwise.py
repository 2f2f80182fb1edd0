"""Pointwise losses (one loss value per element, then reduced): regression, Poisson and margin losses.

Same conventions as ``loss.py``: fp32 math for half inputs, one rounding at the
end, PyTorch's names and reductions, the ``fp32`` autocast policy (every loss
here is on PyTorch's CUDA fp32 list, as is ``cosine_similarity``), and a target
whose shape differs from the input's is an error (PyTorch warns and broadcasts).
Backward formulas use cupynet ops on the saved inputs; piecewise pieces (signs,
masks of active regions) are constants, so gradients are differentiable again.
"""

from __future__ import annotations

import math

from ..autograd.function import Function
from ..tensor import Tensor
from ._loss_util import (
    back_to,
    check_number,
    check_reduction,
    check_same_shape,
    check_tensor,
    compute_arrays,
    expand_grad,
    fp32,
    no_legacy,
    numel,
    reduce_array,
    sigmoid,
)
from ._util import normalize_dim, xp_of
from .arith import maximum
from .reduce import sum as sum_
from .shape import broadcast_to, unsqueeze
from .unary import exp, log

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "cosine_similarity"]


class _DistanceLoss:
    """Shared forward/backward of a loss of ``d = input - target``: ``loss = f(d)`` and ``f'(d) = d * A + B``.

    Subclasses give ``pointwise(xp, d, **options) -> (f(d), A, B)``, where A and B are
    constants (numbers, arrays or None), so the gradient is differentiable again.
    """

    @staticmethod
    def forward(ctx, x, y, reduction="mean", **options):
        (xf, yf), out_dtype = compute_arrays(x, y)
        elem, ctx.coef_a, ctx.coef_b = ctx.fn.pointwise(xp_of(xf), xf - yf, **options)
        ctx.reduction, ctx.elem_shape = reduction, elem.shape
        ctx.save_for_backward(x, y)
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        slope = None
        if ctx.coef_a is not None:
            slope = (fp32(x) - fp32(y)) * (ctx.coef_a if isinstance(ctx.coef_a, float) else Tensor(ctx.coef_a))
        if ctx.coef_b is not None:
            slope = Tensor(ctx.coef_b) if slope is None else slope + Tensor(ctx.coef_b)
        dd = g * slope
        gx = back_to(dd, x.dtype) if ctx.needs_input_grad[0] else None
        gy = back_to(-dd, y.dtype) if ctx.needs_input_grad[1] else None
        return gx, gy


class MSELoss(_DistanceLoss, Function):
    """Squared error ``(input - target) ** 2`` (fp32 under autocast)."""

    op_name = "mse_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d):
        return d * d, 2.0, None


class L1Loss(_DistanceLoss, Function):
    """Absolute error ``|input - target|`` (fp32 under autocast)."""

    op_name = "l1_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d):
        return xp.abs(d), None, xp.sign(d)


class SmoothL1Loss(_DistanceLoss, Function):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (fp32 under autocast)."""

    op_name = "smooth_l1_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d, beta=1.0):
        ad = xp.abs(d)
        if beta == 0.0:
            return ad, None, xp.sign(d)
        inner = ad < beta
        elem = xp.where(inner, 0.5 * d * d / beta, ad - 0.5 * beta)
        return elem, (ad <= beta).astype(d.dtype) / beta, xp.sign(d) * (ad > beta)


class HuberLoss(_DistanceLoss, Function):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)`` (fp32 under autocast)."""

    op_name = "huber_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d, delta=1.0):
        ad = xp.abs(d)
        elem = xp.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
        return elem, (ad <= delta).astype(d.dtype), delta * xp.sign(d) * (ad > delta)


def _distance_loss(cls, op, input, target, reduction, **options):  # noqa: A002
    check_same_shape(op, input, target)
    check_reduction(op, reduction)
    return cls.apply(input, target, reduction=reduction, **options)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Mean squared error ``(input - target) ** 2``, reduced.

    Args:
        input: a floating Tensor.
        target: a floating Tensor of the same shape.
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
        weight: not supported (must be None).
    """
    no_legacy("mse_loss", size_average, reduce)
    _no_weight("mse_loss", weight)
    return _distance_loss(MSELoss, "mse_loss", input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Mean absolute error ``|input - target|``, reduced (the gradient at 0 is 0).

    Args:
        input: a floating Tensor.
        target: a floating Tensor of the same shape.
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
        weight: not supported (must be None).
    """
    no_legacy("l1_loss", size_average, reduce)
    _no_weight("l1_loss", weight)
    return _distance_loss(L1Loss, "l1_loss", input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    """Smooth L1: quadratic below ``beta``, linear above (``beta = 0`` is L1).

    Args:
        input: a floating Tensor.
        target: a floating Tensor of the same shape.
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
        beta: the threshold, >= 0.
    """
    no_legacy("smooth_l1_loss", size_average, reduce)
    check_number("smooth_l1_loss", "beta", beta, 0.0)
    return _distance_loss(SmoothL1Loss, "smooth_l1_loss", input, target, reduction, beta=float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    """Huber loss: quadratic below ``delta``, linear (slope ``delta``) above.

    Args:
        input: a floating Tensor.
        target: a floating Tensor of the same shape.
        reduction: 'none', 'mean' or 'sum'.
        delta: the threshold, > 0.
        weight: not supported (must be None).
    """
    _no_weight("huber_loss", weight)
    check_number("huber_loss", "delta", delta, 0.0)
    if delta == 0:
        raise ValueError("huber_loss: delta must be > 0, got 0")
    return _distance_loss(HuberLoss, "huber_loss", input, target, reduction, delta=float(delta))


def _no_weight(op, weight):
    if weight is not None:
        raise ValueError(f"{op}: a per-element weight is not supported; multiply a reduction='none' loss instead")


# ----------------------------------------------------------------------------- Poisson


class PoissonNLLLoss(Function):
    """Poisson negative log-likelihood ``exp(input) - target * input`` (or its non-log form) (fp32 under autocast)."""

    op_name = "poisson_nll_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, y, log_input=True, full=False, eps=1e-8, reduction="mean"):
        (xf, yf), out_dtype = compute_arrays(x, y)
        xp = xp_of(xf)
        elem = xp.exp(xf) - yf * xf if log_input else xf - yf * xp.log(xf + eps)
        if full:
            # NOTE: Stirling's term y log y - y + 0.5 log(2 pi y), only where target > 1 (as PyTorch)
            big = yf > 1
            safe = xp.where(big, yf, 1.0)
            elem = elem + xp.where(big, safe * xp.log(safe) - safe + 0.5 * xp.log(2 * math.pi * safe), 0.0)
            ctx.big = big.astype(yf.dtype)
        ctx.options, ctx.reduction, ctx.elem_shape = (log_input, full, eps), reduction, elem.shape
        ctx.save_for_backward(x, y)
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        (log_input, full, eps), xf, yf = ctx.options, fp32(x), fp32(y)
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = back_to(g * (exp(xf) - yf if log_input else 1.0 - yf / (xf + eps)), x.dtype)
        if ctx.needs_input_grad[1]:
            dy = -xf if log_input else -log(xf + eps)
            if full:
                safe = maximum(yf, 1.0)
                dy = dy + Tensor(ctx.big) * (log(safe) + 0.5 / safe)
            gy = back_to(g * dy, y.dtype)
        return gx, gy


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean"):
    """Poisson negative log-likelihood of ``target`` counts given rates ``exp(input)`` (or ``input``).

    Args:
        input: log-rates (``log_input``) or rates.
        target: counts of the same shape.
        log_input: whether ``input`` holds log-rates.
        full: add Stirling's approximation of ``log(target!)``.
        size_average: deprecated in PyTorch; must be None.
        eps: keeps ``log(input + eps)`` finite when ``log_input`` is False.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
    """
    no_legacy("poisson_nll_loss", size_average, reduce)
    check_same_shape("poisson_nll_loss", input, target)
    check_reduction("poisson_nll_loss", reduction)
    check_number("poisson_nll_loss", "eps", eps, 0.0)
    return PoissonNLLLoss.apply(input, target, log_input=bool(log_input), full=bool(full), eps=float(eps),
                                reduction=reduction)


# ----------------------------------------------------------------------------- margin losses


class HingeEmbeddingLoss(Function):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (fp32 under autocast)."""

    op_name = "hinge_embedding_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, margin=1.0, reduction="mean"):
        (xf,), out_dtype = compute_arrays(x)
        xp, t = xp_of(xf), target.data
        hinge = xp.maximum(margin - xf, 0.0)
        elem = xp.where(t != 1, hinge, 0.0) + xp.where(t != -1, xf, 0.0)
        # NOTE: the loss is piecewise linear in x: its slope is a constant per element
        ctx.slope = ((t != -1).astype(xf.dtype) - (t != 1) * (hinge > 0)).astype(xf.dtype)
        ctx.reduction, ctx.elem_shape, ctx.dtype = reduction, elem.shape, x.dtype
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        return back_to(g * Tensor(ctx.slope), ctx.dtype), None


class MarginRankingLoss(Function):
    """``max(0, -target * (input1 - input2) + margin)`` (fp32 under autocast)."""

    op_name = "margin_ranking_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x1, x2, y, margin=0.0, reduction="mean"):
        (a, b, t), out_dtype = compute_arrays(x1, x2, y)
        elem = xp_of(a).maximum(-t * (a - b) + margin, 0.0)
        ctx.active = (elem > 0).astype(a.dtype)
        ctx.reduction, ctx.elem_shape = reduction, elem.shape
        ctx.save_for_backward(x1, x2, y)
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        x1, x2, y = ctx.saved_tensors
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        g = g * Tensor(ctx.active)
        gx1 = back_to(-g * fp32(y), x1.dtype) if ctx.needs_input_grad[0] else None
        gx2 = back_to(g * fp32(y), x2.dtype) if ctx.needs_input_grad[1] else None
        gy = back_to(-g * (fp32(x1) - fp32(x2)), y.dtype) if ctx.needs_input_grad[2] else None
        return gx1, gx2, gy


class SoftMarginLoss(Function):
    """Logistic loss ``log(1 + exp(-target * input))`` for targets of +-1 (fp32 under autocast)."""

    op_name = "soft_margin_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, y, reduction="mean"):
        (xf, yf), out_dtype = compute_arrays(x, y)
        xp, z = xp_of(xf), yf * xf
        elem = xp.maximum(-z, 0.0) + xp.log1p(xp.exp(-xp.abs(z)))
        ctx.reduction, ctx.elem_shape = reduction, elem.shape
        ctx.save_for_backward(x, y)
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        yf = fp32(y)
        # NOTE: d/dx log(1 + exp(-y x)) = -y * sigmoid(-y x); the target gets no gradient (as PyTorch)
        return back_to(-g * yf * sigmoid(-(yf * fp32(x))), x.dtype), None


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """Hinge embedding loss: ``input`` for targets 1, ``max(0, margin - input)`` for targets -1.

    Args:
        input: a floating Tensor (typically distances).
        target: a Tensor of 1 and -1 of the same shape (no gradient).
        margin: the margin for negative pairs.
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
    """
    no_legacy("hinge_embedding_loss", size_average, reduce)
    check_tensor("hinge_embedding_loss", "input", input)
    check_tensor("hinge_embedding_loss", "target", target, floating=False)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"hinge_embedding_loss: target shape {tuple(target.shape)} does not match input shape "
                         f"{tuple(input.shape)}; they must be equal")
    check_number("hinge_embedding_loss", "margin", margin)
    check_reduction("hinge_embedding_loss", reduction)
    return HingeEmbeddingLoss.apply(input, target, margin=float(margin), reduction=reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """Ranking loss ``max(0, -target * (input1 - input2) + margin)``: target 1 wants input1 ranked higher.

    Args:
        input1: a floating Tensor.
        input2: a floating Tensor of the same shape.
        target: a floating Tensor of 1 and -1 of the same shape.
        margin: the wanted gap.
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
    """
    no_legacy("margin_ranking_loss", size_average, reduce)
    check_same_shape("margin_ranking_loss", input1, input2, what="input2")
    check_same_shape("margin_ranking_loss", input1, target)
    check_number("margin_ranking_loss", "margin", margin)
    check_reduction("margin_ranking_loss", reduction)
    return MarginRankingLoss.apply(input1, input2, target, margin=float(margin), reduction=reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Two-class logistic loss ``log(1 + exp(-target * input))``.

    Args:
        input: a floating Tensor.
        target: a floating Tensor of 1 and -1 of the same shape (no gradient).
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
    """
    no_legacy("soft_margin_loss", size_average, reduce)
    check_same_shape("soft_margin_loss", input, target)
    check_reduction("soft_margin_loss", reduction)
    return SoftMarginLoss.apply(input, target, reduction=reduction)


# ----------------------------------------------------------------------------- cosine similarity


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
            gx1 = back_to(g * (v - Tensor((n1.data > ctx.eps).astype(a.dtype)) * u * cos) / d1, x1.dtype)
        if ctx.needs_input_grad[1]:
            gx2 = back_to(g * (u - Tensor((n2.data > ctx.eps).astype(b.dtype)) * v * cos) / d2, x2.dtype)
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


METHODS = {}

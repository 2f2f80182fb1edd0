"""Regression losses of ``d = input - target``: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``.

Each op writes only ``pointwise(xp, d) -> (f(d), A, B)`` with ``f'(d) = d * A + B``
on the shared ``_DistanceLoss``, whose forward and backward do the rest. As in
PyTorch a target of another shape broadcasts with a warning, and ``mse_loss``,
``l1_loss`` and ``smooth_l1_loss`` promote an integer operand to the other's
floating dtype.
"""

from __future__ import annotations

from ... import dtypes
from ...autograd.function import Function
from ...tensor import Tensor
from .._util import xp_of
from .arguments import broadcast_pair, check_number, check_reduction, check_tensor, legacy_reduction
from .reduction import back_to, compute_arrays, expand_grad, fp32, numel, reduce_array

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]


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


def _promote_integral(op, input, target, kinds):  # noqa: A002
    """An integer (or bool) operand cast to the other's floating dtype, as PyTorch's mse/l1/smooth_l1 promote.

    Args:
        op: the loss, for the message.
        input: the input Tensor.
        target: the target Tensor.
        kinds: the NumPy dtype kinds promoted: ``"iu"`` ints, ``"biu"`` bools too (l1_loss subtracts a
            bool target, which PyTorch refuses).
    """
    check_tensor(op, "input", input, floating=False)
    check_tensor(op, "target", target, floating=False)
    if dtypes.is_floating(input.dtype) and dtypes.is_floating(target.dtype):
        return input, target
    common = dtypes.result_type(input.dtype, target.dtype)
    if not dtypes.is_floating(common) or {input.dtype.kind, target.dtype.kind} - set(kinds) - {"f", "V"}:
        raise TypeError(f"{op}: expected a floating point input or target (float16, bfloat16, float32 or float64), "
                        f"the other floating or {'integer or bool' if 'b' in kinds else 'integer'}; got "
                        f"{input.dtype} and {target.dtype}")
    return input.to(common), target.to(common)


def _distance_loss(cls, op, input, target, reduction, promote="", **options):  # noqa: A002
    check_reduction(op, reduction)
    if promote:
        input, target = _promote_integral(op, input, target, promote)  # noqa: A001
    input, target = broadcast_pair(op, input, target, warn=True)  # noqa: A001 - warns and broadcasts, as PyTorch
    return cls.apply(input, target, reduction=reduction, **options)


def _no_weight(op, weight):
    if weight is not None:
        raise ValueError(f"{op}: a per-element weight is not supported; multiply a reduction='none' loss instead")


class MSELoss(_DistanceLoss, Function):
    """Squared error ``(input - target) ** 2`` (fp32 under autocast)."""

    op_name = "mse_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d):
        return d * d, 2.0, None


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Mean squared error ``(input - target) ** 2``, reduced.

    Args:
        input: a floating Tensor.
        target: a Tensor of the input's shape (another shape broadcasts with a warning, as torch); an
            integer or bool operand is promoted to the other's floating dtype, as torch.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
        weight: not supported (must be None).
    """
    reduction = legacy_reduction("mse_loss", size_average, reduce, reduction)
    _no_weight("mse_loss", weight)
    return _distance_loss(MSELoss, "mse_loss", input, target, reduction, promote="biu")


class L1Loss(_DistanceLoss, Function):
    """Absolute error ``|input - target|`` (fp32 under autocast)."""

    op_name = "l1_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d):
        return xp.abs(d), None, xp.sign(d)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    """Mean absolute error ``|input - target|``, reduced (the gradient at 0 is 0).

    Args:
        input: a floating Tensor.
        target: a Tensor of the input's shape (another shape broadcasts with a warning, as torch); an
            integer or bool operand is promoted to the other's floating dtype, as torch.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
        weight: not supported (must be None).
    """
    reduction = legacy_reduction("l1_loss", size_average, reduce, reduction)
    _no_weight("l1_loss", weight)
    return _distance_loss(L1Loss, "l1_loss", input, target, reduction, promote="iu")


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


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    """Smooth L1: quadratic below ``beta``, linear above (``beta = 0`` is L1).

    Args:
        input: a floating Tensor.
        target: a Tensor of the input's shape (another shape broadcasts with a warning, as torch); an
            integer or bool operand is promoted to the other's floating dtype, as torch.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
        beta: the threshold, >= 0.
    """
    reduction = legacy_reduction("smooth_l1_loss", size_average, reduce, reduction)
    check_number("smooth_l1_loss", "beta", beta, 0.0)
    return _distance_loss(SmoothL1Loss, "smooth_l1_loss", input, target, reduction, promote="biu",
                          beta=float(beta))


class HuberLoss(_DistanceLoss, Function):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)`` (fp32 under autocast)."""

    op_name = "huber_loss"
    amp_policy = "fp32"

    @staticmethod
    def pointwise(xp, d, delta=1.0):
        ad = xp.abs(d)
        elem = xp.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
        return elem, (ad <= delta).astype(d.dtype), delta * xp.sign(d) * (ad > delta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    """Huber loss: quadratic below ``delta``, linear (slope ``delta``) above.

    Args:
        input: a floating Tensor.
        target: a floating Tensor, the input's shape (another shape broadcasts with a warning, as torch).
        reduction: 'none', 'mean' or 'sum'.
        delta: the threshold, > 0.
        weight: not supported (must be None).
    """
    _no_weight("huber_loss", weight)
    check_number("huber_loss", "delta", delta, 0.0)
    if delta == 0:
        raise ValueError("huber_loss: delta must be > 0, got 0")
    return _distance_loss(HuberLoss, "huber_loss", input, target, reduction, delta=float(delta))


METHODS = {}  # NOTE: losses are functions only, not Tensor methods

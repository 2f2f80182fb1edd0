"""Negative log-likelihoods of a distribution, and the KL divergence between two.

``binary_cross_entropy`` (Bernoulli, on probabilities) and
``binary_cross_entropy_with_logits`` (the same on logits, stable for any logit:
``-log(sigmoid(x))`` through the logsigmoid op's kernel), ``kl_div``,
``poisson_nll_loss`` and ``gaussian_nll_loss`` (composite, as in PyTorch).

AMP: ``binary_cross_entropy`` is ``banned`` under autocast (use
``binary_cross_entropy_with_logits``); the others are fp32.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy

from ...autograd.function import Function
from ...tensor import Tensor
from .._util import check_same_device, xp_of
from ..arith import maximum
from ..clamping import clamp
from ..shape import unsqueeze
from ..smooth_activation import Logsigmoid, logsigmoid, sigmoid
from ..unary import exp, log
from .arguments import (
    REDUCTIONS,
    broadcast_pair,
    check_number,
    check_optional_weight,
    check_reduction,
    check_tensor,
    legacy_reduction,
)
from .reduction import back_to, compute_arrays, expand_grad, fp32, numel, reduce_array, reduce_loss

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss"]


BCE_BANNED_MESSAGE = (
    "cupynet.nn.functional.binary_cross_entropy and cupynet.nn.BCELoss are unsafe to autocast. Many models use a "
    "sigmoid layer right before the binary cross entropy layer. In this case, combine the two layers using "
    "cupynet.nn.functional.binary_cross_entropy_with_logits or cupynet.nn.BCEWithLogitsLoss. "
    "binary_cross_entropy_with_logits and BCEWithLogits are safe to autocast."
)


def check_binary_target(op, input, target, message):  # noqa: A002 - PyTorch's name
    """Raise PyTorch's ValueError when a binary cross-entropy's target shape differs from the input's (no broadcast).

    Args:
        op: the loss, for the message.
        input: the input Tensor.
        target: the target Tensor.
        message: PyTorch's text, with ``{target}`` and ``{input}`` for the two shapes.
    """
    check_tensor(op, "input", input)
    check_tensor(op, "target", target)
    if input.shape != target.shape:
        raise ValueError(f"{op}: " + message.format(target=tuple(target.shape), input=tuple(input.shape)))


def _check_probabilities(op, t):
    """Raise when a probability input leaves [0, 1]: on the CPU only, where reading the answer is free.

    NOTE: on the GPU the answer would have to be read back to the host, a sync in
    every training step. PyTorch's CUDA kernel asserts on the device instead, without
    a sync; cupynet has no device-side assert, so on the GPU the check is skipped and
    an input outside [0, 1] gives a NaN loss (``log`` of a negative number) instead of
    an error (docs/differences.md).

    Args:
        op: the loss, for the message.
        t: the probability Tensor.
    """
    if xp_of(t) is not numpy:
        return
    if numpy.logical_or(t.array < 0, t.array > 1).any():
        raise ValueError(f"{op}: all elements of input should be between 0 and 1")


class BinaryCrossEntropy(Function):
    """``-w * (t * log(p) + (1 - t) * log(1 - p))`` on probabilities (banned under autocast)."""

    op_name = "binary_cross_entropy"
    amp_policy = "banned"
    banned_message = BCE_BANNED_MESSAGE

    @staticmethod
    def forward(ctx, p, t, weight=None, reduction="mean"):
        (pf, tf), out_dtype = compute_arrays(p, t)
        xp = xp_of(pf)
        # NOTE: the logs are clamped at -100 (as PyTorch), so p = 0 or 1 gives a finite loss
        log_p, log_1mp = xp.maximum(xp.log(pf), -100.0), xp.maximum(xp.log1p(-pf), -100.0)
        elem = -(tf * log_p + (1.0 - tf) * log_1mp)
        ctx.weight = weight.array.astype(pf.dtype) if weight is not None else None
        elem = elem * ctx.weight if ctx.weight is not None else elem
        ctx.reduction, ctx.elem_shape = reduction, elem.shape
        ctx.save_for_backward(p, t)
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        p, t = ctx.saved_tensors
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        g = g * Tensor(ctx.weight) if ctx.weight is not None else g
        pf, tf = fp32(p), fp32(t)
        gp = gt = None
        if ctx.needs_input_grad[0]:
            # NOTE: d/dp = (p - t) / (p (1 - p)), the denominator kept >= 1e-12 (as PyTorch)
            gp = back_to(g * (pf - tf) / maximum(pf * (1.0 - pf), 1e-12), p.dtype)
        if ctx.needs_input_grad[1]:
            gt = back_to(g * (maximum(log(1.0 - pf), -100.0) - maximum(log(pf), -100.0)), t.dtype)
        return gp, gt


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """Binary cross entropy of probabilities ``input`` against ``target`` (an error under autocast).

    Args:
        input: probabilities in [0, 1].
        target: floating targets in [0, 1] of the same shape.
        weight: optional weights broadcasting to the input's shape (no gradient).
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("binary_cross_entropy", size_average, reduce, reduction)
    check_binary_target("binary_cross_entropy", input, target,
                        "Using a target size {target} that is different to the input size {input} is deprecated. "
                        "Please ensure they have the same size.")
    check_reduction("binary_cross_entropy", reduction)
    check_optional_weight("binary_cross_entropy", "weight", weight, input.shape)
    check_same_device("binary_cross_entropy", input=input, target=target, weight=weight)
    _check_probabilities("binary_cross_entropy", input)
    return BinaryCrossEntropy.apply(input, target, weight=weight, reduction=reduction)


class BinaryCrossEntropyWithLogits(Function):
    """Sigmoid + binary cross entropy in one stable op, with ``pos_weight`` (fp32 under autocast)."""

    op_name = "binary_cross_entropy_with_logits"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, t, weight=None, pos_weight=None, reduction="mean"):
        (xf, tf), out_dtype = compute_arrays(x, t)
        xp = xp_of(xf)
        # NOTE: -log(sigmoid(x)) = softplus(-x) = max(-x, 0) + log1p(exp(-|x|)): no overflow for any x
        softplus_neg = -Logsigmoid.kernel(xp, xf)
        ctx.pos_weight = pos_weight.array.astype(xf.dtype) if pos_weight is not None else None
        log_weight = 1.0 + (ctx.pos_weight - 1.0) * tf if pos_weight is not None else 1.0
        elem = (1.0 - tf) * xf + log_weight * softplus_neg
        ctx.weight = weight.array.astype(xf.dtype) if weight is not None else None
        elem = elem * ctx.weight if ctx.weight is not None else elem
        ctx.reduction, ctx.elem_shape = reduction, elem.shape
        ctx.save_for_backward(x, t)
        return reduce_array(elem, reduction, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        g = expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, max(1, numel(ctx.elem_shape)))
        g = g * Tensor(ctx.weight) if ctx.weight is not None else g
        xf, tf = fp32(x), fp32(t)
        pw = Tensor(ctx.pos_weight) if ctx.pos_weight is not None else 1.0
        gx = gt = None
        if ctx.needs_input_grad[0]:
            # NOTE: d/dx = sigmoid(x) * (1 + (pw - 1) t) - pw * t  (= sigmoid(x) - t without pos_weight)
            gx = back_to(g * (sigmoid(xf) * (1.0 + (pw - 1.0) * tf) - pw * tf), x.dtype)
        if ctx.needs_input_grad[1]:
            # NOTE: d/dt = (1 - pw) * log(sigmoid(x)) - x
            gt = back_to(g * ((1.0 - pw) * logsigmoid(xf) - xf), t.dtype)
        return gx, gt


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)`` against ``target``, computed stably from the logits.

    Args:
        input: logits.
        target: floating targets in [0, 1] of the same shape.
        weight: optional weights broadcasting to the input's shape (no gradient).
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
        pos_weight: optional weight of positive examples, broadcasting along the last (class) dim.
    """
    op = "binary_cross_entropy_with_logits"
    reduction = legacy_reduction(op, size_average, reduce, reduction)
    check_binary_target(op, input, target, "Target size {target} must be the same as input size {input}")
    check_reduction(op, reduction)
    check_optional_weight(op, "weight", weight, input.shape)
    check_optional_weight(op, "pos_weight", pos_weight, input.shape)
    check_same_device(op, input=input, target=target, weight=weight, pos_weight=pos_weight)
    return BinaryCrossEntropyWithLogits.apply(input, target, weight=weight, pos_weight=pos_weight,
                                              reduction=reduction)


def _divisor(reduction, elem_shape, batch):
    """What 'mean' / 'batchmean' divide by (None for 'sum' and 'none').

    NOTE: an empty input divides by NaN: PyTorch's 0 / 0 = nan, without NumPy's divide-by-zero warning.
    """
    if reduction == "batchmean":
        return batch or float("nan")
    return (numel(elem_shape) or float("nan")) if reduction == "mean" else None


KL_DIV_MEAN_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' divides only by "
    "the batch size, and aligns with the KL div math definition.'mean' will be changed to behave the same as "
    "'batchmean' in the next major release."
)


class KLDiv(Function):
    """Pointwise KL divergence ``target * (log(target) - input)`` for log-probability inputs (fp32 under autocast)."""

    op_name = "kl_div"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, t, reduction="mean", log_target=False, batch=None):
        (xf, tf), out_dtype = compute_arrays(x, t)
        xp = xp_of(xf)
        if log_target:
            elem = xp.exp(tf) * (tf - xf)
        else:
            # NOTE: xlogy: 0 * log(0) is taken as 0, so zero-probability targets add nothing
            positive = tf > 0
            elem = xp.where(positive, tf * xp.log(xp.where(positive, tf, 1.0)), 0.0) - tf * xf
        ctx.reduction, ctx.log_target, ctx.elem_shape = reduction, log_target, elem.shape
        batch = batch if batch is not None else (x.shape[0] if x.ndim else 1)  # NOTE: 'batchmean' divides by it
        ctx.divisor = _divisor(reduction, elem.shape, batch)
        ctx.save_for_backward(x, t)
        return reduce_array(elem, "sum" if reduction == "sum" else reduction if reduction == "none" else "mean",
                            out_dtype, ctx.divisor)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        reduction = "mean" if ctx.reduction == "batchmean" else ctx.reduction
        g = expand_grad(fp32(grad), reduction, ctx.elem_shape, ctx.divisor)
        xf, tf = fp32(x), fp32(t)
        p = exp(tf) if ctx.log_target else tf
        gx = back_to(-g * p, x.dtype) if ctx.needs_input_grad[0] else None
        gt = None
        if ctx.needs_input_grad[1]:
            gt = g * p * (tf - xf + 1.0) if ctx.log_target else g * (log(tf) + 1.0 - xf)
            gt = back_to(gt, t.dtype)
        return gx, gt


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    """Kullback-Leibler divergence of ``target`` from ``exp(input)``, pointwise, then reduced.

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities when ``log_target``) of the same shape.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'batchmean' (the true KL: sum / batch size), 'sum' or 'mean' (over all elements).
        log_target: whether ``target`` holds log-probabilities.
    """
    reduction = legacy_reduction("kl_div", size_average, reduce, reduction)
    check_reduction("kl_div", reduction, ("none", "batchmean", "sum", "mean"))
    if reduction == "mean":
        warnings.warn(KL_DIV_MEAN_WARNING, UserWarning, stacklevel=2)
    batch = input.shape[0] if isinstance(input, Tensor) and input.ndim else 1  # NOTE: the input's, as PyTorch
    input, target = broadcast_pair("kl_div", input, target)  # noqa: A001 - silently, as PyTorch
    return KLDiv.apply(input, target, reduction=reduction, log_target=bool(log_target), batch=batch)


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
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        eps: keeps ``log(input + eps)`` finite when ``log_input`` is False.
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("poisson_nll_loss", size_average, reduce, reduction)
    check_reduction("poisson_nll_loss", reduction)
    check_number("poisson_nll_loss", "eps", eps, 0.0)
    input, target = broadcast_pair("poisson_nll_loss", input, target)  # noqa: A001 - silently, as PyTorch
    return PoissonNLLLoss.apply(input, target, log_input=bool(log_input), full=bool(full), eps=float(eps),
                                reduction=reduction)


def _gaussian_var(input, var):  # noqa: A002
    """``var`` shaped to broadcast with ``input`` (homoscedastic: one dimension short or one of size 1)."""
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return unsqueeze(var, -1)
    mismatched = [v for i, v in zip(input.shape, var.shape) if i != v]
    if input.ndim == var.ndim and mismatched == [1]:
        return var
    raise ValueError(f"gaussian_nll_loss: var is of incorrect size: {list(var.shape)} for input of size "
                     f"{list(input.shape)}")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """Gaussian negative log-likelihood ``0.5 * (log(var) + (input - target)^2 / var)`` (composite, as PyTorch).

    NOTE: as PyTorch, ``var`` is clamped to ``eps`` for the value only: its gradient is taken at the
    clamped value and passes to ``var`` as if the clamp were not there.

    Args:
        input: the predicted means, a floating Tensor.
        target: the observations (broadcast with ``input``).
        var: the predicted variances (>= 0): the input's shape, one dimension short, or one dimension of size 1;
            or a float.
        full: add the constant ``0.5 * log(2 pi)``.
        eps: the smallest variance used.
        reduction: 'none', 'mean' or 'sum'.
    """
    check_tensor("gaussian_nll_loss", "input", input)
    check_tensor("gaussian_nll_loss", "target", target)
    if isinstance(var, numbers.Real) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        var = Tensor(xp_of(input).full(tuple(input.shape), float(var), dtype=input.dtype))
    check_tensor("gaussian_nll_loss", "var", var)
    if bool((var.array < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    var = _gaussian_var(input, var)
    if reduction not in REDUCTIONS:
        raise ValueError(f"gaussian_nll_loss: {reduction} is not valid")
    check_number("gaussian_nll_loss", "eps", eps, 0.0)
    held = var.detach()
    var = var + (clamp(held, min=float(eps)) - held)  # NOTE: the clamp changes the value, not the gradient
    loss = 0.5 * (log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2.0 * math.pi)
    return reduce_loss(loss, reduction)


METHODS = {}  # NOTE: losses are functions only, not Tensor methods

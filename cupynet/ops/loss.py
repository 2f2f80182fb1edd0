"""Loss functions with ``torch.nn.functional``'s names, signatures and reductions.

NOTE (numerics): every loss computes in fp32 for float16/bfloat16 inputs and
rounds the result once (see ``_loss_util``). ``cross_entropy`` is one fused op:
a stable log-softmax (max subtracted) and the negative log-likelihood in one
forward, and the gradient ``g * (softmax(x) * sum(q) - q)`` in backward, where
``q`` is the (weighted, smoothed) target distribution.

AMP: the losses on PyTorch's CUDA fp32 list say ``fp32``; ``cross_entropy`` is
fp32 too (in PyTorch it is log_softmax + nll_loss, both fp32); ``binary_cross_entropy``
is ``banned`` under autocast (use ``binary_cross_entropy_with_logits``).

Deliberate difference from PyTorch: a target whose shape differs from the
input's is an error here (PyTorch warns and broadcasts, which is nearly always a bug).
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.state import is_grad_enabled
from ..tensor import Tensor
from ._class_loss_util import (
    _check_class_input,
    _class_dim,
    _class_weight,
    _index_terms,
    _log_softmax_array,
    _log_softmax_ops,
    _row_softmax,
)
from ._loss_util import (
    back_to,
    check_number,
    check_optional_weight,
    check_reduction,
    check_same_device,
    check_same_shape,
    compute_arrays,
    expand_grad,
    fp32,
    log_sigmoid,
    no_legacy,
    numel,
    reduce_array,
    sigmoid,
)
from ._util import xp_of
from .arith import maximum
from .loss_pointwise import (
    cosine_similarity,
    hinge_embedding_loss,
    huber_loss,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
)
from .reduce import sum as sum_
from .shape import unsqueeze
from .unary import exp, log

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "cosine_similarity"]

BCE_BANNED_MESSAGE = (
    "cupynet.nn.functional.binary_cross_entropy and cupynet.nn.BCELoss are unsafe to autocast. Many models use a "
    "sigmoid layer right before the binary cross entropy layer. In this case, combine the two layers using "
    "cupynet.nn.functional.binary_cross_entropy_with_logits or cupynet.nn.BCEWithLogitsLoss. "
    "binary_cross_entropy_with_logits and BCEWithLogits are safe to autocast."
)


# ----------------------------------------------------------------------------- class-index losses


class CrossEntropy(Function):
    """Fused log-softmax + negative log-likelihood, class indices or class probabilities (fp32 under autocast)."""

    op_name = "cross_entropy"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        (xf,), out_dtype = compute_arrays(x)
        if xf.ndim == 2 and weight is None and not label_smoothing and not dtypes.is_floating(target.dtype):
            return CrossEntropy._plain_forward(ctx, x, xf, target, ignore_index, reduction, out_dtype)
        cdim, n_classes = _class_dim(xf), xf.shape[_class_dim(xf)]
        logp = _log_softmax_array(xf, cdim)
        ctx.cdim, ctx.reduction, ctx.smoothing = cdim, reduction, label_smoothing
        ctx.prob = xp_of(xf).exp(logp)
        if dtypes.is_floating(target.dtype):
            ctx.save_for_backward(x, target)
            ctx.w_class = _class_weight(weight, xf, cdim)
            q = (target.data.astype(xf.dtype) * (1.0 - label_smoothing) + label_smoothing / n_classes) * ctx.w_class
            elem, ctx.divisor, ctx.q = -(logp * q).sum(axis=cdim), None, None
        else:
            ctx.save_for_backward(x, None)
            picked_at, w_t, valid, ctx.q = _index_terms(xf, target.data, weight, ignore_index, label_smoothing)
            elem = -(1.0 - label_smoothing) * w_t * xp_of(xf).take_along_axis(logp, picked_at, cdim).squeeze(cdim)
            if label_smoothing:
                w_class = _class_weight(weight, xf, cdim)
                elem = elem - (label_smoothing / n_classes) * (logp * w_class).sum(axis=cdim) * valid
            ctx.divisor = xp_of(xf).asarray(w_t.sum()) if reduction == "mean" else None
        ctx.elem_shape = elem.shape
        return reduce_array(elem, reduction, out_dtype, ctx.divisor)

    @staticmethod
    def _plain_forward(ctx, x, xf, target, ignore_index, reduction, out_dtype):
        """The common case, (N, C) logits and class indices, no weight or smoothing, in a few array passes.

        NOTE: same math as the general path: ``loss_r = lse_r - x[r, t_r]`` with the
        log-sum-exp taken relative to the row max; ``q`` (the one-hot target) is only
        built if a double backward asks for it.
        """
        xp = xp_of(xf)
        shifted, prob, log_total = _row_softmax(xf, xp)
        t = target.data
        valid = t != ignore_index
        if xp is numpy and valid.all():
            # NOTE: on the CPU, reading "nothing is ignored" costs no sync and saves three passes
            safe, valid, count = t, None, t.size
        else:
            safe = xp.where(valid, t, 0)  # NOTE: ignored rows index class 0, then count zero
            count = valid.sum(dtype=xf.dtype)
        rows = xp.arange(xf.shape[0])
        elem = log_total - shifted[rows, safe]
        if valid is not None:
            elem *= valid
        ctx.save_for_backward(x, None)
        ctx.cdim, ctx.reduction, ctx.smoothing, ctx.elem_shape = 1, reduction, 0.0, elem.shape
        ctx.prob, ctx.plain, ctx.q = prob, (rows, safe, valid), None
        ctx.divisor = xp.asarray(count, dtype=xf.dtype) if reduction == "mean" else None
        return reduce_array(elem.astype(xf.dtype, copy=False), reduction, out_dtype, ctx.divisor)

    @staticmethod
    def _plain_q(ctx):
        rows, safe, valid = ctx.plain
        q = ctx.prob * 0
        q[rows, safe] = 1 if valid is None else valid
        return q

    @staticmethod
    def backward(ctx, grad):
        x, target = ctx.saved_tensors
        if ctx.q is None and getattr(ctx, "plain", None) is not None:
            if not is_grad_enabled():
                return CrossEntropy._plain_backward(ctx, grad, x), None
            ctx.q = CrossEntropy._plain_q(ctx)
        divisor = Tensor(_grad_divisor(ctx.divisor)) if ctx.divisor is not None else max(1, numel(ctx.elem_shape))
        g = unsqueeze(expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, divisor), ctx.cdim)
        if target is not None:
            return CrossEntropy._probability_backward(ctx, g, x, target)
        q = ctx.q
        if not is_grad_enabled():
            # NOTE: first-order fast path: the softmax saved by forward, no recomputation.
            gx = g.data * (ctx.prob * q.sum(axis=ctx.cdim, keepdims=True) - q)
            return back_to(Tensor(gx), x.dtype), None
        prob = exp(_log_softmax_ops(fp32(x), ctx.cdim))
        gx = g * (prob * Tensor(q.sum(axis=ctx.cdim, keepdims=True)) - Tensor(q))
        return back_to(gx, x.dtype), None

    @staticmethod
    def _plain_backward(ctx, grad, x):
        # NOTE: d loss_r / d x[r] = softmax(x[r]) - onehot(t_r), times the row's share of the reduction
        rows, safe, valid = ctx.plain
        g = grad.data.astype(ctx.prob.dtype, copy=False)
        if ctx.reduction == "mean":
            g = g / _grad_divisor(ctx.divisor)
        scale = g[:, None] if ctx.reduction == "none" else g.reshape(1, 1)
        if valid is not None:
            scale = scale * valid[:, None]
        gx = ctx.prob * scale
        gx[rows, safe] -= scale[:, 0]  # scale is (N, 1) for every reduction
        return back_to(Tensor(gx), x.dtype)

    @staticmethod
    def _probability_backward(ctx, g, x, target):
        s, n_classes = ctx.smoothing, x.shape[ctx.cdim]
        w = Tensor(ctx.w_class) if not isinstance(ctx.w_class, float) else 1.0
        logp = _log_softmax_ops(fp32(x), ctx.cdim)
        gx = gt = None
        if ctx.needs_input_grad[0]:
            q = (fp32(target) * (1.0 - s) + s / n_classes) * w
            gx = back_to(g * (exp(logp) * sum_(q, dim=ctx.cdim, keepdim=True) - q), x.dtype)
        if ctx.needs_input_grad[1]:
            gt = back_to(-g * logp * w * (1.0 - s), target.dtype)
        return gx, gt


class NLLLoss(Function):
    """Negative log-likelihood of class indices given log-probabilities (fp32 under autocast)."""

    op_name = "nll_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, weight=None, ignore_index=-100, reduction="mean"):
        (xf,), out_dtype = compute_arrays(x)
        picked_at, w_t, _, ctx.q = _index_terms(xf, target.data, weight, ignore_index, 0.0)
        elem = -w_t * xp_of(xf).take_along_axis(xf, picked_at, _class_dim(xf)).squeeze(_class_dim(xf))
        ctx.reduction, ctx.elem_shape, ctx.cdim, ctx.dtype = reduction, elem.shape, _class_dim(xf), x.dtype
        ctx.divisor = xp_of(xf).asarray(w_t.sum())
        return reduce_array(elem, reduction, out_dtype, ctx.divisor if reduction == "mean" else None)

    @staticmethod
    def backward(ctx, grad):
        g = unsqueeze(expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, Tensor(_grad_divisor(ctx.divisor))),
                      ctx.cdim)
        return back_to(-g * Tensor(ctx.q), ctx.dtype), None


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits against class indices or class probabilities (fused, stable).

    ``loss = -sum_c q_c * log_softmax(input)_c``, with ``q`` the one-hot (or given)
    target, weighted per class and smoothed: ``q = (1 - s) q + s / C``.

    Args:
        input: logits of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: integer class indices of shape ``(N, d1, ...)``, or probabilities of the input's shape.
        weight: optional per-class weights of shape ``(C,)``.
        size_average: deprecated in PyTorch; must be None.
        ignore_index: a class index whose elements contribute nothing (index targets only).
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' (weighted mean over non-ignored elements) or 'sum'.
        label_smoothing: ``s`` in [0, 1].
    """
    no_legacy("cross_entropy", size_average, reduce)
    check_number("cross_entropy", "label_smoothing", label_smoothing, 0.0, 1.0)
    _check_class_input("cross_entropy", input, target, weight, ignore_index, reduction, True)
    check_same_device("cross_entropy", input=input, target=target, weight=weight)
    return CrossEntropy.apply(input, target, weight=weight, ignore_index=int(ignore_index), reduction=reduction,
                              label_smoothing=float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """Negative log-likelihood: ``-weight[t] * input[t]`` per element, for log-probability inputs.

    Args:
        input: log-probabilities of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: integer class indices of shape ``(N, d1, ...)``.
        weight: optional per-class weights of shape ``(C,)``.
        size_average: deprecated in PyTorch; must be None.
        ignore_index: a class index whose elements contribute nothing.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' (divided by the summed weights of non-ignored elements) or 'sum'.
    """
    no_legacy("nll_loss", size_average, reduce)
    _check_class_input("nll_loss", input, target, weight, ignore_index, reduction, False)
    check_same_device("nll_loss", input=input, target=target, weight=weight)
    return NLLLoss.apply(input, target, weight=weight, ignore_index=int(ignore_index), reduction=reduction)


# ----------------------------------------------------------------------------- binary and KL losses


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
        ctx.weight = weight.data.astype(pf.dtype) if weight is not None else None
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


class BinaryCrossEntropyWithLogits(Function):
    """Sigmoid + binary cross entropy in one stable op, with ``pos_weight`` (fp32 under autocast)."""

    op_name = "binary_cross_entropy_with_logits"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, t, weight=None, pos_weight=None, reduction="mean"):
        (xf, tf), out_dtype = compute_arrays(x, t)
        xp = xp_of(xf)
        # NOTE: -log(sigmoid(x)) = softplus(-x) = max(-x, 0) + log1p(exp(-|x|)): no overflow for any x
        softplus_neg = xp.maximum(-xf, 0.0) + xp.log1p(xp.exp(-xp.abs(xf)))
        ctx.pos_weight = pos_weight.data.astype(xf.dtype) if pos_weight is not None else None
        log_weight = 1.0 + (ctx.pos_weight - 1.0) * tf if pos_weight is not None else 1.0
        elem = (1.0 - tf) * xf + log_weight * softplus_neg
        ctx.weight = weight.data.astype(xf.dtype) if weight is not None else None
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
            gt = back_to(g * ((1.0 - pw) * log_sigmoid(xf) - xf), t.dtype)
        return gx, gt


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """Binary cross entropy of probabilities ``input`` against ``target`` (an error under autocast).

    Args:
        input: probabilities in [0, 1].
        target: floating targets in [0, 1] of the same shape.
        weight: optional weights broadcasting to the input's shape (no gradient).
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
    """
    no_legacy("binary_cross_entropy", size_average, reduce)
    check_same_shape("binary_cross_entropy", input, target)
    check_reduction("binary_cross_entropy", reduction)
    check_optional_weight("binary_cross_entropy", "weight", weight, input.shape)
    check_same_device("binary_cross_entropy", input=input, target=target, weight=weight)
    _check_probabilities("binary_cross_entropy", input)
    return BinaryCrossEntropy.apply(input, target, weight=weight, reduction=reduction)


def _check_probabilities(op, t):
    """Raise when a probability input leaves [0, 1] (one host sync on a GPU, as PyTorch's check)."""
    xp = xp_of(t)
    outside = xp.logical_or(t.data < 0, t.data > 1).any()
    if bool(outside):
        raise ValueError(f"{op}: all elements of input should be between 0 and 1")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)`` against ``target``, computed stably from the logits.

    Args:
        input: logits.
        target: floating targets in [0, 1] of the same shape.
        weight: optional weights broadcasting to the input's shape (no gradient).
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'mean' or 'sum'.
        pos_weight: optional weight of positive examples, broadcasting along the last (class) dim.
    """
    op = "binary_cross_entropy_with_logits"
    no_legacy(op, size_average, reduce)
    check_same_shape(op, input, target)
    check_reduction(op, reduction)
    check_optional_weight(op, "weight", weight, input.shape)
    check_optional_weight(op, "pos_weight", pos_weight, input.shape)
    check_same_device(op, input=input, target=target, weight=weight, pos_weight=pos_weight)
    return BinaryCrossEntropyWithLogits.apply(input, target, weight=weight, pos_weight=pos_weight,
                                              reduction=reduction)


def _grad_divisor(divisor):
    """The total weight a 'mean' gradient divides by, with 0 replaced by 1.

    NOTE: a zero total weight (every target ignored, or an empty batch) makes the loss
    0 / 0 = nan, but then every element's weight is 0 too: PyTorch's gradient is 0, which
    dividing by 1 gives, where dividing by 0 would give 0 * inf = nan.
    """
    return xp_of(divisor).where(divisor == 0, 1, divisor).astype(divisor.dtype, copy=False)


def _divisor(reduction, elem_shape, batch):
    """What 'mean' / 'batchmean' divide by (None for 'sum' and 'none').

    NOTE: an empty input divides by NaN: PyTorch's 0 / 0 = nan, without NumPy's divide-by-zero warning.
    """
    if reduction == "batchmean":
        return batch or float("nan")
    return (numel(elem_shape) or float("nan")) if reduction == "mean" else None


class KLDiv(Function):
    """Pointwise KL divergence ``target * (log(target) - input)`` for log-probability inputs (fp32 under autocast)."""

    op_name = "kl_div"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, t, reduction="mean", log_target=False):
        (xf, tf), out_dtype = compute_arrays(x, t)
        xp = xp_of(xf)
        if log_target:
            elem = xp.exp(tf) * (tf - xf)
        else:
            # NOTE: xlogy: 0 * log(0) is taken as 0, so zero-probability targets add nothing
            positive = tf > 0
            elem = xp.where(positive, tf * xp.log(xp.where(positive, tf, 1.0)), 0.0) - tf * xf
        ctx.reduction, ctx.log_target, ctx.elem_shape = reduction, log_target, elem.shape
        ctx.divisor = _divisor(reduction, elem.shape, x.shape[0] if x.ndim else 1)
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
        size_average: deprecated in PyTorch; must be None.
        reduce: deprecated in PyTorch; must be None.
        reduction: 'none', 'batchmean' (the true KL: sum / batch size), 'sum' or 'mean' (over all elements).
        log_target: whether ``target`` holds log-probabilities.
    """
    no_legacy("kl_div", size_average, reduce)
    check_same_shape("kl_div", input, target)
    check_reduction("kl_div", reduction, ("none", "batchmean", "sum", "mean"))
    return KLDiv.apply(input, target, reduction=reduction, log_target=bool(log_target))


METHODS = {}

"""Margin losses: hinge, ranking and logistic losses that ask for a gap between scores.

Pairs and embeddings: ``hinge_embedding_loss``, ``margin_ranking_loss``,
``soft_margin_loss``, ``triplet_margin_loss``, ``cosine_embedding_loss``;
classes: ``multi_margin_loss``, ``multilabel_margin_loss``,
``multilabel_soft_margin_loss``. The triplet, cosine-embedding and multi-class
hinge losses are written once, as expressions of cupynet ops
(``_ExpressionLoss``), and differentiated by autograd.
"""

from __future__ import annotations

import numpy

from ... import dtypes
from ...autograd.engine import grad as engine_grad
from ...autograd.function import Function
from ...autograd.grad_mode import enable_grad
from ...autograd.state import is_grad_enabled
from ...tensor import Tensor
from .._util import host_check_range, xp_of
from ..arith import minimum
from ..clamping import clamp
from ..indexing import gather, where
from ..reduce import sum as sum_
from ..shape import broadcast_to, reshape, unsqueeze
from ..smooth_activation import Logsigmoid, logsigmoid, sigmoid
from .arguments import broadcast_shape, check_number, check_reduction, check_tensor, legacy_reduction
from .distance import pairwise_distance
from .reduction import back_to, compute_arrays, expand_grad, fp32, numel, reduce_array, reduce_loss

__all__ = ["hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
           "cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss"]


class HingeEmbeddingLoss(Function):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (fp32 under autocast)."""

    op_name = "hinge_embedding_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, margin=1.0, reduction="mean"):
        (xf,), out_dtype = compute_arrays(x)
        xp, t = xp_of(xf), target.array
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


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """Hinge embedding loss: ``input`` for targets 1, ``max(0, margin - input)`` for targets -1.

    Args:
        input: a floating Tensor (typically distances).
        target: a Tensor of 1 and -1 of the same shape (no gradient).
        margin: the margin for negative pairs.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("hinge_embedding_loss", size_average, reduce, reduction)
    check_tensor("hinge_embedding_loss", "input", input)
    check_tensor("hinge_embedding_loss", "target", target, floating=False)
    check_number("hinge_embedding_loss", "margin", margin)
    check_reduction("hinge_embedding_loss", reduction)
    if input.shape != target.shape:  # NOTE: broadcast silently, as PyTorch (the target gets no gradient)
        shape = broadcast_shape("hinge_embedding_loss", (("input", tuple(input.shape)),
                                                         ("target", tuple(target.shape))))
        input, target = broadcast_to(input, shape), broadcast_to(target.detach(), shape)  # noqa: A001
    return HingeEmbeddingLoss.apply(input, target, margin=float(margin), reduction=reduction)


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


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """Ranking loss ``max(0, -target * (input1 - input2) + margin)``: target 1 wants input1 ranked higher.

    Args:
        input1: a floating Tensor.
        input2: a floating Tensor of the same shape.
        target: a floating Tensor of 1 and -1 of the same shape.
        margin: the wanted gap.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("margin_ranking_loss", size_average, reduce, reduction)
    for name, t in (("input1", input1), ("input2", input2), ("target", target)):
        check_tensor("margin_ranking_loss", name, t)
    check_number("margin_ranking_loss", "margin", margin)
    check_reduction("margin_ranking_loss", reduction)
    named = (("input1", tuple(input1.shape)), ("input2", tuple(input2.shape)), ("target", tuple(target.shape)))
    if not input1.ndim == input2.ndim == target.ndim:  # NOTE: PyTorch's own check, then it broadcasts
        raise RuntimeError("margin_ranking_loss: All input tensors should have same dimension but got sizes: "
                           + ", ".join(f"{name}: {shape}" for name, shape in named))
    shape = broadcast_shape("margin_ranking_loss", named)
    input1, input2, target = (broadcast_to(t, shape) for t in (input1, input2, target))
    return MarginRankingLoss.apply(input1, input2, target, margin=float(margin), reduction=reduction)


class SoftMarginLoss(Function):
    """Logistic loss ``log(1 + exp(-target * input))`` for targets of +-1 (fp32 under autocast)."""

    op_name = "soft_margin_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, y, reduction="mean"):
        (xf, yf), out_dtype = compute_arrays(x, y)
        # NOTE: log(1 + exp(-z)) = -log(sigmoid(z)), computed stably by the logsigmoid op's kernel
        elem = -Logsigmoid.kernel(xp_of(xf), yf * xf)
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


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Two-class logistic loss ``log(1 + exp(-target * input))``.

    Args:
        input: a floating Tensor.
        target: a floating Tensor of 1 and -1 of the same shape (no gradient).
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("soft_margin_loss", size_average, reduce, reduction)
    check_tensor("soft_margin_loss", "input", input)
    check_tensor("soft_margin_loss", "target", target)
    check_reduction("soft_margin_loss", reduction)
    if is_grad_enabled() and target.requires_grad:  # NOTE: as PyTorch: its target gets no gradient, so none may ask
        raise RuntimeError("soft_margin_loss: The function 'soft_margin_loss' is not differentiable with respect to "
                           "argument 'target'. This input cannot have requires_grad True.")
    if input.shape != target.shape:  # NOTE: the target broadcasts to the input's shape, silently, as PyTorch
        shape = broadcast_shape("soft_margin_loss", (("input", tuple(input.shape)), ("target", tuple(target.shape))))
        if shape != tuple(input.shape):
            raise RuntimeError(f"soft_margin_loss: output with shape {tuple(input.shape)} doesn't match the "
                               f"broadcast shape {shape}")
        target = broadcast_to(target, shape)
    return SoftMarginLoss.apply(input, target, reduction=reduction)


class _ExpressionLoss(Function):
    """A loss on PyTorch's autocast fp32 list written as one expression of cupynet ops (not an op itself).

    ``forward`` evaluates ``expression`` on the inputs in fp32 (float64 stays float64) with the graph
    off and rounds the result once to the input's dtype; ``backward`` evaluates it again with the graph
    on and differentiates it with cupynet's autograd (recording, ``create_graph``, when grad mode is on,
    so second derivatives work). NOTE: the price is one more forward of the expression during backward;
    these losses are a few elementwise passes over (N, C) next to a model's matmuls.
    """

    amp_policy = "fp32"

    @staticmethod
    def expression(*tensors, **options):
        """The loss as cupynet ops.

        Args:
            *tensors: the inputs (floating ones in fp32 or float64).
            **options: the loss's options (reduction, margin, ...).
        """
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, *tensors, **options):
        """Evaluate the expression without a graph.

        Args:
            ctx: the node.
            *tensors: the inputs.
            **options: passed to ``expression``.
        """
        ctx.save_for_backward(*tensors)
        ctx.options = options
        return cls.expression(*(fp32(t) for t in tensors), **options).array.astype(tensors[0].dtype, copy=False)

    @classmethod
    def backward(cls, ctx, grad):
        """Differentiate the expression, evaluated again with the graph on.

        Args:
            ctx: the node.
            grad: the output's gradient.
        """
        create_graph = is_grad_enabled()
        leaves = []
        for t, needed in zip(ctx.saved_tensors, ctx.needs_input_grad):
            if needed:  # NOTE: an alias keeps t's graph for create_graph; a fresh leaf otherwise
                leaves.append(t.view_as(t) if create_graph else t.detach().requires_grad_(True))
            else:
                leaves.append(t.detach())
        with enable_grad():
            out = cls.expression(*(fp32(t) for t in leaves), **ctx.options)
        wanted = [t for t, needed in zip(leaves, ctx.needs_input_grad) if needed]
        found = iter(engine_grad(out, wanted, fp32(grad), create_graph=create_graph, allow_unused=True))
        return tuple(next(found) if needed else None for needed in ctx.needs_input_grad)


class TripletMarginLoss(_ExpressionLoss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with pairwise p-norm distances (fp32 under autocast)."""

    op_name = "triplet_margin_loss"

    @staticmethod
    def expression(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
        d_pos = pairwise_distance(anchor, positive, p, eps)
        d_neg = pairwise_distance(anchor, negative, p, eps)
        if swap:  # NOTE: the harder negative of the two (Balntas et al.'s distance swap)
            d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
        return reduce_loss(clamp(margin + d_pos - d_neg, min=0.0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """Triplet loss: the anchor should be nearer the positive than the negative by ``margin``.

    Args:
        anchor: a floating Tensor (N, D) or (D,).
        positive: a floating Tensor of the same number of dimensions.
        negative: a floating Tensor of the same number of dimensions.
        margin: the wanted gap between the distances.
        p: the norm's order of the pairwise distance.
        eps: added to differences (see ``pairwise_distance``).
        swap: use min(d(a, n), d(p, n)) as the negative distance.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("triplet_margin_loss", size_average, reduce, reduction)
    named = (("anchor", anchor), ("positive", positive), ("negative", negative))
    for name, t in named:
        check_tensor("triplet_margin_loss", name, t)
    check_number("triplet_margin_loss", "margin", margin)
    check_number("triplet_margin_loss", "p", p, 0.0)
    check_number("triplet_margin_loss", "eps", eps)
    check_reduction("triplet_margin_loss", reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"triplet_margin_loss: The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, "
                           f"and negative {negative.ndim}D inputs")
    broadcast_shape("triplet_margin_loss", tuple((name, tuple(t.shape)) for name, t in named))
    return TripletMarginLoss.apply(anchor, positive, negative, margin=float(margin), p=float(p), eps=float(eps),
                                   swap=bool(swap), reduction=reduction)


class CosineEmbeddingLoss(_ExpressionLoss):
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where -1 (fp32 under autocast)."""

    op_name = "cosine_embedding_loss"

    @staticmethod
    def expression(x1, x2, target, margin=0.0, reduction="mean"):
        dim = target.ndim
        # NOTE: 1e-12 added to each squared norm, as PyTorch: a zero vector gives cos = 0, not nan
        sq1, sq2 = sum_(x1 * x1, dim=dim) + 1e-12, sum_(x2 * x2, dim=dim) + 1e-12
        cos = sum_(x1 * x2, dim=dim) / (sq1 * sq2) ** 0.5
        zero = cos * 0.0
        loss = where(target == 1, 1.0 - cos, zero) + where(target == -1, clamp(cos - margin, min=0.0), zero)
        return reduce_loss(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,  # noqa: A002
                          reduction="mean"):
    """Embedding loss from the cosine similarity: pull pairs with target 1 together, push -1 pairs apart.

    Args:
        input1: a floating Tensor (N, D), or (D,) with a 0-d target.
        input2: a floating Tensor of the same shape.
        target: 1 or -1 per pair, (N,) or 0-d (no gradient).
        margin: negative pairs cost nothing below this cosine (in [-1, 1]; 0 to 0.5 is typical).
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("cosine_embedding_loss", size_average, reduce, reduction)
    check_tensor("cosine_embedding_loss", "input1", input1)
    check_tensor("cosine_embedding_loss", "input2", input2)
    check_tensor("cosine_embedding_loss", "target", target, floating=False)
    check_number("cosine_embedding_loss", "margin", margin)
    check_reduction("cosine_embedding_loss", reduction)
    if target.ndim > 1:
        raise RuntimeError("cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported")
    want = target.ndim + 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"cosine_embedding_loss: {target.ndim}D target tensor expects {want}D input tensors, but "
                           f"found inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    if tuple(input1.shape) != tuple(input2.shape) or tuple(input1.shape[:-1]) != tuple(target.shape):
        raise RuntimeError(f"cosine_embedding_loss: input1 {list(input1.shape)}, input2 {list(input2.shape)} and "
                           f"target {list(target.shape)} do not match: expected (N, D), (N, D) and (N,)")
    return CosineEmbeddingLoss.apply(input1, input2, target.detach(), margin=float(margin), reduction=reduction)


def _class_rows(op, input, target, reduction):  # noqa: A002
    """Check a (C,) / (N, C) input, its class-index target and the reduction; the (N, C) input and the target."""
    check_tensor(op, "input", input)
    check_tensor(op, "target", target, floating=False)
    check_reduction(op, reduction)
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if dtypes.is_floating(target.dtype) or target.dtype == numpy.bool_:
        raise RuntimeError(f"{op}: expected target of an integer dtype (class indices), got {target.dtype}")
    rows = 1 if input.ndim == 1 else input.shape[0]
    return reshape(input, (rows, input.shape[-1])), target


def _out_shape(input, reduction):  # noqa: A002
    return () if input.ndim == 1 or reduction != "none" else (input.shape[0],)


class MultiMarginLoss(_ExpressionLoss):
    """``sum_{j != y} w[y] * max(0, margin - x[y] + x[j])^p / C`` per sample (fp32 under autocast)."""

    op_name = "multi_margin_loss"

    @staticmethod
    def expression(x, target, weight=None, p=1, margin=1.0, reduction="mean", shape=()):
        index = unsqueeze(target, 1)
        z = clamp(margin - gather(x, 1, index) + x, min=0.0)
        z = z * z if p == 2 else z
        if weight is not None:
            z = z * unsqueeze(weight[target], 1)
        other = Tensor(xp_of(x.array).arange(x.shape[1]) != index.array).to(x.dtype)  # NOTE: j != y
        loss = sum_(z * other, dim=1) / x.shape[1]
        return reduce_loss(reshape(loss, shape) if reduction == "none" else loss, reduction, empty_mean=0.0)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,  # noqa: A002
                      reduction="mean"):
    """Multi-class hinge loss: every other class should score ``margin`` below the target class.

    Args:
        input: a floating Tensor of scores (N, C) or (C,).
        target: class indices (N,) or 0-d, of an integer dtype (no gradient).
        p: 1 or 2 (the hinge, or its square).
        margin: the wanted gap.
        weight: per-class weights (C,) applied by target class, or None.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    check_number("multi_margin_loss", "margin", margin)
    if p not in (1, 2) or isinstance(p, bool):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 supported, got {p!r}")
    reduction = legacy_reduction("multi_margin_loss", size_average, reduce, reduction)
    x, target = _class_rows("multi_margin_loss", input, target, reduction)
    if target.array.size != x.shape[0] or target.ndim > 1:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    host_check_range("multi_margin_loss", target.array, 0, x.shape[1] - 1,
                     f"target out of range: class indices in [0, {x.shape[1]})")
    if weight is not None:
        check_tensor("multi_margin_loss", "weight", weight)
        if weight.ndim != 1 or weight.shape[0] != x.shape[1]:
            raise RuntimeError(f"multi_margin_loss: inconsistent weight size, expected {x.shape[1]} but got "
                               f"{list(weight.shape)}")
    args = (x, reshape(target.detach(), (x.shape[0],))) + ((weight,) if weight is not None else ())
    return MultiMarginLoss.apply(*args, p=int(p), margin=float(margin), reduction=reduction,
                                 shape=_out_shape(input, reduction))


def _label_slots(target, n_classes):
    """Targets as gather indices, the mask of slots before the first -1, and the (N, C) mask of target classes."""
    xp, t = xp_of(target), target.array
    valid = xp.cumprod(t >= 0, axis=1).astype(bool)  # NOTE: the first -1 ends a row's list of targets
    slots = xp.where(valid, t, 0)
    is_target = xp.zeros(t.shape, dtype=bool)
    rows = xp.broadcast_to(xp.arange(t.shape[0])[:, None], t.shape)
    is_target[rows[valid], slots[valid]] = True
    return Tensor(slots), Tensor(valid), Tensor(is_target)


class MultiLabelMarginLoss(_ExpressionLoss):
    """``sum_{j in targets, k not in targets} max(0, 1 - (x[j] - x[k])) / C`` per sample (fp32 under autocast)."""

    op_name = "multilabel_margin_loss"

    @staticmethod
    def expression(x, slots, valid, is_target, reduction="mean", shape=()):
        # NOTE: (N, slot, class): every listed target against every class that is not a target
        x_t = unsqueeze(gather(x, 1, slots), 2)
        hinge = clamp(1.0 - x_t + unsqueeze(x, 1), min=0.0)
        pairs = unsqueeze(valid, 2) * unsqueeze(1.0 - is_target, 1)
        loss = sum_(hinge * pairs, dim=(1, 2)) / x.shape[1]
        return reduce_loss(reshape(loss, shape) if reduction == "none" else loss, reduction, empty_mean=0.0)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Multi-label hinge loss: every target class should score 1 above every non-target class.

    Args:
        input: a floating Tensor of scores (N, C) or (C,).
        target: the same shape, integer class indices per row, ended by the first -1 (no gradient).
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("multilabel_margin_loss", size_average, reduce, reduction)
    x, target = _class_rows("multilabel_margin_loss", input, target, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    host_check_range("multilabel_margin_loss", target.array, -1, x.shape[1] - 1,
                     f"target out of range: class indices in [0, {x.shape[1]}) or -1")
    slots, valid, is_target = _label_slots(reshape(target.detach(), tuple(x.shape)), x.shape[1])
    return MultiLabelMarginLoss.apply(x, slots, valid.to(x.dtype), is_target.to(x.dtype), reduction=reduction,
                                      shape=_out_shape(input, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction="mean"):
    """One-versus-all logistic loss over the classes, averaged over the classes (composite, as in PyTorch).

    ``-(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))`` (times ``weight``), summed
    over the last dimension and divided by the number of classes.

    Args:
        input: a floating Tensor (N, C) (or (C,)).
        target: a floating Tensor of the same shape with values in [0, 1].
        weight: per-class weights broadcast to the input, or None.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' or 'sum'.
    """
    reduction = legacy_reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    check_tensor("multilabel_soft_margin_loss", "input", input)
    check_tensor("multilabel_soft_margin_loss", "target", target)
    check_reduction("multilabel_soft_margin_loss", reduction)
    if input.ndim == 0:
        raise RuntimeError("multilabel_soft_margin_loss: expected an input with a class dimension, got a 0-d one")
    broadcast_shape("multilabel_soft_margin_loss", (("input", tuple(input.shape)), ("target", tuple(target.shape))))
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        check_tensor("multilabel_soft_margin_loss", "weight", weight)
        loss = loss * weight
    return reduce_loss(sum_(loss, dim=input.ndim - 1) / input.shape[-1], reduction)


METHODS = {}  # NOTE: losses are functions only, not Tensor methods

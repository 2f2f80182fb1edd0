"""Classification losses over class scores: ``cross_entropy`` and ``nll_loss``.

``cross_entropy`` is the log-softmax and the negative log-likelihood in one op:
a stable log-softmax in forward (the ``log_softmax`` op's own kernel: the row
max subtracted), and the gradient ``g * (softmax(x) * sum(q) - q)`` in backward,
where ``q`` is the (weighted, smoothed) target distribution. The public function
chooses one of three ops, each with its own forward and backward:
``FusedCrossEntropy`` ((N, C) logits and int32/int64 indices on the GPU: one
kernel each way), ``PlainCrossEntropy`` ((N, C) logits and class indices without
weight or smoothing: a few array passes) and ``CrossEntropy`` (any shape, class
weights, label smoothing, probability targets). They give the same values; a
double backward takes ``CrossEntropy``'s graph formula in all three.

AMP: both are fp32 (in PyTorch ``cross_entropy`` is log_softmax + nll_loss, both fp32).
"""

from __future__ import annotations

import numpy

from ... import dtypes
from ...autograd.function import Function
from ...autograd.state import is_grad_enabled
from ...checks import check_int
from ...tensor import Tensor
from .. import _rows
from .. import kernels as fused
from .._util import check_same_device, host_check_range, xp_of
from ..reduce import sum as sum_
from ..shape import reshape, unsqueeze
from ..softmax_family import LogSoftmax, log_softmax
from ..unary import exp
from .arguments import REDUCTIONS, check_number, check_reduction, check_tensor, legacy_reduction
from .reduction import back_to, compute_arrays, expand_grad, fp32, numel, reduce_array

__all__ = ["cross_entropy", "nll_loss"]


def _class_dim(x):
    return 1 if x.ndim > 1 else 0


def _class_shape(ndim, cdim, n_classes):
    return tuple(n_classes if i == cdim else 1 for i in range(ndim))


def _class_weight(weight, xf, cdim):
    """The per-class weight as an array broadcasting along the class dim (1.0 when there is none)."""
    if weight is None:
        return 1.0
    return weight.array.astype(xf.dtype).reshape(_class_shape(xf.ndim, cdim, xf.shape[cdim]))


def _index_terms(xf, target, weight, ignore_index, smoothing):
    """Per-element weight ``w[t]`` (0 where ignored), the picked log-prob index, and the dense target ``q``.

    NOTE: ``q[c] = (1 - s) * w[t] * [c == t] + s / C * w[c]`` (zero for ignored
    elements) is the distribution the loss pulls the softmax towards.
    """
    xp, cdim, n_classes = xp_of(xf), _class_dim(xf), xf.shape[_class_dim(xf)]
    class_shape = _class_shape(xf.ndim, cdim, n_classes)
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    w_class = weight.array.astype(xf.dtype) if weight is not None else xp.ones(n_classes, dtype=xf.dtype)
    w_t = w_class[safe] * valid
    onehot = xp.expand_dims(safe, cdim) == xp.arange(n_classes).reshape(class_shape)
    q = onehot * xp.expand_dims(w_t * (1.0 - smoothing), cdim)
    if smoothing:
        q = q + w_class.reshape(class_shape) * xp.expand_dims(valid * (smoothing / n_classes), cdim)
    return xp.expand_dims(safe, cdim), w_t, valid, q.astype(xf.dtype, copy=False)


def _check_class_input(op, input, target, weight, ignore_index, reduction, allow_probabilities):  # noqa: A002
    """Check the arguments of cross_entropy / nll_loss; return the target as the op reads it."""
    check_tensor(op, "input", input)
    check_tensor(op, "target", target, floating=False)
    check_reduction(op, reduction)
    if input.ndim == 0:
        raise ValueError(f"{op}: expected input of shape (C,), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    cdim = _class_dim(input)
    n_classes = input.shape[cdim]
    if weight is not None:
        check_tensor(op, "weight", weight)
        if tuple(weight.shape) != (n_classes,):
            raise ValueError(f"{op}: weight must have shape ({n_classes},) for {n_classes} classes, "
                             f"got {tuple(weight.shape)}")
    if allow_probabilities and dtypes.is_floating(target.dtype):
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(f"{op}: class-probability target shape {tuple(target.shape)} does not match input "
                             f"shape {tuple(input.shape)}")
        if ignore_index >= 0:
            raise ValueError(f"{op}: ignore_index is not supported for floating point target, got "
                             f"ignore_index={ignore_index}")
        return target
    if target.dtype.kind not in "iu":
        expected = "integer class indices" + (" or floating class probabilities" if allow_probabilities else "")
        raise TypeError(f"{op}: expected target of {expected}, got dtype {target.dtype}")
    if input.ndim == 1 and target.ndim:
        # NOTE: as PyTorch, an unbatched input (C,) takes a 0-d target or a (1,) one (read as 0-d)
        if target.ndim > 1:
            raise RuntimeError(f"{op}: 0D or 1D target tensor expected, multi-target not supported (input shape "
                               f"{tuple(input.shape)}, target shape {tuple(target.shape)})")
        if target.shape[0] != 1:
            raise ValueError(f"{op}: For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        target = reshape(target, ())
    expected = tuple(input.shape[:cdim]) + tuple(input.shape[cdim + 1:])
    if tuple(target.shape) != expected:
        raise ValueError(f"{op}: expected target of shape {expected} for input of shape {tuple(input.shape)}, "
                         f"got target of shape {tuple(target.shape)}")
    host_check_range(op, target.array, 0, n_classes - 1, lambda: _index_range_message(n_classes, ignore_index),
                     ignore=ignore_index)
    return target


def _index_range_message(n_classes, ignore_index):
    return f"expected class indices in [0, {n_classes - 1}] for {n_classes} classes, or ignore_index={ignore_index}"


def _plain_call(input, target, weight, size_average, reduce, reduction, label_smoothing, ignore_index):  # noqa: A002
    """True for the common ``cross_entropy`` call ``PlainCrossEntropy`` runs on the CPU: (N, C) floating NumPy
    logits, (N,) integer NumPy indices, no weight, no smoothing, no legacy arguments, an int ignore_index."""
    return (isinstance(input, Tensor) and isinstance(target, Tensor) and weight is None and size_average is None
            and reduce is None and type(reduction) is str and reduction in REDUCTIONS and type(ignore_index) is int
            and type(label_smoothing) in (int, float) and label_smoothing == 0
            and type(input.array) is numpy.ndarray and type(target.array) is numpy.ndarray
            and input.ndim == 2 and target.ndim == 1 and target.shape[0] == input.shape[0]
            and target.dtype.kind in "iu" and dtypes.is_floating(input.dtype) and not _fused_applies(input, target))


def _grad_divisor(divisor):
    """The total weight a 'mean' gradient divides by, with 0 replaced by 1.

    NOTE: a zero total weight (every target ignored, or an empty batch) makes the loss
    0 / 0 = nan, but then every element's weight is 0 too: PyTorch's gradient is 0, which
    dividing by 1 gives, where dividing by 0 would give 0 * inf = nan.
    """
    if type(divisor) is numpy.ndarray and divisor.ndim == 0:  # NOTE (speed): a host test, not a 2 us where
        return divisor if divisor.item() != 0 else numpy.ones_like(divisor)
    return xp_of(divisor).where(divisor == 0, 1, divisor).astype(divisor.dtype, copy=False)


# NOTE (speed): up to this many classes, NumPy runs the softmax on a class-major copy (C, N).
# A reduction along a short contiguous row (axis=1 of (N, 10)) costs NumPy one inner-loop call
# per row; along axis 0 it is one vectorised pass per class: 3-4x faster for (512, 10). Wider rows
# take ``_rows``' row max and GEMV sums on the logits as they are (no copy): 12% faster at (512, 64).
_CLASS_MAJOR_MAX = 48


def _row_softmax(xf, xp):
    """``(x - rowmax, softmax, log(sum(exp(x - rowmax))))`` of an (N, C) array, as (N, C) arrays (or views) and (N,).

    NOTE: not the softmax / log_softmax ops: this path wants all three from one pass over
    the logits, and on NumPy a class-major layout (above); the values are those ops' math.

    Args:
        xf: (N, C) logits in the compute dtype.
        xp: the array module.
    """
    if xp is numpy and xf.shape[1] <= _CLASS_MAJOR_MAX:
        xt = numpy.ascontiguousarray(xf.T)
        # NOTE: the ufuncs' own reduce: ndarray.max/sum go through a Python wrapper first
        shifted = xt - numpy.maximum.reduce(xt, axis=0)
        e = numpy.exp(shifted)
        total = numpy.add.reduce(e, axis=0)
        return shifted.T, (e / total).T, numpy.log(total)
    shifted = xf - _rows.row_max(xf)
    e = xp.exp(shifted)
    total = _rows.row_sum(e)
    return shifted, e / total, xp.log(total[:, 0])


# NOTE: the target dtypes the fused cross-entropy kernel reads (others take the array path)
_FUSED_TARGETS = (dtypes.int32, dtypes.int64)


def _fused_applies(input, target):  # noqa: A002
    """True when ``FusedCrossEntropy`` takes these arguments: (N, C) logits on the GPU, int32/int64 indices."""
    return input.ndim == 2 and target.dtype in _FUSED_TARGETS and fused.kernels_enabled(input.array)


class CrossEntropy(Function):
    """Log-softmax + negative log-likelihood in one op, class indices or class probabilities (fp32 under autocast).

    The general path: any input shape, class weights, label smoothing, probability targets.
    ``cross_entropy`` runs ``PlainCrossEntropy`` or ``FusedCrossEntropy`` instead where they apply.
    """

    op_name = "cross_entropy"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        (xf,), out_dtype = compute_arrays(x)
        cdim, n_classes = _class_dim(xf), xf.shape[_class_dim(xf)]
        logp = LogSoftmax.kernel(xp_of(xf), xf, cdim)
        ctx.cdim, ctx.reduction, ctx.smoothing = cdim, reduction, label_smoothing
        ctx.prob = xp_of(xf).exp(logp)
        if dtypes.is_floating(target.dtype):
            ctx.save_for_backward(x, target)
            ctx.w_class = _class_weight(weight, xf, cdim)
            q = (target.array.astype(xf.dtype) * (1.0 - label_smoothing) + label_smoothing / n_classes) * ctx.w_class
            elem, ctx.divisor, ctx.q = -(logp * q).sum(axis=cdim), None, None
        else:
            ctx.save_for_backward(x, None)
            picked_at, w_t, valid, ctx.q = _index_terms(xf, target.array, weight, ignore_index, label_smoothing)
            elem = -(1.0 - label_smoothing) * w_t * xp_of(xf).take_along_axis(logp, picked_at, cdim).squeeze(cdim)
            if label_smoothing:
                w_class = _class_weight(weight, xf, cdim)
                elem = elem - (label_smoothing / n_classes) * (logp * w_class).sum(axis=cdim) * valid
            ctx.divisor = xp_of(xf).asarray(w_t.sum()) if reduction == "mean" else None
        ctx.elem_shape = elem.shape
        return reduce_array(elem, reduction, out_dtype, ctx.divisor)

    @staticmethod
    def backward(ctx, grad):
        x, target = ctx.saved_tensors
        divisor = Tensor(_grad_divisor(ctx.divisor)) if ctx.divisor is not None else max(1, numel(ctx.elem_shape))
        g = unsqueeze(expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, divisor), ctx.cdim)
        if target is not None:
            return CrossEntropy._probability_backward(ctx, g, x, target)
        q = ctx.q
        if not is_grad_enabled():
            # NOTE: first-order fast path: the softmax saved by forward, no recomputation.
            gx = g.array * (ctx.prob * q.sum(axis=ctx.cdim, keepdims=True) - q)
            return back_to(Tensor(gx), x.dtype), None
        prob = exp(log_softmax(fp32(x), ctx.cdim))
        gx = g * (prob * Tensor(q.sum(axis=ctx.cdim, keepdims=True)) - Tensor(q))
        return back_to(gx, x.dtype), None

    @staticmethod
    def _probability_backward(ctx, g, x, target):
        s, n_classes = ctx.smoothing, x.shape[ctx.cdim]
        w = Tensor(ctx.w_class) if not isinstance(ctx.w_class, float) else 1.0
        logp = log_softmax(fp32(x), ctx.cdim)
        gx = gt = None
        if ctx.needs_input_grad[0]:
            q = (fp32(target) * (1.0 - s) + s / n_classes) * w
            gx = back_to(g * (exp(logp) * sum_(q, dim=ctx.cdim, keepdim=True) - q), x.dtype)
        if ctx.needs_input_grad[1]:
            gt = back_to(-g * logp * w * (1.0 - s), target.dtype)
        return gx, gt


class PlainCrossEntropy(CrossEntropy):
    """Cross entropy of (N, C) logits and class indices, unweighted and unsmoothed, in a few array passes (fp32).

    NOTE: same math as ``CrossEntropy``: ``loss_r = lse_r - x[r, t_r]`` with the log-sum-exp
    taken relative to the row max; the one-hot target ``q`` is only built if a double
    backward asks for it (then ``CrossEntropy.backward`` takes over).
    """

    @staticmethod
    def forward(ctx, x, target, ignore_index=-100, reduction="mean"):
        (xf,), out_dtype = compute_arrays(x)
        xp = xp_of(xf)
        shifted, prob, log_total = _row_softmax(xf, xp)
        t = target.array
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
        ctx.prob, ctx.picked, ctx.q = prob, (rows, safe, valid), None
        ctx.divisor = xp.asarray(count, dtype=xf.dtype) if reduction == "mean" else None
        return reduce_array(elem.astype(xf.dtype, copy=False), reduction, out_dtype, ctx.divisor)

    @staticmethod
    def backward(ctx, grad):
        if ctx.q is None:
            if not is_grad_enabled():
                return PlainCrossEntropy._rows_backward(ctx, grad), None
            ctx.q = PlainCrossEntropy._one_hot(ctx)
        return CrossEntropy.backward(ctx, grad)

    @staticmethod
    def _rows_backward(ctx, grad):
        # NOTE: d loss_r / d x[r] = softmax(x[r]) - onehot(t_r), times the row's share of the reduction
        (x, _), (rows, safe, valid) = ctx.saved_tensors, ctx.picked
        g = grad.array.astype(ctx.prob.dtype, copy=False)
        if ctx.reduction == "mean":
            g = g / _grad_divisor(ctx.divisor)
        scale = g[:, None] if ctx.reduction == "none" else g.reshape(1, 1)
        if valid is not None:
            scale = scale * valid[:, None]
        gx = ctx.prob * scale
        gx[rows, safe] -= scale[:, 0]  # scale is (N, 1) for every reduction
        return back_to(Tensor(gx), x.dtype)

    @staticmethod
    def _one_hot(ctx):
        rows, safe, valid = ctx.picked
        q = ctx.prob * 0
        q[rows, safe] = 1 if valid is None else valid
        return q


class FusedCrossEntropy(CrossEntropy):
    """Cross entropy of (N, C) logits and class indices in one fused kernel (``fused.softmax_xent_forward``).

    NOTE: the kernel reads half logits as fp32 and returns fp32 row losses and the row
    log-sum-exp, which backward's kernel takes instead of a saved (N, C) softmax. The
    'mean' divisor (sum of w[t] over rows not ignored) stays on the device: no sync. A
    double backward builds the dense target ``q`` and takes ``CrossEntropy.backward``.
    Off the GPU ``fused`` runs the kernels' NumPy reference.
    """

    @staticmethod
    def forward(ctx, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        t, w = target.array, weight.array if weight is not None else None
        rows, lse = fused.softmax_xent_forward(x.array, t, ignore_index, label_smoothing, w)
        ctx.save_for_backward(x, None)
        ctx.kernel_state = (t, w, lse, ignore_index)
        ctx.cdim, ctx.reduction, ctx.smoothing, ctx.elem_shape, ctx.q = 1, reduction, label_smoothing, rows.shape, None
        ctx.divisor = None
        if reduction == "mean":
            # NOTE: the divisor (sum of w[t] over rows not ignored) and the mean in one launch
            loss, ctx.divisor = fused.softmax_xent_mean(rows, t, x.shape[1], ignore_index, w, out_dtype=x.dtype)
            return loss
        return reduce_array(rows, reduction, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled():
            return FusedCrossEntropy._kernel_backward(ctx, grad), None
        if ctx.q is None:
            ctx.q = FusedCrossEntropy._dense_target(ctx)
        return CrossEntropy.backward(ctx, grad)

    @staticmethod
    def _kernel_backward(ctx, grad):
        """First-order gradient: one kernel (``fused.softmax_xent_backward``)."""
        (x, _), (t, w, lse, ignore_index) = ctx.saved_tensors, ctx.kernel_state
        # NOTE: flat while computing (0-d arithmetic may give a host scalar), then 0-d for 'mean'/'sum' (the
        # kernel broadcasts it over the rows) or (N,) for 'none'
        g = grad.array.reshape(-1).astype(lse.dtype, copy=False)
        g = g.reshape(lse.shape if ctx.reduction == "none" else ())
        # NOTE: for 'mean' the kernel divides by the divisor itself (0 taken as 1, as _grad_divisor)
        return Tensor(fused.softmax_xent_backward(x.array, t, lse, g, ignore_index, ctx.smoothing, w,
                                                  divisor=ctx.divisor))

    @staticmethod
    def _dense_target(ctx):
        """The dense target ``q`` the graph backward needs (a double backward after the fused forward)."""
        (x, _), (t, w, _, ignore_index) = ctx.saved_tensors, ctx.kernel_state
        weight = Tensor(w) if w is not None else None
        return _index_terms(compute_arrays(x)[0][0], t, weight, ignore_index, ctx.smoothing)[3]


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits against class indices or class probabilities (fused, stable).

    ``loss = -sum_c q_c * log_softmax(input)_c``, with ``q`` the one-hot (or given)
    target, weighted per class and smoothed: ``q = (1 - s) q + s / C``.

    Args:
        input: logits of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: integer class indices of shape ``(N, d1, ...)`` (``()`` or ``(1,)`` for an input ``(C,)``), or
            probabilities of the input's shape.
        weight: optional per-class weights of shape ``(C,)``.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        ignore_index: a class index whose elements contribute nothing (index targets only).
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' (weighted mean over non-ignored elements) or 'sum'.
        label_smoothing: ``s`` in [0, 1].
    """
    if _plain_call(input, target, weight, size_average, reduce, reduction, label_smoothing, ignore_index):
        # NOTE (speed): the common call passes every check below but the index range: only that one runs
        host_check_range("cross_entropy", target.array, 0, input.shape[1] - 1,
                         lambda: _index_range_message(input.shape[1], ignore_index), ignore=ignore_index)
        return PlainCrossEntropy.apply(input, target, ignore_index=ignore_index, reduction=reduction)
    reduction = legacy_reduction("cross_entropy", size_average, reduce, reduction)
    check_number("cross_entropy", "label_smoothing", label_smoothing, 0.0, 1.0)
    ignore_index = check_int("cross_entropy", "ignore_index", ignore_index)
    target = _check_class_input("cross_entropy", input, target, weight, ignore_index, reduction, True)
    check_same_device("cross_entropy", input=input, target=target, weight=weight)
    label_smoothing = float(label_smoothing)
    if _fused_applies(input, target):
        return FusedCrossEntropy.apply(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                                       label_smoothing=label_smoothing)
    if input.ndim == 2 and weight is None and not label_smoothing and not dtypes.is_floating(target.dtype):
        return PlainCrossEntropy.apply(input, target, ignore_index=ignore_index, reduction=reduction)
    return CrossEntropy.apply(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                              label_smoothing=label_smoothing)


class NLLLoss(Function):
    """Negative log-likelihood of class indices given log-probabilities (fp32 under autocast)."""

    op_name = "nll_loss"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, weight=None, ignore_index=-100, reduction="mean"):
        (xf,), out_dtype = compute_arrays(x)
        picked_at, w_t, _, ctx.q = _index_terms(xf, target.array, weight, ignore_index, 0.0)
        elem = -w_t * xp_of(xf).take_along_axis(xf, picked_at, _class_dim(xf)).squeeze(_class_dim(xf))
        ctx.reduction, ctx.elem_shape, ctx.cdim, ctx.dtype = reduction, elem.shape, _class_dim(xf), x.dtype
        ctx.divisor = xp_of(xf).asarray(w_t.sum())
        return reduce_array(elem, reduction, out_dtype, ctx.divisor if reduction == "mean" else None)

    @staticmethod
    def backward(ctx, grad):
        g = unsqueeze(expand_grad(fp32(grad), ctx.reduction, ctx.elem_shape, Tensor(_grad_divisor(ctx.divisor))),
                      ctx.cdim)
        return back_to(-g * Tensor(ctx.q), ctx.dtype), None


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """Negative log-likelihood: ``-weight[t] * input[t]`` per element, for log-probability inputs.

    Args:
        input: log-probabilities of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: integer class indices of shape ``(N, d1, ...)`` (``()`` or ``(1,)`` for an input ``(C,)``).
        weight: optional per-class weights of shape ``(C,)``.
        size_average: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        ignore_index: a class index whose elements contribute nothing.
        reduce: deprecated in PyTorch: None, or a bool that overrides ``reduction`` (with a warning).
        reduction: 'none', 'mean' (divided by the summed weights of non-ignored elements) or 'sum'.
    """
    reduction = legacy_reduction("nll_loss", size_average, reduce, reduction)
    ignore_index = check_int("nll_loss", "ignore_index", ignore_index)
    target = _check_class_input("nll_loss", input, target, weight, ignore_index, reduction, False)
    check_same_device("nll_loss", input=input, target=target, weight=weight)
    return NLLLoss.apply(input, target, weight=weight, ignore_index=int(ignore_index), reduction=reduction)


METHODS = {}  # NOTE: losses are functions only, not Tensor methods

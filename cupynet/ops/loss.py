"""Loss functions with ``torch.nn.functional``'s names, signatures and reductions.

The file reads top-down: the helpers every loss shares (argument checks,
reductions and their gradients, stable sigmoid pieces), the class-index losses
(``cross_entropy``, ``nll_loss`` and the binary cross-entropies) with their
log-softmax helpers, then the pointwise losses (one value per element, then
reduced: regression, Poisson and margin losses, ``cosine_similarity``).

NOTE (numerics): every loss computes in fp32 for float16/bfloat16 inputs and
rounds the reduced result once; backward formulas run in fp32 too and round
each gradient once to its input's dtype. ``cross_entropy`` is one fused op: a
stable log-softmax (max subtracted) and the negative log-likelihood in one
forward, and the gradient ``g * (softmax(x) * sum(q) - q)`` in backward, where
``q`` is the (weighted, smoothed) target distribution. Pointwise backward
formulas use cupynet ops on the saved inputs; piecewise pieces (signs, masks of
active regions) are constants, so gradients are differentiable again.

AMP: the losses on PyTorch's CUDA fp32 list say ``fp32``; ``cross_entropy`` is
fp32 too (in PyTorch it is log_softmax + nll_loss, both fp32); ``binary_cross_entropy``
is ``banned`` under autocast (use ``binary_cross_entropy_with_logits``).

A target of another shape is treated as PyTorch treats it, loss by loss
(``broadcast_pair``): ``mse_loss``, ``l1_loss``, ``smooth_l1_loss`` and
``huber_loss`` warn and broadcast; ``kl_div``, ``poisson_nll_loss`` and
``hinge_embedding_loss`` broadcast silently; ``soft_margin_loss`` broadcasts the
target to the input's shape only; ``margin_ranking_loss`` broadcasts inputs of
the same number of dimensions; the binary cross-entropies refuse it. Broadcast
operands get their gradients summed back to their own shapes.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy

from .. import backend, dtypes
from ..autograd.engine import grad as engine_grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from ..autograd.state import is_grad_enabled
from ..tensor import Tensor
from . import fused
from ._util import check_same_device, host_check_range, normalize_dim, require_floating, xp_of
from .activation import logsigmoid
from .arith import cast, maximum, minimum
from .indexing import gather, where
from .reduce import mean as mean_
from .reduce import norm as norm_
from .reduce import sum as sum_
from .shape import broadcast_to, reshape, unsqueeze
from .unary import clamp, exp, log

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "hinge_embedding_loss",
    "margin_ranking_loss", "soft_margin_loss", "cosine_similarity",
    # the rest of torch.nn.functional's losses
    "pairwise_distance", "triplet_margin_loss", "cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "gaussian_nll_loss",
]



REDUCTIONS = ("none", "mean", "sum")


def fp32(t):
    """A low-precision Tensor cast (differentiably) to float32; others (and None) as they are.

    Args:
        t: a Tensor or None.
    """
    return cast(t, dtypes.float32) if t is not None and t.dtype in dtypes.LOW_PRECISION else t


def back_to(t, dtype):
    """``t`` cast (differentiably) to ``dtype`` when it differs.

    Args:
        t: a Tensor or None.
        dtype: the wanted dtype.
    """
    return t if t is None or t.dtype == dtype else cast(t, dtype)


def check_reduction(op, reduction, allowed=REDUCTIONS):
    """Raise a clear ValueError for an unknown ``reduction``.

    Args:
        op: the loss, for the message.
        reduction: the given value.
        allowed: the accepted values.
    """
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {', '.join(repr(r) for r in allowed)}, "
                         f"got {reduction!r}")


def check_tensor(op, name, t, floating=True):
    """Raise unless ``t`` is a Tensor (a floating one when ``floating``).

    Args:
        op: the loss, for the message.
        name: the argument's name.
        t: the value.
        floating: require a floating dtype.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(t).__name__}")
    if floating:
        require_floating(op, t, name)


BROADCAST_WARNING = ("Using a target size {target} that is different to the input size {input}. This will likely "
                     "lead to incorrect results due to broadcasting. Please ensure they have the same size.")


def broadcast_shape(op, named_shapes):
    """The shape the given shapes broadcast to, or PyTorch's RuntimeError naming the first mismatch.

    Args:
        op: the loss, for the message.
        named_shapes: ``(name, shape)`` pairs, in argument order.
    """
    ndim = max(len(shape) for _, shape in named_shapes)
    out = []
    for axis in range(ndim):
        sizes = [(name, shape[axis - ndim + len(shape)]) for name, shape in named_shapes
                 if axis - ndim + len(shape) >= 0]
        big = [(name, n) for name, n in sizes if n != 1]
        for name, n in big[1:]:
            if n != big[0][1]:
                raise RuntimeError(f"{op}: The size of {big[0][0]} ({big[0][1]}) must match the size of {name} ({n}) "
                                   f"at non-singleton dimension {axis}")
        out.append(big[0][1] if big else 1)
    return tuple(out)


def broadcast_pair(op, input, target, warn=False):  # noqa: A002 - PyTorch's name
    """``input`` and ``target`` broadcast (differentiably) to their common shape, as PyTorch's pointwise losses do.

    NOTE: equal shapes (the usual case) pass through untouched. Otherwise, as in PyTorch,
    ``warn`` gives the UserWarning of mse/l1/smooth_l1/huber ("Using a target size ...");
    shapes that do not broadcast are a RuntimeError; each operand's gradient is summed back
    to its own shape by ``broadcast_to``'s backward.

    Args:
        op: the loss, for messages.
        input: the input Tensor.
        target: the target Tensor.
        warn: warn that the shapes differ (PyTorch does for mse/l1/smooth_l1/huber).
    """
    check_tensor(op, "input", input)
    check_tensor(op, "target", target)
    if input.shape == target.shape:
        return input, target
    if warn:
        # NOTE: stacklevel 4 points at the user's line: this helper <- _distance_loss <- mse_loss (etc.) <- the caller
        warnings.warn(BROADCAST_WARNING.format(target=tuple(target.shape), input=tuple(input.shape)), UserWarning,
                      stacklevel=4)
    shape = broadcast_shape(op, (("input", tuple(input.shape)), ("target", tuple(target.shape))))
    return broadcast_to(input, shape), broadcast_to(target, shape)


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


def check_number(op, name, value, low=None, high=None):
    """Raise unless ``value`` is a real number in ``[low, high]``.

    Args:
        op: the loss, for the message.
        name: the argument's name.
        value: the value.
        low: the smallest allowed value (None: no bound).
        high: the largest allowed value (None: no bound).
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ValueError(f"{op}: {name} must be a number {bounds}, got {value!r}")


def check_optional_weight(op, name, weight, shape):
    """Raise unless ``weight`` is None or a floating Tensor that broadcasts to ``shape``.

    Args:
        op: the loss, for the message.
        name: the argument's name.
        weight: the value.
        shape: the shape it must broadcast to.
    """
    if weight is None:
        return
    check_tensor(op, name, weight)
    try:
        xp_of(weight).broadcast_shapes(tuple(weight.shape), tuple(shape))
    except ValueError:
        raise ValueError(f"{op}: {name} of shape {tuple(weight.shape)} does not broadcast to the input shape "
                         f"{tuple(shape)}") from None


def compute_arrays(*tensors):
    """The arrays of ``tensors`` in their common compute dtype (fp32 for half types), and the result dtype.

    Args:
        *tensors: floating Tensors.
    """
    if len(tensors) == 1:  # NOTE: the common case, without the promotion rules
        out_dtype = tensors[0].array.dtype
        work = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
        return [tensors[0].array.astype(work, copy=False)], out_dtype
    out_dtype = dtypes.result_type(*(t.dtype for t in tensors))
    work = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
    return [t.array.astype(work, copy=False) for t in tensors], out_dtype


def constant(array_or_value, like):
    """A constant (no-grad) Tensor of ``array_or_value`` in ``like``'s array module.

    Args:
        array_or_value: an array.
        like: an array whose module to use.
    """
    return Tensor(backend.get_array_module(like).asarray(array_or_value))


def reduce_array(elementwise, reduction, out_dtype, divisor=None):
    """Reduce per-element losses ('none', 'mean' or 'sum'; 'mean' divides by ``divisor`` when given).

    Args:
        elementwise: the per-element loss array (fp32 or fp64).
        reduction: 'none', 'mean' or 'sum'.
        out_dtype: the result's dtype (rounded once).
        divisor: an array or number to divide the sum by for 'mean' (default: the element count).
    """
    if reduction == "none":
        out = elementwise
    elif reduction == "sum" or divisor is not None:
        out = elementwise.sum()
        if reduction != "sum":
            out = _quiet_divide(out, divisor)
    elif elementwise.size == 0:
        out = float("nan")  # NOTE: the mean of nothing, without NumPy's "Mean of empty slice" warning
    else:
        out = elementwise.mean()
    return xp_of(elementwise).asarray(out).astype(out_dtype, copy=False)


def _quiet_divide(total, divisor):
    """``total / divisor`` where 0 / 0 is nan and x / 0 is inf silently, as PyTorch (no NumPy warning).

    NOTE (speed): ``numpy.errstate`` costs about 1 us a loss, so it is entered only where the
    division could warn: a host divisor that is zero or not finite (CuPy never warns).
    """
    if xp_of(divisor) is not numpy:
        return total / divisor
    value = float(divisor)  # NOTE: a host number (a 0-d array or a Python number); an array compare costs more
    if value != 0 and math.isfinite(value):
        return total / divisor
    with numpy.errstate(invalid="ignore", divide="ignore"):
        return total / divisor


def expand_grad(grad, reduction, shape, divisor):
    """The gradient of each element of a reduced loss: ``grad`` spread back to ``shape`` (a Tensor op).

    Args:
        grad: the incoming gradient (0-d for 'mean'/'sum').
        reduction: 'none', 'mean' or 'sum'.
        shape: the per-element loss shape.
        divisor: the Tensor or number 'mean' divided by.
    """
    if reduction == "none":
        return grad
    if reduction == "mean":
        grad = grad / divisor
    return broadcast_to(reshape(grad, (1,) * len(shape)), tuple(shape)) if shape else grad


def log_sigmoid(x):
    """``log(sigmoid(x))`` in cupynet ops, stable for large ``|x|`` (differentiable again).

    NOTE: ``log sigmoid(x) = -(max(-x, 0) + log(1 + exp(-|x|)))``; the sign of x is a
    constant (its derivative is zero), so ``|x| = x * sign`` stays differentiable.

    Args:
        x: a floating Tensor.
    """
    negative = Tensor((x.array < 0).astype(x.dtype))
    sign = 1.0 - 2.0 * negative
    return -(-x * negative + log(1.0 + exp(-x * sign)))


def sigmoid(x):
    """``sigmoid(x) = exp(log_sigmoid(x))`` in cupynet ops, stable and differentiable again.

    Args:
        x: a floating Tensor.
    """
    return exp(log_sigmoid(x))


def numel(shape):
    """The number of elements of ``shape``.

    Args:
        shape: a tuple of ints.
    """
    n = 1
    for s in shape:
        n *= s
    return n


def legacy_reduction(op, size_average, reduce, reduction, warn=True):
    """The reduction PyTorch's deprecated ``size_average`` / ``reduce`` stand for, else ``reduction`` itself.

    As in PyTorch, either one given (not None) overrides ``reduction``: a missing one counts as True;
    ``reduce=False`` is ``'none'``, else ``size_average=False`` is ``'sum'``, else ``'mean'``; with its warning.

    Args:
        op: the loss, for the message.
        size_average: None, or a bool: average (True) or sum (False) over the elements.
        reduce: None, or a bool: False returns the per-element losses.
        reduction: the ``reduction`` argument, returned when both legacy arguments are None.
        warn: give PyTorch's deprecation warning (a loss module's constructor checks first without it).
    """
    if size_average is None and reduce is None:
        return reduction
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if value is not None and not isinstance(value, (bool, numpy.bool_)):
            raise TypeError(f"{op}: {name} must be a bool or None (it is deprecated: use reduction=), got "
                            f"{value!r:.80}")
    legacy = "none" if reduce is False else ("sum" if size_average is False else "mean")
    if warn:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{legacy}' instead.",
                      UserWarning, stacklevel=3)
    return legacy



def _class_dim(x):
    return 1 if x.ndim > 1 else 0


def _class_shape(ndim, cdim, n_classes):
    return tuple(n_classes if i == cdim else 1 for i in range(ndim))


def _log_softmax_array(xf, axis):
    """Stable log-softmax on an array: ``x - max - log(sum(exp(x - max)))``."""
    xp = xp_of(xf)
    shifted = xf - xf.max(axis=axis, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


def _log_softmax_ops(x, dim):
    """Log-softmax in cupynet ops; the max is a constant (it cancels), so the result is differentiable."""
    shifted = x - Tensor(x.array.max(axis=dim, keepdims=True))
    return shifted - log(sum_(exp(shifted), dim=dim, keepdim=True))


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


# NOTE (speed): up to this many classes, NumPy runs the softmax on a class-major copy (C, N).
# A reduction along a short contiguous row (axis=1 of (N, 10)) costs NumPy one inner-loop call
# per row; along axis 0 it is one vectorised pass per class: 3-4x faster for (512, 10).
_CLASS_MAJOR_MAX = 64


def _row_softmax(xf, xp):
    """``(x - rowmax, softmax, log(sum(exp(x - rowmax))))`` of an (N, C) array, as (N, C) arrays (or views) and (N,).

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
    shifted = xf - xf.max(axis=1, keepdims=True)
    e = xp.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    return shifted, e / total, xp.log(total[:, 0])


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
    host_check_range(op, target.array, 0, n_classes - 1,
                     lambda: f"expected class indices in [0, {n_classes - 1}] for {n_classes} classes, or "
                             f"ignore_index={ignore_index}", ignore=ignore_index)
    return target



BCE_BANNED_MESSAGE = (
    "cupynet.nn.functional.binary_cross_entropy and cupynet.nn.BCELoss are unsafe to autocast. Many models use a "
    "sigmoid layer right before the binary cross entropy layer. In this case, combine the two layers using "
    "cupynet.nn.functional.binary_cross_entropy_with_logits or cupynet.nn.BCEWithLogitsLoss. "
    "binary_cross_entropy_with_logits and BCEWithLogits are safe to autocast."
)


# NOTE: the target dtypes the fused cross-entropy kernel reads (others take the array path)
_FUSED_TARGETS = (dtypes.int32, dtypes.int64)


class CrossEntropy(Function):
    """Fused log-softmax + negative log-likelihood, class indices or class probabilities (fp32 under autocast)."""

    op_name = "cross_entropy"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        if x.ndim == 2 and target.dtype in _FUSED_TARGETS and fused.kernels_enabled(x.array):
            return CrossEntropy._fused_forward(ctx, x, target, weight, ignore_index, reduction, label_smoothing)
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
    def _fused_forward(ctx, x, target, weight, ignore_index, reduction, smoothing):
        """(N, C) logits and class indices on the GPU: one fused kernel (``fused.softmax_xent_forward``).

        NOTE: the kernel reads half logits as fp32 and returns fp32 row losses and the row
        log-sum-exp, which backward's kernel takes instead of a saved (N, C) softmax. The
        'mean' divisor (sum of w[t] over rows not ignored) stays on the device: no sync.
        """
        t, w = target.array, weight.array if weight is not None else None
        rows, lse = fused.softmax_xent_forward(x.array, t, ignore_index, smoothing, w)
        xp = xp_of(rows)
        ctx.save_for_backward(x, None)
        ctx.fused_state = (t, w, lse, ignore_index)
        ctx.cdim, ctx.reduction, ctx.smoothing, ctx.elem_shape, ctx.q = 1, reduction, smoothing, rows.shape, None
        ctx.divisor = None
        if reduction == "mean":
            valid = t != ignore_index
            picked = w.astype(rows.dtype)[xp.where(valid, t, 0)] if w is not None else 1.0
            ctx.divisor = xp.where(valid, picked, 0.0).sum(dtype=rows.dtype)
        return reduce_array(rows, reduction, x.dtype, ctx.divisor)

    @staticmethod
    def _fused_backward(ctx, grad, x):
        """First-order gradient of the fused forward: one kernel (``fused.softmax_xent_backward``)."""
        t, w, lse, ignore_index = ctx.fused_state
        # NOTE: flat while computing (0-d arithmetic may give a host scalar), then 0-d for 'mean'/'sum' (the
        # kernel broadcasts it over the rows) or (N,) for 'none'
        g = grad.array.reshape(-1).astype(lse.dtype, copy=False)
        if ctx.reduction == "mean":
            g = g / _grad_divisor(ctx.divisor)
        g = g.reshape(lse.shape if ctx.reduction == "none" else ())
        return Tensor(fused.softmax_xent_backward(x.array, t, lse, g, ignore_index, ctx.smoothing, w))

    @staticmethod
    def _fused_q(ctx, x):
        """The dense target ``q`` the graph backward needs (double backward after a fused forward)."""
        t, w, _, ignore_index = ctx.fused_state
        weight = Tensor(w) if w is not None else None
        return _index_terms(compute_arrays(x)[0][0], t, weight, ignore_index, ctx.smoothing)[3]

    @staticmethod
    def _plain_forward(ctx, x, xf, target, ignore_index, reduction, out_dtype):
        """The common case, (N, C) logits and class indices, no weight or smoothing, in a few array passes.

        NOTE: same math as the general path: ``loss_r = lse_r - x[r, t_r]`` with the
        log-sum-exp taken relative to the row max; ``q`` (the one-hot target) is only
        built if a double backward asks for it.
        """
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
        if getattr(ctx, "fused_state", None) is not None:
            if not is_grad_enabled():
                return CrossEntropy._fused_backward(ctx, grad, x), None
            ctx.q = CrossEntropy._fused_q(ctx, x) if ctx.q is None else ctx.q
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
            gx = g.array * (ctx.prob * q.sum(axis=ctx.cdim, keepdims=True) - q)
            return back_to(Tensor(gx), x.dtype), None
        prob = exp(_log_softmax_ops(fp32(x), ctx.cdim))
        gx = g * (prob * Tensor(q.sum(axis=ctx.cdim, keepdims=True)) - Tensor(q))
        return back_to(gx, x.dtype), None

    @staticmethod
    def _plain_backward(ctx, grad, x):
        # NOTE: d loss_r / d x[r] = softmax(x[r]) - onehot(t_r), times the row's share of the reduction
        rows, safe, valid = ctx.plain
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
    reduction = legacy_reduction("cross_entropy", size_average, reduce, reduction)
    check_number("cross_entropy", "label_smoothing", label_smoothing, 0.0, 1.0)
    target = _check_class_input("cross_entropy", input, target, weight, ignore_index, reduction, True)
    check_same_device("cross_entropy", input=input, target=target, weight=weight)
    return CrossEntropy.apply(input, target, weight=weight, ignore_index=int(ignore_index), reduction=reduction,
                              label_smoothing=float(label_smoothing))


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
    target = _check_class_input("nll_loss", input, target, weight, ignore_index, reduction, False)
    check_same_device("nll_loss", input=input, target=target, weight=weight)
    return NLLLoss.apply(input, target, weight=weight, ignore_index=int(ignore_index), reduction=reduction)


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
            gt = back_to(g * ((1.0 - pw) * log_sigmoid(xf) - xf), t.dtype)
        return gx, gt


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


def _grad_divisor(divisor):
    """The total weight a 'mean' gradient divides by, with 0 replaced by 1.

    NOTE: a zero total weight (every target ignored, or an empty batch) makes the loss
    0 / 0 = nan, but then every element's weight is 0 too: PyTorch's gradient is 0, which
    dividing by 1 gives, where dividing by 0 would give 0 * inf = nan.
    """
    if type(divisor) is numpy.ndarray and divisor.ndim == 0:  # NOTE (speed): a host test, not a 2 us where
        return divisor if divisor.item() != 0 else numpy.ones_like(divisor)
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


KL_DIV_MEAN_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' divides only by "
    "the batch size, and aligns with the KL div math definition.'mean' will be changed to behave the same as "
    "'batchmean' in the next major release."
)


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


def _no_weight(op, weight):
    if weight is not None:
        raise ValueError(f"{op}: a per-element weight is not supported; multiply a reduction='none' loss instead")


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


# ---- the rest of torch's losses: distance, triplet, embedding, multi-class/multi-label margin and Gaussian ----
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


def _reduce(loss, reduction, empty_mean=math.nan):
    """``loss`` reduced by 'none', 'mean' or 'sum' (cupynet ops, differentiable).

    Args:
        loss: per-sample losses.
        reduction: 'none', 'mean' or 'sum'.
        empty_mean: the mean of no losses (nan; PyTorch's multi-class margin losses give 0).
    """
    if reduction == "none":
        return loss
    if reduction == "sum":
        return sum_(loss)
    # NOTE: 0 * empty_mean: the mean of nothing without NumPy's "Mean of empty slice" warning
    return sum_(loss) * empty_mean if loss.array.size == 0 else mean_(loss)


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


class TripletMarginLoss(_ExpressionLoss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with pairwise p-norm distances (fp32 under autocast)."""

    op_name = "triplet_margin_loss"

    @staticmethod
    def expression(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
        d_pos = pairwise_distance(anchor, positive, p, eps)
        d_neg = pairwise_distance(anchor, negative, p, eps)
        if swap:  # NOTE: the harder negative of the two (Balntas et al.'s distance swap)
            d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
        return _reduce(clamp(margin + d_pos - d_neg, min=0.0), reduction)


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
        return _reduce(loss, reduction)


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
        return _reduce(reshape(loss, shape) if reduction == "none" else loss, reduction, empty_mean=0.0)


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
        return _reduce(reshape(loss, shape) if reduction == "none" else loss, reduction, empty_mean=0.0)


def _label_slots(target, n_classes):
    """Targets as gather indices, the mask of slots before the first -1, and the (N, C) mask of target classes."""
    xp, t = xp_of(target), target.array
    valid = xp.cumprod(t >= 0, axis=1).astype(bool)  # NOTE: the first -1 ends a row's list of targets
    slots = xp.where(valid, t, 0)
    is_target = xp.zeros(t.shape, dtype=bool)
    rows = xp.broadcast_to(xp.arange(t.shape[0])[:, None], t.shape)
    is_target[rows[valid], slots[valid]] = True
    return Tensor(slots), Tensor(valid), Tensor(is_target)


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
    return _reduce(sum_(loss, dim=input.ndim - 1) / input.shape[-1], reduction)


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
    return _reduce(loss, reduction)


METHODS = {}  # NOTE: losses are functions only, not Tensor methods

"""Normalization: layer_norm, group_norm, instance_norm, batch_norm, rms_norm and normalize.

NOTE (numerics): the statistics of float16/bfloat16 inputs (mean, biased
variance) are accumulated in fp32, the whole normalization and affine step runs
in fp32, and the result is rounded once to the input dtype. Backward does the
same: it casts the input and the incoming gradient to fp32, and rounds each
gradient once to its tensor's dtype.

AMP: ``layer_norm`` and ``group_norm`` carry the ``fp32`` policy (PyTorch's
CUDA fp32 list), so under autocast they return float32. ``normalize`` is fp32
too: in PyTorch it is ``norm`` (fp32 list) followed by a promoting division,
so its result is float32 under autocast as well. ``batch_norm``,
``instance_norm`` and ``rms_norm`` are on no list: under autocast they run in
the input dtype (an fp16 activation after a conv stays fp16) with fp32
statistics, and batch norm's running stats stay fp32, as cuDNN's batch norm
does in PyTorch.

Backward formulas recompute the normalized input with cupynet ops, so they
are differentiable again (double backward, gradient penalties).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..checks import require_floating
from ..tensor import Tensor
from . import kernels as fused
from ._rows import leading_sum, row_mean
from ._util import check_same_device, compute_in_fp32, normalize_dim, xp_of
from .arith import cast, maximum
from .indexing import cat
from .pool import avg_pool2d
from .reduce import mean
from .reduce import sum as sum_
from .resample import pad
from .shape import reshape, sum_to
from .unary import rsqrt

__all__ = ["layer_norm", "group_norm", "instance_norm", "batch_norm", "rms_norm", "normalize", "local_response_norm"]


# ----------------------------------------------------------------------------- shared helpers


def _fp32(t):
    """A low-precision Tensor cast (differentiably) to float32; others as they are."""
    return cast(t, dtypes.float32) if t is not None and t.dtype in dtypes.LOW_PRECISION else t


def _back_to(t, dtype):
    return t if t is None or t.dtype == dtype else cast(t, dtype)


def _channel_sums_apply(a, axes):
    """True when ``_channel_sums`` serves a reduction of ``a`` over ``axes``: a C-contiguous NumPy
    (N, C, *spatial) array reduced over every dim but the channels (batch norm's statistics)."""
    return (type(a) is numpy.ndarray and a.ndim >= 3 and a.flags.c_contiguous
            and tuple(axes) == (0,) + tuple(range(2, a.ndim)))


def _channel_sums(a, b=None):
    """Per-channel sums of ``a`` (of ``a * b`` when given) over every dim but 1, as an (1, C, 1, ...) array.

    NOTE (speed): as a matrix-vector product with ones (``a``) and an ``einsum`` (``a * b``, no
    product array): 2-2.5x faster than NumPy's reduction over the non-contiguous axes (0, 2, 3).
    NOTE (numerics): both sum each (sample, channel) plane first, in the array's dtype (fp32/fp64) in
    BLAS's or einsum's vectorised order, then the N plane sums; so no running sum is longer than one
    plane (H*W terms), as in NumPy's reduction it replaces.
    """
    n, c = a.shape[:2]
    a3 = a.reshape(n, c, -1)
    if b is None:
        planes = a3 @ numpy.ones(a3.shape[2], dtype=a.dtype)
    else:
        planes = numpy.einsum("nci,nci->nc", a3, b.reshape(n, c, -1))
    return planes.sum(axis=0).reshape((1, c) + (1,) * (a.ndim - 2))


def _trailing_rows(a, axes):
    """``(rows, width)`` when ``a`` is a C-contiguous NumPy array reduced over its trailing ``axes`` (layer norm,
    and group/instance norm's (N, G, rest) view): its statistics are then ``_rows.row_mean`` of that 2-D view."""
    lead = a.ndim - len(axes)
    if type(a) is not numpy.ndarray or not a.flags.c_contiguous or tuple(axes) != tuple(range(lead, a.ndim)):
        return None
    return math.prod(a.shape[:lead]), math.prod(a.shape[lead:])


def _standardize_array(xf, axes, eps):
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` on an fp32/fp64 array, with the biased variance."""
    xp = xp_of(xf)
    rows = _trailing_rows(xf, axes)
    if rows is not None:
        stat_shape = xf.shape[:xf.ndim - len(axes)] + (1,) * len(axes)
        centered = xf.reshape(rows) - (mu := row_mean(xf.reshape(rows)))
        var = row_mean(centered * centered)
        centered /= xp.sqrt(var + eps)  # NOTE: in place (centered is fresh): the same values, one array fewer
        return centered.reshape(xf.shape), mu.reshape(stat_shape), var.reshape(stat_shape)
    if _channel_sums_apply(xf, axes):
        count = xf.size // xf.shape[1]
        mu = _channel_sums(xf) / count
        centered = xf - mu
        var = _channel_sums(centered, centered) / count
    else:
        mu = xf.mean(axis=axes, keepdims=True)
        centered = xf - mu
        var = (centered * centered).mean(axis=axes, keepdims=True)
    centered /= xp.sqrt(var + eps)  # NOTE: in place (centered is fresh): the same values, one array fewer
    return centered, mu, var


def _affine_array(xhat, weight, bias, param_shape, out_dtype):
    """``xhat * weight + bias`` (either may be None) in xhat's dtype, rounded once to ``out_dtype``."""
    y = xhat
    if weight is not None:
        y = xhat * weight.array.reshape(param_shape).astype(xhat.dtype)
    if bias is not None:
        b = bias.array.reshape(param_shape).astype(xhat.dtype)
        # NOTE: add in place when y is already a fresh array (xhat itself is kept for backward)
        y = xp_of(y).add(y, b, out=y) if y is not xhat else y + b
    # NOTE: never hand out xhat itself: backward reads it, and the output may be modified in place
    return y.astype(out_dtype, copy=y is xhat)


def _standardize_grad(x, grad_xhat, axes, eps):
    """Gradient of ``xhat = (x - mean) * rstd`` (statistics over ``axes``) w.r.t. ``x``, in cupynet ops.

    NOTE: ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``; written with
    differentiable ops of ``x`` so the result can be differentiated again.
    Returns ``(dx, xhat)``.
    """
    centered = x - mean(x, dim=axes, keepdim=True)
    rstd = (mean(centered * centered, dim=axes, keepdim=True) + eps) ** -0.5
    xhat = centered * rstd
    dx = rstd * (grad_xhat - mean(grad_xhat, dim=axes, keepdim=True)
                 - xhat * mean(grad_xhat * xhat, dim=axes, keepdim=True))
    return dx, xhat


def _param_grads(ctx, grad, xhat, weight, param_shape):
    """Gradients of weight (``sum grad * xhat``) and bias (``sum grad``) over the non-parameter dims."""
    gw = gb = None
    if ctx.needs_input_grad[1]:
        gw = _back_to(reshape(sum_to(grad * xhat, param_shape), weight.shape), weight.dtype)
    if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2]:
        gb = _back_to(reshape(sum_to(grad, param_shape), ctx.bias_shape), ctx.bias_dtype)
    return gw, gb


def _keep_for_backward(ctx, xhat, var, eps):
    """Keep the forward's fp32 ``xhat`` and ``rstd = 1/sqrt(var + eps)`` for the first-order backward."""
    if any(ctx.needs_input_grad):
        ctx.xhat, ctx.rstd = xhat, 1.0 / xp_of(var).sqrt(var + eps)


def _reduce_to(a, param_shape):
    """Sum an array of the input's shape down to ``param_shape`` (aligned to the trailing dims)."""
    lead = a.ndim - len(param_shape)
    if a.shape[lead:] == tuple(param_shape):  # NOTE: layer norm's parameters: a sum down the rows (see _rows)
        return leading_sum(a, lead)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(param_shape) if s == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes).reshape(param_shape)


def _grad_tensor(a, shape, dtype):
    return Tensor(a.reshape(shape).astype(dtype, copy=False))


def _norm_backward_arrays(ctx, grad, x, weight, stat_shape, axes, param_shape):
    """First-order backward as one array formula from the forward's ``xhat`` and ``rstd`` (no graph ops).

    NOTE: ``dx = rstd * (g' - mean(g') - xhat * mean(g' * xhat))`` with ``g' = grad * weight``, the
    statistics' means over ``axes``; ``dweight = sum(grad * xhat)``, ``dbias = sum(grad)`` over the other
    dims. All in fp32 (fp64 for fp64), each gradient rounded once. Batch norm's parameter dims are the
    complement of its statistics' axes, so its two means come from the parameter sums (two reductions).
    The values equal the graph formula's up to fp32 rounding order (tests hold both to torch).
    """
    xp, need = xp_of(x), ctx.needs_input_grad
    gf = compute_in_fp32(grad.array)
    xhat = ctx.xhat.reshape(x.shape)
    w = None if weight is None else compute_in_fp32(weight.array).reshape(param_shape)
    per_channel = ctx.fn is BatchNorm
    if per_channel and _channel_sums_apply(gf, axes) and xhat.flags.c_contiguous:
        gw, gb = _channel_sums(gf, xhat).reshape(param_shape), _channel_sums(gf).reshape(param_shape)
    else:
        gx_xhat = gf * xhat if per_channel or (len(need) > 1 and need[1] and weight is not None) else None
        gw = _reduce_to(gx_xhat, param_shape) if gx_xhat is not None else None
        gb = _reduce_to(gf, param_shape) if per_channel or (len(need) > 2 and need[2]) else None
    gx = None
    if need[0]:
        count = math.prod(stat_shape[a] for a in axes)
        if per_channel:
            scale = ctx.rstd if w is None else ctx.rstd * w
            gx = xhat * (gw / count)
            xp.subtract(gf, gx, out=gx)
            gx -= gb / count
            gx *= scale
        else:
            g = (gf * w if w is not None else gf).reshape(stat_shape)
            rows = _trailing_rows(g, axes) if xhat.flags.c_contiguous else None
            if rows is not None:  # NOTE: the two means on (rows, width) views: see _rows
                g, xs, rstd = g.reshape(rows), xhat.reshape(rows), ctx.rstd.reshape(-1, 1)
                gx = xs * row_mean(g * xs)
                xp.subtract(g, gx, out=gx)
                gx -= row_mean(g)
            else:
                xs, rstd = xhat.reshape(stat_shape), ctx.rstd
                gx = xs * (g * xs).mean(axis=axes, keepdims=True)
                xp.subtract(g, gx, out=gx)
                gx -= g.mean(axis=axes, keepdims=True)
            gx *= rstd
        gx = _grad_tensor(gx, x.shape, x.dtype)
    ctx.xhat = ctx.rstd = None
    gw = _grad_tensor(gw, weight.shape, weight.dtype) if weight is not None and need[1] else None
    gb = _grad_tensor(gb, ctx.bias_shape, ctx.bias_dtype) if len(need) > 2 and need[2] else None
    return gx, gw, gb


def _norm_backward(ctx, grad, x, weight, stat_shape, axes, param_shape):
    """Backward of layer/group/instance norm and training-mode batch norm (statistics from ``x``).

    ``x`` is viewed as ``stat_shape`` and standardized over ``axes``; weight/bias broadcast as ``param_shape``.
    First order (no ``create_graph``) takes the array formula; higher orders the graph formula below.
    """
    if not STATE.grad_enabled and getattr(ctx, "xhat", None) is not None:
        return _norm_backward_arrays(ctx, grad, x, weight, stat_shape, axes, param_shape)
    xf, gf = _fp32(x), _fp32(grad)
    grad_xhat = gf * reshape(_fp32(weight), param_shape) if weight is not None else gf
    dx, xhat = _standardize_grad(reshape(xf, stat_shape), reshape(grad_xhat, stat_shape), axes, ctx.eps)
    gx = _back_to(reshape(dx, x.shape), x.dtype) if ctx.needs_input_grad[0] else None
    gw, gb = _param_grads(ctx, gf, reshape(xhat, x.shape), weight, param_shape)
    return gx, gw, gb


def _array_of(t):
    return None if t is None else t.array


def _remember_bias(ctx, bias):
    ctx.bias_shape = bias.shape if bias is not None else None
    ctx.bias_dtype = bias.dtype if bias is not None else None


def _channel_param_shape(x):
    return (x.shape[1],) + (1,) * (x.ndim - 2)


# ----------------------------------------------------------------------------- layer / group / instance norm


def _check_param(op, name, t, shape, x):
    if t is None:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor or None, got {type(t).__name__}")
    require_floating(op, t, name)
    if tuple(t.shape) != tuple(shape):
        raise RuntimeError(f"{op}: expected {name} of shape {tuple(shape)} for input of shape {tuple(x.shape)}, "
                           f"got {tuple(t.shape)}")


def _check_eps(op, eps):
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps < 0:
        raise ValueError(f"{op}: eps must be a non-negative number, got {eps!r}")


class LayerNorm(Function):
    """Normalize over the trailing ``ndim_norm`` dimensions, then scale and shift (fp32 under autocast)."""

    op_name = "layer_norm"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, weight, bias, ndim_norm=1, eps=1e-5):
        ctx.axes = tuple(range(x.ndim - ndim_norm, x.ndim))
        ctx.eps, ctx.param_shape = eps, x.shape[x.ndim - ndim_norm:]
        ctx.save_for_backward(x, weight)
        _remember_bias(ctx, bias)
        ctx.ndim_norm, ctx.fused_stats = ndim_norm, None
        if fused.kernels_enabled(x.array):
            # NOTE: CuPy: one fused kernel (fp32 statistics, one rounding); mean/rstd kept for the backward
            y, mu, rstd = fused.layer_norm_forward(x.array, _array_of(weight), _array_of(bias), eps, ndim_norm)
            if any(ctx.needs_input_grad):
                ctx.fused_stats = (mu, rstd)
            return y
        xhat, _, var = _standardize_array(compute_in_fp32(x.array), ctx.axes, eps)
        _keep_for_backward(ctx, xhat, var, eps)
        return _affine_array(xhat, weight, bias, ctx.param_shape, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if not STATE.grad_enabled and ctx.fused_stats is not None:
            return LayerNorm._fused_backward(ctx, grad, x, weight)
        return _norm_backward(ctx, grad, x, weight, x.shape, ctx.axes, ctx.param_shape)

    @staticmethod
    def _fused_backward(ctx, grad, x, weight):
        """First-order backward of the fused forward: the fused kernels (``fused.layer_norm_backward``).

        NOTE: the kernels give dweight/dbias in fp32; each is rounded once to its parameter's dtype.
        A double backward (create_graph) takes the graph formula of ``_norm_backward`` instead.

        Args:
            ctx: the node (``fused_stats`` holds the forward's fp32 mean and rstd).
            grad: the gradient of the output (a Tensor).
            x: the forward input Tensor.
            weight: the weight Tensor or None.
        """
        (mu, rstd), need = ctx.fused_stats, ctx.needs_input_grad
        ctx.fused_stats = None
        g = grad.array.astype(x.dtype, copy=False)
        gx, gw, gb = fused.layer_norm_backward(g, x.array, mu, rstd, _array_of(weight), ctx.ndim_norm)
        gx = Tensor(gx) if need[0] else None
        gw = _grad_tensor(gw, weight.shape, weight.dtype) if weight is not None and need[1] else None
        gb = _grad_tensor(gb, ctx.bias_shape, ctx.bias_dtype) if len(need) > 2 and need[2] else None
        return gx, gw, gb


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002 - PyTorch's names
    """Layer normalization: ``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing dims.

    Args:
        input: a floating Tensor whose trailing dims equal ``normalized_shape``.
        normalized_shape: an int or tuple, the shape of the normalized trailing dims.
        weight: optional scale of shape ``normalized_shape``.
        bias: optional shift of shape ``normalized_shape``.
        eps: added to the variance for stability.
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    require_floating("layer_norm", input)
    if not shape or tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"layer_norm: normalized_shape {shape} must match the trailing dimensions of the "
                           f"input, got input of shape {tuple(input.shape)}")
    _check_param("layer_norm", "weight", weight, shape, input)
    _check_param("layer_norm", "bias", bias, shape, input)
    _check_eps("layer_norm", eps)
    return LayerNorm.apply(input, weight, bias, ndim_norm=len(shape), eps=float(eps))


class GroupNorm(Function):
    """Normalize each of ``num_groups`` channel groups of each sample; per-channel affine (fp32 under autocast)."""

    op_name = "group_norm"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, weight, bias, num_groups=1, eps=1e-5):
        n = x.shape[0]
        ctx.stat_shape = (n, num_groups, x.array.size // max(n * num_groups, 1))
        ctx.eps, ctx.param_shape = eps, _channel_param_shape(x)
        ctx.save_for_backward(x, weight)
        _remember_bias(ctx, bias)
        xhat, _, var = _standardize_array(compute_in_fp32(x.array).reshape(ctx.stat_shape), (2,), eps)
        _keep_for_backward(ctx, xhat, var, eps)
        return _affine_array(xhat.reshape(x.shape), weight, bias, ctx.param_shape, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return _norm_backward(ctx, grad, x, weight, ctx.stat_shape, (2,), ctx.param_shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Group normalization: statistics per sample over each group of ``C / num_groups`` channels.

    Args:
        input: a floating Tensor of shape ``(N, C, *)``.
        num_groups: the number of groups; must divide ``C``.
        weight: optional per-channel scale of shape ``(C,)``.
        bias: optional per-channel shift of shape ``(C,)``.
        eps: added to the variance for stability.
    """
    require_floating("group_norm", input)
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected an input of shape (N, C, *), got {tuple(input.shape)}")
    channels = input.shape[1]
    if not isinstance(num_groups, int) or num_groups <= 0 or channels % num_groups:
        raise RuntimeError(f"group_norm: expected number of channels in input ({channels}) to be divisible by "
                           f"num_groups, got num_groups={num_groups!r}")
    _check_param("group_norm", "weight", weight, (channels,), input)
    _check_param("group_norm", "bias", bias, (channels,), input)
    _check_eps("group_norm", eps)
    return GroupNorm.apply(input, weight, bias, num_groups=num_groups, eps=float(eps))


def _check_running(op, running_mean, running_var, channels, training):
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{op}: running_mean and running_var must both be Tensors or both be None")
    if running_mean is None and not training:
        raise ValueError(f"{op}: running_mean and running_var must be defined in evaluation mode "
                         "(training=False)")
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and (not isinstance(t, Tensor) or tuple(t.shape) != (channels,)
                              or not dtypes.is_floating(t.dtype)):
            got = f"shape {tuple(t.shape)} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
            raise RuntimeError(f"{op}: expected {name} to be a floating Tensor of shape ({channels},), got {got}")


def _check_batch_args(op, input, weight, bias, momentum, eps, training):
    require_floating(op, input)
    if input.ndim < 2:
        raise ValueError(f"{op}: expected an input of shape (N, C, *), got {tuple(input.shape)}")
    _check_param(op, "weight", weight, (input.shape[1],), input)
    _check_param(op, "bias", bias, (input.shape[1],), input)
    _check_eps(op, eps)
    if isinstance(momentum, Tensor):
        if momentum.ndim != 0 or not dtypes.is_floating(momentum.dtype):
            raise ValueError(f"{op}: a Tensor momentum must be a 0-d floating Tensor, got shape "
                             f"{tuple(momentum.shape)} {momentum.dtype}")
    elif not isinstance(momentum, (int, float)) or isinstance(momentum, bool) or not 0.0 <= momentum <= 1.0:
        raise ValueError(f"{op}: momentum must be a number in [0, 1], got {momentum!r} (the BatchNorm layer "
                         "passes 1 / num_batches_tracked for a cumulative average)")
    if training and input.array.size // max(input.shape[1], 1) == 1:
        raise ValueError(f"{op}: Expected more than 1 value per channel when training, got input size "
                         f"{tuple(input.shape)}")


def _unbiased(var, count):
    """The unbiased variance ``var * n / (n - 1)`` (``n`` an int or a device array: no host read) for the running stats.

    Args:
        var: the biased batch variance (array).
        count: the number of values each variance was taken over.
    """
    denominator = max(count - 1, 1) if isinstance(count, int) else xp_of(count).maximum(count - 1, 1)
    return var * (count / denominator)


def _update_running_stats(running_mean, running_var, batch_mean, unbiased, momentum):
    """``r = (1 - momentum) * r + momentum * stat`` in fp32, in place, outside the graph (version bump).

    NOTE: the running variance takes the unbiased batch variance (``_unbiased``), as PyTorch; the update
    is computed in fp32 (fp64 for fp64 buffers) and stored in the buffer's dtype.
    """
    for buf, stat in ((running_mean, batch_mean), (running_var, unbiased)):
        if buf is None:
            continue
        old = compute_in_fp32(buf.array)
        # NOTE: a Tensor momentum (the layer's 1 / num_batches_tracked) stays on the device: no host read
        m = momentum.array.astype(old.dtype) if isinstance(momentum, Tensor) else momentum
        new = old * (1.0 - m) + stat.reshape(buf.shape).astype(old.dtype) * m
        buf.array[...] = new.astype(buf.dtype, copy=False)
        buf._bump_version()


def _instance_running_update(input, running_mean, running_var, momentum, eps):
    """Average the per-instance statistics over the batch into the running buffers (as PyTorch does)."""
    n, c = input.shape[:2]
    _, mu, var = _standardize_array(compute_in_fp32(input.array).reshape(n, c, -1), (2,), eps)
    count = input.array.size // max(n * c, 1)
    _update_running_stats(running_mean, running_var, mu.mean(axis=0), _unbiased(var, count).mean(axis=0), momentum)


class InstanceNorm(GroupNorm):
    """Group norm with one group per channel; unlisted for autocast (runs in the input dtype, fp32 math)."""

    op_name = "instance_norm"
    amp_policy = None


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalization: statistics per sample and channel over the spatial dims.

    Args:
        input: a floating Tensor of shape ``(N, C, *)``.
        running_mean: optional ``(C,)`` buffer, updated in place with batch-averaged instance means.
        running_var: optional ``(C,)`` buffer, updated in place with batch-averaged instance variances.
        weight: optional per-channel scale of shape ``(C,)``.
        bias: optional per-channel shift of shape ``(C,)``.
        use_input_stats: normalize with the instance statistics (False: with the running ones).
        momentum: weight of the new statistic in the running average.
        eps: added to the variance for stability.
    """
    _check_batch_args("instance_norm", input, weight, bias, momentum, eps, use_input_stats)
    _check_running("instance_norm", running_mean, running_var, input.shape[1], use_input_stats)
    check_same_device("instance_norm", input=input, running_mean=running_mean, running_var=running_var)
    if not use_input_stats:
        return BatchNorm.apply(input, weight, bias, running_mean=running_mean, running_var=running_var,
                               training=False, momentum=float(momentum), eps=float(eps))
    if running_mean is not None:
        _instance_running_update(input, running_mean, running_var, float(momentum), float(eps))
    return InstanceNorm.apply(input, weight, bias, num_groups=input.shape[1], eps=float(eps))


# ----------------------------------------------------------------------------- batch norm


def _momentum(momentum):
    return momentum if isinstance(momentum, Tensor) else float(momentum)


class BatchNorm(Function):
    """Per-channel normalization over the batch (and spatial dims); no autocast policy (see module note)."""

    op_name = "batch_norm"

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean=None, running_var=None, training=False, momentum=0.1,
                eps=1e-5):
        axes = (0,) + tuple(range(2, x.ndim))
        ctx.param_shape, ctx.eps, ctx.axes, ctx.training = _channel_param_shape(x), eps, axes, training
        ctx.save_for_backward(x, weight)
        _remember_bias(ctx, bias)
        xf = compute_in_fp32(x.array)
        if training and xf.size == 0:
            # NOTE: an empty batch has no statistics: as PyTorch, an empty result, running stats untouched,
            # zero gradients for weight and bias (the affine path below with mean 0, rstd 1)
            ctx.training = training = False
            ctx.mean = xp_of(x).zeros(ctx.param_shape, dtype=xf.dtype)
            ctx.rstd = xp_of(x).ones(ctx.param_shape, dtype=xf.dtype)
            return _affine_array(xf, weight, bias, ctx.param_shape, x.dtype)
        if training:
            xhat, mu, var = _standardize_array(xf, axes, eps)
            _keep_for_backward(ctx, xhat, var, eps)
            _update_running_stats(running_mean, running_var, mu, _unbiased(var, x.array.size // x.shape[1]), momentum)
        else:
            ctx.mean = running_mean.array.reshape(ctx.param_shape).astype(xf.dtype)
            ctx.rstd = 1.0 / xp_of(x).sqrt(running_var.array.reshape(ctx.param_shape).astype(xf.dtype) + eps)
            xhat = (xf - ctx.mean) * ctx.rstd
        return _affine_array(xhat, weight, bias, ctx.param_shape, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if ctx.training:
            return _norm_backward(ctx, grad, x, weight, x.shape, ctx.axes, ctx.param_shape)
        # NOTE: with running statistics the op is affine in x: dx = g * weight * rstd.
        xf, gf = _fp32(x), _fp32(grad)
        rstd = Tensor(ctx.rstd)
        scale = reshape(_fp32(weight), ctx.param_shape) * rstd if weight is not None else rstd
        gx = _back_to(gf * scale, x.dtype) if ctx.needs_input_grad[0] else None
        gw, gb = _param_grads(ctx, gf, (xf - Tensor(ctx.mean)) * rstd, weight, ctx.param_shape)
        return gx, gw, gb


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-5):
    """Batch normalization over ``(N, *)`` per channel of an ``(N, C, *)`` input.

    In training mode the batch statistics normalize the input and the running
    statistics (when given) are updated in place, in fp32, with the unbiased
    variance; in evaluation mode the running statistics normalize the input.

    Args:
        input: a floating Tensor of shape ``(N, C, *)``.
        running_mean: a ``(C,)`` Tensor (updated in place when training), or None when training.
        running_var: a ``(C,)`` Tensor (updated in place when training), or None when training.
        weight: optional per-channel scale of shape ``(C,)``.
        bias: optional per-channel shift of shape ``(C,)``.
        training: use batch statistics (and update the running ones).
        momentum: weight of the new batch statistic in the running average: a number in [0, 1], or a 0-d
            floating Tensor on the input's device (read there, no host sync; its range is not checked).
        eps: added to the variance for stability.
    """
    _check_batch_args("batch_norm", input, weight, bias, momentum, eps, training)
    _check_running("batch_norm", running_mean, running_var, input.shape[1], training)
    check_same_device("batch_norm", input=input, running_mean=running_mean, running_var=running_var)
    return BatchNorm.apply(input, weight, bias, running_mean=running_mean, running_var=running_var,
                           training=bool(training), momentum=_momentum(momentum), eps=float(eps))


class _AllReduceSum(Function):
    """The sum of a tensor over every rank of the default process group; its adjoint is the same all-reduce."""

    op_name = "_all_reduce_sum"

    @staticmethod
    def forward(ctx, x):
        from ..distributed import ReduceOp, collectives  # noqa: PLC0415 - loads with the first process group

        work = xp_of(x).array(x.array, copy=True, order="C")
        collectives.reduce_array_(work, ReduceOp.SUM)
        return work

    @staticmethod
    def backward(ctx, grad):
        # NOTE: every rank's loss depends on the summed value, so d(sum of losses)/dx_r = sum over ranks of
        # the incoming gradients: the backward is an all-reduce too, run by every rank in the same order
        return _AllReduceSum.apply(grad)


def sync_batch_norm(input, running_mean, running_var, weight, bias, momentum, eps):  # noqa: A002
    """Training-mode batch norm whose statistics cover the batches of every rank (``nn.SyncBatchNorm``).

    Written with cupynet ops around a differentiable all-reduce, so the backward all-reduces the
    gradient sums of the statistics (and second derivatives follow). Two all-reduces forward, two backward:

    NOTE (numerics): the mean is ``all_reduce(sum x) / all_reduce(count)``; the variance is then
    ``all_reduce(sum (x - mean)^2) / count``, a second pass rather than ``E[x^2] - mean^2``, which
    cancels catastrophically when |mean| >> std. Sums run in fp32 (fp64 for fp64 inputs). The weight and
    bias gradients stay local, as PyTorch's: DDP averages them like any other parameter's.

    Args:
        input: (N, C, *) floating Tensor, this rank's share of the batch.
        running_mean: (C,) buffer updated in place with the global mean, or None.
        running_var: (C,) buffer updated in place with the global unbiased variance, or None.
        weight: optional (C,) scale.
        bias: optional (C,) shift.
        momentum: the running-average factor (a number, or a 0-d Tensor).
        eps: added to the variance.
    """
    _check_batch_args("sync_batch_norm", input, weight, bias, momentum, 0.0 if eps is None else eps, False)
    _check_running("sync_batch_norm", running_mean, running_var, input.shape[1], True)
    channels, axes = input.shape[1], (0,) + tuple(range(2, input.ndim))
    xf = cast(input, dtypes.float64 if input.dtype == dtypes.float64 else dtypes.float32)
    shape = _channel_param_shape(input)
    count = Tensor(xp_of(input).full((1,), input.array.size // channels, dtype=xf.dtype))
    totals = _AllReduceSum.apply(cat([sum_(xf, axes), count]))
    n = totals[channels:]
    mu = totals[:channels] / n
    centered = xf - reshape(mu, shape)
    var = _AllReduceSum.apply(sum_(centered * centered, axes)) / n
    out = centered * reshape(rsqrt(var + float(eps)), shape)
    if weight is not None:
        out = out * reshape(cast(weight, xf.dtype), shape)
    if bias is not None:
        out = out + reshape(cast(bias, xf.dtype), shape)
    # NOTE: the all-reduced count stays on the device (no host read)
    _update_running_stats(running_mean, running_var, mu.array, _unbiased(var.array, n.array), _momentum(momentum))
    return cast(out, input.dtype)


# ----------------------------------------------------------------------------- rms norm and normalize


class RMSNorm(Function):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing dims (unlisted: input dtype, fp32 math)."""

    op_name = "rms_norm"

    @staticmethod
    def forward(ctx, x, weight, ndim_norm=1, eps=1e-6):
        ctx.axes, ctx.eps = tuple(range(x.ndim - ndim_norm, x.ndim)), eps
        ctx.save_for_backward(x, weight)
        xf = compute_in_fp32(x.array)
        y = xf / xp_of(x).sqrt((xf * xf).mean(axis=ctx.axes, keepdims=True) + eps)
        return _affine_array(y, weight, None, x.shape[x.ndim - ndim_norm:], x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        xf, gf = _fp32(x), _fp32(grad)
        rstd = (mean(xf * xf, dim=ctx.axes, keepdim=True) + ctx.eps) ** -0.5
        g = gf * _fp32(weight) if weight is not None else gf
        # NOTE: d(x * r)/dx with r = (mean(x^2) + eps)^-1/2 gives r*g - x * r^3 * mean(g * x)
        gx = rstd * g - xf * rstd ** 3 * mean(g * xf, dim=ctx.axes, keepdim=True)
        gw = _back_to(sum_to(gf * xf * rstd, weight.shape), weight.dtype) if ctx.needs_input_grad[1] else None
        return _back_to(gx, x.dtype) if ctx.needs_input_grad[0] else None, gw


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """Root-mean-square normalization over the trailing dims, then an optional scale.

    Args:
        input: a floating Tensor whose trailing dims equal ``normalized_shape``.
        normalized_shape: an int or tuple, the shape of the normalized trailing dims.
        weight: optional scale of shape ``normalized_shape``.
        eps: added to the mean square; None means the machine epsilon of the input dtype (as PyTorch).
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    require_floating("rms_norm", input)
    if not shape or len(shape) > input.ndim or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm: normalized_shape {shape} must match the trailing dimensions of the "
                           f"input, got input of shape {tuple(input.shape)}")
    _check_param("rms_norm", "weight", weight, shape, input)
    eps = float(ml_dtypes.finfo(input.dtype).eps) if eps is None else eps
    _check_eps("rms_norm", eps)
    return RMSNorm.apply(input, weight, ndim_norm=len(shape), eps=float(eps))


class Normalize(Function):
    """``x / max(||x||_p, eps)`` along ``dim`` (F.normalize); fp32 under autocast like PyTorch's norm."""

    op_name = "normalize"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, x, p=2.0, dim=1, eps=1e-12):
        ctx.p, ctx.dim, ctx.eps = p, dim, eps
        ctx.save_for_backward(x)
        xp, xf = xp_of(x), compute_in_fp32(x.array)
        norm = (xp.abs(xf) ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
        return (xf / xp.maximum(norm, eps)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        xf, gf, p, dim = _fp32(x), _fp32(grad), ctx.p, ctx.dim
        xp = xp_of(x)
        sign = Tensor(xp.sign(xf.array))
        norm = sum_((xf * sign) ** p, dim=dim, keepdim=True) ** (1.0 / p)
        denom = maximum(norm, ctx.eps)
        # NOTE: y = x / d with d = max(||x||, eps); dd/dx = d||x||/dx where ||x|| > eps, else 0.
        #       d||x||_p / dx = sign(x) |x|^(p-1) / ||x||^(p-1) (x / ||x|| for p = 2).
        active = Tensor((norm.array > ctx.eps).astype(xf.dtype))
        if p == 2.0:
            dnorm = xf / denom
        elif p == 1.0:
            dnorm = sign
        else:
            dnorm = sign * (xf * sign) ** (p - 1.0) / denom ** (p - 1.0)
        gx = gf / denom - active * dnorm * sum_(gf * xf, dim=dim, keepdim=True) / (denom * denom)
        return _back_to(gx, x.dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12):  # noqa: A002
    """``input / max(||input||_p, eps)`` along ``dim`` (``torch.nn.functional.normalize``).

    Args:
        input: a floating Tensor.
        p: the norm's exponent, a finite number >= 1.
        dim: the dimension to normalize along.
        eps: the smallest denominator.
    """
    require_floating("normalize", input)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 1.0 <= p < float("inf"):
        raise ValueError(f"normalize: p must be a finite number >= 1, got {p!r} (p=inf is not supported)")
    _check_eps("normalize", eps)
    return Normalize.apply(input, p=float(p), dim=normalize_dim("normalize", dim, max(input.ndim, 1)),
                           eps=float(eps))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """``x / (k + alpha * mean of x**2 over a window of size channels) ** beta`` (AlexNet's LRN).

    The window over channels ``c - size // 2 .. c + (size - 1) // 2`` is zero-padded at the edges
    and always divided by ``size``, as in PyTorch. Composite: pad, average pooling and a power,
    so it differentiates (twice) through those ops.

    Args:
        input: a floating Tensor (N, C, *), at least 3D.
        size: number of neighbouring channels in the window.
        alpha: multiplicative factor.
        beta: exponent.
        k: additive factor.
    """
    require_floating("local_response_norm", input)
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size!r}")
    if input.numel() == 0:
        return input + 0
    n, c = input.shape[:2]
    sq = reshape(input * input, (n, 1, c, input.numel() // (n * c)))
    sq = pad(sq, (0, 0, size // 2, (size - 1) // 2))
    div = reshape(avg_pool2d(sq, (size, 1), stride=1), tuple(input.shape))
    return input / (div * alpha + k) ** beta


METHODS = {}

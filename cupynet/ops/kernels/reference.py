"""Reference implementations of the fused hot ops, written with ``xp`` (NumPy or CuPy arrays).

These run on the CPU, serve as the test oracle of the CUDA kernels, and are the GPU path for
float64 (which has no kernel). They compute what the kernels compute, in the same precision:
every input is read as float32 (float64 stays float64), sums accumulate in that dtype, and each
result is rounded once to its storage dtype. No argument checking here: ``cupynet.ops.kernels``
checks before it calls.
"""

from __future__ import annotations

import math

import numpy

from ... import dtypes
from ...backend import get_array_module
from ...cuda.reference import block_sum, store_f32, strided_thread_sums
from .._im2col import col2im as _col2im
from .._im2col import windows
from .._rows import row_max, row_sum
from .._special import erf_kernel

__all__ = ["compute_dtype_of", "softmax_xent_forward", "softmax_xent_backward", "softmax_xent_mean",
           "layer_norm_forward",
           "layer_norm_backward", "bias_gelu_forward", "bias_gelu_backward", "bias_relu_forward",
           "bias_relu_backward", "bias_add", "im2col", "col2im", "batched_matmul_half"]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


def compute_dtype_of(dtype):
    """float64 for float64, float32 for every other float dtype.

    Args:
        dtype: a NumPy dtype.
    """
    return dtypes.float64 if dtype == dtypes.float64 else dtypes.float32


def _up(a):
    return a.astype(compute_dtype_of(a.dtype), copy=False)


def _class_terms(xp, target, weight, ignore_index, n_classes, cdt):
    """``valid`` rows, safe targets (0 where ignored or out of range) and ``w[t]`` (0 where not valid)."""
    valid = target != ignore_index
    in_range = (target >= 0) & (target < n_classes)
    safe = xp.where(valid & in_range, target, 0)
    w = xp.ones(n_classes, cdt) if weight is None else weight.astype(cdt)
    return valid, in_range, safe, w


def softmax_xent_forward(logits, target, weight, ignore_index, label_smoothing):
    """Per-row cross-entropy loss and per-row log-sum-exp (see ``cupynet.ops.kernels``).

    Args:
        logits: (N, C) float array.
        target: (N,) int64 class indices.
        weight: (C,) class weights or None.
        ignore_index: target value whose rows give 0.
        label_smoothing: s in [0, 1].
    """
    xp, cdt = get_array_module(logits), compute_dtype_of(logits.dtype)
    x = _up(logits)
    n_rows, n_classes = x.shape
    m = row_max(x) if n_classes else xp.full((n_rows, 1), -xp.inf, cdt)
    with numpy.errstate(all="ignore"):  # NOTE: -inf logits give inf - inf in masked rows
        lse = (m + xp.log(row_sum(xp.exp(x - m))))[:, 0]
        valid, in_range, safe, w = _class_terms(xp, target, weight, ignore_index, n_classes, cdt)
        picked = xp.take_along_axis(x, safe[:, None], axis=1)[:, 0] - lse
        loss = -(1.0 - label_smoothing) * w[safe] * picked
        if label_smoothing:
            loss = loss - (label_smoothing / n_classes) * (w * (x - lse[:, None])).sum(axis=1)
    loss = xp.where(valid, xp.where(in_range, loss, xp.nan), 0.0).astype(cdt)
    return loss, lse.astype(cdt)


def softmax_xent_backward(logits, target, weight, lse, grad_rows, ignore_index, label_smoothing, divisor=None):
    """Gradient of the per-row losses w.r.t. the logits, in the logits' dtype.

    Args:
        logits: (N, C) float array.
        target: (N,) int64 class indices.
        weight: (C,) class weights or None.
        lse: (N,) log-sum-exp from the forward.
        grad_rows: (N,) or 0-d upstream gradient of each row's loss.
        ignore_index: target value whose rows get 0.
        label_smoothing: s in [0, 1].
        divisor: optional one-element 'mean' divisor: grad_rows is divided by it first (0 taken as 1).
    """
    xp, cdt = get_array_module(logits), compute_dtype_of(logits.dtype)
    x = _up(logits)
    n_rows, n_classes = x.shape
    valid, in_range, safe, w = _class_terms(xp, target, weight, ignore_index, n_classes, cdt)
    if divisor is not None:
        # NOTE: a zero total weight means every row's weight is 0: divide by 1 (gradient 0, not 0 * inf)
        d = divisor.astype(cdt).reshape(())
        grad_rows = grad_rows.astype(cdt) / xp.where(d == 0, xp.ones((), cdt), d)
    s = label_smoothing
    wt = w[safe]
    q = (s / n_classes) * xp.broadcast_to(w, x.shape).copy()
    q[xp.arange(n_rows), safe] += (1.0 - s) * wt
    sum_q = (1.0 - s) * wt + (s / n_classes) * w.sum()
    with numpy.errstate(all="ignore"):  # NOTE: -inf logits give inf - inf in masked rows
        p = xp.exp(x - lse.astype(cdt)[:, None])
        g = xp.broadcast_to(grad_rows.astype(cdt), (n_rows,))[:, None]
        dx = g * (p * sum_q[:, None] - q)
    dx = xp.where(valid[:, None], xp.where(in_range[:, None], dx, xp.nan), 0.0)
    return dx.astype(logits.dtype)


def softmax_xent_mean(loss_rows, target, weight, n_classes, ignore_index, out_dtype):
    """``(sum(loss_rows) / divisor, divisor)``: the 'mean' cross-entropy, divisor = sum of ``w[t]`` over kept rows.

    NOTE: for fp32 rows both sums replay ``softmax_xent_mean_kernel``'s order (thread t adds rows
    t, t + 256, ... in order, then the fixed shuffle tree), so kernel and reference agree bit for
    bit; float64 rows (no kernel) are summed by xp.

    Args:
        loss_rows: (N,) row losses (fp32, or float64).
        target: (N,) int class indices.
        weight: (C,) class weights or None.
        n_classes: C.
        ignore_index: target value whose rows are left out of the divisor.
        out_dtype: the mean's dtype.
    """
    xp, cdt = get_array_module(loss_rows), compute_dtype_of(loss_rows.dtype)
    kept = target != ignore_index
    if weight is None:
        terms = kept.astype(cdt)
    else:
        in_range = (target >= 0) & (target < n_classes)
        picked = weight.astype(cdt)[xp.where(in_range, target, 0)]
        terms = xp.where(kept, xp.where(in_range, picked, xp.nan), 0.0).astype(cdt)
    with numpy.errstate(all="ignore"):
        if cdt == dtypes.float64 or xp is not numpy:
            total, count = loss_rows.astype(cdt).sum(), terms.sum()
        else:
            total, count = (block_sum(strided_thread_sums(v.astype(cdt).reshape(1, -1)))[0]
                            for v in (loss_rows, terms))
        mean = xp.asarray(total / count, dtype=cdt)
    if cdt == dtypes.float32 and xp is numpy:
        mean = store_f32(mean.reshape(1), out_dtype).reshape(())  # NOTE: the kernel's canonical NaN
    return mean.astype(out_dtype, copy=False), xp.asarray(count, dtype=cdt)


def layer_norm_forward(x2, weight, bias, eps):
    """``(y, mean, rstd)`` of layer norm over the last axis of a 2-D array.

    Args:
        x2: (rows, D) float array.
        weight: (D,) or None.
        bias: (D,) or None.
        eps: added to the variance.
    """
    xp, x = get_array_module(x2), _up(x2)
    mean = x.mean(axis=1)
    centred = x - mean[:, None]
    rstd = 1.0 / xp.sqrt((centred * centred).mean(axis=1) + eps)
    y = centred * rstd[:, None]
    if weight is not None:
        y = y * weight.astype(x.dtype)
    if bias is not None:
        y = y + bias.astype(x.dtype)
    return y.astype(x2.dtype), mean, rstd.astype(x.dtype)


def layer_norm_backward(grad2, x2, mean, rstd, weight):
    """``(dx, dweight, dbias)`` of layer norm over the last axis; parameter grads in the compute dtype.

    Args:
        grad2: (rows, D) upstream gradient.
        x2: (rows, D) the forward input.
        mean: (rows,) from the forward.
        rstd: (rows,) from the forward.
        weight: (D,) or None.
    """
    x, g = _up(x2), _up(grad2)
    xhat = (x - mean[:, None].astype(x.dtype)) * rstd[:, None].astype(x.dtype)
    gw = g * weight.astype(x.dtype) if weight is not None else g
    dx = rstd[:, None] * (gw - gw.mean(axis=1, keepdims=True) - xhat * (gw * xhat).mean(axis=1, keepdims=True))
    return dx.astype(x2.dtype), (g * xhat).sum(axis=0), g.sum(axis=0)


def _gelu(xp, v, approximate):
    if approximate == "tanh":
        return 0.5 * v * (1.0 + xp.tanh(_GELU_K * (v + _GELU_C * v * v * v)))
    return 0.5 * v * (1.0 + _erf(xp, v * _SQRT1_2))


def _gelu_slope(xp, v, approximate):
    if approximate == "tanh":
        t = xp.tanh(_GELU_K * (v + _GELU_C * v * v * v))
        return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * _GELU_K * (1.0 + 3.0 * _GELU_C * v * v)
    return 0.5 * (1.0 + _erf(xp, v * _SQRT1_2)) + v * _INV_SQRT_2PI * xp.exp(-0.5 * v * v)


def _erf(xp, v):
    return erf_kernel(xp, v)


def _biased(x, bias):
    return _up(x) + bias.astype(compute_dtype_of(x.dtype))


def bias_gelu_forward(x, bias, approximate):
    """``gelu(x + bias)`` computed in fp32, rounded once to x's dtype.

    Args:
        x: (..., D) float array.
        bias: (D,) float array.
        approximate: "none" or "tanh".
    """
    return _gelu(get_array_module(x), _biased(x, bias), approximate).astype(x.dtype)


def bias_gelu_backward(grad, x, bias, approximate):
    """``(dx, dbias)`` of ``gelu(x + bias)``; dbias sums the rounded dx in the compute dtype.

    Args:
        grad: upstream gradient, x's shape and dtype.
        x: (..., D) the forward input.
        bias: (D,).
        approximate: "none" or "tanh".
    """
    slope = _gelu_slope(get_array_module(x), _biased(x, bias), approximate)
    dx = (_up(grad) * slope).astype(x.dtype)
    return dx, _column_sum(dx)


def bias_relu_forward(x, bias):
    """``relu(x + bias)`` computed in fp32, rounded once (NaN stays NaN).

    Args:
        x: (..., D) float array.
        bias: (D,) float array.
    """
    xp, v = get_array_module(x), _biased(x, bias)
    return xp.where(v < 0, 0.0, v).astype(x.dtype)


def bias_relu_backward(grad, y):
    """``(dx, dbias)`` of ``relu(x + bias)`` from its output ``y``.

    Args:
        grad: upstream gradient, y's shape and dtype.
        y: the forward output.
    """
    xp = get_array_module(y)
    dx = xp.where(_up(y) > 0, grad, 0).astype(grad.dtype)
    return dx, _column_sum(dx)


def bias_add(x, bias):
    """``x + bias`` computed in fp32 (float64 stays float64), rounded once to x's dtype.

    Args:
        x: (..., D) float array.
        bias: (D,) array of x's dtype.
    """
    return _biased(x, bias).astype(x.dtype)


def _column_sum(dx):
    return _up(dx).reshape(-1, dx.shape[-1]).sum(axis=0)


def im2col(x, geoms, groups):
    """``x`` (N, C, *size) -> (G, N * prod(out), C/G * prod(kernel)): conv.py's ``_cols``, one copy.

    Args:
        x: input array.
        geoms: one ``_im2col.Geometry`` per spatial dimension.
        groups: number of groups.
    """
    n, c, nd = x.shape[0], x.shape[1], len(geoms)
    win = windows(x, geoms)
    win = win.reshape((n, groups, c // groups) + win.shape[2:])
    perm = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
    return win.transpose(perm).reshape(groups, n * math.prod(g.out for g in geoms), -1)


def col2im(cols, geoms, out_dtype):
    """Adjoint of the window map: cols (N, C, *out, *kernel) -> (N, C, *size), summed in fp32.

    Args:
        cols: window values.
        geoms: one ``_im2col.Geometry`` per spatial dimension.
        out_dtype: dtype of the result.
    """
    return _col2im(cols, geoms, out_dtype)


def batched_matmul_half(a, b):
    """``a @ b`` for float16/bfloat16 with fp32 accumulation, rounded once (tensor-core numerics).

    Args:
        a: (..., m, k) half array.
        b: (..., k, n) half array of the same dtype.
    """
    xp = get_array_module(a, b)
    return xp.matmul(a.astype(dtypes.float32), b.astype(dtypes.float32)).astype(a.dtype)


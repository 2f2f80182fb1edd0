"""Scaled dot-product attention: ``softmax(q k^T * scale + mask) v``, with dropout and causal masking.

NOTE (numerics): the two products run in the input dtype with fp32 accumulation
(``matmul``), the scores are taken to fp32, and the softmax (and its backward)
runs in fp32; the probabilities are rounded once to the value dtype before
multiplying ``v``, as fused flash-attention kernels do. A row whose every key is
masked gives zero attention (PyTorch's ``_safe_softmax``), not NaN.

AMP: ``lower`` (PyTorch's CUDA lower list): under autocast q, k and v run in
float16/bfloat16 and the output has that dtype. A float ``attn_mask`` is added
in fp32 and is not cast, unless it requires a gradient: then it is a differentiable
input (its gradient is that of the scores), which autocast casts as PyTorch does.
"""

from __future__ import annotations

import math
import numbers

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..checks import require_floating, require_tensor
from ..random import bernoulli_mask, generator_for
from ..tensor import Tensor
from . import _rows
from ._util import check_same_device, xp_of
from .arith import cast
from .linalg import matmul, matmul_arrays
from .reduce import sum as sum_
from .shape import sum_to
from .unary import exp

__all__ = ["scaled_dot_product_attention"]


def _fits_in(bias_shape, shape) -> bool:
    """True when a bias of ``bias_shape`` (at most 2-D) broadcasts into ``shape`` without widening it."""
    return len(bias_shape) <= 2 and all(b in (1, n) for b, n in zip(bias_shape[::-1], shape[::-1]))


_CAUSAL_BIASES: dict = {}  # NOTE: (L, S, dtype) -> read-only NumPy bias; a handful of sizes per model


def _causal_bias(xp, n_queries, n_keys, work):
    """0 on and below the diagonal, -inf above it, as an (L, S) array of ``work`` dtype (cached on NumPy)."""
    key = (n_queries, n_keys, work)
    bias = _CAUSAL_BIASES.get(key) if xp is numpy else None
    if bias is None:
        keep = xp.tril(xp.ones((n_queries, n_keys), dtype=bool))
        bias = xp.where(keep, 0.0, -xp.inf).astype(work)
        if xp is numpy and len(_CAUSAL_BIASES) < 64:
            bias.flags.writeable = False  # NOTE: shared by every call: never written
            _CAUSAL_BIASES[key] = bias
    return bias


def _mask_bias(xp, attn_mask, is_causal, n_queries, n_keys, work):
    """The additive score bias in the ``work`` dtype (0 or -inf for bool masks and causality), or None."""
    bias = None
    if is_causal:
        bias = _causal_bias(xp, n_queries, n_keys, work)
    if attn_mask is not None:
        m = attn_mask.array
        extra = xp.where(m, 0.0, -xp.inf).astype(work) if m.dtype == dtypes.bool_ else m.astype(work)
        bias = extra if bias is None else bias + extra
    return bias


def _safe_softmax_array(scores):
    """Softmax over the last axis in fp32; rows with no finite score give zeros. Returns (probs, row_max, empty)."""
    xp = xp_of(scores)
    row_max = _rows.row_max(scores)
    row_max = xp.where(xp.isfinite(row_max), row_max, 0.0)
    e = scores - row_max
    xp.exp(e, out=e)  # NOTE: in place in the fresh difference: one (..., L, S) temporary for the whole softmax
    total = _rows.row_sum(e)
    empty = (total == 0).astype(scores.dtype)
    e /= total + empty
    return e, row_max, empty


def _swapped(a):
    """``a`` with its last two axes swapped (a view)."""
    return a.swapaxes(-1, -2)


def _summed(a, shape):
    """The array ``a`` summed down to the broadcast source ``shape`` (``sum_to`` on arrays)."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes, keepdims=True).reshape(shape) if axes else a


def _backward_arrays(ctx, grad, q, k, v):
    """First-order backward on raw arrays from the saved fp32 probabilities (no graph is recorded).

    NOTE: the same formulas as the graph path, term for term and in the same dtypes, so the two
    agree to rounding (tests compare them): no op dispatch, and the softmax is not recomputed.
    """
    need = ctx.needs_input_grad
    g, probs = grad.array, ctx.probs
    kept = probs * ctx.keep if ctx.keep is not None else probs
    gq = gk = gv = gm = None
    if need[2]:
        gv = _summed(matmul_arrays(_swapped(kept.astype(v.dtype)), g), v.shape)
    if need[0] or need[1] or (len(need) > 3 and need[3]):
        d_probs = matmul_arrays(g, _swapped(v.array)).astype(ctx.work, copy=False)
        if ctx.keep is not None:
            d_probs = d_probs * ctx.keep
        d_probs -= _rows.row_sum(d_probs * probs)  # NOTE: d_probs is fresh: in place
        d_bias = d_probs
        d_bias *= probs
        if len(need) > 3 and need[3]:
            gm = _summed(d_bias, ctx.mask_shape).astype(ctx.mask_dtype)
        d_scores = d_bias * ctx.scale if gm is not None else xp_of(d_bias).multiply(d_bias, ctx.scale, out=d_bias)
        if need[0]:
            gq = _summed(matmul_arrays(d_scores.astype(q.dtype), k.array), q.shape)
        if need[1]:
            gk = _summed(matmul_arrays(_swapped(d_scores.astype(k.dtype)), q.array), k.shape)
    grads = (gq, gk, gv, gm) if len(need) > 3 else (gq, gk, gv)
    return tuple(None if a is None else Tensor(a) for a in grads)


def _probs_ops(ctx, q, k):
    """The attention probabilities recomputed with cupynet ops (so backward is differentiable again).

    NOTE: the row max subtracted before exp is a constant: it cancels in the softmax.
    """
    scores = cast(matmul(q, k.mT), ctx.work) * ctx.scale
    if ctx.bias is not None:
        scores = scores + Tensor(ctx.bias)
    e = exp(scores - Tensor(ctx.row_max))
    return e / (sum_(e, dim=-1, keepdim=True) + Tensor(ctx.empty))


def _check_qkv(query, key, value):
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        require_tensor(op, t, name)
        require_floating(op, t, name)
        if t.ndim < 2:
            raise ValueError(f"{op}: expected {name} with at least 2 dims (..., L, E), got shape {tuple(t.shape)}")
    if not query.dtype == key.dtype == value.dtype:
        raise ValueError(f"{op}: Expected query, key, and value to have the same dtype, but got query.dtype: "
                         f"{query.dtype}, key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{op}: expected query (..., L, E), key (..., S, E) and value (..., S, Ev), got shapes "
                         f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}")
    try:
        xp_of(query).broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: the batch dims of query {tuple(query.shape)}, key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)} do not broadcast together") from None


def _check_mask(attn_mask, is_causal, query, key):
    op = "scaled_dot_product_attention"
    if attn_mask is None:
        return
    if is_causal:
        raise ValueError(f"{op}: Explicit attn_mask should not be set when is_causal=True")
    if not isinstance(attn_mask, Tensor) or not (attn_mask.dtype == dtypes.bool_ or
                                                 dtypes.is_floating(attn_mask.dtype)):
        got = attn_mask.dtype if isinstance(attn_mask, Tensor) else type(attn_mask).__name__
        raise TypeError(f"{op}: attn_mask must be a bool or floating Tensor, got {got}")
    scores_shape = tuple(query.shape[:-1]) + (key.shape[-2],)
    try:
        shape = xp_of(query).broadcast_shapes(tuple(attn_mask.shape), scores_shape)
    except ValueError:
        shape = None
    if shape is None or len(attn_mask.shape) > len(scores_shape):
        raise ValueError(f"{op}: attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the attention "
                         f"scores' shape {scores_shape} (..., L, S)")


class ScaledDotProductAttention(Function):
    """``softmax(q k^T * scale + mask) v`` with fp32 softmax (lower under autocast)."""

    op_name = "scaled_dot_product_attention"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        xp, ctx.work = xp_of(q), dtypes.compute_dtype(q.dtype)
        if attn_mask is not None:
            ctx.mask_shape, ctx.mask_dtype = attn_mask.shape, attn_mask.dtype
        ctx.scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        ctx.bias = _mask_bias(xp, attn_mask, is_causal, q.shape[-2], k.shape[-2], ctx.work)
        scores = matmul_arrays(q.array, xp.swapaxes(k.array, -1, -2)).astype(ctx.work, copy=False)
        scores *= ctx.scale  # NOTE: in place: the product (or its fp32 copy) is a fresh array
        if ctx.bias is not None:
            if _fits_in(ctx.bias.shape, scores.shape):  # NOTE: the causal (L, S) bias: add in place
                scores += ctx.bias
            else:  # NOTE: not in place: a mask may broadcast the scores to more batch dims
                scores = scores + ctx.bias
        probs, ctx.row_max, ctx.empty = _safe_softmax_array(scores)
        ctx.probs, ctx.keep = probs, None  # NOTE: fp32 probabilities before dropout, for the array backward
        if dropout_p > 0.0:
            # NOTE: inverted dropout on the probabilities: kept entries are scaled by 1 / (1 - p); the mask is
            # bernoulli(1 - p), as torch's math path draws it (the same mask as torch's on the CPU)
            keep = bernoulli_mask(generator_for(q.device), probs.shape, 1.0 - dropout_p)
            ctx.keep = keep.astype(ctx.work) / (1.0 - dropout_p)
            probs = probs * ctx.keep
        ctx.save_for_backward(q, k, v)
        return matmul_arrays(probs.astype(v.dtype, copy=False), v.array)

    @staticmethod
    def backward(ctx, grad):
        q, k, v = ctx.saved_tensors
        if not STATE.grad_enabled:
            return _backward_arrays(ctx, grad, q, k, v)
        probs = _probs_ops(ctx, q, k)
        kept = probs * Tensor(ctx.keep) if ctx.keep is not None else probs
        gq = gk = gv = gm = None
        need = ctx.needs_input_grad
        if need[2]:
            gv = sum_to(matmul(cast(kept, v.dtype).mT, grad), v.shape)
        if need[0] or need[1] or (len(need) > 3 and need[3]):
            d_probs = cast(matmul(grad, v.mT), ctx.work)
            d_probs = d_probs * Tensor(ctx.keep) if ctx.keep is not None else d_probs
            # NOTE: softmax backward in fp32: dS = P * (dP - sum(dP * P)); a float mask is added to the
            # scores, so its gradient is dS itself; q and k see dS times the scale
            d_bias = probs * (d_probs - sum_(d_probs * probs, dim=-1, keepdim=True))
            if len(need) > 3 and need[3]:
                gm = cast(sum_to(d_bias, ctx.mask_shape), ctx.mask_dtype)
            d_scores = d_bias * ctx.scale
            if need[0]:
                gq = sum_to(matmul(cast(d_scores, q.dtype), k), q.shape)
            if need[1]:
                gk = sum_to(matmul(cast(d_scores, k.dtype).mT, q), k.shape)
        return (gq, gk, gv, gm) if len(need) > 3 else (gq, gk, gv)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """Attention ``softmax(query key^T * scale + mask) value`` (``torch.nn.functional`` semantics).

    Args:
        query: ``(..., L, E)``.
        key: ``(..., S, E)``.
        value: ``(..., S, Ev)``.
        attn_mask: a bool mask (True = may attend) or a float bias, broadcasting to ``(..., L, S)``.
        dropout_p: dropout probability on the attention weights, in [0, 1).
        is_causal: mask out keys after each query (a lower-triangular mask of shape (L, S)).
        scale: the score scale; None means ``1 / sqrt(E)``.
        enable_gqa: grouped-query attention; not supported (must be False).
    """
    op = "scaled_dot_product_attention"
    _check_qkv(query, key, value)
    _check_mask(attn_mask, is_causal, query, key)
    check_same_device(op, query=query, attn_mask=attn_mask)
    if enable_gqa:
        raise NotImplementedError(f"{op}: enable_gqa=True is not supported; repeat the key/value heads instead")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{op}: dropout_p must be a number in [0, 1), got {dropout_p!r}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)
                              or not math.isfinite(scale)):
        raise ValueError(f"{op}: scale must be a finite number or None, got {scale!r}")
    options = {"dropout_p": float(dropout_p), "is_causal": bool(is_causal),
               "scale": None if scale is None else float(scale)}
    if attn_mask is not None and attn_mask.requires_grad:  # NOTE: a differentiable float mask: a positional input
        return ScaledDotProductAttention.apply(query, key, value, attn_mask, **options)
    return ScaledDotProductAttention.apply(query, key, value, attn_mask=attn_mask, **options)


METHODS = {}

"""Reductions: sum, mean, var/std, max/min/amax/amin, argmax/argmin, logsumexp, all/any,
prod, cumsum/cumprod and the vector norms.

The file reads top-down: the shape bookkeeping every reduction shares
(``_axes``, ``_keep``: which axes, and how a gradient is broadcast back), the
sums and extremes, then products and norms.

NOTE: a half-precision reduction accumulates in fp32 (``dtype=float32`` to
NumPy/CuPy; CuPy's CUB path would otherwise accumulate in half) and rounds once.
prod, cumprod, cumsum, sum and the norms are fp32 ops under autocast
(docs/amp.md, section 11), so a float16 input under autocast gives a float32 result.

NOTE (gradients with zeros): the gradient of a product with respect to one
factor is the product of all the *other* factors, which ``out / x`` gets wrong
when ``x`` is 0. ``prod`` uses exclusive cumulative products from both sides
instead (exact with any number of zeros, and twice differentiable); ``cumprod``
treats the elements before and at the first zero of each slice separately.
"""

from __future__ import annotations

import builtins
import collections
import math
import numbers

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.state import STATE
from ..checks import require_floating
from ..tensor import Tensor
from . import arith
from ._util import compute_in_fp32, normalize_dim, xp_of
from .arith import cast
from .indexing import IndexAddZeros, along_dim_index, cat, flip, getitem, stack, where
from .shape import broadcast_to, reshape, unsqueeze

__all__ = [
    "sum", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "logsumexp", "all", "any",
    "prod", "cumsum", "cumprod", "norm", "linalg_vector_norm", "vector_norm",
]


def _axes(op_name, dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = tuple(sorted(normalize_dim(op_name, d, ndim) for d in dims))
    if ndim == 0:
        return ()  # NOTE: a 0-d tensor accepts dim 0 or -1 (as PyTorch) and has no axis to reduce
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{op_name}: dim {tuple(dims)} names the same dimension more than once")
    return axes


def _keepdim_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _keep(t, in_shape, axes, keepdim):
    """A reduced tensor reshaped to its keepdim form, so it broadcasts against the input."""
    return t if keepdim else reshape(t, _keepdim_shape(in_shape, axes))


def _count(shape, axes):
    count = 1
    for ax in axes:
        count *= shape[ax]
    return count


def _acc_dtype(dtype):
    return dtypes.float32 if dtype in dtypes.LOW_PRECISION else None


def _accumulate(a, method, axes, keepdim, out_dtype):
    """``a.array.<method>`` (sum or mean) over ``axes``, accumulating half inputs in fp32, as ``out_dtype``."""
    out = getattr(a.array, method)(axis=axes, keepdims=keepdim, dtype=_acc_dtype(a.dtype) or out_dtype)
    return out.astype(out_dtype, copy=False)


def _check_reduced_nonempty(op_name, t, axes):
    for ax in axes:
        if t.shape[ax] == 0:
            raise IndexError(f"{op_name}(): Expected reduction dim {ax} to have non-zero size (input shape "
                             f"{tuple(t.shape)})")


def _reduced_shape(shape, axes):
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _out_dtype(a, dtype):
    if dtype is not None:
        return dtype
    return a.dtype if dtypes.is_floating(a.dtype) or a.dtype.kind == "c" else dtypes.int64


class Sum(Function):
    """Sum over ``axes``."""

    op_name = "sum"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, axes=(), keepdim=False, dtype=None):
        ctx.in_shape, ctx.axes, ctx.keepdim = a.shape, axes, keepdim
        return _accumulate(a, "sum", axes, keepdim, _out_dtype(a, dtype))

    @staticmethod
    def backward(ctx, grad):
        if not STATE.grad_enabled:
            # NOTE (speed): no graph of the backward is recorded: the same reshape and broadcast on the
            # array (a read-only view, as the op path's), without two op dispatches
            g = grad.array
            kept = g if ctx.keepdim else g.reshape(_keepdim_shape(ctx.in_shape, ctx.axes))
            return Tensor(kept if kept.shape == ctx.in_shape else xp_of(g).broadcast_to(kept, ctx.in_shape))
        return broadcast_to(_keep(grad, ctx.in_shape, ctx.axes, ctx.keepdim), ctx.in_shape)


def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001, A002 - PyTorch's names
    """Sum of the elements over ``dim`` (all when None).

    Args:
        input: a Tensor.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: the result dtype (integers and bools sum to int64 by default).
    """
    return Sum.apply(input, axes=_axes("sum", dim, input.ndim), keepdim=keepdim,
                     dtype=dtypes.as_dtype(dtype) if dtype is not None else None)


class Mean(Function):
    """Mean over ``axes``."""

    op_name = "mean"
    amp_policy = None  # NOTE: unlisted in PyTorch; accumulation is fp32 for half inputs anyway

    @staticmethod
    def forward(ctx, a, axes=(), keepdim=False, dtype=None):
        ctx.in_shape, ctx.axes, ctx.keepdim, ctx.count = a.shape, axes, keepdim, _count(a.shape, axes)
        return _accumulate(a, "mean", axes, keepdim, dtype or a.dtype)

    @staticmethod
    def backward(ctx, grad):
        return broadcast_to(_keep(grad, ctx.in_shape, ctx.axes, ctx.keepdim) / ctx.count, ctx.in_shape)


def mean(input, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """Mean of the elements over ``dim`` (all when None).

    Args:
        input: a floating Tensor.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: the result dtype.
    """
    if not dtypes.is_floating(input.dtype) and input.dtype.kind != "c" and dtype is None:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {input.dtype}")
    return Mean.apply(input, axes=_axes("mean", dim, input.ndim), keepdim=keepdim,
                      dtype=dtypes.as_dtype(dtype) if dtype is not None else None)


# ---- variance and standard deviation -------------------------------------------------------------
def _variance(array, axes, correction, keepdim):
    """Sum of squared deviations / max(N - correction, 0), computed in fp32 for half inputs."""
    x = compute_in_fp32(array)
    centered = x - x.mean(axis=axes, keepdims=True)
    divisor = builtins.max(_count(array.shape, axes) - correction, 0)
    with numpy.errstate(divide="ignore", invalid="ignore"):  # NOTE: N <= correction gives inf/nan, as PyTorch
        return (centered * centered).sum(axis=axes, keepdims=keepdim) / divisor


def _correction(op_name, unbiased, correction):
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op_name}: pass either unbiased or correction, not both (got unbiased={unbiased}, "
                        f"correction={correction})")
    if correction is not None:
        if isinstance(correction, bool) or not isinstance(correction, (int, float)) or correction < 0:
            raise TypeError(f"{op_name}: correction must be a non-negative number, got {correction!r}")
        return correction
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(f"{op_name}: unbiased must be a bool, got {unbiased!r}")
    return 1 if unbiased is None else int(unbiased)


def _moment(cls, input, dim, unbiased, keepdim, correction):  # noqa: A002
    if isinstance(dim, bool):  # NOTE: PyTorch's overload var(input, unbiased)
        dim, unbiased = None, dim
    require_floating(cls.op_name, input)
    c = _correction(cls.op_name, unbiased, correction)
    return cls.apply(input, axes=_axes(cls.op_name, dim, input.ndim), correction=c, keepdim=keepdim)


class Var(Function):
    """Variance over ``axes`` with ``correction`` (1: Bessel's unbiased estimate)."""

    op_name = "var"

    @staticmethod
    def forward(ctx, a, axes=(), correction=1, keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        ctx.divisor = builtins.max(_count(a.shape, axes) - correction, 0)
        return _variance(a.array, axes, correction, keepdim).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        centered = a - mean(a, dim=ctx.axes, keepdim=True)
        scale = 2.0 / ctx.divisor if ctx.divisor else float("inf")
        return _keep(grad, a.shape, ctx.axes, ctx.keepdim) * centered * scale


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Variance ``sum((x - mean)^2) / (N - correction)`` over ``dim`` (all when None).

    Args:
        input: a floating Tensor.
        dim: a dimension, a tuple of them, or None.
        unbiased: True (default) divides by N - 1, False by N; exclusive with ``correction``.
        keepdim: keep reduced dimensions with size 1.
        correction: the number subtracted from N (default 1).
    """
    return _moment(Var, input, dim, unbiased, keepdim, correction)


class Std(Function):
    """Standard deviation over ``axes`` with ``correction``: ``sqrt(var)``."""

    op_name = "std"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, axes=(), correction=1, keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        ctx.divisor = builtins.max(_count(a.shape, axes) - correction, 0)
        out = xp_of(a).sqrt(_variance(a.array, axes, correction, keepdim))
        return out.astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        # NOTE: d std = d var / (2 std). Where std is 0 (a constant slice) PyTorch gives a 0 gradient,
        # unless there are no degrees of freedom (divisor 0), which gives nan
        (a,) = ctx.saved_tensors
        centered = a - mean(a, dim=ctx.axes, keepdim=True)
        g = _keep(grad, a.shape, ctx.axes, ctx.keepdim)
        if not ctx.divisor:
            return g * centered * float("inf")
        out = _keep(ctx.output(0), a.shape, ctx.axes, ctx.keepdim)
        zero = Tensor(out.array == 0)
        return where(zero, 0.0, g * centered / (where(zero, 1.0, out) * ctx.divisor))


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Standard deviation ``sqrt(var)`` over ``dim`` (all when None).

    Args:
        input, dim, unbiased, keepdim, correction: as in ``var``.
    """
    return _moment(Std, input, dim, unbiased, keepdim, correction)


# ---- max / min ---------------------------------------------------------------------------------------
def _amax_like(cls, input, dim, keepdim):  # noqa: A002
    axes = _axes(cls.op_name, None if dim in ((), []) else dim, input.ndim)
    if input.numel() == 0:
        _check_reduced_nonempty(cls.op_name, input, axes)
    return cls.apply(input, axes=axes, keepdim=keepdim)


class Amax(Function):
    """Largest value over ``axes``; the gradient is split evenly among tied maxima."""

    op_name = "amax"
    reduce_name = "max"

    @classmethod
    def forward(cls, ctx, a, axes=(), keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        return getattr(a.array, cls.reduce_name)(axis=axes, keepdims=keepdim)

    @classmethod
    def backward(cls, ctx, grad):
        (a,) = ctx.saved_tensors
        extreme = getattr(a.array, cls.reduce_name)(axis=ctx.axes, keepdims=True)
        hit = (a.array == extreme).astype(dtypes.float32)
        share = hit / hit.sum(axis=ctx.axes, keepdims=True)  # NOTE: ties share the gradient, as PyTorch
        return _keep(grad, a.shape, ctx.axes, ctx.keepdim) * Tensor(share.astype(grad.dtype))


def amax(input, dim=(), keepdim=False):  # noqa: A002
    """The largest values over ``dim`` (all dims when empty); the gradient is split evenly among ties.

    Args:
        input: a Tensor.
        dim: a dimension or tuple of them; () or None for all.
        keepdim: keep reduced dimensions with size 1.
    """
    return _amax_like(Amax, input, dim, keepdim)


class Amin(Amax):
    """Smallest value over ``axes``; the gradient is split evenly among tied minima."""

    op_name = "amin"
    reduce_name = "min"


def amin(input, dim=(), keepdim=False):  # noqa: A002
    """The smallest values over ``dim`` (all dims when empty); the gradient is split evenly among ties.

    Args:
        input, dim, keepdim: as in ``amax``.
    """
    return _amax_like(Amin, input, dim, keepdim)


def _extreme(dim_cls, all_cls, input, dim, keepdim):  # noqa: A002
    name = dim_cls.op_name
    if isinstance(dim, Tensor):
        return getattr(arith, dim_cls.elementwise)(input, dim)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return all_cls.apply(input, axes=tuple(range(input.ndim)), keepdim=False)
    d = normalize_dim(name, dim, input.ndim)
    if input.ndim == 0:
        zero = Tensor(xp_of(input).zeros((), dtype=dtypes.int64))
        return _RETURN_TYPES[name](all_cls.apply(input, axes=(), keepdim=False), zero)
    _check_reduced_nonempty(name, input, (d,))
    return _RETURN_TYPES[name](*dim_cls.apply(input, dim=d, keepdim=keepdim))


class MaxDim(Function):
    """Largest value along one dimension and its index; the gradient goes to that index."""

    op_name = "max"
    arg_name = "argmax"
    elementwise = "maximum"  # NOTE: max(input, other) is the elementwise op, as torch's overload

    @classmethod
    def forward(cls, ctx, a, dim=0, keepdim=False):
        xp = xp_of(a)
        idx = xp.expand_dims(getattr(xp, cls.arg_name)(a.array, axis=dim), dim)
        ctx.index, ctx.keepdim, ctx.dim, ctx.in_shape = along_dim_index(xp, idx, dim), keepdim, dim, a.shape
        values = xp.take_along_axis(a.array, idx, axis=dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return values, idx.astype(dtypes.int64, copy=False)

    @staticmethod
    def backward(ctx, grad, grad_indices):
        g = grad if ctx.keepdim else unsqueeze(grad, ctx.dim)
        return IndexAddZeros.apply(g, index=ctx.index, shape=ctx.in_shape)


def max(input, dim=None, keepdim=False):  # noqa: A001, A002 - PyTorch's names
    """The largest value (no dim), ``(values, indices)`` along ``dim``, or ``maximum(input, other)``.

    Args:
        input: a Tensor.
        dim: None for the overall max (gradient split among ties), an int for a ``(values, indices)``
            namedtuple (gradient to the index), or a Tensor for the elementwise maximum.
        keepdim: keep the reduced dimension with size 1.
    """
    return _extreme(MaxDim, Amax, input, dim, keepdim)


class MinDim(MaxDim):
    """Smallest value along one dimension and its index; the gradient goes to that index."""

    op_name = "min"
    arg_name = "argmin"
    elementwise = "minimum"


def min(input, dim=None, keepdim=False):  # noqa: A001, A002
    """The smallest value (no dim), ``(values, indices)`` along ``dim``, or ``minimum(input, other)``.

    Args:
        input, dim, keepdim: as in ``max``, for the smallest value (a Tensor ``dim`` gives ``minimum``).
    """
    return _extreme(MinDim, Amin, input, dim, keepdim)


_RETURN_TYPES = {name: collections.namedtuple(name, ("values", "indices")) for name in ("max", "min")}


def _arg_extreme(name, input, dim, keepdim):  # noqa: A002
    xp = xp_of(input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        out = getattr(xp, name)(input.array.reshape(-1))
        out = xp.asarray(out).reshape((1,) * input.ndim if keepdim else ())
    else:
        d = normalize_dim(name, dim, input.ndim)
        if input.ndim == 0:
            return Tensor(xp.zeros((), dtype=dtypes.int64))
        _check_reduced_nonempty(name, input, (d,))
        out = getattr(xp, name)(input.array, axis=d)
        out = xp.expand_dims(out, d) if keepdim else out
    return Tensor(xp.asarray(out).astype(dtypes.int64, copy=False))


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the largest value (of the flattened tensor when dim is None); the first one on ties.

    Args:
        input: a Tensor.
        dim: the dimension to reduce, or None.
        keepdim: keep the reduced dimension(s) with size 1.
    """
    return _arg_extreme("argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    """Index of the smallest value (of the flattened tensor when dim is None); the first one on ties.

    Args:
        input, dim, keepdim: as in ``argmax``.
    """
    return _arg_extreme("argmin", input, dim, keepdim)


# ---- logsumexp, all, any ---------------------------------------------------------------------------
class LogSumExp(Function):
    """``log(sum(exp(x)))`` over ``axes``, computed stably; fp32 under autocast."""

    op_name = "logsumexp"
    amp_policy = "fp32"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, axes=(), keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        xp, x = xp_of(a), compute_in_fp32(a.array)
        if _count(a.shape, axes) == 0:
            return xp.full(x.sum(axis=axes, keepdims=keepdim).shape, -numpy.inf, dtype=a.dtype)
        # NOTE: subtract the max so exp never overflows; a row of all -inf (or an inf) keeps its
        # max out of the subtraction, giving -inf (or inf) instead of nan.
        m = x.max(axis=axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)
        with numpy.errstate(divide="ignore"):
            out = xp.log(xp.exp(x - m).sum(axis=axes, keepdims=True)) + m
        return (out if keepdim else out.reshape(_reduced_shape(a.shape, axes))).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        from .unary import exp  # noqa: PLC0415 - unary is another family
        (a,) = ctx.saved_tensors
        out = _keep(ctx.output(0), a.shape, ctx.axes, ctx.keepdim)
        return _keep(grad, a.shape, ctx.axes, ctx.keepdim) * exp(a - out)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """``log(sum(exp(input)))`` over ``dim``, without overflow; integer inputs give float32.

    Args:
        input: a Tensor.
        dim: a dimension or a tuple of them.
        keepdim: keep reduced dimensions with size 1.
    """
    if not dtypes.is_floating(input.dtype):
        input = input.to(dtypes.float32)
    return LogSumExp.apply(input, axes=_axes("logsumexp", dim, input.ndim), keepdim=keepdim)


def _logical(name, input, dim, keepdim):  # noqa: A002
    axes = _axes(name, dim, input.ndim)
    out = getattr(input.array.astype(dtypes.bool_, copy=False), name)(axis=axes, keepdims=keepdim)
    return Tensor(xp_of(input).asarray(out))


def all(input, dim=None, keepdim=False):  # noqa: A001, A002
    """True where every element over ``dim`` (all when None) is nonzero (a bool tensor, no gradient).

    Args:
        input: a Tensor.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
    """
    return _logical("all", input, dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001, A002
    """True where some element over ``dim`` (all when None) is nonzero (a bool tensor, no gradient).

    Args:
        input, dim, keepdim: as in ``all``.
    """
    return _logical("any", input, dim, keepdim)


def _narrow(t, dim, start, stop):
    return getitem(t, (slice(None),) * dim + (slice(start, stop),))


# ---- cumulative sum and product ----------------------------------------------------------------------
def _dtype_arg(dtype):
    return dtypes.as_dtype(dtype) if dtype is not None else None


def _cumulative(cls, input, dim, dtype):  # noqa: A002
    normalize_dim(cls.op_name, dim, input.ndim)  # NOTE: a 0-d tensor takes dim 0 or -1 only, as in PyTorch
    if input.ndim == 0:
        input = reshape(input, (1,))
        return reshape(cls.apply(input, dim=0, dtype=_dtype_arg(dtype)), ())
    return cls.apply(input, dim=normalize_dim(cls.op_name, dim, input.ndim), dtype=_dtype_arg(dtype))


class CumSum(Function):
    """Running sum along ``dim`` (from the end when ``reverse``); fp32 under autocast."""

    op_name = "cumsum"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, dim=0, dtype=None, reverse=False):
        ctx.dim, ctx.reverse = dim, reverse
        xp, out_dtype = xp_of(a), _out_dtype(a, dtype)
        x = a.array.astype(dtypes.compute_dtype(out_dtype), copy=False)
        x = xp.flip(x, dim) if reverse else x
        out = xp.cumsum(x, axis=dim)
        return (xp.flip(out, dim) if reverse else out).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        # NOTE: each input feeds every later running sum, so its gradient is the reversed running sum
        return CumSum.apply(grad, dim=ctx.dim, reverse=not ctx.reverse)


def cumsum(input, dim, *, dtype=None):  # noqa: A002 - PyTorch's name
    """Running sum along ``dim``; integer and bool inputs give int64.

    Args:
        input: a Tensor.
        dim: the dimension to accumulate along.
        dtype: the result dtype (the input is cast to it first).
    """
    return _cumulative(CumSum, input, dim, dtype)


def _cumprod_grad_array(x, y, g, dim):
    """``grad_i = sum_{k>=i} g_k prod_{j<=k, j!=i} x_j`` in O(n), exact with zeros (not recorded).

    Before the first zero of a slice ``grad_i = revcumsum(g * y)_i / x_i``; at the first zero the
    product skips it, which is the running product of x with that zero replaced by 1; after it every
    term contains the zero, so the gradient is 0.
    """
    xp, out_dtype = xp_of(x), g.dtype
    x, y, g = compute_in_fp32(x), compute_in_fp32(y), compute_in_fp32(g)
    zeros_so_far = xp.cumsum(x == 0, axis=dim)
    before = zeros_so_far == 0
    first = (x == 0) & (zeros_so_far == 1)

    def rev_cumsum(v):
        return xp.flip(xp.cumsum(xp.flip(v, dim), axis=dim), dim)

    part_before = xp.where(before, rev_cumsum(g * y) / xp.where(before, x, 1), 0)
    part_first = xp.where(first, rev_cumsum(g * xp.cumprod(xp.where(first, 1, x), axis=dim)), 0)
    return (part_before + part_first).astype(out_dtype, copy=False)


def _cumprod_grad_differentiable(x, g, dim):
    """The same gradient from recorded ops, one position at a time (O(n^2), twice differentiable at zeros).

    ``grad_i = prod(x[:i]) * (g_i + sum_{k>i} g_k * prod(x[i+1:k+1]))``.
    """
    sum_op = sum  # NOTE: this module's differentiable sum (the builtin is builtins.sum here)
    n, pieces = x.shape[dim], []
    for i in range(n):
        g_i = getitem(g, (slice(None),) * dim + (i,))
        tail = g_i
        if i + 1 < n:
            later = _narrow(g, dim, i + 1, n) * CumProd.apply(_narrow(x, dim, i + 1, n), dim=dim)
            tail = tail + sum_op(later, dim=dim)
        pieces.append(tail if i == 0 else Prod.apply(_narrow(x, dim, 0, i), dim=dim) * tail)
    return stack(pieces, dim)


class CumProd(Function):
    """Running product along ``dim``; fp32 under autocast; exact gradients with zeros."""

    op_name = "cumprod"
    amp_policy = "fp32"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, dim=0, dtype=None):
        ctx.save_for_backward(a)
        ctx.dim, out_dtype = dim, _out_dtype(a, dtype)
        x = a.array.astype(dtypes.compute_dtype(out_dtype), copy=False)
        return xp_of(a).cumprod(x, axis=dim).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if is_grad_enabled():  # NOTE: create_graph: the differentiable O(n^2) form (PyTorch does the same)
            return _cumprod_grad_differentiable(a, grad, ctx.dim)
        return Tensor(_cumprod_grad_array(a.array, ctx.output(0).array, grad.array, ctx.dim))


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Running product along ``dim``; integer and bool inputs give int64; exact gradients with zeros.

    Args:
        input: a Tensor.
        dim: the dimension to accumulate along.
        dtype: the result dtype (the input is cast to it first).
    """
    return _cumulative(CumProd, input, dim, dtype)


# ---- product -----------------------------------------------------------------------------------------
def _exclusive_cumprod(t, dim):
    """``[1, x0, x0*x1, ...]``: the running product of the elements strictly before each position."""
    shape = tuple(1 if i == dim else s for i, s in enumerate(t.shape))
    ones = Tensor(xp_of(t).ones(shape, dtype=t.dtype))
    n = t.shape[dim]
    if n == 1:
        return ones
    return cat([ones, CumProd.apply(_narrow(t, dim, 0, n - 1), dim=dim)], dim)


class Prod(Function):
    """Product along one dimension; fp32 under autocast; exact gradients with zeros."""

    op_name = "prod"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, dim=0, keepdim=False, dtype=None):
        ctx.save_for_backward(a)
        ctx.dim, ctx.keepdim, out_dtype = dim, keepdim, _out_dtype(a, dtype)
        x = a.array.astype(dtypes.compute_dtype(out_dtype), copy=False)
        return x.prod(axis=dim, keepdims=keepdim).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        g = grad if ctx.keepdim else unsqueeze(grad, ctx.dim)
        if a.shape[ctx.dim] == 0:
            return Tensor(xp_of(a).zeros(a.shape, dtype=grad.dtype))
        # NOTE: prod of the other factors = (product of those before) * (product of those after)
        before = _exclusive_cumprod(a, ctx.dim)
        after = flip(_exclusive_cumprod(flip(a, ctx.dim), ctx.dim), ctx.dim)
        return g * before * after


def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """Product of the elements (all when dim is None, else along one ``dim``); int inputs give int64.

    Args:
        input: a Tensor.
        dim: one dimension, or None for all elements.
        keepdim: keep the reduced dimension with size 1 (only with a dim).
        dtype: the result dtype (the input is cast to it first).
    """
    if dim is None:
        if keepdim:
            raise TypeError("prod: keepdim=True needs a dim (the product of all elements is a 0-d tensor)")
        return Prod.apply(reshape(input, (-1,)), dim=0, keepdim=False, dtype=_dtype_arg(dtype))
    if not isinstance(dim, int):
        raise TypeError(f"prod: dim must be one int (PyTorch's prod reduces a single dimension), got {dim!r}")
    normalize_dim("prod", dim, input.ndim)
    if input.ndim == 0:
        return reshape(Prod.apply(reshape(input, (1,)), dim=0, keepdim=False, dtype=_dtype_arg(dtype)), ())
    d = normalize_dim("prod", dim, input.ndim)
    return Prod.apply(input, dim=d, keepdim=keepdim, dtype=_dtype_arg(dtype))


# ---- vector norms ------------------------------------------------------------------------------------
def _norm_array(array, ord, axes, keepdim):  # noqa: A002
    xp = xp_of(array)
    x = xp.abs(compute_in_fp32(array))
    if ord == math.inf:
        return x.max(axis=axes, keepdims=keepdim)
    if ord == -math.inf:
        return x.min(axis=axes, keepdims=keepdim)
    if ord == 0:
        return (x != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
    if ord == 1:
        return x.sum(axis=axes, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt((x * x).sum(axis=axes, keepdims=keepdim))
    if ord < 0:  # NOTE: 0 ** negative is inf, so the norm is 0 there; spelled out to avoid NumPy's warning
        powered = xp.where(x == 0, xp.inf, xp.where(x == 0, 1, x) ** ord)
        return powered.sum(axis=axes, keepdims=keepdim) ** (1.0 / ord)
    return ((x ** ord).sum(axis=axes, keepdims=keepdim)) ** (1.0 / ord)


def _norm_order(op_name, p):
    if p == "fro":
        return 2.0
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p):
        raise ValueError(f"{op_name}: unsupported norm order {p!r}; expected a real number, inf, -inf or 'fro'")
    return float(p)


def _vector_norm(cls, input, ord, dim, keepdim, dtype):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{cls.op_name}: expected a Tensor, got {type(input).__name__}")
    require_floating(cls.op_name, input)
    if dtype is not None:
        if dtypes.result_type(input.dtype, dtypes.as_dtype(dtype)) != dtypes.as_dtype(dtype):
            raise RuntimeError(f"{cls.op_name}: the dtype of the input ({input.dtype}) should be convertible "
                               f"without narrowing to the specified dtype ({dtypes.as_dtype(dtype)})")
        input = cast(input, dtype)
    axes = _axes(cls.op_name, dim, input.ndim)
    if math.isinf(ord):
        _check_reduced_nonempty(cls.op_name, input, axes)
    return cls.apply(input, ord=ord, axes=axes, keepdim=keepdim)


class Norm(Function):
    """Vector p-norm over ``axes`` (any real p, inf and -inf, as PyTorch); fp32 under autocast."""

    op_name = "norm"
    amp_policy = "fp32"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, ord=2.0, axes=(), keepdim=False):  # noqa: A002 - PyTorch's name
        ctx.save_for_backward(a)
        ctx.ord, ctx.axes, ctx.keepdim = ord, axes, keepdim
        return _norm_array(a.array, ord, axes, keepdim).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if ctx.ord == 0:
            return None  # NOTE: counting nonzeros is piecewise constant: no gradient
        g = _keep(grad, a.shape, ctx.axes, ctx.keepdim)
        sign = Tensor(xp_of(a).sign(a.array))
        if ctx.ord == 1:
            return g * sign
        out = _keep(ctx.output(0), a.shape, ctx.axes, ctx.keepdim)
        if math.isinf(ctx.ord):
            hit = (xp_of(a).abs(a.array) == out.array).astype(dtypes.float32)
            share = hit / hit.sum(axis=ctx.axes, keepdims=True)  # NOTE: ties share it, as PyTorch
            return g * sign * Tensor(share.astype(grad.dtype))
        # NOTE: a zero norm means x is all zeros there; dividing by 1 instead gives the 0 gradient PyTorch gives
        safe = out + Tensor((out.array == 0).astype(out.dtype))
        if ctx.ord == 2:
            return g * a / safe
        # NOTE: for p < 1, |x|^(p-1) is infinite at x == 0; PyTorch's gradient is 0 there (sign is 0),
        # and 0 wherever the norm is 0 (a negative p with a zero element): |x| + [x == 0] keeps it finite
        zero = Tensor((a.array == 0).astype(a.dtype))
        nonzero_norm = Tensor((out.array != 0).astype(out.dtype))
        return g * sign * (a * sign + zero) ** (ctx.ord - 1) / safe ** (ctx.ord - 1) * nonzero_norm


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """The vector p-norm of ``input`` over ``dim`` (all elements when None), as ``torch.norm``.

    Args:
        input: a floating Tensor.
        p: 'fro' or 2 (default), 1, inf, -inf, 0 (number of nonzeros) or any number >= 1.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: cast the input to this dtype first.
    """
    return _vector_norm(Norm, input, _norm_order("norm", p), dim, keepdim, dtype)


class VectorNorm(Norm):
    """``linalg.vector_norm``: the vector p-norm over ``dim`` (all elements by default); fp32 under autocast."""

    op_name = "linalg_vector_norm"


def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``torch.linalg.vector_norm``: ``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements when None).

    Args:
        x: a floating Tensor.
        ord: 2 (default), 1, inf, -inf, 0 (number of nonzeros) or any number >= 1.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: cast the input to this dtype first.
    """
    return _vector_norm(VectorNorm, x, _norm_order("linalg_vector_norm", ord), dim, keepdim, dtype)


vector_norm = linalg_vector_norm


METHODS = {name: globals()[name] for name in __all__ if name not in ("linalg_vector_norm", "vector_norm")}

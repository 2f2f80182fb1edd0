"""Reductions: sum, mean, var/std, max/min/amax/amin, argmax/argmin, logsumexp, all/any.

prod, cumsum, cumprod and the vector norms live in ``_products.py`` (for size)
and are re-exported here as part of this family.

NOTE: a half-precision reduction accumulates in fp32 (``dtype=float32`` to
NumPy/CuPy; CuPy's CUB path would otherwise accumulate in half) and rounds once.
"""

from __future__ import annotations

import builtins
import collections

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._index_util import along_dim_index
from ._reduce_util import _acc_dtype, _axes, _check_reduced_nonempty, _count, _keep, _keepdim_shape, _reduced_shape
from ._util import compute_in_fp32, normalize_dim, require_floating, xp_of
from .indexing import IndexAddZeros, where
from .shape import broadcast_to, reshape, unsqueeze

__all__ = ["sum", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin",
           "logsumexp", "all", "any", "prod", "cumsum", "cumprod", "norm", "linalg_vector_norm", "vector_norm"]


class Sum(Function):
    """Sum over ``axes``."""

    op_name = "sum"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, axes=(), keepdim=False, dtype=None):
        ctx.in_shape, ctx.axes, ctx.keepdim = a.shape, axes, keepdim
        out_dtype = dtype or (a.dtype if dtypes.is_floating(a.dtype) else dtypes.int64)
        out = a.data.sum(axis=axes, keepdims=keepdim, dtype=_acc_dtype(a.dtype) or out_dtype)
        return out.astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.keepdim:
            grad = reshape(grad, _keepdim_shape(ctx.in_shape, ctx.axes))
        return broadcast_to(grad, ctx.in_shape)


class Mean(Function):
    """Mean over ``axes``."""

    op_name = "mean"
    amp_policy = None  # NOTE: unlisted in PyTorch; accumulation is fp32 for half inputs anyway

    @staticmethod
    def forward(ctx, a, axes=(), keepdim=False, dtype=None):
        ctx.in_shape, ctx.axes, ctx.keepdim = a.shape, axes, keepdim
        count = 1
        for ax in axes:
            count *= a.shape[ax]
        ctx.count = count
        out_dtype = dtype or a.dtype
        out = a.data.mean(axis=axes, keepdims=keepdim, dtype=_acc_dtype(a.dtype) or out_dtype)
        return out.astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.keepdim:
            grad = reshape(grad, _keepdim_shape(ctx.in_shape, ctx.axes))
        return broadcast_to(grad / ctx.count, ctx.in_shape)


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


def mean(input, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """Mean of the elements over ``dim`` (all when None).

    Args:
        input: a floating Tensor.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: the result dtype.
    """
    if not dtypes.is_floating(input.dtype) and dtype is None:
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


class Var(Function):
    """Variance over ``axes`` with ``correction`` (1: Bessel's unbiased estimate)."""

    op_name = "var"

    @staticmethod
    def forward(ctx, a, axes=(), correction=1, keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        ctx.divisor = builtins.max(_count(a.shape, axes) - correction, 0)
        return _variance(a.data, axes, correction, keepdim).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        centered = a - mean(a, dim=ctx.axes, keepdim=True)
        scale = 2.0 / ctx.divisor if ctx.divisor else float("inf")
        return _keep(grad, a.shape, ctx.axes, ctx.keepdim) * centered * scale


class Std(Function):
    """Standard deviation over ``axes`` with ``correction``: ``sqrt(var)``."""

    op_name = "std"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, axes=(), correction=1, keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        ctx.divisor = builtins.max(_count(a.shape, axes) - correction, 0)
        out = xp_of(a).sqrt(_variance(a.data, axes, correction, keepdim))
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
        zero = Tensor(out.data == 0)
        return where(zero, 0.0, g * centered / (where(zero, 1.0, out) * ctx.divisor))


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


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Standard deviation ``sqrt(var)`` over ``dim`` (all when None).

    Args:
        input: a floating Tensor.
        dim: a dimension, a tuple of them, or None.
        unbiased: True (default) divides by N - 1, False by N; exclusive with ``correction``.
        keepdim: keep reduced dimensions with size 1.
        correction: the number subtracted from N (default 1).
    """
    return _moment(Std, input, dim, unbiased, keepdim, correction)


# ---- max / min ---------------------------------------------------------------------------------------
class Amax(Function):
    """Largest value over ``axes``; the gradient is split evenly among tied maxima."""

    op_name = "amax"
    reduce_name = "max"

    @classmethod
    def forward(cls, ctx, a, axes=(), keepdim=False):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        return getattr(a.data, cls.reduce_name)(axis=axes, keepdims=keepdim)

    @classmethod
    def backward(cls, ctx, grad):
        (a,) = ctx.saved_tensors
        extreme = getattr(a.data, cls.reduce_name)(axis=ctx.axes, keepdims=True)
        hit = (a.data == extreme).astype(dtypes.float32)
        share = hit / hit.sum(axis=ctx.axes, keepdims=True)  # NOTE: ties share the gradient, as PyTorch
        return _keep(grad, a.shape, ctx.axes, ctx.keepdim) * Tensor(share.astype(grad.dtype))


class Amin(Amax):
    """Smallest value over ``axes``; the gradient is split evenly among tied minima."""

    op_name = "amin"
    reduce_name = "min"


class MaxDim(Function):
    """Largest value along one dimension and its index; the gradient goes to that index."""

    op_name = "max"
    arg_name = "argmax"

    @classmethod
    def forward(cls, ctx, a, dim=0, keepdim=False):
        xp = xp_of(a)
        idx = xp.expand_dims(getattr(xp, cls.arg_name)(a.data, axis=dim), dim)
        ctx.index, ctx.keepdim, ctx.dim, ctx.in_shape = along_dim_index(xp, idx, dim), keepdim, dim, a.shape
        values = xp.take_along_axis(a.data, idx, axis=dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return values, idx.astype(dtypes.int64, copy=False)

    @staticmethod
    def backward(ctx, grad, grad_indices):
        g = grad if ctx.keepdim else unsqueeze(grad, ctx.dim)
        return IndexAddZeros.apply(g, index=ctx.index, shape=ctx.in_shape)


class MinDim(MaxDim):
    """Smallest value along one dimension and its index; the gradient goes to that index."""

    op_name = "min"
    arg_name = "argmin"


_RETURN_TYPES = {name: collections.namedtuple(name, ("values", "indices")) for name in ("max", "min")}


def _extreme(dim_cls, all_cls, input, dim, keepdim):  # noqa: A002
    name = dim_cls.op_name
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


def max(input, dim=None, keepdim=False):  # noqa: A001, A002 - PyTorch's names
    """The largest value (no dim), ``(values, indices)`` along ``dim``, or ``maximum(input, other)``.

    Args:
        input: a Tensor.
        dim: None for the overall max (gradient split among ties), an int for a ``(values, indices)``
            namedtuple (gradient to the index), or a Tensor for the elementwise maximum.
        keepdim: keep the reduced dimension with size 1.
    """
    if isinstance(dim, Tensor):
        from .arith import maximum  # noqa: PLC0415
        return maximum(input, dim)
    return _extreme(MaxDim, Amax, input, dim, keepdim)


def min(input, dim=None, keepdim=False):  # noqa: A001, A002
    """The smallest value (no dim), ``(values, indices)`` along ``dim``, or ``minimum(input, other)``.

    Args:
        input: a Tensor.
        dim: None for the overall min (gradient split among ties), an int for a ``(values, indices)``
            namedtuple (gradient to the index), or a Tensor for the elementwise minimum.
        keepdim: keep the reduced dimension with size 1.
    """
    if isinstance(dim, Tensor):
        from .arith import minimum  # noqa: PLC0415
        return minimum(input, dim)
    return _extreme(MinDim, Amin, input, dim, keepdim)


def _amax_like(cls, input, dim, keepdim):  # noqa: A002
    axes = _axes(cls.op_name, None if dim in ((), []) else dim, input.ndim)
    if input.numel() == 0:
        _check_reduced_nonempty(cls.op_name, input, axes)
    return cls.apply(input, axes=axes, keepdim=keepdim)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    """The largest values over ``dim`` (all dims when empty); the gradient is split evenly among ties.

    Args:
        input: a Tensor.
        dim: a dimension or tuple of them; () or None for all.
        keepdim: keep reduced dimensions with size 1.
    """
    return _amax_like(Amax, input, dim, keepdim)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    """The smallest values over ``dim`` (all dims when empty); the gradient is split evenly among ties.

    Args:
        input: a Tensor.
        dim: a dimension or tuple of them; () or None for all.
        keepdim: keep reduced dimensions with size 1.
    """
    return _amax_like(Amin, input, dim, keepdim)


def _arg_extreme(name, input, dim, keepdim):  # noqa: A002
    xp = xp_of(input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        out = getattr(xp, name)(input.data.reshape(-1))
        out = xp.asarray(out).reshape((1,) * input.ndim if keepdim else ())
    else:
        d = normalize_dim(name, dim, input.ndim)
        if input.ndim == 0:
            return Tensor(xp.zeros((), dtype=dtypes.int64))
        _check_reduced_nonempty(name, input, (d,))
        out = getattr(xp, name)(input.data, axis=d)
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
        input: a Tensor.
        dim: the dimension to reduce, or None.
        keepdim: keep the reduced dimension(s) with size 1.
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
        xp, x = xp_of(a), compute_in_fp32(a.data)
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
    out = getattr(input.data.astype(dtypes.bool_, copy=False), name)(axis=axes, keepdims=keepdim)
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
        input: a Tensor.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
    """
    return _logical("any", input, dim, keepdim)


# ---- the rest of the family, kept in its own file for size -------------------------------------------
from ._products import (  # noqa: E402
    CumProd,
    CumSum,
    Norm,
    Prod,
    VectorNorm,
    cumprod,
    cumsum,
    linalg_vector_norm,
    norm,
    prod,
    vector_norm,
)

for _cls in (CumProd, CumSum, Norm, Prod, VectorNorm):
    _cls.__module__ = __name__  # NOTE: so cupynet.ops.OP_CLASSES (which reads this module) lists them

METHODS = {name: globals()[name] for name in __all__ if name not in ("linalg_vector_norm", "vector_norm")}

"""Reductions: sum and mean (more in this family are added by the ops engineers).

NOTE: a half-precision reduction accumulates in fp32 (``dtype=float32`` to
NumPy/CuPy; CuPy's CUB path would otherwise accumulate in half) and rounds once.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ._util import normalize_dim
from .shape import broadcast_to, reshape

__all__ = ["sum", "mean"]


def _axes(op_name, dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(sorted(normalize_dim(op_name, d, ndim) for d in dims))


def _keepdim_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _acc_dtype(dtype):
    return dtypes.float32 if dtype in dtypes.LOW_PRECISION else None


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
    amp_policy = "fp32"

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


METHODS = {"sum": sum, "mean": mean}

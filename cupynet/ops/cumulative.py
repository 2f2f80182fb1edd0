"""Running extremes and running log-sum-exp along a dimension: cummax, cummin, logcumsumexp.

(``cumsum``/``cumprod`` live in reduce.py.) ``cummax``/``cummin`` find, on the
arrays, the index of the running winner at each position, then read the input
there (a ``GetItem``): the gradient goes to the element that is the running
extreme, as in PyTorch (the last of tied values; NaN wins and stays).
"""

from __future__ import annotations

import collections

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import compute_in_fp32, normalize_dim, xp_of
from .indexing import GetItem, along_dim_index, masked_fill
from .reduce import sum as sum_
from .shape import movedim, reshape, unsqueeze

__all__ = ["cummax", "cummin", "logcumsumexp"]

CummaxResult = collections.namedtuple("cummax", ["values", "indices"])
CumminResult = collections.namedtuple("cummin", ["values", "indices"])


def _scan_cupy(xp, array, axis, ufunc):
    # NOTE: CuPy's ufuncs have no accumulate; a Python loop over the scanned axis (n small kernels)
    out = xp.moveaxis(array.copy(), axis, 0)
    for i in range(1, out.shape[0]):
        out[i] = ufunc(out[i - 1], out[i])
    return xp.moveaxis(out, 0, axis)


def _running_index(array, axis, better):
    """The index of the running extreme at each position (ties: the later one; a NaN wins for good)."""
    xp = xp_of(array)
    running = better.accumulate(array, axis=axis) if xp is numpy else _scan_cupy(xp, array, axis, better)
    positions = xp.arange(array.shape[axis]).reshape((-1,) + (1,) * (array.ndim - axis - 1))
    wins = array == running
    if array.dtype.kind == "f" or array.dtype == dtypes.bfloat16:
        wins |= xp.isnan(array)
    return xp.maximum.accumulate(xp.where(wins, positions, 0), axis=axis) if xp is numpy else \
        _scan_cupy(xp, xp.where(wins, positions, 0), axis, xp.maximum)


def _cum_extreme(op_name, cls, result, better, input, dim):  # noqa: A002
    require_tensor(op_name, input, "input")
    d = normalize_dim(op_name, dim, input.ndim)
    flat = reshape(input, (1,)) if input.ndim == 0 else input
    idx = _running_index(flat.array, d, better)
    values = cls.apply(flat, index=along_dim_index(xp_of(flat), idx, d))
    indices = Tensor(idx.astype(dtypes.int64, copy=False))
    return result(reshape(values, input.shape), reshape(indices, input.shape))


class CumMax(GetItem):
    """The input read at the index of the running maximum along a dimension."""

    op_name = "cummax"


def cummax(input, dim):  # noqa: A002 - PyTorch's name
    """The running maximum along ``dim`` and the index where each was reached.

    Args:
        input: a Tensor.
        dim: the dimension to scan.
    """
    return _cum_extreme("cummax", CumMax, CummaxResult, numpy.maximum, input, dim)


class CumMin(GetItem):
    """The input read at the index of the running minimum along a dimension."""

    op_name = "cummin"


def cummin(input, dim):  # noqa: A002
    """The running minimum along ``dim`` and the index where each was reached.

    Args:
        input: a Tensor.
        dim: the dimension to scan.
    """
    return _cum_extreme("cummin", CumMin, CumminResult, numpy.minimum, input, dim)


class LogCumSumExp(Function):
    """``log(cumsum(exp(x)))`` along a dimension, computed without overflow."""

    op_name = "logcumsumexp"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, dim=0):
        ctx.dim = dim
        ctx.save_for_backward(a)
        x = compute_in_fp32(a.array)
        if xp_of(a) is numpy:
            out = numpy.logaddexp.accumulate(x, axis=dim)
        else:  # NOTE: CuPy has no accumulate: shift by the slice max (may underflow far below it)
            m = x.max(axis=dim, keepdims=True)
            m = xp_of(a).where(xp_of(a).isfinite(m), m, 0)
            out = xp_of(a).log(xp_of(a).cumsum(xp_of(a).exp(x - m), axis=dim)) + m
        return out.astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        # NOTE: d out_j / d x_i = exp(x_i - out_j) for j >= i; every such exponent is <= 0 (out_j >= x_i),
        # so the (n, n) form never overflows. It costs n^2 memory per slice along dim.
        (a,) = ctx.saved_tensors
        x, out, g = (movedim(t, ctx.dim, -1) for t in (a, ctx.output(0), grad))
        gap = unsqueeze(x, -1) - unsqueeze(out, -2)                       # [..., i, j] = x_i - out_j
        n = x.shape[-1]
        below = Tensor(xp_of(a).tril(xp_of(a).ones((n, n), dtype=bool), -1))  # j < i: no dependence
        weights = masked_fill(gap, below, -numpy.inf).exp()
        return movedim(sum_(weights * unsqueeze(g, -2), -1), -1, ctx.dim)


def logcumsumexp(input, dim):  # noqa: A002
    """``log(cumsum(exp(input), dim))``, stable for large values.

    Args:
        input: a floating point Tensor.
        dim: the dimension to scan.
    """
    require_tensor("logcumsumexp", input, "input")
    if not dtypes.is_floating(input.dtype):
        raise RuntimeError(f"logcumsumexp: expected a floating point input, got {input.dtype}")
    d = normalize_dim("logcumsumexp", dim, input.ndim)
    if input.ndim == 0:
        return reshape(LogCumSumExp.apply(reshape(input, (1,)), dim=0), ())
    return LogCumSumExp.apply(input, dim=d)


METHODS = {"cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp}

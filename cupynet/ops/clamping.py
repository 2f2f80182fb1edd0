"""Values held to limits: clamp/clip, and the non-finite values: nan_to_num, isfinite, isnan, isinf.

``clamp`` takes numbers or broadcastable Tensors as bounds (Tensor bounds get
gradients where they are the output); ``nan_to_num`` clamps the infinities to
the dtype's finite range (or given values) and replaces NaN. The finiteness
tests return bool tensors and record nothing.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy

from .. import dtypes
from ..autograd.function import Function
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import data, fix_float_dtype, lift, xp_of
from .shape import sum_to

__all__ = ["clamp", "clip", "nan_to_num", "isfinite", "isnan", "isinf"]


def _all_true(t):
    return Tensor(xp_of(t).ones(t.shape, dtype=bool))


def _float_mask(first, second, how, dtype):
    if second is not None:
        first = (first & second) if how == "and" else (first | second)
    return first.to(dtype)


class Clamp(Function):
    """``min(max(x, lo), hi)``; gradient 1 inside [lo, hi], 0 outside; tensor bounds get the rest."""

    op_name = "clamp"

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.save_for_backward(a, *(v if isinstance(v, Tensor) else None for v in (lo, hi)))
        ctx.bounds = (lo, hi)
        xp, out = xp_of(a), a.array
        if lo is not None:
            out = xp.maximum(out, data(lo))
        if hi is not None:
            out = xp.minimum(out, data(hi))
        return fix_float_dtype(out, a, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        a, lo_t, hi_t = ctx.saved_tensors
        lo = lo_t if lo_t is not None else ctx.bounds[0]
        hi = hi_t if hi_t is not None else ctx.bounds[1]
        inside = _all_true(a)
        if lo is not None:
            inside = inside & (a >= lo)
        if hi is not None:
            inside = inside & (a <= hi)
        # NOTE: as PyTorch's clamp_backward_min_max: when lo > hi the output is hi, so hi gets the gradient
        g_a = sum_to(grad * inside.to(grad.dtype), a.shape) if ctx.needs_input_grad[0] else None
        g_lo = g_hi = None
        if ctx.needs_input_grad[1]:
            g_lo = sum_to(grad * _float_mask(a < lo, lo < hi if hi is not None else None, "and", grad.dtype), lo.shape)
        if ctx.needs_input_grad[2]:
            g_hi = sum_to(grad * _float_mask(a > hi, hi < lo if lo is not None else None, "or", grad.dtype), hi.shape)
        return g_a, g_lo, g_hi


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Elementwise ``min(max(input, min), max)``; bounds may be numbers or broadcastable Tensors.

    The gradient is 1 where ``min <= input <= max`` and 0 elsewhere (tensor bounds
    receive the gradient where they are the output). NaN stays NaN.

    Args:
        input: a Tensor.
        min: lower bound (number, Tensor or None).
        max: upper bound (number, Tensor or None).
    """
    require_tensor("clamp", input)
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    for label, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, (Tensor, int, float, numpy.number)):
            raise TypeError(f"clamp: {label} must be a number, a Tensor or None, got {type(bound).__name__}")
        if isinstance(bound, (float, numpy.floating)) and math.isnan(bound):
            raise ValueError(f"clamp: {label} is nan; expected a number")
    lo = lift(min, input) if min is not None else None
    hi = lift(max, input) if max is not None else None
    return Clamp.apply(input, lo, hi)


def clip(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Alias of ``clamp`` (NumPy's name): elementwise ``min(max(input, min), max)``.

    Args:
        input: a Tensor.
        min: lower bound (number, Tensor or None).
        max: upper bound (number, Tensor or None).
    """
    return clamp(input, min, max)


def _largest(dtype):
    return float(ml_dtypes.finfo(dtype).max)


class NanToNum(Function):
    """Replace nan, +inf and -inf by finite numbers; gradient 1 where the input is finite, else 0."""

    op_name = "nan_to_num"

    @staticmethod
    def forward(ctx, a, nan=0.0, posinf=None, neginf=None):
        ctx.save_for_backward(a)
        xp, x = xp_of(a), a.array
        if not dtypes.is_floating(a.dtype):
            return x.copy()
        top = _largest(a.dtype) if posinf is None else posinf
        bottom = -_largest(a.dtype) if neginf is None else neginf
        out = xp.where(xp.isnan(x), xp.asarray(nan, dtype=x.dtype), x)
        out = xp.where(out == xp.inf, xp.asarray(top, dtype=x.dtype), out)
        return xp.where(out == -xp.inf, xp.asarray(bottom, dtype=x.dtype), out)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * isfinite(a).to(grad.dtype)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """Replace NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (defaults: 0 and the dtype's extremes).

    Args:
        input: a Tensor.
        nan: the value for NaN.
        posinf: the value for +inf (None: the largest finite value of the dtype).
        neginf: the value for -inf (None: the most negative finite value of the dtype).
    """
    require_tensor("nan_to_num", input)
    for label, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None and not isinstance(value, (int, float, numpy.number)):
            raise TypeError(f"nan_to_num: {label} must be a number or None, got {type(value).__name__}")
    return NanToNum.apply(input, nan=nan, posinf=posinf, neginf=neginf)


def isfinite(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise test for finite values (bool tensor; integers are always finite).

    ``out = not (isnan(input) or isinf(input))``.

    Args:
        input: a Tensor.
    """
    require_tensor("isfinite", input)
    return Tensor(xp_of(input).isfinite(input.array))


def isnan(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise test for NaN (bool tensor).

    ``out = input != input``.

    Args:
        input: a Tensor.
    """
    require_tensor("isnan", input)
    return Tensor(xp_of(input).isnan(input.array))


def isinf(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise test for +-inf (bool tensor).

    ``out = |input| == inf``.

    Args:
        input: a Tensor.
    """
    require_tensor("isinf", input)
    return Tensor(xp_of(input).isinf(input.array))


METHODS = {name: globals()[name] for name in __all__}

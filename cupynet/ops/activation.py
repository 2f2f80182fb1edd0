"""Activation functions: relu family, elu, gelu, silu, mish, sigmoid, hard*, softplus, softmax, prelu, glu.

Each op is written out: a ``Function`` whose forward is one fused pass over
the array (float16/bfloat16 computed in float32 and rounded once, under
``numpy.errstate(all="ignore")``; the option-free ones write only that pass,
``kernel(xp, x)``, on unary.py's ``_Pointwise``) and whose ``backward`` is
written with cupynet ops, so second derivatives work; then its public function
(``def relu(input, inplace=False)``). Masks (``x > 0``) are constants for autograd.

Integer inputs behave as in PyTorch: ``relu``, ``relu6`` and ``hardtanh`` compute
in the integer dtype (bool refused), ``sigmoid`` (like ``tanh``) promotes to the
default float dtype, ``softmax``/``log_softmax`` take them with a float ``dtype=``,
and the rest refuse them (PyTorch has no integer kernels for them).

``inplace=True`` (the argument nn layers pass) updates the input in place when
autograd is not recording it. NOTE: when the input is part of a graph (it
requires grad under grad mode) cupynet's tape cannot rewrite its history, so the
result is computed out of place and the input is left unchanged; always use the
returned tensor, as ``x = relu(x, inplace=True)`` does.
"""

from __future__ import annotations

import math
import warnings

import numpy

from .. import dtypes
from .. import random as rng
from ..autograd.function import Function
from ..autograd.state import STATE
from ..tensor import Tensor
from ._special import erf_kernel
from ._util import (
    compute_in_fp32,
    normalize_dim,
    require_floating,
    round_from_fp32,
    xp_of,
    zero_where_not,
)
from .indexing import cat, chunk
from .reduce import sum as reduce_sum
from .shape import reshape, sum_to
from .unary import _Pointwise, abs, clamp, erf, exp, tanh  # noqa: A004 - cupynet's abs

__all__ = ["relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "mish", "sigmoid", "hardtanh", "hardsigmoid",
           "hardswish", "softplus", "softmax", "log_softmax", "prelu", "glu",
           # the rest of torch.nn.functional's activations
           "selu", "celu", "softsign", "logsigmoid", "tanhshrink", "threshold", "hardshrink", "softshrink", "rrelu",
           "softmin", "gumbel_softmax"]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_GELU_K = math.sqrt(2.0 / math.pi)
_TANH_GELU_C = 0.044715


def _stable_sigmoid(xp, x):
    # NOTE: exp(-|x|) never overflows; 1/(1+e) for x >= 0 and e/(1+e) for x < 0 keep
    # full relative precision in both tails (sigmoid(-40) = 4e-18, not 0).
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0, e) / (1.0 + e)


def _stable_softplus(xp, z, threshold=20.0):
    # NOTE: above the threshold log1p(exp(z)) is z to working precision; exp(min(z, threshold)) never overflows.
    return xp.where(z > threshold, z, xp.log1p(xp.exp(xp.minimum(z, threshold))))


def _float(mask, like):
    return mask.to(like.dtype)


def _check_tensor(op_name, input, what="input"):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op_name}: expected a Tensor as {what}, got {type(input).__name__}")


def _check(op_name, input, what="input"):  # noqa: A002
    _check_tensor(op_name, input, what)
    require_floating(op_name, input, what)


def _check_not_bool(op_name, input, kernel):  # noqa: A002
    """The relu family takes integer tensors (computed in their own dtype) but not bool ones, as PyTorch."""
    _check_tensor(op_name, input)
    if input.dtype == numpy.bool_:
        raise TypeError(f"{op_name}: Boolean inputs not supported for {kernel} (as in PyTorch)")


def _check_number(op_name, label, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, numpy.number)) or not math.isfinite(value):
        raise ValueError(f"{op_name}: {label} must be a finite number, got {value!r}")


def _maybe_inplace(input, inplace, compute):  # noqa: A002
    """Run ``compute()``; with ``inplace`` and no graph to record, write the result into ``input``."""
    result = compute()
    if not inplace or (STATE.grad_enabled and input.requires_grad):
        return result
    xp_of(input).copyto(input.array, result.array)
    input._bump_version()
    return input


# ---- the relu family -------------------------------------------------------------------------
class Relu(Function):
    """``max(x, 0)``; gradient 1 where the output is positive."""

    op_name, save_outputs = "relu", True

    @staticmethod
    def forward(ctx, a):
        # NOTE: no errstate: maximum(nan, 0) is nan, silently
        return round_from_fp32(xp_of(a).maximum(compute_in_fp32(a.array), 0), a.dtype)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        if not STATE.grad_enabled:  # NOTE: create_graph=False: the same mask on raw arrays, no op dispatch
            return Tensor(zero_where_not(y.array > 0, grad.array, xp_of(grad)))  # NOTE: no inf * 0 = nan
        return grad * _float(y > 0, y)


def relu(input, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Rectified linear unit.

    ``out = max(input, 0)``.

    Args:
        input: a Tensor (integers stay integers, as in PyTorch; bool is refused).
        inplace: write into ``input`` unless autograd records it.
    """
    _check_not_bool("relu", input, "relu")
    return _maybe_inplace(input, inplace, lambda: Relu.apply(input))


class Hardtanh(Function):
    """``clamp(x, min_val, max_val)``; gradient 1 strictly inside (PyTorch's hardtanh_backward)."""

    op_name = "hardtanh"

    @staticmethod
    def forward(ctx, a, min_val=-1.0, max_val=1.0):
        ctx.save_for_backward(a)
        ctx.min_val, ctx.max_val = min_val, max_val
        if not dtypes.is_floating(a.dtype):
            # NOTE: as PyTorch: an integer tensor is clamped in its own dtype, the limits truncated toward zero
            return xp_of(a).clip(a.array, int(min_val), int(max_val))
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(xp.clip(x, min_val, max_val), a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * _float((x > ctx.min_val) & (x < ctx.max_val), x)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    """``clamp(input, min_val, max_val)`` with gradient 1 strictly between the bounds.

    ``out = min(max(input, min_val), max_val)``.

    Args:
        input: a Tensor (integers are clamped in their own dtype with the limits truncated toward zero, as in
            PyTorch; bool is refused).
        min_val: lower bound.
        max_val: upper bound (must be >= min_val).
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check_not_bool("hardtanh", input, "hardtanh")
    _check_number("hardtanh", "min_val", min_val)
    _check_number("hardtanh", "max_val", max_val)
    if max_val < min_val:
        raise ValueError(f"hardtanh: max_val ({max_val}) must be greater than or equal to min_val ({min_val})")
    if not dtypes.is_floating(input.dtype):
        _check_integer_limits(input.dtype, min_val, max_val)
    return _maybe_inplace(input, inplace, lambda: Hardtanh.apply(input, min_val=float(min_val),
                                                                 max_val=float(max_val)))


def _check_integer_limits(dtype, min_val, max_val):
    """PyTorch's checks of hardtanh's limits for an integer tensor (after truncation toward zero)."""
    info = numpy.iinfo(dtype)
    if dtype.kind == "u" and int(min_val) < 0:
        raise ValueError("hardtanh: cannot do hardtanh on an unsigned type with negative limits")
    for label, value in (("min_val", min_val), ("max_val", max_val)):
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"hardtanh: {label}={value} cannot be converted to type {dtype} without overflow")


def relu6(input, inplace=False):  # noqa: A002
    """``min(max(input, 0), 6)`` (hardtanh between 0 and 6).

    ``out = min(max(input, 0), 6)``.

    Args:
        input: a Tensor (integers stay integers, as in PyTorch; bool is refused).
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check_not_bool("relu6", input, "hardtanh")
    return hardtanh(input, 0.0, 6.0, inplace=inplace)


class LeakyRelu(Function):
    """``x`` for x > 0, ``negative_slope * x`` otherwise."""

    op_name = "leaky_relu"

    @staticmethod
    def forward(ctx, a, negative_slope=0.01):
        ctx.save_for_backward(a)
        ctx.negative_slope = negative_slope
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(xp.where(x > 0, x, x * negative_slope), a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        slope = ctx.negative_slope
        return grad * (_float(x > 0, x) * (1.0 - slope) + slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """``input`` where positive, ``negative_slope * input`` elsewhere.

    ``out = max(input, 0) + negative_slope * min(input, 0)``.

    Args:
        input: a floating Tensor.
        negative_slope: slope for negative inputs.
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check("leaky_relu", input)
    _check_number("leaky_relu", "negative_slope", negative_slope)
    return _maybe_inplace(input, inplace, lambda: LeakyRelu.apply(input, negative_slope=float(negative_slope)))


class Elu(Function):
    """``scale * x`` for x > 0, ``scale * alpha * (exp(input_scale * x) - 1)`` otherwise (elu, selu, celu)."""

    op_name = "elu"

    @staticmethod
    def forward(ctx, a, alpha=1.0, scale=1.0, input_scale=1.0):
        ctx.save_for_backward(a)
        ctx.alpha, ctx.scale, ctx.input_scale = alpha, scale, input_scale
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            y = xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0.0) * input_scale))
            return round_from_fp32(y * scale if scale != 1.0 else y, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        positive = _float(x > 0, x)
        # NOTE: exp of min(x, 0): exp of a large positive x overflows, and 0 * inf would be nan
        negative = (ctx.alpha * ctx.input_scale) * exp(clamp(x, max=0.0) * ctx.input_scale)
        return grad * ((positive + (1.0 - positive) * negative) * ctx.scale)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """Exponential linear unit: ``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere.

    ``out = input if input > 0 else alpha * (e ** input - 1)``.

    Args:
        input: a floating Tensor.
        alpha: scale of the negative part.
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check("elu", input)
    _check_number("elu", "alpha", alpha)
    return _maybe_inplace(input, inplace, lambda: Elu.apply(input, alpha=float(alpha)))


# ---- smooth gates: gelu, silu, mish, sigmoid, softplus ---------------------------------------
class Gelu(Function):
    """``x * Phi(x)`` (Phi: the standard normal CDF, through erf), or its tanh approximation."""

    op_name = "gelu"

    @staticmethod
    def forward(ctx, a, approximate="none"):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            if approximate == "tanh":
                y = 0.5 * x * (1.0 + xp.tanh(_TANH_GELU_K * (x + _TANH_GELU_C * x * x * x)))
            else:
                y = 0.5 * x * (1.0 + erf_kernel(xp, x * _INV_SQRT2))
            return round_from_fp32(y, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            t = tanh(_TANH_GELU_K * (x + _TANH_GELU_C * x * x * x))
            return grad * (0.5 * (1.0 + t)
                           + 0.5 * x * (1.0 - t * t) * (_TANH_GELU_K * (1.0 + 3.0 * _TANH_GELU_C * x * x)))
        return grad * (0.5 * (1.0 + erf(x * _INV_SQRT2)) + x * exp(-0.5 * x * x) * _INV_SQRT_2PI)


def gelu(input, approximate="none"):  # noqa: A002
    """Gaussian error linear unit ``input * Phi(input)``; ``approximate='tanh'`` uses the tanh formula.

    ``out = input / 2 * (1 + erf(input / sqrt(2)))``, or with ``'tanh'``
    ``out = input / 2 * (1 + tanh(sqrt(2 / pi) * (input + 0.044715 * input ** 3)))``.

    Args:
        input: a floating Tensor.
        approximate: ``'none'`` (exact, with erf) or ``'tanh'``.
    """
    _check("gelu", input)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(input, approximate=approximate)


class Silu(_Pointwise):
    """``x * sigmoid(x)`` (swish); d/dx = s (1 + x (1 - s))."""

    op_name, saves_input = "silu", True

    @staticmethod
    def kernel(xp, x):
        return x * _stable_sigmoid(xp, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))))


def silu(input, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Sigmoid linear unit (swish).

    ``out = input * sigmoid(input)``.

    Args:
        input: a floating Tensor.
        inplace: write into ``input`` unless autograd records it.
    """
    _check("silu", input)
    return _maybe_inplace(input, inplace, lambda: Silu.apply(input))


class Mish(_Pointwise):
    """``x * tanh(softplus(x))``."""

    op_name, saves_input = "mish", True

    @staticmethod
    def kernel(xp, x):
        return x * xp.tanh(_stable_softplus(xp, x))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = tanh(softplus(x))
        return grad * (t + x * (1.0 - t * t) * sigmoid(x))


def mish(input, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Self-regularized non-monotonic activation.

    ``out = input * tanh(softplus(input))``.

    Args:
        input: a floating Tensor.
        inplace: write into ``input`` unless autograd records it.
    """
    _check("mish", input)
    return _maybe_inplace(input, inplace, lambda: Mish.apply(input))


class Sigmoid(_Pointwise):
    """``1 / (1 + exp(-x))``; d/dx = y (1 - y)."""

    op_name, save_outputs = "sigmoid", True

    @staticmethod
    def kernel(xp, x):
        return _stable_sigmoid(xp, x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (y * (1.0 - y))


def sigmoid(input):  # noqa: A002 - PyTorch's argument name
    """Logistic function, without overflow.

    ``out = 1 / (1 + e ** -input)``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype, as in PyTorch).
    """
    _check_tensor("sigmoid", input)
    return Sigmoid.apply(input)


class Softplus(Function):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``; fp32 under autocast."""

    op_name, amp_policy = "softplus", "fp32"

    @staticmethod
    def forward(ctx, a, beta=1.0, threshold=20.0):
        ctx.save_for_backward(a)
        ctx.beta, ctx.threshold = beta, threshold
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(_stable_softplus(xp, x * beta, threshold) / beta, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        linear = _float(x * ctx.beta > ctx.threshold, x)
        return grad * (linear + (1.0 - linear) * sigmoid(x * ctx.beta))


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """Smooth relu, exactly linear where ``beta * input > threshold``.

    ``out = log(1 + e ** (beta * input)) / beta``.

    Args:
        input: a floating Tensor.
        beta: sharpness (non-zero).
        threshold: above this value of ``beta * input`` the result is ``input``.
    """
    _check("softplus", input)
    _check_number("softplus", "beta", beta)
    _check_number("softplus", "threshold", threshold)
    if beta == 0:
        raise ValueError("softplus: beta must be non-zero, got 0")
    return Softplus.apply(input, beta=float(beta), threshold=float(threshold))


# ---- piecewise-linear gates: hardsigmoid, hardswish ------------------------------------------
class Hardsigmoid(_Pointwise):
    """``relu6(x + 3) / 6``; gradient 1/6 strictly inside (-3, 3)."""

    op_name, saves_input = "hardsigmoid", True

    @staticmethod
    def kernel(xp, x):
        return xp.clip(x + 3.0, 0.0, 6.0) / 6.0

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (_float((x > -3.0) & (x < 3.0), x) / 6.0)


def hardsigmoid(input, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Piecewise-linear sigmoid.

    ``out = min(max(input + 3, 0), 6) / 6``.

    Args:
        input: a floating Tensor.
        inplace: write into ``input`` unless autograd records it.
    """
    _check("hardsigmoid", input)
    return _maybe_inplace(input, inplace, lambda: Hardsigmoid.apply(input))


class Hardswish(_Pointwise):
    """``x * relu6(x + 3) / 6``; d/dx = x/3 + 1/2 on [-3, 3], 0 below, 1 above."""

    op_name, saves_input = "hardswish", True

    @staticmethod
    def kernel(xp, x):
        return x * xp.clip(x + 3.0, 0.0, 6.0) / 6.0

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (_float((x >= -3.0) & (x <= 3.0), x) * (x / 3.0 + 0.5) + _float(x > 3.0, x))


def hardswish(input, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Piecewise-quadratic swish.

    ``out = input * min(max(input + 3, 0), 6) / 6``.

    Args:
        input: a floating Tensor.
        inplace: write into ``input`` unless autograd records it.
    """
    _check("hardswish", input)
    return _maybe_inplace(input, inplace, lambda: Hardswish.apply(input))


# ---- softmax, log_softmax (along a dimension), prelu (per channel), glu (halves) ------------
def implicit_dim(op_name, ndim, stacklevel=3) -> int:
    """PyTorch's legacy dimension for softmax-like ops called without ``dim``, with its deprecation warning.

    NOTE: the rule of PyTorch 0.3: dim 0 for 0-, 1- and 3-D inputs (a vector, or one unbatched
    sequence of (seq, batch, features)), dim 1 otherwise (the classes of a (batch, classes) input).

    Args:
        op_name: the op, for the warning.
        ndim: the input's number of dimensions.
        stacklevel: the frame the warning names (the caller's caller by default).
    """
    warnings.warn(f"Implicit dimension choice for {op_name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_args(op_name, input, dim, dtype):  # noqa: A002
    _check_tensor(op_name, input)
    if dim is None:
        dim = implicit_dim(op_name, input.ndim, stacklevel=4)
    axis = normalize_dim(op_name, dim, input.ndim)
    if dtype is not None:
        target = dtypes.as_dtype(dtype)
        if not dtypes.is_floating(target):
            raise TypeError(f"{op_name}: dtype must be a floating dtype, got {target}")
        input = input.to(target)  # NOTE: cast first, as PyTorch: an integer input with a float dtype is fine
    require_floating(op_name, input)
    return input, axis


class Softmax(Function):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim``; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "softmax", "fp32", True

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.axis = dim if a.ndim else None
        if a.array.size == 0:
            return a.array.copy()  # NOTE: an empty tensor has no row max to take
        x = compute_in_fp32(a.array)
        # NOTE: subtracting the row max makes every exponent <= 0: no overflow, same result
        e = xp_of(a).exp(x - x.max(axis=ctx.axis, keepdims=True))
        return (e / e.sum(axis=ctx.axis, keepdims=True)).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        gy = grad * y
        return gy - y * reduce_sum(gy, dim=ctx.axis, keepdim=True)


def softmax(input, dim=None, dtype=None, *, _stacklevel=3):  # noqa: A002
    """``exp(input) / sum(exp(input))`` along ``dim``, computed stably (the row max is subtracted first).

    Under autocast the result is float32 (fp32 policy). Half inputs are computed in float32.

    Args:
        input: a floating Tensor (any Tensor when ``dtype`` is given: it is cast first, as in PyTorch).
        dim: the dimension the values sum to 1 along (None: PyTorch's legacy choice, with a warning).
        dtype: cast the input to this dtype first (the result has it).
        _stacklevel: accepted for PyTorch compatibility.
    """
    input, axis = _softmax_args("softmax", input, dim, dtype)
    return Softmax.apply(input, dim=axis)


class LogSoftmax(Function):
    """``x - max - log(sum(exp(x - max)))`` along ``dim``; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "log_softmax", "fp32", True

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.axis = dim if a.ndim else None
        if a.array.size == 0:
            return a.array.copy()  # NOTE: an empty tensor has no row max to take
        xp, x = xp_of(a), compute_in_fp32(a.array)
        shifted = x - x.max(axis=ctx.axis, keepdims=True)
        return (shifted - xp.log(xp.exp(shifted).sum(axis=ctx.axis, keepdims=True))).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad - exp(y) * reduce_sum(grad, dim=ctx.axis, keepdim=True)


def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):  # noqa: A002
    """``input - logsumexp(input)`` along ``dim``, computed stably; fp32 under autocast.

    Args:
        input: a floating Tensor (any Tensor when ``dtype`` is given: it is cast first, as in PyTorch).
        dim: the dimension to normalise along (None: PyTorch's legacy choice, with a warning).
        dtype: cast the input to this dtype first (the result has it).
        _stacklevel: accepted for PyTorch compatibility.
    """
    input, axis = _softmax_args("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(input, dim=axis)


class Prelu(Function):
    """``x`` for x > 0, ``weight * x`` otherwise, one learned slope per channel (dim 1); lower under autocast."""

    op_name, amp_policy = "prelu", "lower"

    @staticmethod
    def forward(ctx, a, weight):
        ctx.save_for_backward(a, weight)
        ctx.shape = _prelu_weight_shape(a, weight)
        w = weight.array.reshape(ctx.shape)
        return xp_of(a).where(a.array > 0, a.array, w * a.array)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        positive = _float(x > 0, grad)
        w = reshape(weight, ctx.shape)
        gx = grad * (positive + (1.0 - positive) * w) if ctx.needs_input_grad[0] else None
        gw = None
        if ctx.needs_input_grad[1]:
            gw = reshape(sum_to(grad * x * (1.0 - positive), ctx.shape), weight.shape)
        return gx, gw


def _prelu_weight_shape(a, weight):
    if weight.array.size == 1:
        return (1,) * a.ndim
    return (1, weight.array.size) + (1,) * (a.ndim - 2)


def prelu(input, weight):  # noqa: A002
    """``input`` where positive, ``weight * input`` elsewhere; ``weight`` has 1 or ``input.shape[1]`` slopes.

    Args:
        input: a floating Tensor (channels on dim 1).
        weight: a 1-D (or 0-d) floating Tensor of slopes.
    """
    _check("prelu", input)
    _check("prelu", weight, "weight")
    if weight.ndim > 1:
        raise ValueError(f"prelu: weight must be 0-d or 1-D, got shape {tuple(weight.shape)}")
    count = weight.array.size
    if count != 1:
        if input.ndim == 0:
            raise ValueError(f"prelu: a zero-dim input allows only one weight, got {count}")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if count != channels:
            raise ValueError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                             f"numbers = {count} and channel size = {channels}.")
    return Prelu.apply(input, weight)


class Glu(Function):
    """``a * sigmoid(b)`` where ``a, b`` are the two halves of the input along ``dim``."""

    op_name = "glu"

    @staticmethod
    def forward(ctx, x, dim=-1):
        ctx.save_for_backward(x)
        ctx.dim = dim
        half = x.shape[dim] // 2
        first = [slice(None)] * x.ndim
        second = list(first)
        first[dim], second[dim] = slice(0, half), slice(half, None)
        v = compute_in_fp32(x.array)
        return (v[tuple(first)] * _stable_sigmoid(xp_of(x), v[tuple(second)])).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        a, b = chunk(x, 2, ctx.dim)
        s = sigmoid(b)
        return cat([grad * s, grad * a * s * (1.0 - s)], dim=ctx.dim)


def glu(input, dim=-1):  # noqa: A002
    """Gated linear unit: split ``input`` in halves ``a, b`` along ``dim``; return ``a * sigmoid(b)``.

    Args:
        input: a floating Tensor whose size along ``dim`` is even.
        dim: the dimension to split.
    """
    _check("glu", input)
    if input.ndim == 0:
        raise RuntimeError("glu: does not support scalars (0-d tensors)")
    axis = normalize_dim("glu", dim, input.ndim)
    if input.shape[axis] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {axis} is size "
                           f"{input.shape[axis]}")
    return Glu.apply(input, dim=axis)


# ---- torch's other activations: selu, celu, softsign, logsigmoid, tanhshrink, threshold, shrinks, rrelu, softmin...
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Scaled exponential linear unit (self-normalising constants of Klambauer et al.).

    ``out = scale * (max(0, input) + min(0, alpha * (exp(input) - 1)))`` with ``alpha = 1.6733``,
    ``scale = 1.0507``.

    Args:
        input: a floating Tensor.
        inplace: write into ``input`` unless autograd records it.
    """
    _check("selu", input)
    return _maybe_inplace(input, inplace, lambda: Elu.apply(input, alpha=_SELU_ALPHA, scale=_SELU_SCALE))


def celu(input, alpha=1.0, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Continuously differentiable exponential linear unit.

    ``out = max(0, input) + min(0, alpha * (exp(input / alpha) - 1))``.

    Args:
        input: a floating Tensor.
        alpha: the negative part's scale (non-zero).
        inplace: write into ``input`` unless autograd records it.
    """
    _check("celu", input)
    _check_number("celu", "alpha", alpha)
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha must be non-zero (it divides the input)")
    return _maybe_inplace(input, inplace, lambda: Elu.apply(input, alpha=float(alpha),
                                                            input_scale=1.0 / float(alpha)))


class Softsign(_Pointwise):
    """``x / (1 + |x|)``; d/dx = 1 / (1 + |x|)^2."""

    op_name, saves_input = "softsign", True

    @staticmethod
    def kernel(xp, x):
        return x / (1.0 + xp.abs(x))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        d = 1.0 + abs(x)
        return grad / (d * d)


def softsign(input):  # noqa: A002 - PyTorch's argument name
    """``input / (1 + |input|)``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype, as in PyTorch).
    """
    _check_tensor("softsign", input)
    return Softsign.apply(input)


class Logsigmoid(_Pointwise):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``; d/dx = sigmoid(-x)."""

    op_name, saves_input = "logsigmoid", True

    @staticmethod
    def kernel(xp, x):
        # NOTE: never log of a rounded-to-zero sigmoid: logsigmoid(-100) = -100, not -inf
        return xp.minimum(x, 0.0) - xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * sigmoid(-x)


def logsigmoid(input):  # noqa: A002 - PyTorch's argument name
    """``log(1 / (1 + exp(-input)))``, without overflow or underflow.

    Args:
        input: a floating Tensor.
    """
    _check("logsigmoid", input)
    return Logsigmoid.apply(input)


class Tanhshrink(_Pointwise):
    """``x - tanh(x)``; d/dx = tanh(x)^2."""

    op_name, saves_input = "tanhshrink", True

    @staticmethod
    def kernel(xp, x):
        return x - xp.tanh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = tanh(x)
        return grad * (t * t)


def tanhshrink(input):  # noqa: A002 - PyTorch's argument name
    """``input - tanh(input)``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _check_tensor("tanhshrink", input)
    return Tanhshrink.apply(input)


class _Masked(Function):
    """A piecewise op ``where(keep(x), pass(x), fill)`` with gradient 1 where ``keep`` (not an op itself)."""

    @staticmethod
    def keep(xp, x, option):
        """The mask of elements whose value passes (slope 1).

        Args:
            xp: numpy or cupy.
            x: the input array.
            option: the op's number (threshold or lambd).
        """
        raise NotImplementedError

    @staticmethod
    def passed(xp, x, option):
        """The value where ``keep`` holds.

        Args:
            xp: numpy or cupy.
            x: the input array.
            option: the op's number.
        """
        return x

    @classmethod
    def forward(cls, ctx, a, option=0.5, value=0.0):
        ctx.save_for_backward(a)
        ctx.option = option
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            y = xp.where(cls.keep(xp, x, option), cls.passed(xp, x, option), value)
        if not dtypes.is_floating(a.dtype):
            return y.astype(a.dtype)  # NOTE: threshold on integers computes in their dtype, as PyTorch
        return round_from_fp32(y, a.dtype)

    @classmethod
    def backward(cls, ctx, grad):
        (x,) = ctx.saved_tensors
        keep = Tensor(cls.keep(xp_of(x), x.array, ctx.option))
        return grad * keep.to(grad.dtype)


class Threshold(_Masked):
    """``x`` where ``x > threshold``, else ``value``; gradient 1 where ``x > threshold``."""

    op_name = "threshold"

    @staticmethod
    def keep(xp, x, option):
        return x > option


class Hardshrink(_Masked):
    """``x`` where ``|x| > lambd``, else 0."""

    op_name = "hardshrink"

    @staticmethod
    def keep(xp, x, option):
        return xp.abs(x) > option


class Softshrink(_Masked):
    """``x - lambd * sign(x)`` where ``|x| > lambd``, else 0."""

    op_name = "softshrink"

    @staticmethod
    def keep(xp, x, option):
        return xp.abs(x) > option

    @staticmethod
    def passed(xp, x, option):
        return x - option * xp.sign(x)


def threshold(input, threshold, value, inplace=False):  # noqa: A002 - PyTorch's argument names
    """``input`` where ``input > threshold``, ``value`` elsewhere.

    Args:
        input: a Tensor (integers compute in their own dtype, as in PyTorch; bool is refused).
        threshold: the number to compare against.
        value: the replacement.
        inplace: write into ``input`` unless autograd records it.
    """
    _check_not_bool("threshold", input, "threshold")
    _check_number("threshold", "threshold", threshold)
    _check_number("threshold", "value", value)
    return _maybe_inplace(input, inplace, lambda: Threshold.apply(input, option=threshold, value=value))


def _check_lambd(op_name, input, lambd):  # noqa: A002
    _check(op_name, input)
    _check_number(op_name, "lambd", lambd)
    if lambd < 0:
        raise RuntimeError(f"{op_name}: lambda must be greater or equal to 0, but found to be {lambd}.")


def hardshrink(input, lambd=0.5):  # noqa: A002 - PyTorch's argument names
    """``input`` where ``|input| > lambd``, 0 elsewhere.

    Args:
        input: a floating Tensor.
        lambd: the half-width (>= 0) of the zeroed band.
    """
    _check_lambd("hardshrink", input, lambd)
    return Hardshrink.apply(input, option=float(lambd))


def softshrink(input, lambd=0.5):  # noqa: A002 - PyTorch's argument names
    """``input`` moved ``lambd`` toward 0, and 0 where ``|input| <= lambd``.

    Args:
        input: a floating Tensor.
        lambd: the half-width (>= 0) of the zeroed band.
    """
    _check_lambd("softshrink", input, lambd)
    return Softshrink.apply(input, option=float(lambd))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):  # noqa: A002
    """Randomized leaky relu: negative inputs are scaled by a slope drawn from U(lower, upper) in training.

    In evaluation (``training=False``) the slope is the fixed ``(lower + upper) / 2``: leaky_relu.
    In training each non-positive element draws its own slope from the input device's generator
    (values differ from PyTorch's: a different random stream); the gradient there is that slope.

    Args:
        input: a floating Tensor.
        lower: the smallest slope.
        upper: the largest slope (>= lower).
        training: draw random slopes (True) or use their mean (False).
        inplace: write into ``input`` unless autograd records it.
        generator: a ``cupynet.Generator`` to draw from (cupynet's addition; PyTorch's F.rrelu has none).
    """
    _check("rrelu", input)
    _check_number("rrelu", "lower", lower)
    _check_number("rrelu", "upper", upper)
    if lower > upper:
        raise ValueError(f"rrelu: Lower bound should be less than or equal to the upper bound, got lower={lower} "
                         f"and upper={upper}")
    if not training:
        return leaky_relu(input, (lower + upper) / 2.0, inplace=inplace)
    gen = rng.resolve_generator(generator, input.device, "rrelu")
    draw = gen.random(tuple(input.shape), dtype="float64" if input.dtype == numpy.float64 else "float32")
    slopes = lower + (upper - lower) * draw
    noise = Tensor(xp_of(input).where(input.array <= 0, slopes, 1.0).astype(input.dtype))
    return _maybe_inplace(input, inplace, lambda: input * noise)


def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002 - PyTorch's argument names
    """``softmax(-input)`` along ``dim``.

    Args:
        input: a floating Tensor (any Tensor when ``dtype`` is given).
        dim: the dimension the values sum to 1 along (None: PyTorch's legacy choice, with a warning).
        _stacklevel: accepted for PyTorch compatibility.
        dtype: cast the input to this dtype first.
    """
    _check_tensor("softmin", input)
    if dim is None:
        dim = implicit_dim("softmin", input.ndim)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    return softmax(-input, dim)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1, generator=None):
    """Sample from the Gumbel-softmax distribution; ``hard=True`` returns one-hot samples, soft gradients.

    ``y = softmax((logits + g) / tau)`` with ``g = -log(E)``, ``E ~ Exponential(1)`` drawn from the
    device's generator (samples differ from PyTorch's: another stream). With ``hard`` the result is
    the one-hot of ``argmax(y)`` whose gradient is that of ``y`` (straight-through).

    Args:
        logits: a floating Tensor of unnormalised log-probabilities.
        tau: the temperature (> 0).
        hard: return one-hot samples.
        eps: deprecated by PyTorch, no effect (a warning when changed).
        dim: the class dimension.
        generator: a ``cupynet.Generator`` to draw from (cupynet's addition).
    """
    _check("gumbel_softmax", logits, "logits")
    _check_number("gumbel_softmax", "tau", tau)
    if tau <= 0:
        raise ValueError(f"gumbel_softmax: tau must be > 0, got {tau}")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    axis = normalize_dim("gumbel_softmax", dim, logits.ndim)
    gen = rng.resolve_generator(generator, logits.device, "gumbel_softmax")
    xp, wide = xp_of(logits), "float64" if logits.dtype == numpy.float64 else "float32"
    gumbels = Tensor((-xp.log(gen.standard_exponential(tuple(logits.shape), dtype=wide))).astype(logits.dtype))
    soft = softmax((logits + gumbels) / tau, axis)
    if not hard:
        return soft
    if logits.ndim == 0:
        hot = xp.ones_like(soft.array)
    else:
        winner = xp.expand_dims(soft.array.argmax(axis=axis), axis)  # NOTE: the first of tied maxima
        classes = xp.arange(logits.shape[axis]).reshape([-1 if d == axis else 1 for d in range(logits.ndim)])
        hot = (classes == winner).astype(soft.dtype)
    return Tensor(hot) - soft.detach() + soft


METHODS = {"relu": relu, "sigmoid": sigmoid, "softmax": softmax, "log_softmax": log_softmax, "prelu": prelu}

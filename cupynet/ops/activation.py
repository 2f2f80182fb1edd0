"""Activation functions: relu family, elu, gelu, silu, mish, sigmoid, hard*, softplus, softmax, prelu, glu.

Each forward is one fused pass over the array (float16/bfloat16 computed in
float32 and rounded once); each backward is written with cupynet ops, so
second derivatives work. Masks (``x > 0``) are constants for autograd.

``inplace=True`` (the argument nn layers pass) updates the input in place when
autograd is not recording it. NOTE: when the input is part of a graph (it
requires grad under grad mode) cupynet's tape cannot rewrite its history, so the
result is computed out of place and the input is left unchanged; always use the
returned tensor, as ``x = relu(x, inplace=True)`` does.
"""

from __future__ import annotations

import math

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..tensor import Tensor
from ._special import erf_kernel
from ._util import compute_in_fp32, normalize_dim, require_floating, xp_of, zero_where_not
from .reduce import sum as reduce_sum
from .shape import reshape, sum_to
from .unary import _Elementwise, clamp, erf, exp, tanh

__all__ = ["relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "mish", "sigmoid", "hardtanh", "hardsigmoid",
           "hardswish", "softplus", "softmax", "log_softmax", "prelu", "glu"]

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


def _gelu_kernel(xp, x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + xp.tanh(_TANH_GELU_K * (x + _TANH_GELU_C * x * x * x)))
    return 0.5 * x * (1.0 + erf_kernel(xp, x * _INV_SQRT2))


def _gelu_derivative(x, y, approximate="none"):
    if approximate == "tanh":
        t = tanh(_TANH_GELU_K * (x + _TANH_GELU_C * x * x * x))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (_TANH_GELU_K * (1.0 + 3.0 * _TANH_GELU_C * x * x))
    return 0.5 * (1.0 + erf(x * _INV_SQRT2)) + x * exp(-0.5 * x * x) * _INV_SQRT_2PI


def _elu_derivative(x, y, alpha=1.0):
    positive = _float(x > 0, x)
    # NOTE: exp of min(x, 0): exp of a large positive x overflows, and 0 * inf would be nan
    return positive + (1.0 - positive) * (alpha * exp(clamp(x, max=0.0)))


def _mish_derivative(x, y):
    t = tanh(softplus(x))
    return t + x * (1.0 - t * t) * sigmoid(x)


def _softplus_derivative(x, y, beta=1.0, threshold=20.0):
    linear = _float(x * beta > threshold, x)
    return linear + (1.0 - linear) * sigmoid(x * beta)


class Relu(_Elementwise, Function):
    """``max(x, 0)``; gradient 1 where the output is positive."""

    op_name, save_outputs, can_warn = "relu", True, False  # NOTE: maximum(nan, 0) is nan, silently
    kernel = staticmethod(lambda xp, x: xp.maximum(x, 0))
    derivative = staticmethod(lambda x, y: _float(y > 0, y))
    array_backward = staticmethod(lambda xp, g, x, y: zero_where_not(y > 0, g, xp))  # NOTE: no inf*0 = nan


class Hardtanh(_Elementwise, Function):
    """``clamp(x, min_val, max_val)``; gradient 1 strictly inside (PyTorch's hardtanh_backward)."""

    op_name, uses_input = "hardtanh", True
    kernel = staticmethod(lambda xp, x, min_val=-1.0, max_val=1.0: xp.clip(x, min_val, max_val))
    derivative = staticmethod(lambda x, y, min_val=-1.0, max_val=1.0: _float((x > min_val) & (x < max_val), x))


class LeakyRelu(_Elementwise, Function):
    """``x`` for x > 0, ``negative_slope * x`` otherwise."""

    op_name, uses_input = "leaky_relu", True
    kernel = staticmethod(lambda xp, x, negative_slope=0.01: xp.where(x > 0, x, x * negative_slope))
    derivative = staticmethod(lambda x, y, negative_slope=0.01: _float(x > 0, x) * (1.0 - negative_slope)
                              + negative_slope)


class Elu(_Elementwise, Function):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""

    op_name, uses_input = "elu", True
    kernel = staticmethod(lambda xp, x, alpha=1.0: xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0.0))))
    derivative = staticmethod(_elu_derivative)


class Gelu(_Elementwise, Function):
    """``x * Phi(x)`` (Phi: the standard normal CDF, through erf), or its tanh approximation."""

    op_name, uses_input = "gelu", True
    kernel = staticmethod(_gelu_kernel)
    derivative = staticmethod(_gelu_derivative)


class Silu(_Elementwise, Function):
    """``x * sigmoid(x)`` (swish); d/dx = s (1 + x (1 - s))."""

    op_name, uses_input = "silu", True
    kernel = staticmethod(lambda xp, x: x * _stable_sigmoid(xp, x))
    derivative = staticmethod(lambda x, y: sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))))


class Mish(_Elementwise, Function):
    """``x * tanh(softplus(x))``."""

    op_name, uses_input = "mish", True
    kernel = staticmethod(lambda xp, x: x * xp.tanh(_stable_softplus(xp, x)))
    derivative = staticmethod(_mish_derivative)


class Sigmoid(_Elementwise, Function):
    """``1 / (1 + exp(-x))``; d/dx = y (1 - y)."""

    op_name, save_outputs = "sigmoid", True
    kernel = staticmethod(_stable_sigmoid)
    derivative = staticmethod(lambda x, y: y * (1.0 - y))


class Hardsigmoid(_Elementwise, Function):
    """``relu6(x + 3) / 6``; gradient 1/6 strictly inside (-3, 3)."""

    op_name, uses_input = "hardsigmoid", True
    kernel = staticmethod(lambda xp, x: xp.clip(x + 3.0, 0.0, 6.0) / 6.0)
    derivative = staticmethod(lambda x, y: _float((x > -3.0) & (x < 3.0), x) / 6.0)


class Hardswish(_Elementwise, Function):
    """``x * relu6(x + 3) / 6``; d/dx = x/3 + 1/2 on [-3, 3], 0 below, 1 above."""

    op_name, uses_input = "hardswish", True
    kernel = staticmethod(lambda xp, x: x * xp.clip(x + 3.0, 0.0, 6.0) / 6.0)
    derivative = staticmethod(lambda x, y: _float((x >= -3.0) & (x <= 3.0), x) * (x / 3.0 + 0.5)
                              + _float(x > 3.0, x))


class Softplus(_Elementwise, Function):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``; fp32 under autocast."""

    op_name, amp_policy, uses_input = "softplus", "fp32", True
    kernel = staticmethod(lambda xp, x, beta=1.0, threshold=20.0: _stable_softplus(xp, x * beta, threshold) / beta)
    derivative = staticmethod(_softplus_derivative)


class Softmax(Function):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim``; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "softmax", "fp32", True

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.axis = dim if a.ndim else None
        if a.data.size == 0:
            return a.data.copy()  # NOTE: an empty tensor has no row max to take
        x = compute_in_fp32(a.data)
        # NOTE: subtracting the row max makes every exponent <= 0: no overflow, same result
        e = xp_of(a).exp(x - x.max(axis=ctx.axis, keepdims=True))
        return (e / e.sum(axis=ctx.axis, keepdims=True)).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        gy = grad * y
        return gy - y * reduce_sum(gy, dim=ctx.axis, keepdim=True)


class LogSoftmax(Function):
    """``x - max - log(sum(exp(x - max)))`` along ``dim``; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "log_softmax", "fp32", True

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.axis = dim if a.ndim else None
        if a.data.size == 0:
            return a.data.copy()  # NOTE: an empty tensor has no row max to take
        xp, x = xp_of(a), compute_in_fp32(a.data)
        shifted = x - x.max(axis=ctx.axis, keepdims=True)
        return (shifted - xp.log(xp.exp(shifted).sum(axis=ctx.axis, keepdims=True))).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad - exp(y) * reduce_sum(grad, dim=ctx.axis, keepdim=True)


class Prelu(Function):
    """``x`` for x > 0, ``weight * x`` otherwise, one learned slope per channel (dim 1); lower under autocast."""

    op_name, amp_policy = "prelu", "lower"

    @staticmethod
    def forward(ctx, a, weight):
        ctx.save_for_backward(a, weight)
        ctx.shape = _prelu_weight_shape(a, weight)
        w = weight.data.reshape(ctx.shape)
        return xp_of(a).where(a.data > 0, a.data, w * a.data)

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
    if weight.data.size == 1:
        return (1,) * a.ndim
    return (1, weight.data.size) + (1,) * (a.ndim - 2)


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
        v = compute_in_fp32(x.data)
        return (v[tuple(first)] * _stable_sigmoid(xp_of(x), v[tuple(second)])).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        from .indexing import cat, chunk  # noqa: PLC0415 - indexing.py is another family, loaded on use
        (x,) = ctx.saved_tensors
        a, b = chunk(x, 2, ctx.dim)
        s = sigmoid(b)
        return cat([grad * s, grad * a * s * (1.0 - s)], dim=ctx.dim)


# ---- public functions ------------------------------------------------------------------------
def _check(op_name, input, what="input"):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op_name}: expected a Tensor as {what}, got {type(input).__name__}")
    require_floating(op_name, input, what)


def _check_number(op_name, label, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, numpy.number)) or not math.isfinite(value):
        raise ValueError(f"{op_name}: {label} must be a finite number, got {value!r}")


def _maybe_inplace(input, inplace, compute):  # noqa: A002
    """Run ``compute()``; with ``inplace`` and no graph to record, write the result into ``input``."""
    result = compute()
    if not inplace or (STATE.grad_enabled and input.requires_grad):
        return result
    xp_of(input).copyto(input.data, result.data)
    input._bump_version()
    return input


def _activation_function(cls, summary, inplace=True):
    """Build the public function of an option-free activation (``relu(input, inplace=False)``)."""
    name = cls.op_name

    def with_inplace(input, inplace=False):  # noqa: A002 - PyTorch's argument names
        _check(name, input)
        if not inplace:
            return cls.apply(input)
        return _maybe_inplace(input, inplace, lambda: cls.apply(input))

    def plain(input):  # noqa: A002
        _check(name, input)
        return cls.apply(input)

    op = with_inplace if inplace else plain
    op.__name__ = op.__qualname__ = name
    extra = "\n        inplace: write into ``input`` unless autograd records it." if inplace else ""
    op.__doc__ = f"{summary}\n\n    Args:\n        input: a floating Tensor.{extra}\n"
    return op


relu = _activation_function(Relu, "Rectified linear unit ``max(input, 0)``.")
silu = _activation_function(Silu, "Sigmoid linear unit (swish) ``input * sigmoid(input)``.")
mish = _activation_function(Mish, "``input * tanh(softplus(input))``.")
sigmoid = _activation_function(Sigmoid, "Logistic function ``1 / (1 + exp(-input))``, without overflow.", False)
hardsigmoid = _activation_function(Hardsigmoid, "Piecewise-linear sigmoid ``relu6(input + 3) / 6``.")
hardswish = _activation_function(Hardswish, "``input * relu6(input + 3) / 6``.")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    """``clamp(input, min_val, max_val)`` with gradient 1 strictly between the bounds.

    Args:
        input: a floating Tensor.
        min_val: lower bound.
        max_val: upper bound (must be >= min_val).
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check("hardtanh", input)
    _check_number("hardtanh", "min_val", min_val)
    _check_number("hardtanh", "max_val", max_val)
    if max_val < min_val:
        raise ValueError(f"hardtanh: max_val ({max_val}) must be greater than or equal to min_val ({min_val})")
    return _maybe_inplace(input, inplace, lambda: Hardtanh.apply(input, min_val=float(min_val),
                                                                 max_val=float(max_val)))


def relu6(input, inplace=False):  # noqa: A002
    """``min(max(input, 0), 6)`` (hardtanh between 0 and 6).

    Args:
        input: a floating Tensor.
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check("relu6", input)
    return hardtanh(input, 0.0, 6.0, inplace=inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """``input`` where positive, ``negative_slope * input`` elsewhere.

    Args:
        input: a floating Tensor.
        negative_slope: slope for negative inputs.
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check("leaky_relu", input)
    _check_number("leaky_relu", "negative_slope", negative_slope)
    return _maybe_inplace(input, inplace, lambda: LeakyRelu.apply(input, negative_slope=float(negative_slope)))


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """Exponential linear unit: ``input`` where positive, ``alpha * (exp(input) - 1)`` elsewhere.

    Args:
        input: a floating Tensor.
        alpha: scale of the negative part.
        inplace: write into ``input`` when autograd is not recording it.
    """
    _check("elu", input)
    _check_number("elu", "alpha", alpha)
    return _maybe_inplace(input, inplace, lambda: Elu.apply(input, alpha=float(alpha)))


def gelu(input, approximate="none"):  # noqa: A002
    """Gaussian error linear unit ``input * Phi(input)``; ``approximate='tanh'`` uses the tanh formula.

    Args:
        input: a floating Tensor.
        approximate: ``'none'`` (exact, with erf) or ``'tanh'``.
    """
    _check("gelu", input)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """Smooth relu ``log(1 + exp(beta * input)) / beta``, exactly linear where ``beta * input > threshold``.

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


def _softmax_args(op_name, input, dim, dtype):  # noqa: A002
    _check(op_name, input)
    if dim is None:
        raise TypeError(f"{op_name}: dim must be given (an int), got None")
    axis = normalize_dim(op_name, dim, input.ndim)
    if dtype is not None:
        target = dtypes.as_dtype(dtype)
        if not dtypes.is_floating(target):
            raise TypeError(f"{op_name}: dtype must be a floating dtype, got {target}")
        input = input.to(target)
    return input, axis


def softmax(input, dim, dtype=None):  # noqa: A002
    """``exp(input) / sum(exp(input))`` along ``dim``, computed stably (the row max is subtracted first).

    Under autocast the result is float32 (fp32 policy). Half inputs are computed in float32.

    Args:
        input: a floating Tensor.
        dim: the dimension the values sum to 1 along.
        dtype: cast the input to this dtype first (the result has it).
    """
    input, axis = _softmax_args("softmax", input, dim, dtype)
    return Softmax.apply(input, dim=axis)


def log_softmax(input, dim, dtype=None):  # noqa: A002
    """``input - logsumexp(input)`` along ``dim``, computed stably; fp32 under autocast.

    Args:
        input: a floating Tensor.
        dim: the dimension to normalise along.
        dtype: cast the input to this dtype first (the result has it).
    """
    input, axis = _softmax_args("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(input, dim=axis)


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
    count = weight.data.size
    if count != 1:
        if input.ndim == 0:
            raise ValueError(f"prelu: a zero-dim input allows only one weight, got {count}")
        channels = input.shape[1] if input.ndim >= 2 else 1
        if count != channels:
            raise ValueError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                             f"numbers = {count} and channel size = {channels}.")
    return Prelu.apply(input, weight)


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


METHODS = {"relu": relu, "sigmoid": sigmoid, "softmax": softmax, "log_softmax": log_softmax, "prelu": prelu}

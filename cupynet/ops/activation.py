"""Activations that are piecewise: the relu family, the exponential linear units, hard gates, shrinks.

``relu``, ``relu6``, ``hardtanh``, ``leaky_relu``, ``rrelu`` and ``prelu``; ``elu``,
``selu`` and ``celu`` (linear above zero, exponential below); ``hardsigmoid`` and
``hardswish``; ``threshold``, ``hardshrink`` and ``softshrink``. The smooth
activations are in smooth_activation.py, softmax and its family in
softmax_family.py; the argument checks and the ``inplace`` handling below serve
all three.

Each op is written out: a ``Function`` whose forward is one fused pass over
the array (float16/bfloat16 computed in float32 and rounded once, under
``numpy.errstate(all="ignore")``; the option-free ones write only that pass,
``kernel(xp, x)``, on unary.py's ``_Pointwise``) and whose ``backward`` is
written with cupynet ops, so second derivatives work; then its public function
(``def relu(input, inplace=False)``). Masks (``x > 0``) are constants for autograd.

Integer inputs behave as in PyTorch: ``relu``, ``relu6``, ``hardtanh`` and
``threshold`` compute in the integer dtype (bool refused); the rest refuse them
(PyTorch has no integer kernels for them).

``inplace=True`` (the argument nn layers pass) updates the input in place when
autograd is not recording it. NOTE: when the input is part of a graph (it
requires grad under grad mode) cupynet's tape cannot rewrite its history, so the
result is computed out of place and the input is left unchanged; always use the
returned tensor, as ``x = relu(x, inplace=True)`` does.
"""

from __future__ import annotations

import numpy

from .. import dtypes
from .. import random as rng
from ..autograd.function import Function
from ..autograd.state import STATE
from ..checks import check_finite, require_floating, require_tensor
from ..tensor import Tensor
from ._util import compute_in_fp32, relu_array, round_from_fp32, xp_of, zero_where_not
from .clamping import clamp
from .shape import reshape, sum_to
from .unary import _Pointwise, exp

__all__ = ["relu", "relu6", "hardtanh", "leaky_relu", "rrelu", "prelu", "elu", "selu", "celu", "hardsigmoid",
           "hardswish", "threshold", "hardshrink", "softshrink"]


def _float(mask, like):
    return mask.to(like.dtype)


def _check(op_name, input, what="input"):  # noqa: A002
    require_tensor(op_name, input, what)
    require_floating(op_name, input, what)


def _check_not_bool(op_name, input, kernel):  # noqa: A002
    """The relu family takes integer tensors (computed in their own dtype) but not bool ones, as PyTorch."""
    require_tensor(op_name, input)
    if input.dtype == numpy.bool_:
        raise TypeError(f"{op_name}: Boolean inputs not supported for {kernel} (as in PyTorch)")


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
        return round_from_fp32(relu_array(compute_in_fp32(a.array)), a.dtype)

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


def _check_integer_limits(dtype, min_val, max_val):
    """PyTorch's checks of hardtanh's limits for an integer tensor (after truncation toward zero)."""
    info = numpy.iinfo(dtype)
    if dtype.kind == "u" and int(min_val) < 0:
        raise ValueError("hardtanh: cannot do hardtanh on an unsigned type with negative limits")
    for label, value in (("min_val", min_val), ("max_val", max_val)):
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"hardtanh: {label}={value} cannot be converted to type {dtype} without overflow")


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
    check_finite("hardtanh", "min_val", min_val)
    check_finite("hardtanh", "max_val", max_val)
    if max_val < min_val:
        raise ValueError(f"hardtanh: max_val ({max_val}) must be greater than or equal to min_val ({min_val})")
    if not dtypes.is_floating(input.dtype):
        _check_integer_limits(input.dtype, min_val, max_val)
    return _maybe_inplace(input, inplace, lambda: Hardtanh.apply(input, min_val=float(min_val),
                                                                 max_val=float(max_val)))


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
    check_finite("leaky_relu", "negative_slope", negative_slope)
    return _maybe_inplace(input, inplace, lambda: LeakyRelu.apply(input, negative_slope=float(negative_slope)))


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
    check_finite("rrelu", "lower", lower)
    check_finite("rrelu", "upper", upper)
    if lower > upper:
        raise ValueError(f"rrelu: Lower bound should be less than or equal to the upper bound, got lower={lower} "
                         f"and upper={upper}")
    if not training:
        return leaky_relu(input, (lower + upper) / 2.0, inplace=inplace)
    gen = rng.resolve_generator(generator, input.device, "rrelu")
    stream = rng.cpu_stream(gen)
    if stream is not None:
        noise = Tensor(_torch_rrelu_noise(stream, input.array, lower, upper))
        if noise.dtype == input.dtype:
            return _maybe_inplace(input, inplace, lambda: input * noise)
        # NOTE: half inputs: the product is taken in float32 and rounded once, as torch's opmath does
        return _maybe_inplace(input, inplace, lambda: (input.float() * noise).to(input.dtype))
    draw = gen.random(tuple(input.shape), dtype="float64" if input.dtype == numpy.float64 else "float32")
    slopes = lower + (upper - lower) * draw
    noise = Tensor(xp_of(input).where(input.array <= 0, slopes, 1.0).astype(input.dtype))
    return _maybe_inplace(input, inplace, lambda: input * noise)


def _torch_rrelu_noise(stream, values, lower, upper):
    """torch's CPU slopes: one ``uniform_(lower, upper)`` draw in double per element <= 0 (in order), 1 elsewhere.

    The slopes are in the compute dtype: float64 for float64 inputs, float32 otherwise.
    """
    # NOTE: the bounds pass through the compute dtype (float for float32 and half inputs), as ATen's opmath
    compute = numpy.float64 if values.dtype == numpy.float64 else numpy.float32
    low, high = float(compute(lower)), float(compute(upper))
    negative = numpy.ascontiguousarray(values).reshape(-1) <= 0
    noise = numpy.ones(negative.shape, dtype=compute)
    # NOTE: u * (upper - lower) + lower in double, two roundings (measured: this kernel's build does not fuse it)
    noise[negative] = (stream.unit_doubles(int(negative.sum())) * (high - low) + low).astype(compute)
    return noise.reshape(values.shape)


def _prelu_weight_shape(a, weight):
    if weight.array.size == 1:
        return (1,) * a.ndim
    return (1, weight.array.size) + (1,) * (a.ndim - 2)


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


# ---- exponential linear units: elu, selu, celu -----------------------------------------------
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
    check_finite("elu", "alpha", alpha)
    return _maybe_inplace(input, inplace, lambda: Elu.apply(input, alpha=float(alpha)))


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
    check_finite("celu", "alpha", alpha)
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha must be non-zero (it divides the input)")
    return _maybe_inplace(input, inplace, lambda: Elu.apply(input, alpha=float(alpha),
                                                            input_scale=1.0 / float(alpha)))


# ---- hard gates: hardsigmoid, hardswish ------------------------------------------------------
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


# ---- thresholds and shrinks: where(keep(x), x or x moved, fill) ------------------------------
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


def threshold(input, threshold, value, inplace=False):  # noqa: A002 - PyTorch's argument names
    """``input`` where ``input > threshold``, ``value`` elsewhere.

    Args:
        input: a Tensor (integers compute in their own dtype, as in PyTorch; bool is refused).
        threshold: the number to compare against.
        value: the replacement.
        inplace: write into ``input`` unless autograd records it.
    """
    _check_not_bool("threshold", input, "threshold")
    check_finite("threshold", "threshold", threshold)
    check_finite("threshold", "value", value)
    return _maybe_inplace(input, inplace, lambda: Threshold.apply(input, option=threshold, value=value))


def _check_lambd(op_name, input, lambd):  # noqa: A002
    _check(op_name, input)
    check_finite(op_name, "lambd", lambd)
    if lambd < 0:
        raise RuntimeError(f"{op_name}: lambda must be greater or equal to 0, but found to be {lambd}.")


class Hardshrink(_Masked):
    """``x`` where ``|x| > lambd``, else 0."""

    op_name = "hardshrink"

    @staticmethod
    def keep(xp, x, option):
        return xp.abs(x) > option


def hardshrink(input, lambd=0.5):  # noqa: A002 - PyTorch's argument names
    """``input`` where ``|input| > lambd``, 0 elsewhere.

    Args:
        input: a floating Tensor.
        lambd: the half-width (>= 0) of the zeroed band.
    """
    _check_lambd("hardshrink", input, lambd)
    return Hardshrink.apply(input, option=float(lambd))


class Softshrink(_Masked):
    """``x - lambd * sign(x)`` where ``|x| > lambd``, else 0."""

    op_name = "softshrink"

    @staticmethod
    def keep(xp, x, option):
        return xp.abs(x) > option

    @staticmethod
    def passed(xp, x, option):
        return x - option * xp.sign(x)


def softshrink(input, lambd=0.5):  # noqa: A002 - PyTorch's argument names
    """``input`` moved ``lambd`` toward 0, and 0 where ``|input| <= lambd``.

    Args:
        input: a floating Tensor.
        lambd: the half-width (>= 0) of the zeroed band.
    """
    _check_lambd("softshrink", input, lambd)
    return Softshrink.apply(input, option=float(lambd))


METHODS = {"relu": relu, "prelu": prelu}

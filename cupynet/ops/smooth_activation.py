"""Smooth activations: gelu, silu, mish, sigmoid, logsigmoid, softplus, softsign, tanhshrink, glu.

Each op is written out: a ``Function`` whose forward is one fused pass over
the array (float16/bfloat16 computed in float32 and rounded once, under
``numpy.errstate(all="ignore")``; the option-free ones write only that pass,
``kernel(xp, x)``, on unary.py's ``_Pointwise``) and whose ``backward`` is
written with cupynet ops, so second derivatives work; then its public function
(``def relu(input, inplace=False)``). Masks (``x > 0``) are constants for autograd.

NOTE (numerics): the sigmoid and softplus pieces never overflow: ``exp`` only
ever sees ``-|x|`` (or an argument capped at the softplus threshold), and the
two tails are computed separately (``sigmoid(-40) = 4e-18``, not 0;
``logsigmoid(-100) = -100``, not -inf). The losses on logits use these ops
(``binary_cross_entropy_with_logits``, ``soft_margin_loss``).

``sigmoid``, ``softsign`` and ``tanhshrink`` take integer and bool tensors and
promote them to the default float dtype (as ``tanh`` does, and PyTorch); the
rest refuse them.
"""

from __future__ import annotations

import math

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..checks import check_choice, check_finite, require_tensor
from ..tensor import Tensor
from ._special import erf_kernel
from ._util import compute_in_fp32, normalize_dim, round_from_fp32, xp_of
from .activation import _check, _float, _maybe_inplace
from .indexing import cat, chunk
from .trigonometric import tanh
from .unary import _Pointwise, abs, erf, exp  # noqa: A004 - cupynet's abs

__all__ = ["gelu", "silu", "mish", "sigmoid", "logsigmoid", "softplus", "softsign", "tanhshrink", "glu"]


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


def _exact_backward_on_arrays(grad, x) -> bool:
    """Whether the exact GELU's backward may run on raw arrays: no graph is recorded, fp32/fp64, one dtype.

    NOTE: half dtypes keep the op path: there each op of the formula rounds its result to the half
    dtype, which ``_exact_gelu_grad_array`` would have to copy step by step; 0-d inputs keep it too
    (NumPy hands back scalars there).
    """
    dtype = x.array.dtype
    return (not STATE.grad_enabled and x.array.ndim > 0 and grad.array.dtype == dtype
            and (dtype == dtypes.float32 or dtype == dtypes.float64))


def _exact_gelu_grad_array(xp, g, x, cdf=None):
    """``g * (0.5 * (1 + erf(x / sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi))`` on arrays, op for op as backward.

    NOTE: the same operations, operands in the same order, in the same dtype as the op path of
    ``Gelu.backward`` (each op there is one NumPy/CuPy call on arrays of this dtype, Python numbers
    staying weak scalars), so the two agree bit for bit (tests compare them); it only skips the
    dispatch and graph per term, and writes into two fresh arrays instead of allocating one per term.

    Args:
        xp: numpy or cupy.
        g: the output's gradient (an array of ``x``'s dtype).
        x: the saved input array (float32 or float64).
        cdf: ``erf(x / sqrt 2)`` as the forward computed it (the same call on the same array), an array this
            call may overwrite; or None to compute it here.
    """
    with numpy.errstate(all="ignore"):  # NOTE: as the Erf and Exp ops' forwards
        if cdf is None:
            cdf = erf_kernel(xp, x * _INV_SQRT2)
        density = -0.5 * x
        density *= x
        xp.exp(density, out=density)
    xp.multiply(x, density, out=density)
    density *= _INV_SQRT_2PI
    xp.add(1.0, cdf, out=cdf)
    xp.multiply(0.5, cdf, out=cdf)
    cdf += density
    return xp.multiply(g, cdf, out=cdf)


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
                cdf = erf_kernel(xp, x * _INV_SQRT2)
                y = 0.5 * x * (1.0 + cdf)
                # NOTE (speed, memory): on the CPU the array backward reuses this erf instead of
                # recomputing it (~25 passes over the array), at the cost of one array of the input's size
                # kept until backward; the GPU keeps only the input, as PyTorch does
                ctx.erf = cdf if ctx.needs_input_grad[0] and xp is numpy and x is a.array else None
            return round_from_fp32(y, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "none" and _exact_backward_on_arrays(grad, x):
            cdf, ctx.erf = ctx.erf, None  # NOTE: used once; a retained second backward recomputes it
            return Tensor(_exact_gelu_grad_array(xp_of(x), grad.array, x.array, cdf))
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
    check_choice("gelu", "approximate", approximate, ("none", "tanh"))
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


# ---- the sigmoid and its relatives -----------------------------------------------------------
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
    require_tensor("sigmoid", input)
    return Sigmoid.apply(input)


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
    check_finite("softplus", "beta", beta)
    check_finite("softplus", "threshold", threshold)
    if beta == 0:
        raise ValueError("softplus: beta must be non-zero, got 0")
    return Softplus.apply(input, beta=float(beta), threshold=float(threshold))


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
    require_tensor("softsign", input)
    return Softsign.apply(input)


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
    require_tensor("tanhshrink", input)
    return Tanhshrink.apply(input)


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


METHODS = {"sigmoid": sigmoid}

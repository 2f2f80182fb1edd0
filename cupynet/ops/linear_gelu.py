"""``gelu(linear(x, W, b))`` (exact GELU) as one op: a transformer's feed-forward ``linear1`` + activation.

Why: on the CPU, exact GELU's backward recomputes ``erf`` (the most expensive elementwise
function of a small transformer step) and runs about ten graph ops. This op keeps the normal
CDF ``Phi(h)`` of the forward, so the first-order backward is ``grad * (Phi(h) + h phi(h))``
on arrays: one ``exp``, a few multiplies, no ``erf`` and no op dispatch.

Numerics: the forward is the unfused math exactly: ``linalg.linear_array`` rounds ``h`` once
to the input dtype (under autocast: to the half dtype, as ``linear`` does), then
``0.5 * h * (1 + erf(h / sqrt(2)))`` in fp32 (float64 for float64) rounded once, as ``gelu``.
The float32/float64 backward evaluates ``gelu``'s backward formula in the same order, so it is
bit-identical; for float16/bfloat16 it computes in fp32 and rounds once, where ``gelu``'s
graph formula rounds after each of its ops (so it is closer to the exact derivative, and
within a few half-precision ulps of the unfused result). With ``create_graph`` the
backward recomputes ``h`` and the derivative with differentiable ops. AMP: ``lower``, as
``linear``. The cost: the ``Phi(h)`` array is kept besides ``h`` (one activation per layer).
"""

from __future__ import annotations

import math

import numpy

from ..autograd.function import Function
from ..autograd.state import STATE
from ..tensor import Tensor
from . import kernels as fused
from ._linalg_checks import _check_linear
from ._special import erf_kernel
from ._util import compute_in_fp32, round_from_fp32, xp_of
from .linalg import linear, linear_array, linear_backward
from .unary import erf, exp

__all__ = ["linear_gelu"]
METHODS: dict = {}  # NOTE: no Tensor method: the transformer layer picks the op

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_derivative_ops(h):
    """d gelu(h) / dh with cupynet ops (the graph path): ``Phi(h) + h phi(h)``."""
    return 0.5 * (1.0 + erf(h * _INV_SQRT2)) + h * exp(-0.5 * h * h) * _INV_SQRT_2PI


def _gelu_grad_array(grad, h, cdf):
    """``grad * (Phi(h) + h phi(h))`` on arrays, in gelu's backward order; rounded once to grad's dtype."""
    with numpy.errstate(all="ignore"):
        # NOTE: cdf + h * exp(-0.5 * h * h) / sqrt(2 pi), then times grad, in place in one fresh array
        slope = -0.5 * h
        slope *= h
        xp_of(h).exp(slope, out=slope)
        slope *= h
        slope *= _INV_SQRT_2PI
        slope += cdf
        slope *= compute_in_fp32(grad)
        return round_from_fp32(slope, grad.dtype)


class LinearGelu(Function):
    """``gelu(x @ W^T + b)``, exact GELU, as one op: what a transformer layer's feed-forward runs for "gelu"."""

    op_name, amp_policy = "linear_gelu", "lower"

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        _check_linear(x, weight, bias)
        ctx.save_for_backward(x, weight, bias)
        if bias is not None and bias.ndim == 0:
            ctx.bias_shape = ()  # NOTE: as Linear: one value added everywhere; its gradient is the total sum
        ctx.h_no_bias = None
        if bias is not None and bias.ndim == 1 and fused.kernels_enabled(x.array):
            # NOTE: CuPy: the GEMM without bias, then bias + exact GELU in one kernel (fp32, one rounding);
            # only the GEMM's output is kept (the backward kernel recomputes h + bias)
            ctx.h_no_bias = linear_array(x.array, weight.array, None)
            return fused.bias_gelu_forward(ctx.h_no_bias, bias.array, "none")
        h = linear_array(x.array, weight.array, bias.array if bias is not None else None)
        hf = compute_in_fp32(h)
        with numpy.errstate(all="ignore"):
            # NOTE: gelu's own expression, 0.5 * h * (1 + erf(h / sqrt(2))), step by step in place (fresh arrays)
            one_plus = erf_kernel(xp_of(hf), hf * _INV_SQRT2)
            one_plus += 1.0
            y = 0.5 * hf
            y *= one_plus
            ctx.h, ctx.cdf = hf, 0.5 * one_plus
        return round_from_fp32(y, h.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        if STATE.grad_enabled:  # NOTE: create_graph: h and the derivative as functions of x, W, b
            h = linear(x, weight, bias)
            return linear_backward(ctx, grad * _gelu_derivative_ops(h), x, weight)
        if ctx.h_no_bias is not None:
            g = grad.array.astype(ctx.h_no_bias.dtype, copy=False)
            dh, _ = fused.bias_gelu_backward(g, ctx.h_no_bias, bias.array, "none")
            return linear_backward(ctx, Tensor(dh), x, weight)
        return linear_backward(ctx, Tensor(_gelu_grad_array(grad.array, ctx.h, ctx.cdf)), x, weight)


def linear_gelu(input, weight, bias=None):  # noqa: A002 - PyTorch's argument names
    """``gelu(linear(input, weight, bias))`` (exact GELU) in one op: same values as the two ops.

    Args:
        input: a Tensor of shape ``(*, in_features)``.
        weight: a Tensor of shape ``(out_features, in_features)``.
        bias: an optional Tensor of shape ``(out_features,)``.
    """
    return LinearGelu.apply(input, weight, *(() if bias is None else (bias,)))  # NOTE: no None input slot



"""``relu(linear(x, W, b))`` as one op: what ``nn.Sequential`` runs for a ``Linear`` followed by a ``ReLU``.

Why: on the CPU a training step of a small MLP is dominated by per-op costs
(Python dispatch, graph bookkeeping, one more pass over the activations), not
by the GEMMs. Fusing the pair saves one op call, one graph node and one
temporary per layer, forward and backward.

The math is exactly the unfused math, bit for bit: the same GEMM and bias add
(``linalg.linear_array``) round once to the output dtype, then ``max(y, 0)``
is taken in place; backward masks the gradient where the output is not
positive (``zero_where_not``, as ``relu``'s backward does) and runs
``linear``'s backward on it. Under autocast the pair runs as ``linear`` would
("lower"): relu of a half tensor stays half, as it does unfused.
"""

from __future__ import annotations

from ..autograd.function import Function
from ..autograd.state import STATE
from ..tensor import Tensor
from . import kernels as fused
from ._linalg_checks import _check_linear
from ._util import relu_array, xp_of, zero_where_not
from .linalg import linear_array, linear_backward

__all__ = ["linear_relu"]
METHODS: dict = {}  # NOTE: no Tensor method: nn.Sequential picks the op


class LinearRelu(Function):
    """``max(x @ W^T + b, 0)`` as one op: what ``nn.Sequential`` runs for ``Linear`` then ``ReLU``."""

    op_name, amp_policy, save_outputs = "linear_relu", "lower", True

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        _check_linear(x, weight, bias)
        ctx.save_for_backward(x, weight)
        if bias is not None and bias.ndim == 1 and fused.kernels_enabled(x.array):
            # NOTE: CuPy: the GEMM without bias, then bias + relu in one kernel (fp32 add, one rounding)
            return fused.bias_relu_forward(linear_array(x.array, weight.array, None), bias.array)
        y = linear_array(x.array, weight.array, bias.array if bias is not None else None)
        return relu_array(y, out=y)  # NOTE: y is fresh (the GEMM's output): relu in place

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        y = ctx.output(0)
        if STATE.grad_enabled:  # NOTE: create_graph: the mask is a constant, as in relu's derivative
            masked = grad * (y > 0).to(grad.dtype)
        elif y.ndim >= 1 and fused.kernels_enabled(y.array):
            # NOTE: CuPy: the mask in one kernel; linear's backward sums the bias gradient from it
            masked = Tensor(fused.bias_relu_backward(grad.array.astype(y.dtype, copy=False), y.array)[0])
        else:
            masked = Tensor(zero_where_not(y.array > 0, grad.array, xp_of(grad)))
        return linear_backward(ctx, masked, x, weight)


def linear_relu(input, weight, bias=None):  # noqa: A002 - PyTorch's argument names
    """``relu(linear(input, weight, bias))`` in one op (same values and gradients as the two ops).

    Args:
        input: a Tensor of shape ``(*, in_features)``.
        weight: a Tensor of shape ``(out_features, in_features)``.
        bias: an optional Tensor of shape ``(out_features,)``.
    """
    return LinearRelu.apply(input, weight, bias) if bias is not None else LinearRelu.apply(input, weight)

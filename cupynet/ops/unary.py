"""Elementwise math of one tensor (exp, log, ...); fp32-list ops say so in ``amp_policy``."""

from __future__ import annotations

from ..autograd.function import Function
from ._util import require_floating, xp_of

__all__ = ["exp", "log"]


class Exp(Function):
    """``e ** x``; fp32 under autocast."""

    op_name = "exp"
    amp_policy = "fp32"
    save_outputs = True

    @staticmethod
    def forward(ctx, a):
        return xp_of(a).exp(a.data)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.output(0)


class Log(Function):
    """Natural logarithm; fp32 under autocast."""

    op_name = "log"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return xp_of(a).log(a.data)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


def exp(input):  # noqa: A002
    """Elementwise exponential.

    Args:
        input: a floating Tensor.
    """
    require_floating("exp", input)
    return Exp.apply(input)


def log(input):  # noqa: A002
    """Elementwise natural logarithm.

    Args:
        input: a floating Tensor.
    """
    require_floating("log", input)
    return Log.apply(input)


METHODS = {"exp": exp, "log": log}

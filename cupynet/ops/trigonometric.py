"""Trigonometric and hyperbolic functions: sin, cos, tan, asin, acos, atan, sinh, cosh, tanh.

One-input ops on unary.py's ``_Pointwise`` (its docstring says what that forward
does: integer promotion, float32 compute for half inputs, one rounding); each
writes its ``kernel`` and a ``backward`` in cupynet ops, so second derivatives
work. tan, asin, acos, sinh and cosh are ``fp32`` under autocast (PyTorch's
CUDA lists).
"""

from __future__ import annotations

from ..checks import require_tensor
from .unary import _Pointwise, rsqrt

__all__ = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh"]


class Sin(_Pointwise):
    """Sine; d/dx = cos(x)."""

    op_name, saves_input = "sin", True

    @staticmethod
    def kernel(xp, x):
        return xp.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * cos(x)


def sin(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise sine.

    ``out = sin(input)``, input in radians.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("sin", input)
    return Sin.apply(input)


class Cos(_Pointwise):
    """Cosine; d/dx = -sin(x)."""

    op_name, saves_input = "cos", True

    @staticmethod
    def kernel(xp, x):
        return xp.cos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-sin(x))


def cos(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise cosine.

    ``out = cos(input)``, input in radians.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("cos", input)
    return Cos.apply(input)


class Tan(_Pointwise):
    """Tangent; d/dx = 1 + y^2; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "tan", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.tan(x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (1.0 + y * y)


def tan(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise tangent.

    ``out = sin(input) / cos(input)``, input in radians.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("tan", input)
    return Tan.apply(input)


class Asin(_Pointwise):
    """Arcsine; d/dx = 1 / sqrt(1 - x^2); fp32 under autocast."""

    op_name, amp_policy, saves_input = "asin", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.arcsin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (rsqrt(1.0 - x * x))


def asin(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise arcsine.

    ``out = asin(input)`` in [-pi/2, pi/2]: nan outside [-1, 1].

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("asin", input)
    return Asin.apply(input)


class Acos(_Pointwise):
    """Arccosine; d/dx = -1 / sqrt(1 - x^2); fp32 under autocast."""

    op_name, amp_policy, saves_input = "acos", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.arccos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-rsqrt(1.0 - x * x))


def acos(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise arccosine.

    ``out = acos(input)`` in [0, pi]: nan outside [-1, 1].

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("acos", input)
    return Acos.apply(input)


class Atan(_Pointwise):
    """Arctangent; d/dx = 1 / (1 + x^2)."""

    op_name, saves_input = "atan", True

    @staticmethod
    def kernel(xp, x):
        return xp.arctan(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1.0 / (1.0 + x * x))


def atan(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise arctangent.

    ``out = atan(input)`` in (-pi/2, pi/2).

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("atan", input)
    return Atan.apply(input)


# ---- hyperbolic ------------------------------------------------------------------------------
class Sinh(_Pointwise):
    """Hyperbolic sine; d/dx = cosh(x); fp32 under autocast."""

    op_name, amp_policy, saves_input = "sinh", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.sinh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * cosh(x)


def sinh(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise hyperbolic sine.

    ``out = (e ** input - e ** -input) / 2``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("sinh", input)
    return Sinh.apply(input)


class Cosh(_Pointwise):
    """Hyperbolic cosine; d/dx = sinh(x); fp32 under autocast."""

    op_name, amp_policy, saves_input = "cosh", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.cosh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * sinh(x)


def cosh(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise hyperbolic cosine.

    ``out = (e ** input + e ** -input) / 2``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("cosh", input)
    return Cosh.apply(input)


class Tanh(_Pointwise):
    """Hyperbolic tangent; d/dx = 1 - y^2."""

    op_name, save_outputs = "tanh", True

    @staticmethod
    def kernel(xp, x):
        return xp.tanh(x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (1.0 - y * y)


def tanh(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise hyperbolic tangent.

    ``out = (e ** input - e ** -input) / (e ** input + e ** -input)``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    require_tensor("tanh", input)
    return Tanh.apply(input)


METHODS = {name: globals()[name] for name in __all__}

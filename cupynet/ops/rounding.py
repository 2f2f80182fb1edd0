"""Rounding: floor, ceil, round, trunc (piecewise constant, so the gradient is zero).

NOTE: as PyTorch, integer tensors are rounded to themselves (a copy, in their
own dtype: NumPy's floor of an int array would return float64) and bool
tensors are refused; float16/bfloat16 are rounded in float32 and stored back
exactly.
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..checks import require_tensor
from ._util import compute_in_fp32, round_from_fp32, xp_of
from .unary import _refuse_bool, _zero_grad

__all__ = ["floor", "ceil", "round", "trunc"]


class _Rounding(Function):
    """floor, ceil, round, trunc: ``kernel(xp, x, **options)`` on floats, a copy of integers; zero gradient.

    NOTE: rounding an integer tensor is a copy (NumPy's floor of an int array would return
    float64); a float16/bfloat16 input is rounded in float32 and stored back exactly.
    """

    @staticmethod
    def kernel(xp, x, **options):
        """The rounding on a floating array.

        Args:
            xp: numpy or cupy.
            x: the input array in its compute dtype.
            **options: the op's options (``decimals`` for round).
        """
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, **options):
        """Round ``a`` (copy it when it holds integers).

        Args:
            ctx: the node.
            a: the input Tensor.
            **options: passed to ``kernel``.
        """
        if a.dtype.kind in "iub":
            return a.array.copy()
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(cls.kernel(xp, x, **options), a.dtype)

    @staticmethod
    def backward(ctx, grad):
        """Zeros: the op is piecewise constant.

        Args:
            ctx: the node.
            grad: the output's gradient.
        """
        return _zero_grad(grad)


class Floor(_Rounding):
    """Round down; zero gradient."""

    op_name = "floor"

    @staticmethod
    def kernel(xp, x):
        return xp.floor(x)


def floor(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise round down (integers are copied).

    ``out`` = the largest integer ``<= input``.

    Args:
        input: a Tensor (integers allowed, bool not: as in PyTorch).
    """
    require_tensor("floor", input)
    _refuse_bool("floor", input)
    return Floor.apply(input)


class Ceil(_Rounding):
    """Round up; zero gradient."""

    op_name = "ceil"

    @staticmethod
    def kernel(xp, x):
        return xp.ceil(x)


def ceil(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise round up (integers are copied).

    ``out`` = the smallest integer ``>= input``.

    Args:
        input: a Tensor (integers allowed, bool not: as in PyTorch).
    """
    require_tensor("ceil", input)
    _refuse_bool("ceil", input)
    return Ceil.apply(input)


class Round(_Rounding):
    """Round half to even (to ``decimals`` places); zero gradient."""

    op_name = "round"

    @staticmethod
    def kernel(xp, x, decimals=0):
        return xp.round(x, decimals)


def round(input, decimals=0):  # noqa: A001, A002 - PyTorch's names
    """Elementwise round half to even, to ``decimals`` decimal places (integers are copied).

    ``out = round_half_even(input * 10 ** decimals) / 10 ** decimals``.

    Args:
        input: a Tensor (integers allowed with ``decimals=0`` only, bool not: as in PyTorch).
        decimals: number of decimal places (may be negative).
    """
    require_tensor("round", input)
    _refuse_bool("round", input)
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    if decimals and not dtypes.is_floating(input.dtype):
        raise TypeError(f"round: decimals={decimals} is implemented for floating tensors only (as in PyTorch), got "
                        f"{input.dtype}")
    return Round.apply(input, decimals=decimals)


class Trunc(_Rounding):
    """Round toward zero; zero gradient."""

    op_name = "trunc"

    @staticmethod
    def kernel(xp, x):
        return xp.trunc(x)


def trunc(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise round toward zero (integers are copied).

    ``out = sign(input) * floor(|input|)``.

    Args:
        input: a Tensor (integers allowed, bool not: as in PyTorch).
    """
    require_tensor("trunc", input)
    _refuse_bool("trunc", input)
    return Trunc.apply(input)


METHODS = {name: globals()[name] for name in __all__}

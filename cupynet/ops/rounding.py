"""Rounding: floor, ceil, round, trunc (piecewise constant, so the gradient is zero); and the rounding
divisions: remainder (``%``), fmod and floor_divide (``//``).

NOTE: as PyTorch, integer tensors are rounded to themselves (a copy, in their
own dtype: NumPy's floor of an int array would return float64) and bool
tensors are refused; float16/bfloat16 are rounded in float32 and stored back
exactly.
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..autograd.function import Cast, Function
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import compute_in_fp32, data, fix_float_dtype, lift, round_from_fp32, xp_of
from .shape import sum_to
from .unary import _refuse_bool, _zero_grad

__all__ = ["floor", "ceil", "round", "trunc", "remainder", "fmod", "floor_divide"]


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


# ---- the rounding divisions -----------------------------------------------------------------
def _division_operands(name, a, b):
    """``(a, b)`` as the op takes them: at least one Tensor, arrays lifted, bool refused, a 0-d float
    Tensor following a dimensioned float Tensor's dtype (PyTorch's promotion within a category)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}: expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    like = a if isinstance(a, Tensor) else b
    a, b = lift(a, like), lift(b, like)
    for v in (a, b):
        if isinstance(v, Tensor):
            _refuse_bool(name, v)
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name}: expected Tensors or Python numbers, got {type(v).__name__}")
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype and \
            dtypes.is_floating(a.dtype) and dtypes.is_floating(b.dtype) and (a.ndim == 0) != (b.ndim == 0):
        a, b = (Cast.apply(a, dtype=b.dtype), b) if a.ndim == 0 else (a, Cast.apply(b, dtype=a.dtype))
    return a, b


def _probe(v, other):
    """A stand-in of operand ``v`` for promotion: a Python number stays one (weak), as does a 0-d Tensor
    meeting a dimensioned Tensor of its category (integer or float), as in PyTorch."""
    if not isinstance(v, Tensor):
        return v
    weak = v.ndim == 0 and isinstance(other, Tensor) and other.ndim > 0 and \
        dtypes.is_floating(v.dtype) == dtypes.is_floating(other.dtype)
    if weak:
        return 0.0 if dtypes.is_floating(v.dtype) else 0
    return numpy.zeros((), v.dtype)


def _result_dtype(a, b):
    """PyTorch's result dtype of ``a op b``: NumPy's promotion with Python numbers weak, then its fixes."""
    probe = [_probe(a, b), _probe(b, a)]
    return fix_float_dtype(numpy.asarray(probe[0] + probe[1]), a, b).dtype


def _check_integer_divisor(name, xp, y):
    """PyTorch's CPU error for an integer division by zero (NumPy would give 0 with a warning).

    NOTE: checked on the CPU only: on a GPU the check would be a host sync, and CuPy gives 0 there.
    """
    if xp is numpy and numpy.any(numpy.asarray(y) == 0):
        raise RuntimeError(f"{name}: ZeroDivisionError (an integer divisor is zero)")


def _floor_quotient(xp, x, y):
    """``floor(x / y)`` of floats as PyTorch computes it (from fmod, so exact where x / y would round up).

    NOTE: the quotient ``(x - fmod(x, y)) / y`` is an integer up to one rounding; it is stepped down when
    the remainder's sign differs from the divisor's, floored, and rounded to the nearer integer. A zero
    quotient keeps the sign of ``x / y``; a zero divisor gives ``x / y`` (inf or nan).
    """
    mod = xp.fmod(x, y)
    div = (x - mod) / y
    div = xp.where((mod != 0) & ((y < 0) != (mod < 0)), div - 1, div)
    floored = xp.floor(div)
    floored = xp.where(div - floored > 0.5, floored + 1, floored)
    out = xp.where(div != 0, floored, xp.copysign(xp.zeros_like(div), x / y))
    return xp.where(y == 0, x / y, out)


class _RoundingDivision(Function):
    """remainder, fmod, floor_divide: ``kernel(xp, x, y)`` on floats in their compute dtype, ``int_kernel`` on
    integers; the gradient w.r.t. the divisor is ``-grad * quotient(a, b)``, w.r.t. the dividend ``grad``.
    """

    @staticmethod
    def kernel(xp, x, y):
        """The op on floating arrays (or a float array and a Python number).

        Args:
            xp: numpy or cupy.
            x: the dividend.
            y: the divisor.
        """
        raise NotImplementedError

    int_kernel = None
    quotient = None  # NOTE: the (integer-valued) quotient whose negation is d(out)/d(divisor)

    @classmethod
    def forward(cls, ctx, a, b):
        """The op on ``a`` and ``b`` in their promoted dtype (half types computed in float32, rounded once).

        Args:
            ctx: the node.
            a: the dividend (a Tensor or a Python number).
            b: the divisor (a Tensor or a Python number).
        """
        ctx.shapes = (getattr(a, "shape", ()), getattr(b, "shape", ()))
        xp, dtype = xp_of(a, b), _result_dtype(a, b)
        x, y = data(a), data(b)
        if dtype.kind in "iu":
            _check_integer_divisor(cls.op_name, xp, y)
            return cls.int_kernel(xp, x, y).astype(dtype, copy=False)
        compute = dtypes.compute_dtype(dtype)
        x, y = (v.astype(compute) if hasattr(v, "astype") else v for v in (x, y))
        with numpy.errstate(all="ignore"):
            if cls.quotient is not None and ctx.needs_input_grad[1]:
                ctx.neg_quotient = round_from_fp32(-cls.quotient(xp, x, y), dtype)
            return round_from_fp32(xp.asarray(cls.kernel(xp, x, y)), dtype)

    @classmethod
    def backward(cls, ctx, grad):
        """``grad`` for the dividend, ``-grad * quotient`` for the divisor, each summed to its input's shape.

        Args:
            ctx: the node.
            grad: the output's gradient.
        """
        ga = sum_to(grad, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = sum_to(grad * Tensor(ctx.neg_quotient), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb


class Remainder(_RoundingDivision):
    """``a - floor(a / b) * b``: Python's ``%`` (the result takes the divisor's sign)."""

    op_name = "remainder"

    @staticmethod
    def kernel(xp, x, y):
        # NOTE: PyTorch's formula: fmod, moved by one divisor when its sign differs from the divisor's; a zero
        # result keeps fmod's sign (NumPy's remainder would give +0 where PyTorch gives -0)
        mod = xp.fmod(x, y)
        return xp.where((mod != 0) & ((y < 0) != (mod < 0)), mod + y, mod)

    int_kernel = staticmethod(lambda xp, x, y: xp.remainder(x, y))
    quotient = staticmethod(_floor_quotient)


def remainder(input, other):  # noqa: A002 - PyTorch's argument name
    """Elementwise Python-style modulus: ``input - floor(input / other) * other`` (the sign of ``other``).

    Integers and floats as PyTorch: an integer division by zero is an error (on the CPU), a float one gives
    nan. The gradient is ``grad`` for ``input`` and ``-grad * floor(input / other)`` for ``other``.

    Args:
        input: a Tensor or a Python number (the dividend).
        other: a Tensor or a Python number (the divisor).
    """
    return Remainder.apply(*_division_operands("remainder", input, other))


class Fmod(_RoundingDivision):
    """C's ``fmod``: ``a - trunc(a / b) * b`` (the result takes the dividend's sign)."""

    op_name = "fmod"

    @staticmethod
    def kernel(xp, x, y):
        return xp.fmod(x, y)

    int_kernel = staticmethod(lambda xp, x, y: xp.fmod(x, y))
    quotient = staticmethod(lambda xp, x, y: xp.trunc(x / y))


def fmod(input, other):  # noqa: A002 - PyTorch's argument name
    """Elementwise C-style remainder: ``input - trunc(input / other) * other`` (the sign of ``input``).

    The gradient is ``grad`` for ``input`` and ``-grad * trunc(input / other)`` for ``other``.

    Args:
        input: a Tensor (as in PyTorch, not a number).
        other: a Tensor or a Python number.
    """
    require_tensor("fmod", input)
    return Fmod.apply(*_division_operands("fmod", input, other))


class FloorDivide(_RoundingDivision):
    """``floor(a / b)``: Python's ``//``. PyTorch defines no derivative for it; neither does cupynet."""

    op_name = "floor_divide"

    @staticmethod
    def kernel(xp, x, y):
        return _floor_quotient(xp, x, y)

    int_kernel = staticmethod(lambda xp, x, y: xp.floor_divide(x, y))

    @staticmethod
    def backward(ctx, grad):
        """Refused, as PyTorch refuses it.

        Args:
            ctx: the node.
            grad: the output's gradient.
        """
        raise RuntimeError("derivative for floor_divide is not implemented (as in PyTorch: "
                           "'derivative for aten::floor_divide is not implemented')")


def floor_divide(input, other):  # noqa: A002 - PyTorch's argument name
    """Elementwise ``floor(input / other)`` (Python's ``//``), integers and floats as PyTorch.

    Args:
        input: a Tensor or a Python number (the dividend).
        other: a Tensor or a Python number (the divisor).
    """
    return FloorDivide.apply(*_division_operands("floor_divide", input, other))


METHODS = {name: globals()[name] for name in __all__}

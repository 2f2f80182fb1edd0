"""Elementwise math of one tensor: roots, trig, hyperbolic, erf/erfinv, logs, rounding, clamp, finiteness.

Every op is written out: a ``Function`` whose forward runs the array math and
whose ``backward`` multiplies the gradient by the derivative, written with
cupynet ops, so the backward is itself differentiable (double backward for
free); then the public function (``def exp(input)``) that checks its argument
and calls ``apply``. Where the forward is one array expression the op writes
only that, ``kernel(xp, x)``, and ``_Pointwise.forward`` (or ``_Rounding.forward``
for floor/ceil/round/trunc) does the promotion, rounding and errstate around it.

NOTE: float16/bfloat16 inputs are computed in float32 and rounded once
(``compute_in_fp32`` ... ``round_from_fp32``), as CUDA's ``opmath`` does in
PyTorch; the output keeps the input dtype. The floating ops (exp, log, sqrt,
trig, erf, ...) take integer and bool tensors too and, as PyTorch does, promote
them to the default float dtype first (``floating_compute``); sign, abs, square
and the roundings compute on integers in their own dtype. Forwards run under
``numpy.errstate(all="ignore")``: as in PyTorch, log(0) = -inf and friends
raise no warning. fp32-list ops (docs/amp.md, section 11) say so in ``amp_policy``.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._special import erf_kernel, erfinv_kernel
from ._util import compute_in_fp32, data, fix_float_dtype, floating_compute, lift, round_from_fp32, xp_of
from .shape import sum_to

__all__ = [
    "exp", "log", "sqrt", "rsqrt", "abs", "sign", "square", "reciprocal", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "tanh", "erf", "erfinv", "expm1", "log2", "log10", "log1p", "floor", "ceil",
    "round", "trunc", "clamp", "clip", "nan_to_num", "isfinite", "isnan", "isinf",
]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = 0.5 * math.sqrt(math.pi)
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _require_tensor(name, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}: expected a Tensor as input, got {type(value).__name__}")


def _refuse_bool(name, value):
    # NOTE: PyTorch implements abs and the roundings for numbers only ('"abs_cpu" not implemented for 'Bool'')
    if value.dtype == numpy.bool_:
        raise TypeError(f"{name}: not implemented for bool tensors (as in PyTorch); convert to an integer or float "
                        f"dtype first")


def _zero_grad(grad):
    """The gradient of a piecewise-constant op (sign, floor, ...): zeros."""
    return Tensor(xp_of(grad).zeros_like(grad.array))


# ---- the two shapes of forward the ops below share --------------------------------------------
class _Pointwise(Function):
    """A one-input op whose forward is one array expression, ``kernel(xp, x)``; not an op itself.

    ``forward`` saves the input when ``saves_input`` (``save_outputs`` keeps the output),
    promotes it as PyTorch's floating ops do (``floating_compute``: integer and bool to
    the default float dtype, float16/bfloat16 computed in float32), runs ``kernel`` under
    ``numpy.errstate(all="ignore")`` (log(0) = -inf and friends raise no warning, as in
    PyTorch) and rounds the result once (``round_from_fp32``). Each op writes its
    ``kernel`` and its ``backward`` out in full.
    """

    saves_input = False

    @staticmethod
    def kernel(xp, x):
        """The forward's array math.

        Args:
            xp: numpy or cupy.
            x: the input array in its compute dtype.
        """
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a):
        """Save what backward needs and compute ``kernel`` as described above.

        Args:
            ctx: the node.
            a: the input Tensor.
        """
        if cls.saves_input:
            ctx.save_for_backward(a)
        xp, (x, dtype) = xp_of(a), floating_compute(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(cls.kernel(xp, x), dtype)


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


# ---- grad * derivative, the derivative written with cupynet ops ------------------------------
class Exp(_Pointwise):
    """``e ** x``; d/dx = e ** x; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "exp", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.exp(x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * y


def exp(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise exponential.

    ``out = e ** input``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("exp", input)
    return Exp.apply(input)


class Log(_Pointwise):
    """Natural logarithm; d/dx = 1 / x; fp32 under autocast."""

    op_name, amp_policy, saves_input = "log", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1.0 / x)


def log(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise natural logarithm.

    ``out = ln(input)``: -inf at 0, nan below 0.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("log", input)
    return Log.apply(input)


class Sqrt(_Pointwise):
    """Square root; d/dx = 1 / (2 sqrt(x))."""

    op_name, save_outputs = "sqrt", True

    @staticmethod
    def kernel(xp, x):
        return xp.sqrt(x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (0.5 / y)


def sqrt(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise square root.

    ``out = input ** 0.5``: nan below 0.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("sqrt", input)
    return Sqrt.apply(input)


class Rsqrt(_Pointwise):
    """``1 / sqrt(x)``; d/dx = -y^3 / 2; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "rsqrt", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return 1.0 / xp.sqrt(x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (-0.5 * y * y * y)


def rsqrt(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise reciprocal square root.

    ``out = 1 / sqrt(input)``: inf at 0, nan below 0.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("rsqrt", input)
    return Rsqrt.apply(input)


class Abs(Function):
    """Absolute value; d/dx = sign(x) (0 at 0, as PyTorch)."""

    op_name = "abs"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(xp.abs(x), a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * sign(x)


def abs(input):  # noqa: A001, A002 - PyTorch's names
    """Elementwise absolute value.

    ``out = |input|``.

    Args:
        input: a Tensor (integers allowed, bool not: as in PyTorch).
    """
    _require_tensor("abs", input)
    _refuse_bool("abs", input)
    return Abs.apply(input)


class Square(Function):
    """``x * x``; d/dx = 2x."""

    op_name = "square"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        if a.dtype == numpy.bool_:
            return a.array.astype(numpy.int64)  # NOTE: PyTorch's square is pow(x, 2), which makes bool int64
        x = compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(x * x, a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (2.0 * x)


def square(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise square.

    ``out = input * input``.

    Args:
        input: a Tensor (integers allowed; bool gives int64, as PyTorch's pow).
    """
    _require_tensor("square", input)
    return Square.apply(input)


class Reciprocal(_Pointwise):
    """``1 / x``; d/dx = -y^2; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "reciprocal", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return 1.0 / x

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (-(y * y))


def reciprocal(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise reciprocal.

    ``out = 1 / input``: +-inf at +-0.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("reciprocal", input)
    return Reciprocal.apply(input)


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
    _require_tensor("sin", input)
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
    _require_tensor("cos", input)
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
    _require_tensor("tan", input)
    return Tan.apply(input)


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
    _require_tensor("sinh", input)
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
    _require_tensor("cosh", input)
    return Cosh.apply(input)


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
    _require_tensor("asin", input)
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
    _require_tensor("acos", input)
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
    _require_tensor("atan", input)
    return Atan.apply(input)


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
    _require_tensor("tanh", input)
    return Tanh.apply(input)


class Erf(_Pointwise):
    """Error function; d/dx = 2/sqrt(pi) exp(-x^2)."""

    op_name, saves_input = "erf", True

    @staticmethod
    def kernel(xp, x):
        return erf_kernel(xp, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (_TWO_OVER_SQRT_PI * exp(-(x * x)))


def erf(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise error function.

    ``out = 2/sqrt(pi) * integral_0^input exp(-t^2) dt``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("erf", input)
    return Erf.apply(input)


class Erfinv(_Pointwise):
    """Inverse error function; d/dx = sqrt(pi)/2 exp(y^2); fp32 under autocast."""

    op_name, amp_policy, save_outputs = "erfinv", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return erfinv_kernel(xp, x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (_SQRT_PI_OVER_TWO * exp(y * y))


def erfinv(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise inverse error function.

    ``erf(out) = input``: +-inf at +-1, nan outside [-1, 1].

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("erfinv", input)
    return Erfinv.apply(input)


class Expm1(_Pointwise):
    """``exp(x) - 1``, exact near 0; d/dx = y + 1; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "expm1", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.expm1(x)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad * (y + 1.0)


def expm1(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise ``exp(input) - 1``, accurate near 0.

    ``out = e ** input - 1``.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("expm1", input)
    return Expm1.apply(input)


class Log2(_Pointwise):
    """Base-2 logarithm; d/dx = 1 / (x ln 2); fp32 under autocast."""

    op_name, amp_policy, saves_input = "log2", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.log2(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1.0 / (x * _LN2))


def log2(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise base-2 logarithm.

    ``out = ln(input) / ln(2)``: -inf at 0, nan below 0.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("log2", input)
    return Log2.apply(input)


class Log10(_Pointwise):
    """Base-10 logarithm; d/dx = 1 / (x ln 10); fp32 under autocast."""

    op_name, amp_policy, saves_input = "log10", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.log10(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1.0 / (x * _LN10))


def log10(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise base-10 logarithm.

    ``out = ln(input) / ln(10)``: -inf at 0, nan below 0.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("log10", input)
    return Log10.apply(input)


class Log1p(_Pointwise):
    """``log(1 + x)``, exact near 0; d/dx = 1 / (1 + x); fp32 under autocast."""

    op_name, amp_policy, saves_input = "log1p", "fp32", True

    @staticmethod
    def kernel(xp, x):
        return xp.log1p(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1.0 / (1.0 + x))


def log1p(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise ``log(1 + input)``, accurate near 0.

    ``out = ln(1 + input)``: -inf at -1, nan below -1.

    Args:
        input: a Tensor (integer and bool tensors are promoted to the default float dtype).
    """
    _require_tensor("log1p", input)
    return Log1p.apply(input)


# ---- sign and rounding: piecewise constant, so the gradient is zero --------------------------
class Sign(Function):
    """-1, 0 or 1; zero gradient."""

    op_name = "sign"

    @staticmethod
    def forward(ctx, a):
        if a.dtype == numpy.bool_:
            return a.array.copy()  # NOTE: as PyTorch: True is 1, False is 0 (NumPy has no bool sign)
        xp, x = xp_of(a), compute_in_fp32(a.array)
        with numpy.errstate(all="ignore"):
            return round_from_fp32(xp.sign(x), a.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _zero_grad(grad)


def sign(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise sign.

    ``out = -1`` below 0, ``0`` at 0, ``1`` above 0 (nan stays nan).

    Args:
        input: a Tensor (integers and bool allowed).
    """
    _require_tensor("sign", input)
    return Sign.apply(input)


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
    _require_tensor("floor", input)
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
    _require_tensor("ceil", input)
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
    _require_tensor("round", input)
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
    _require_tensor("trunc", input)
    _refuse_bool("trunc", input)
    return Trunc.apply(input)


# ---- clamp -----------------------------------------------------------------------------------
class Clamp(Function):
    """``min(max(x, lo), hi)``; gradient 1 inside [lo, hi], 0 outside; tensor bounds get the rest."""

    op_name = "clamp"

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.save_for_backward(a, *(v if isinstance(v, Tensor) else None for v in (lo, hi)))
        ctx.bounds = (lo, hi)
        xp, out = xp_of(a), a.array
        if lo is not None:
            out = xp.maximum(out, data(lo))
        if hi is not None:
            out = xp.minimum(out, data(hi))
        return fix_float_dtype(out, a, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        a, lo_t, hi_t = ctx.saved_tensors
        lo = lo_t if lo_t is not None else ctx.bounds[0]
        hi = hi_t if hi_t is not None else ctx.bounds[1]
        inside = _all_true(a)
        if lo is not None:
            inside = inside & (a >= lo)
        if hi is not None:
            inside = inside & (a <= hi)
        # NOTE: as PyTorch's clamp_backward_min_max: when lo > hi the output is hi, so hi gets the gradient
        g_a = sum_to(grad * inside.to(grad.dtype), a.shape) if ctx.needs_input_grad[0] else None
        g_lo = g_hi = None
        if ctx.needs_input_grad[1]:
            g_lo = sum_to(grad * _float_mask(a < lo, lo < hi if hi is not None else None, "and", grad.dtype), lo.shape)
        if ctx.needs_input_grad[2]:
            g_hi = sum_to(grad * _float_mask(a > hi, hi < lo if lo is not None else None, "or", grad.dtype), hi.shape)
        return g_a, g_lo, g_hi


def _all_true(t):
    return Tensor(xp_of(t).ones(t.shape, dtype=bool))


def _float_mask(first, second, how, dtype):
    if second is not None:
        first = (first & second) if how == "and" else (first | second)
    return first.to(dtype)


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Elementwise ``min(max(input, min), max)``; bounds may be numbers or broadcastable Tensors.

    The gradient is 1 where ``min <= input <= max`` and 0 elsewhere (tensor bounds
    receive the gradient where they are the output). NaN stays NaN.

    Args:
        input: a Tensor.
        min: lower bound (number, Tensor or None).
        max: upper bound (number, Tensor or None).
    """
    _require_tensor("clamp", input)
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    for label, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, (Tensor, int, float, numpy.number)):
            raise TypeError(f"clamp: {label} must be a number, a Tensor or None, got {type(bound).__name__}")
        if isinstance(bound, (float, numpy.floating)) and math.isnan(bound):
            raise ValueError(f"clamp: {label} is nan; expected a number")
    lo = lift(min, input) if min is not None else None
    hi = lift(max, input) if max is not None else None
    return Clamp.apply(input, lo, hi)


def clip(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Alias of ``clamp`` (NumPy's name): elementwise ``min(max(input, min), max)``.

    Args:
        input: a Tensor.
        min: lower bound (number, Tensor or None).
        max: upper bound (number, Tensor or None).
    """
    return clamp(input, min, max)


# ---- non-finite values -----------------------------------------------------------------------
def _largest(dtype):
    return float(ml_dtypes.finfo(dtype).max)


class NanToNum(Function):
    """Replace nan, +inf and -inf by finite numbers; gradient 1 where the input is finite, else 0."""

    op_name = "nan_to_num"

    @staticmethod
    def forward(ctx, a, nan=0.0, posinf=None, neginf=None):
        ctx.save_for_backward(a)
        xp, x = xp_of(a), a.array
        if not dtypes.is_floating(a.dtype):
            return x.copy()
        top = _largest(a.dtype) if posinf is None else posinf
        bottom = -_largest(a.dtype) if neginf is None else neginf
        out = xp.where(xp.isnan(x), xp.asarray(nan, dtype=x.dtype), x)
        out = xp.where(out == xp.inf, xp.asarray(top, dtype=x.dtype), out)
        return xp.where(out == -xp.inf, xp.asarray(bottom, dtype=x.dtype), out)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * isfinite(a).to(grad.dtype)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """Replace NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (defaults: 0 and the dtype's extremes).

    Args:
        input: a Tensor.
        nan: the value for NaN.
        posinf: the value for +inf (None: the largest finite value of the dtype).
        neginf: the value for -inf (None: the most negative finite value of the dtype).
    """
    _require_tensor("nan_to_num", input)
    for label, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None and not isinstance(value, (int, float, numpy.number)):
            raise TypeError(f"nan_to_num: {label} must be a number or None, got {type(value).__name__}")
    return NanToNum.apply(input, nan=nan, posinf=posinf, neginf=neginf)


def isfinite(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise test for finite values (bool tensor; integers are always finite).

    ``out = not (isnan(input) or isinf(input))``.

    Args:
        input: a Tensor.
    """
    _require_tensor("isfinite", input)
    return Tensor(xp_of(input).isfinite(input.array))


def isnan(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise test for NaN (bool tensor).

    ``out = input != input``.

    Args:
        input: a Tensor.
    """
    _require_tensor("isnan", input)
    return Tensor(xp_of(input).isnan(input.array))


def isinf(input):  # noqa: A002 - PyTorch's argument name
    """Elementwise test for +-inf (bool tensor).

    ``out = |input| == inf``.

    Args:
        input: a Tensor.
    """
    _require_tensor("isinf", input)
    return Tensor(xp_of(input).isinf(input.array))


METHODS = {name: globals()[name] for name in __all__}

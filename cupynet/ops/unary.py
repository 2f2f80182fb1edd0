"""Elementwise math of one tensor: exponentials and logarithms, powers and roots, abs, erf/erfinv.

Every op is written out: a ``Function`` whose forward runs the array math and
whose ``backward`` multiplies the gradient by the derivative, written with
cupynet ops, so the backward is itself differentiable (double backward for
free); then the public function (``def exp(input)``) that checks its argument
and calls ``apply``. Where the forward is one array expression the op writes
only that, ``kernel(xp, x)``, and ``_Pointwise.forward`` does the promotion,
rounding and errstate around it. ``_Pointwise`` is the shared forward of every
one-input op family: trigonometric.py (sin ... tanh), rounding.py (floor, ceil,
round, trunc), clamping.py (clamp, nan_to_num, isfinite ...) and the
activations build on it and on the argument checks here.

NOTE: float16/bfloat16 inputs are computed in float32 and rounded once
(``compute_in_fp32`` ... ``round_from_fp32``), as CUDA's ``opmath`` does in
PyTorch; the output keeps the input dtype. The floating ops (exp, log, sqrt,
erf, ...) take integer and bool tensors too and, as PyTorch does, promote them
to the default float dtype first (``floating_compute``); abs, sign and square
compute on integers in their own dtype. Forwards run under ``numpy.errstate(all="ignore")``:
as in PyTorch, log(0) = -inf and friends raise no warning. fp32-list ops
(AMP_REFERENCE.md) say so in ``amp_policy``.
"""

from __future__ import annotations

import math

import numpy

from ..autograd.function import Function
from ..checks import require_tensor
from ..tensor import Tensor
from ._special import erf_kernel, erfinv_kernel
from ._util import compute_in_fp32, floating_compute, round_from_fp32, xp_of

__all__ = ["exp", "log", "expm1", "log2", "log10", "log1p", "sqrt", "rsqrt", "square", "reciprocal", "abs", "sign",
           "erf", "erfinv"]


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = 0.5 * math.sqrt(math.pi)
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _refuse_bool(name, value):
    # NOTE: PyTorch implements abs and the roundings for numbers only ('"abs_cpu" not implemented for 'Bool'')
    if value.dtype == numpy.bool_:
        raise TypeError(f"{name}: not implemented for bool tensors (as in PyTorch); convert to an integer or float "
                        f"dtype first")


def _zero_grad(grad):
    """The gradient of a piecewise-constant op (sign, floor, ...): zeros."""
    return Tensor(xp_of(grad).zeros_like(grad.array))


# ---- the shared forward of the one-input ops -------------------------------------------------
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


# ---- exponentials and logarithms: grad * derivative, the derivative written with cupynet ops ---
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
    require_tensor("exp", input)
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
    require_tensor("log", input)
    return Log.apply(input)


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
    require_tensor("expm1", input)
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
    require_tensor("log2", input)
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
    require_tensor("log10", input)
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
    require_tensor("log1p", input)
    return Log1p.apply(input)


# ---- powers, roots, abs and sign -------------------------------------------------------------
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
    require_tensor("sqrt", input)
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
    require_tensor("rsqrt", input)
    return Rsqrt.apply(input)


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
    require_tensor("square", input)
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
    require_tensor("reciprocal", input)
    return Reciprocal.apply(input)


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
    require_tensor("abs", input)
    _refuse_bool("abs", input)
    if input.array.dtype.kind == "c":  # NOTE: |z| of complex numbers: complex_math.py, loaded on first use
        from .complex_math import complex_abs  # noqa: PLC0415
        return complex_abs(input)
    return Abs.apply(input)


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
    require_tensor("sign", input)
    return Sign.apply(input)


# ---- the error function and its inverse ------------------------------------------------------
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
    require_tensor("erf", input)
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
    require_tensor("erfinv", input)
    return Erfinv.apply(input)


METHODS = {name: globals()[name] for name in __all__}

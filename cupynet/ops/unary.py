"""Elementwise math of one tensor: roots, trig, hyperbolic, erf/erfinv, logs, rounding, clamp, finiteness.

Most ops here share one shape (``_Elementwise``): a ``kernel`` on arrays for the
forward and a ``derivative`` written with cupynet ops for the backward, so the
backward is itself differentiable (double backward for free).

NOTE: float16/bfloat16 inputs are computed in float32 and rounded once, as
CUDA's ``opmath`` does in PyTorch; the output keeps the input dtype.
fp32-list ops (AMP_REFERENCE.md) say so in ``amp_policy``.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy

from .. import dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..tensor import Tensor
from ._special import erf_kernel, erfinv_kernel
from ._util import data, fix_float_dtype, lift, require_floating, xp_of
from .shape import sum_to

__all__ = [
    "exp", "log", "sqrt", "rsqrt", "abs", "sign", "square", "reciprocal", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "tanh", "erf", "erfinv", "expm1", "log2", "log10", "log1p", "floor", "ceil",
    "round", "trunc", "clamp", "clip", "nan_to_num", "isfinite", "isnan", "isinf",
]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ---- the shared shape of a one-input op ------------------------------------------------------
class _Elementwise:
    """Mixin for one-input ops: ``kernel(xp, array, **options)`` forward, ``grad * derivative(x, y, **options)``.

    ``derivative`` is None for piecewise-constant ops (their gradient is zero).
    ``uses_input`` saves the input for ``derivative``; ``save_outputs`` keeps the output.
    """

    kernel = None
    derivative = None
    array_backward = None  # optional (xp, grad, x, y, **options) -> array, used when no graph is recorded
    uses_input = False
    can_warn = True  # False for kernels that never raise a floating-point warning (no errstate needed)

    @classmethod
    def forward(cls, ctx, a, **options):
        if cls.uses_input:
            ctx.save_for_backward(a)
        ctx.options = options
        xp, x = xp_of(a), a.data
        if not cls.can_warn and a.dtype not in dtypes.LOW_PRECISION:
            return cls.kernel(xp, x, **options)
        with numpy.errstate(all="ignore"):  # NOTE: as in PyTorch, log(0) = -inf and friends raise no warning
            if a.dtype in dtypes.LOW_PRECISION:
                return cls.kernel(xp, x.astype(dtypes.float32), **options).astype(a.dtype)
            return cls.kernel(xp, x, **options)

    @classmethod
    def backward(cls, ctx, grad):
        if cls.derivative is None:
            return Tensor(xp_of(grad).zeros_like(grad.data))
        x = ctx.saved_tensors[0] if cls.uses_input else None
        y = ctx.output(0) if cls.save_outputs else None
        if cls.array_backward is not None and not STATE.grad_enabled:
            # NOTE: create_graph=False: the same derivative on raw arrays, no op dispatch
            return Tensor(cls.array_backward(xp_of(grad), grad.data, x.data if x is not None else None,
                                             y.data if y is not None else None, **ctx.options))
        return grad * cls.derivative(x, y, **ctx.options)


class Exp(_Elementwise, Function):
    """``e ** x``; d/dx = e ** x; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "exp", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.exp(a))
    derivative = staticmethod(lambda x, y: y)


class Log(_Elementwise, Function):
    """Natural logarithm; d/dx = 1 / x; fp32 under autocast."""

    op_name, amp_policy, uses_input = "log", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.log(a))
    derivative = staticmethod(lambda x, y: 1.0 / x)


class Sqrt(_Elementwise, Function):
    """Square root; d/dx = 1 / (2 sqrt(x))."""

    op_name, save_outputs = "sqrt", True
    kernel = staticmethod(lambda xp, a: xp.sqrt(a))
    derivative = staticmethod(lambda x, y: 0.5 / y)


class Rsqrt(_Elementwise, Function):
    """``1 / sqrt(x)``; d/dx = -y^3 / 2; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "rsqrt", "fp32", True
    kernel = staticmethod(lambda xp, a: 1.0 / xp.sqrt(a))
    derivative = staticmethod(lambda x, y: -0.5 * y * y * y)


class Abs(_Elementwise, Function):
    """Absolute value; d/dx = sign(x) (0 at 0, as PyTorch)."""

    op_name, uses_input = "abs", True
    kernel = staticmethod(lambda xp, a: xp.abs(a))
    derivative = staticmethod(lambda x, y: sign(x))


class Sign(_Elementwise, Function):
    """-1, 0 or 1; zero gradient."""

    op_name = "sign"
    kernel = staticmethod(lambda xp, a: xp.sign(a))


class Square(_Elementwise, Function):
    """``x * x``; d/dx = 2x."""

    op_name, uses_input = "square", True
    kernel = staticmethod(lambda xp, a: a * a)
    derivative = staticmethod(lambda x, y: 2.0 * x)


class Reciprocal(_Elementwise, Function):
    """``1 / x``; d/dx = -y^2; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "reciprocal", "fp32", True
    kernel = staticmethod(lambda xp, a: 1.0 / a)
    derivative = staticmethod(lambda x, y: -(y * y))


class Sin(_Elementwise, Function):
    """Sine; d/dx = cos(x)."""

    op_name, uses_input = "sin", True
    kernel = staticmethod(lambda xp, a: xp.sin(a))
    derivative = staticmethod(lambda x, y: cos(x))


class Cos(_Elementwise, Function):
    """Cosine; d/dx = -sin(x)."""

    op_name, uses_input = "cos", True
    kernel = staticmethod(lambda xp, a: xp.cos(a))
    derivative = staticmethod(lambda x, y: -sin(x))


class Tan(_Elementwise, Function):
    """Tangent; d/dx = 1 + y^2; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "tan", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.tan(a))
    derivative = staticmethod(lambda x, y: 1.0 + y * y)


class Sinh(_Elementwise, Function):
    """Hyperbolic sine; d/dx = cosh(x); fp32 under autocast."""

    op_name, amp_policy, uses_input = "sinh", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.sinh(a))
    derivative = staticmethod(lambda x, y: cosh(x))


class Cosh(_Elementwise, Function):
    """Hyperbolic cosine; d/dx = sinh(x); fp32 under autocast."""

    op_name, amp_policy, uses_input = "cosh", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.cosh(a))
    derivative = staticmethod(lambda x, y: sinh(x))


class Asin(_Elementwise, Function):
    """Arcsine; d/dx = 1 / sqrt(1 - x^2); fp32 under autocast."""

    op_name, amp_policy, uses_input = "asin", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.arcsin(a))
    derivative = staticmethod(lambda x, y: rsqrt(1.0 - x * x))


class Acos(_Elementwise, Function):
    """Arccosine; d/dx = -1 / sqrt(1 - x^2); fp32 under autocast."""

    op_name, amp_policy, uses_input = "acos", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.arccos(a))
    derivative = staticmethod(lambda x, y: -rsqrt(1.0 - x * x))


class Atan(_Elementwise, Function):
    """Arctangent; d/dx = 1 / (1 + x^2)."""

    op_name, uses_input = "atan", True
    kernel = staticmethod(lambda xp, a: xp.arctan(a))
    derivative = staticmethod(lambda x, y: 1.0 / (1.0 + x * x))


class Tanh(_Elementwise, Function):
    """Hyperbolic tangent; d/dx = 1 - y^2."""

    op_name, save_outputs = "tanh", True
    kernel = staticmethod(lambda xp, a: xp.tanh(a))
    derivative = staticmethod(lambda x, y: 1.0 - y * y)


class Erf(_Elementwise, Function):
    """Error function; d/dx = 2/sqrt(pi) exp(-x^2)."""

    op_name, uses_input = "erf", True
    kernel = staticmethod(erf_kernel)
    derivative = staticmethod(lambda x, y: _TWO_OVER_SQRT_PI * exp(-(x * x)))


class Erfinv(_Elementwise, Function):
    """Inverse error function; d/dx = sqrt(pi)/2 exp(y^2); fp32 under autocast."""

    op_name, amp_policy, save_outputs = "erfinv", "fp32", True
    kernel = staticmethod(erfinv_kernel)
    derivative = staticmethod(lambda x, y: (0.5 * math.sqrt(math.pi)) * exp(y * y))


class Expm1(_Elementwise, Function):
    """``exp(x) - 1``, exact near 0; d/dx = y + 1; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "expm1", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.expm1(a))
    derivative = staticmethod(lambda x, y: y + 1.0)


class Log2(_Elementwise, Function):
    """Base-2 logarithm; d/dx = 1 / (x ln 2); fp32 under autocast."""

    op_name, amp_policy, uses_input = "log2", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.log2(a))
    derivative = staticmethod(lambda x, y: 1.0 / (x * math.log(2.0)))


class Log10(_Elementwise, Function):
    """Base-10 logarithm; d/dx = 1 / (x ln 10); fp32 under autocast."""

    op_name, amp_policy, uses_input = "log10", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.log10(a))
    derivative = staticmethod(lambda x, y: 1.0 / (x * math.log(10.0)))


class Log1p(_Elementwise, Function):
    """``log(1 + x)``, exact near 0; d/dx = 1 / (1 + x); fp32 under autocast."""

    op_name, amp_policy, uses_input = "log1p", "fp32", True
    kernel = staticmethod(lambda xp, a: xp.log1p(a))
    derivative = staticmethod(lambda x, y: 1.0 / (1.0 + x))


def _integer_safe(fn):
    """Rounding of an integer tensor is a copy (NumPy would return float64)."""
    return lambda xp, a, **options: a.copy() if a.dtype.kind in "iub" else fn(xp, a, **options)


class Floor(_Elementwise, Function):
    """Round down; zero gradient."""

    op_name = "floor"
    kernel = staticmethod(_integer_safe(lambda xp, a: xp.floor(a)))


class Ceil(_Elementwise, Function):
    """Round up; zero gradient."""

    op_name = "ceil"
    kernel = staticmethod(_integer_safe(lambda xp, a: xp.ceil(a)))


class Round(_Elementwise, Function):
    """Round half to even (to ``decimals`` places); zero gradient."""

    op_name = "round"
    kernel = staticmethod(_integer_safe(lambda xp, a, decimals=0: xp.round(a, decimals)))


class Trunc(_Elementwise, Function):
    """Round toward zero; zero gradient."""

    op_name = "trunc"
    kernel = staticmethod(_integer_safe(lambda xp, a: xp.trunc(a)))


def _unary_function(cls, summary, floating=True):
    """Build the public function of a one-input op (``sqrt(input)``), checking dtypes first."""
    name = cls.op_name

    def op(input):  # noqa: A002 - PyTorch's argument name
        _require_tensor(name, input)
        if floating:
            require_floating(name, input)
        return cls.apply(input)

    op.__name__ = op.__qualname__ = name
    kind = "a floating Tensor" if floating else "a Tensor (integers allowed)"
    op.__doc__ = f"{summary}\n\n    Args:\n        input: {kind}.\n"
    return op


def _require_tensor(name, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}: expected a Tensor as input, got {type(value).__name__}")


exp = _unary_function(Exp, "Elementwise exponential ``e ** input``.")
log = _unary_function(Log, "Elementwise natural logarithm.")
sqrt = _unary_function(Sqrt, "Elementwise square root (nan below 0).")
rsqrt = _unary_function(Rsqrt, "Elementwise ``1 / sqrt(input)``.")
abs = _unary_function(Abs, "Elementwise absolute value.", floating=False)  # noqa: A001 - PyTorch's name
sign = _unary_function(Sign, "Elementwise sign: -1, 0 or 1.", floating=False)
square = _unary_function(Square, "Elementwise ``input * input``.", floating=False)
reciprocal = _unary_function(Reciprocal, "Elementwise ``1 / input``.")
sin = _unary_function(Sin, "Elementwise sine (radians).")
cos = _unary_function(Cos, "Elementwise cosine (radians).")
tan = _unary_function(Tan, "Elementwise tangent (radians).")
sinh = _unary_function(Sinh, "Elementwise hyperbolic sine.")
cosh = _unary_function(Cosh, "Elementwise hyperbolic cosine.")
asin = _unary_function(Asin, "Elementwise arcsine (nan outside [-1, 1]).")
acos = _unary_function(Acos, "Elementwise arccosine (nan outside [-1, 1]).")
atan = _unary_function(Atan, "Elementwise arctangent.")
tanh = _unary_function(Tanh, "Elementwise hyperbolic tangent.")
erf = _unary_function(Erf, "Elementwise error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``.")
erfinv = _unary_function(Erfinv, "Elementwise inverse error function (+-inf at +-1, nan outside [-1, 1]).")
expm1 = _unary_function(Expm1, "Elementwise ``exp(input) - 1``, accurate near 0.")
log2 = _unary_function(Log2, "Elementwise base-2 logarithm.")
log10 = _unary_function(Log10, "Elementwise base-10 logarithm.")
log1p = _unary_function(Log1p, "Elementwise ``log(1 + input)``, accurate near 0.")
floor = _unary_function(Floor, "Elementwise round down (integers are copied).", floating=False)
ceil = _unary_function(Ceil, "Elementwise round up (integers are copied).", floating=False)
trunc = _unary_function(Trunc, "Elementwise round toward zero (integers are copied).", floating=False)


def round(input, decimals=0):  # noqa: A001, A002 - PyTorch's names
    """Elementwise round half to even, to ``decimals`` decimal places (integers are copied).

    Args:
        input: a Tensor.
        decimals: number of decimal places (may be negative).
    """
    _require_tensor("round", input)
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    return Round.apply(input, decimals=decimals)


# ---- clamp -----------------------------------------------------------------------------------
class Clamp(Function):
    """``min(max(x, lo), hi)``; gradient 1 inside [lo, hi], 0 outside; tensor bounds get the rest."""

    op_name = "clamp"

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.save_for_backward(a, *(v if isinstance(v, Tensor) else None for v in (lo, hi)))
        ctx.bounds = (lo, hi)
        xp, out = xp_of(a), a.data
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


clip = clamp


# ---- non-finite values -----------------------------------------------------------------------
def _largest(dtype):
    return float(ml_dtypes.finfo(dtype).max)


class NanToNum(Function):
    """Replace nan, +inf and -inf by finite numbers; gradient 1 where the input is finite, else 0."""

    op_name = "nan_to_num"

    @staticmethod
    def forward(ctx, a, nan=0.0, posinf=None, neginf=None):
        ctx.save_for_backward(a)
        xp, x = xp_of(a), a.data
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


def _predicate(name, summary):
    """Build a bool-valued elementwise test (no gradient) from ``xp.<name>``."""
    def test(input):  # noqa: A002
        _require_tensor(name, input)
        return Tensor(getattr(xp_of(input), name)(input.data))

    test.__name__ = test.__qualname__ = name
    test.__doc__ = f"{summary}\n\n    Args:\n        input: a Tensor.\n"
    return test


isfinite = _predicate("isfinite", "Elementwise test for finite values (bool tensor; integers are always finite).")
isnan = _predicate("isnan", "Elementwise test for NaN (bool tensor).")
isinf = _predicate("isinf", "Elementwise test for +-inf (bool tensor).")


METHODS = {name: globals()[name] for name in __all__}

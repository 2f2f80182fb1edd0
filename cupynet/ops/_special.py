"""Special functions on arrays that NumPy lacks: erf and erfinv (SciPy is not a dependency).

Plain ``xp`` math, so the same code runs on NumPy and CuPy arrays; ``unary.py``
wraps them as differentiable ops (and uses CuPy's fused kernels on the GPU,
which tests compare with these references when a GPU is present).
"""

from __future__ import annotations

import math

import numpy

__all__ = ["erf_reference", "erfinv_reference", "erf_kernel", "erfinv_kernel", "ERF_FLOAT32_MAX_ABS_ERROR"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ERF_SPLIT = 2.5        # below: the power series; above: the continued fraction of erfc
# NOTE: the float64 path: 40 series terms reach 6e-16 absolute error on [0, 2.5] and 30 continued-fraction
# levels 6e-14 relative error of erfc on [2.5, inf) (float32 takes the rational approximation below).
_SERIES_TERMS, _FRACTION_LEVELS = 40, 30


def _erf_series(xp, a):
    """erf(a) = 2/sqrt(pi) exp(-a^2) sum_k (2a^2)^k a / (1*3*...*(2k+1)), for 0 <= a <= _ERF_SPLIT.

    NOTE: every term is positive, so unlike the Taylor series of erf there is no
    cancellation; Horner's scheme evaluates it from the innermost term out.
    """
    two_a2 = 2.0 * a * a
    total = xp.ones_like(a)
    for k in range(_SERIES_TERMS, 0, -1):
        total = total * two_a2 / (2 * k + 1) + 1.0
    return _TWO_OVER_SQRT_PI * xp.exp(-a * a) * a * total


def _erfc_continued_fraction(xp, a):
    """erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))), for a >= _ERF_SPLIT."""
    denominator = a
    for k in range(_FRACTION_LEVELS, 0, -1):
        denominator = a + (0.5 * k) / denominator
    return xp.exp(-a * a) / (math.sqrt(math.pi) * denominator)


# NOTE: float32 erf(x) = x P(x^2) / Q(x^2) on |x| <= 4 (erf(4) = 1 - 1.5e-8 rounds to 1 in float32), P of
# degree 6 and Q of degree 4 in x^2, P(0) = 2/sqrt(pi) so erf keeps its relative accuracy near 0. The
# coefficients were fitted for this project (linearised least squares on x P - erf(x) Q, iterated towards
# the minimax of the absolute error, then rounded to float32): the approximation itself is within 7e-8 of
# erf; evaluated in float32 (about 25 array passes instead of the ~110 of the series below), the result is
# within ERF_FLOAT32_MAX_ABS_ERROR of the exact erf, measured exhaustively over every float32 in
# [2^-12, 4] (below 2^-12 the error is under 1e-7 relative; above 4 the result is exactly +-1).
ERF_FLOAT32_MAX_ABS_ERROR = 4.3e-7
_ERF_P = (1.1283792, 0.20873491, 0.0517402, 0.004066909, 1.4966952e-04, -1.9612423e-06, 1.9228573e-08)
_ERF_Q = (1.0, 0.5183174, 0.11863923, 0.015102085, 0.001041614)
_ERF_CLAMP = 4.0


def _horner_in_place(t, coefficients):
    """sum_k c_k t^k (coefficients lowest first) by Horner's scheme, updating one new array in place."""
    total = t * t.dtype.type(coefficients[-1])
    for c in coefficients[-2:0:-1]:
        total += t.dtype.type(c)
        total *= t
    total += t.dtype.type(coefficients[0])
    return total


def _erf_rational_float32(xp, array):
    """erf of a float32 array as x P(x^2) / Q(x^2), within ERF_FLOAT32_MAX_ABS_ERROR (see the NOTE above)."""
    # NOTE: flat, so every step is an array (a 0-d product is a NumPy scalar, which has no in-place ops)
    x = xp.clip(array.reshape(-1), -_ERF_CLAMP, _ERF_CLAMP)  # NOTE: nan stays nan; +-inf becomes +-4 (erf +-1)
    t = x * x
    out = _horner_in_place(t, _ERF_P)
    out *= x
    out /= _horner_in_place(t, _ERF_Q)
    # NOTE: near |x| = 4 rounding can lift the quotient a few ulps above 1; erf never exceeds 1
    return xp.clip(out, -1.0, 1.0, out=out).reshape(array.shape)


def _erf_and_erfc(xp, a):
    """(erf(a), erfc(a)) for a >= 0, each accurate where it is small (the other is 1 minus it)."""
    small = a < _ERF_SPLIT
    series = _erf_series(xp, xp.minimum(a, _ERF_SPLIT))
    tail = _erfc_continued_fraction(xp, xp.maximum(a, _ERF_SPLIT))
    return xp.where(small, series, 1.0 - tail), xp.where(small, 1.0 - series, tail)


def erf_reference(xp, array):
    """The error function on a float32/float64 array with plain ``xp`` math.

    float64 runs the series / continued fraction (about 1e-15); float32 a rational
    approximation within ``ERF_FLOAT32_MAX_ABS_ERROR`` (4.3e-7) absolute, about 4x fewer passes.

    Args:
        xp: numpy or cupy.
        array: a float32 or float64 array.
    """
    if array.dtype == numpy.float32:
        return _erf_rational_float32(xp, array)
    with numpy.errstate(all="ignore"):
        return xp.sign(array) * _erf_and_erfc(xp, xp.abs(array))[0]


def erfinv_reference(xp, array):
    """The inverse error function on a float32/float64 array (about 1e-13 relative in float64).

    NOTE: Winitzki's closed form (relative error ~2e-3) starts two Halley steps on
    f(x) = erf(x) - y (cubic convergence: 2e-3 -> 1e-8 -> 1e-16). In the tail the
    residual is taken as (1 - y) - erfc(x), which keeps the digits that 1 - erfc loses.
    |y| = 1 gives +-inf and |y| > 1 gives nan, as in PyTorch.

    Args:
        xp: numpy or cupy.
        array: a float32 or float64 array.
    """
    with numpy.errstate(all="ignore"):
        # NOTE: float32 runs in float64 too: Halley divides erf's absolute error by erf' (small in the tails)
        y = xp.abs(array.astype(numpy.float64))
        log_term = xp.log1p(-y * y)
        shift = 2.0 / (math.pi * 0.147) + 0.5 * log_term
        x = xp.sqrt(xp.sqrt(shift * shift - log_term / 0.147) - shift)
        one_minus_y = 1.0 - y
        for _ in range(2):
            erf_x, erfc_x = _erf_and_erfc(xp, x)
            residual = xp.where(x < _ERF_SPLIT, erf_x - y, one_minus_y - erfc_x)
            slope = _TWO_OVER_SQRT_PI * xp.exp(-x * x)
            x = x - residual / (slope + x * residual)
        x = xp.where(y == 1.0, xp.inf, x)
        return (xp.sign(array) * x).astype(array.dtype, copy=False)


def _fused_or_reference(name, reference):
    """``<name>_kernel(xp, a)``: CuPy's fused ``cupyx.scipy.special.<name>`` on the GPU, else ``reference``."""

    def kernel(xp, a):
        if xp.__name__ == "cupy":
            from ..cuda import device  # noqa: PLC0415 - CuPy only: one fused kernel instead of ~200

            return getattr(device.cupyx().scipy.special, name)(a)
        return reference(xp, a)

    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    kernel.__doc__ = f"""{name} on the GPU through CuPy's fused kernel, else ``{reference.__name__}``.

    Args:
        xp: numpy or cupy.
        a: a float32 or float64 array.
    """
    return kernel


erf_kernel = _fused_or_reference("erf", erf_reference)
erfinv_kernel = _fused_or_reference("erfinv", erfinv_reference)

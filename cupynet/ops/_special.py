"""Special functions on arrays that NumPy lacks: erf and erfinv (SciPy is not a dependency).

Plain ``xp`` math, so the same code runs on NumPy and CuPy arrays; ``unary.py``
wraps them as differentiable ops (and uses CuPy's fused kernels on the GPU,
which tests compare with these references when a GPU is present).
"""

from __future__ import annotations

import math

import numpy

__all__ = ["erf_reference", "erfinv_reference", "erf_kernel", "erfinv_kernel"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ERF_SPLIT = 2.5        # below: the power series; above: the continued fraction of erfc
# NOTE: (series terms, continued-fraction levels) per dtype. float64: 40 terms reach 6e-16 absolute error on
# [0, 2.5] and 30 levels 6e-14 relative error of erfc on [2.5, inf); float32 needs only 26 and 8 (3e-10
# truncation error), where the rounding of exp(-a^2) in float32 dominates: erf is within 5e-7 absolute.
_TERMS = {"float64": (40, 30), "float32": (26, 8)}


def _erf_series(xp, a):
    """erf(a) = 2/sqrt(pi) exp(-a^2) sum_k (2a^2)^k a / (1*3*...*(2k+1)), for 0 <= a <= _ERF_SPLIT.

    NOTE: every term is positive, so unlike the Taylor series of erf there is no
    cancellation; Horner's scheme evaluates it from the innermost term out.
    """
    two_a2 = 2.0 * a * a
    total = xp.ones_like(a)
    for k in range(_TERMS.get(a.dtype.name, _TERMS["float64"])[0], 0, -1):
        total = total * two_a2 / (2 * k + 1) + 1.0
    return _TWO_OVER_SQRT_PI * xp.exp(-a * a) * a * total


def _erfc_continued_fraction(xp, a):
    """erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))), for a >= _ERF_SPLIT."""
    denominator = a
    for k in range(_TERMS.get(a.dtype.name, _TERMS["float64"])[1], 0, -1):
        denominator = a + (0.5 * k) / denominator
    return xp.exp(-a * a) / (math.sqrt(math.pi) * denominator)


def _erf_and_erfc(xp, a):
    """(erf(a), erfc(a)) for a >= 0, each accurate where it is small (the other is 1 minus it)."""
    small = a < _ERF_SPLIT
    series = _erf_series(xp, xp.minimum(a, _ERF_SPLIT))
    tail = _erfc_continued_fraction(xp, xp.maximum(a, _ERF_SPLIT))
    return xp.where(small, series, 1.0 - tail), xp.where(small, 1.0 - series, tail)


def erf_reference(xp, array):
    """The error function on a float32/float64 array with plain ``xp`` math (about 1e-15 in float64).

    Args:
        xp: numpy or cupy.
        array: a float32 or float64 array.
    """
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
            from cupyx.scipy import special  # noqa: PLC0415 - CuPy only: one fused kernel instead of ~200
            return getattr(special, name)(a)
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

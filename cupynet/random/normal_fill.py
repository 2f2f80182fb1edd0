"""ATen's block Box-Muller (``normal_fill``) for 16 or more values, bit for bit, in NumPy.

ATen first fills the whole tensor with uniforms, then turns each block of 16 into normals: the first
8 uniforms ``u`` give ``radius = sqrt(-2 log(1 - u))``, the last 8 ``v`` give ``theta = 2 pi v``, and
the block becomes ``radius * cos(theta)`` followed by ``radius * sin(theta)``. When the size is not a
multiple of 16 the last 16 positions are redrawn and recomputed as one more block.

float32 on an x86 CPU with AVX2 (what torch's AVX2 and AVX512 builds run) uses the AVX vector
routines ``log256_ps`` and ``sincos256_ps`` (Cephes polynomials in float32), compiled with fused
multiply-adds. They are written out here operation by operation; ``fma32`` is an exactly rounded
float32 fused multiply-add. float16 and bfloat16 round the float32 values (their first pass draws
uniforms for the whole blocks only). float64 uses the C
library's ``log``/``cos``/``sin`` (ATen's scalar code), reached through Python's ``math`` module.
"""

from __future__ import annotations

import math

import numpy

_F32, _F64 = numpy.float32, numpy.float64
_BLOCK, _HALF = 16, 8
_CHUNK_BLOCKS = 4096
_LOW_29, _HALF_29 = (1 << 29) - 1, 1 << 28    # NOTE: the float64 bits below float32's last bit; a midpoint
_F32_TINY = float(numpy.finfo(numpy.float32).tiny)

# NOTE: Cephes' float32 coefficients, as the AVX routines spell them
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
             -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
_LOG_Q1, _LOG_Q2, _SQRT_HALF = -2.12194440e-4, 0.693359375, 0.707106781186547524
_FOUR_OVER_PI = 1.27323954473516
_PI4_PARTS = (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)
_COS_POLY = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
_SIN_POLY = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)


def fill(stream, count: int, dtype, mean: float, std: float) -> numpy.ndarray:
    """``count`` normals drawn from ``stream`` as ATen's ``normal_fill`` makes them (``count`` >= 16).

    Args:
        stream: the ``TorchCPUStream`` to draw from.
        count: how many values.
        dtype: float16, bfloat16, float32 or float64.
        mean: the mean.
        std: the standard deviation.
    """
    dtype = numpy.dtype(dtype)
    if dtype != _F64:
        # NOTE: float16/bfloat16 are the float32 values rounded (measured equal to torch 2.13)
        uniforms, blocks = _float32_uniforms, _float32_blocks
    else:
        uniforms, blocks = _float64_uniforms, _float64_blocks
    whole = count // _BLOCK * _BLOCK
    # NOTE: for float16/bfloat16 torch's first pass draws uniforms for the whole blocks only (measured
    # against torch 2.13); float32/float64 draw one per value and overwrite the leftover ones
    data = uniforms(stream, count if dtype in (_F32, _F64) else whole)
    blocks_view = data[:whole].reshape(-1, _BLOCK)
    # NOTE: a few thousand blocks at a time keep the float64 temporaries in cache (measured 1.7x faster)
    for start in range(0, len(blocks_view), _CHUNK_BLOCKS):
        blocks_view[start:start + _CHUNK_BLOCKS] = blocks(blocks_view[start:start + _CHUNK_BLOCKS], mean, std)
    if count % _BLOCK:
        # NOTE: ATen redraws the last 16 positions (overwriting finished values) and recomputes them
        if len(data) < count:
            data = numpy.concatenate([data, numpy.empty(count - len(data), dtype=data.dtype)])
        data[count - _BLOCK:] = blocks(uniforms(stream, _BLOCK).reshape(1, _BLOCK), mean, std).reshape(-1)
    return data.astype(dtype, copy=False)


def _float32_uniforms(stream, count):
    return stream._unit(count, 24)


def _float64_uniforms(stream, count):
    return stream._unit(count, 53)


def _float32_blocks(blocks, mean, std):
    """The AVX2 kernel: radius and angle in float32 vector arithmetic, then ``fma(n, std, mean)``."""
    u1, u2 = _F32(1) - blocks[:, :_HALF], blocks[:, _HALF:]
    radius = numpy.sqrt(_F32(-2) * _log_ps(u1))
    sin, cos = _sincos_ps(_F32(2 * math.pi) * u2)
    out = numpy.concatenate([radius * cos, radius * sin], axis=1)
    return fma32(out, _F32(std), _F32(mean))


def _float64_blocks(blocks, mean, std):
    """The scalar kernel in double precision, with the C library's log/cos/sin."""
    u1, u2 = (1.0 - blocks[:, :_HALF]).ravel().tolist(), blocks[:, _HALF:].ravel().tolist()
    radius = numpy.sqrt(-2.0 * numpy.array(list(map(math.log, u1))))
    theta = [2.0 * math.pi * v for v in u2]
    cos, sin = numpy.array(list(map(math.cos, theta))), numpy.array(list(map(math.sin, theta)))
    shape = (blocks.shape[0], _HALF)
    out = numpy.concatenate([(radius * cos).reshape(shape), (radius * sin).reshape(shape)], axis=1)
    return fma64(out, std, mean)


def fma32(a, b, c):
    """float32 ``a * b + c`` rounded once, as an FMA instruction does (for arrays).

    NOTE: the product of two float32 values is exact in float64, and the float64 sum rounded to float32
    is the exact sum rounded unless the float64 sum fell exactly on a midpoint between two float32
    values (or in float32's subnormal range); those few are rounded to odd first (moved one step toward
    the exact sum), and a 53-bit round-to-odd value rounds to float32 as the exact sum would.

    Args:
        a: a float32 array or number.
        b: a float32 array or number.
        c: a float32 array or number.
    """
    product = numpy.asarray(a, dtype=_F64) * numpy.asarray(b, dtype=_F64)
    addend = numpy.asarray(c, dtype=_F64)
    total = numpy.asarray(product + addend)
    doubtful = ((total.view(numpy.int64) & _LOW_29) == _HALF_29) | (numpy.abs(total) < _F32_TINY)
    if doubtful.any():
        product, addend = numpy.broadcast_arrays(product, addend)
        exact = _to_odd(*_two_sum(product[doubtful], addend[doubtful]))
        total = total.copy()
        total[doubtful] = exact
    return total.astype(_F32)


def _to_odd(total, error):
    """``total`` rounded to odd, given the exact ``error`` of its rounding to nearest."""
    bits = total.view(numpy.int64)
    nudge = (error != 0) & ((bits & 1) == 0)
    # NOTE: +1 on the bit pattern steps away from zero, -1 toward it, for either sign
    step = numpy.where((error > 0) == (total > 0), 1, -1) * nudge
    return (bits + step).view(_F64)


def fma64(a, b, c):
    """float64 ``a * b + c`` rounded once (an FMA), for arrays.

    NOTE: Veltkamp's split makes the product exact as ``high + low``; ``high + c`` is summed exactly
    (TwoSum), the two small parts are added rounding to odd, and the last addition rounds once.

    Args:
        a: a float64 array or number.
        b: a float64 array or number.
        c: a float64 array or number.
    """
    a, b, c = (numpy.asarray(v, dtype=_F64) for v in (a, b, c))
    high = a * b
    low = _split_product_error(a, b, high)
    total, error = _two_sum(high, c)
    return total + _round_to_odd_sum(low, error)


def _split_product_error(a, b, product):
    """The exact error ``a * b - product`` (Dekker's TwoProduct with Veltkamp's split)."""
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    return ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


def _split(value):
    scaled = value * _F64(134217729.0)          # NOTE: 2**27 + 1 splits a double into two 26-bit halves
    high = scaled - (scaled - value)
    return high, value - high


def _two_sum(a, b):
    total = a + b
    back = total - a
    return total, (a - (total - back)) + (b - back)


def _round_to_odd_sum(a, b):
    return _to_odd(*_two_sum(a, b))


def _log_ps(x):
    """``log256_ps``: split off the exponent, fold the mantissa around sqrt(1/2), a degree-9 polynomial."""
    x = numpy.maximum(x, numpy.finfo(_F32).tiny)
    bits = x.view(numpy.int32)
    exponent = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | _F32(0.5).view(numpy.int32)).view(_F32)
    below = x < _F32(_SQRT_HALF)
    x = (x - _F32(1)) + numpy.where(below, x, _F32(0))
    exponent = exponent - below.astype(_F32)
    z = x * x
    y = numpy.full_like(x, _F32(_LOG_POLY[0]))
    for coefficient in _LOG_POLY[1:]:
        y = fma32(y, x, _F32(coefficient))
    y = fma32(y * x, z, exponent * _F32(_LOG_Q1))
    y = y - z * _F32(0.5)
    return fma32(exponent, _F32(_LOG_Q2), x + y)


def _sincos_ps(x):
    """``sincos256_ps``: reduce by pi/4 in three parts, then a cosine and a sine polynomial, picked per octant."""
    negative = x < 0
    x = numpy.abs(x)
    octant = (x * _F32(_FOUR_OVER_PI)).astype(numpy.int32)
    octant = (octant + 1) & ~1
    y = octant.astype(_F32)
    for part in _PI4_PARTS:
        x = fma32(y, _F32(part), x)
    sin_negative = negative ^ ((octant & 4) != 0)
    cos_negative = (~(octant - 2) & 4) != 0
    use_sin_poly = (octant & 2) == 0
    z = x * x
    cos = fma32(numpy.full_like(z, _F32(_COS_POLY[0])), z, _F32(_COS_POLY[1]))
    cos = fma32(cos, z, _F32(_COS_POLY[2]))
    cos = fma32(cos * z, z, -(z * _F32(0.5))) + _F32(1)
    sin = fma32(numpy.full_like(z, _F32(_SIN_POLY[0])), z, _F32(_SIN_POLY[1]))
    sin = fma32(sin, z, _F32(_SIN_POLY[2]))
    sin = fma32(sin * z, x, x)
    sin_value, cos_value = numpy.where(use_sin_poly, sin, cos), numpy.where(use_sin_poly, cos, sin)
    return numpy.where(sin_negative, -sin_value, sin_value), numpy.where(cos_negative, -cos_value, cos_value)

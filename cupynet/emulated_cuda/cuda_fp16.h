// cuda_fp16.h -- __half on the CPU: a 16-bit struct and bit-exact conversions (CUDA-on-CPU harness).
//
// The conversions are written on the bit patterns with integer arithmetic only, so they
// are exact whatever the CPU's flush-to-zero mode, and they round as the GPU's cvt.rn
// does: to nearest, ties to even, subnormal halves included, overflow to inf.
#pragma once

#include "cuda_runtime.h"

struct __half {
    unsigned short x;
};

inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline __half __ushort_as_half(unsigned short bits) { return __half{bits}; }

inline float __half2float(__half h) {
    const unsigned sign = (unsigned)(h.x & 0x8000u) << 16;
    unsigned exponent = (h.x >> 10) & 0x1fu, mantissa = h.x & 0x3ffu;
    if (exponent == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
    if (exponent == 0) {
        if (mantissa == 0) return __uint_as_float(sign);  // +-0
        int shift = 0;  // a subnormal half is a normal float: normalise the mantissa
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            ++shift;
        }
        mantissa &= 0x3ffu;
        return __uint_as_float(sign | ((unsigned)(113 - shift) << 23) | (mantissa << 13));
    }
    return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline __half __float2half_rn(float f) {
    const unsigned bits = __float_as_uint(f);
    const unsigned short sign = (unsigned short)((bits >> 16) & 0x8000u);
    const unsigned magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return __half{(unsigned short)0x7fffu};  // NaN: as CUDA
    if (magnitude >= 0x477ff000u) return __half{(unsigned short)(sign | 0x7c00u)};  // >= 65520 rounds to inf
    if (magnitude >= 0x38800000u) {  // a normal half: drop 13 mantissa bits, to nearest even, rebias
        const unsigned rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
        return __half{(unsigned short)(sign | ((rounded - 0x38000000u) >> 13))};
    }
    if (magnitude <= 0x33000000u) return __half{sign};  // <= 2**-25: rounds to zero (2**-25 is a tie, to even)
    const unsigned exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const int shift = 126 - (int)exponent;  // units of 2**-24, the smallest subnormal half
    unsigned q = mantissa >> shift;
    const unsigned rest = mantissa & ((1u << shift) - 1u), half_unit = 1u << (shift - 1);
    if (rest > half_unit || (rest == half_unit && (q & 1u))) ++q;  // may carry into the smallest normal: right
    return __half{(unsigned short)(sign | q)};
}

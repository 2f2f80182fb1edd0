// cuda_bf16.h -- __nv_bfloat16 on the CPU: a 16-bit struct and bit-exact conversions (CUDA-on-CPU harness).
//
// bf16 is the top half of an fp32: widening is a 16-bit shift, narrowing rounds the
// dropped 16 bits to nearest even (integer arithmetic only, whatever the flush-to-zero mode).
#pragma once

#include "cuda_runtime.h"

struct __nv_bfloat16 {
    unsigned short x;
};

inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return __nv_bfloat16{bits}; }

inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.x << 16); }

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    const unsigned bits = __float_as_uint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{(unsigned short)0x7fffu};  // NaN: as CUDA
    return __nv_bfloat16{(unsigned short)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16)};
}

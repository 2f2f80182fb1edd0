// common.cuh -- helpers shared by every cupynet AMP kernel.
//
// The launcher (launch.py) prepends this file to each .cu file, after
// #define CUPYNET_CHUNK_SIZE / CUPYNET_BLOCK_THREADS taken from sources.py.
//
// NOTE: why the arithmetic below is written in inline PTX.
// CuPy compiles every RawModule with -ftz=true ("flush to zero"): fp32
// instructions then treat subnormal inputs and results as zero. The compiler
// also fuses a*b+c into one fma (one rounding instead of two). Both change the
// last bits of a result compared with the NumPy reference, which rounds every
// operation separately and keeps subnormals (IEEE 754). Inline PTX is opaque
// to the compiler: `mul.rn.f32` without `.ftz` is an IEEE, round-to-nearest-
// even multiply whatever -ftz says, and it is never fused. So every kernel here
// computes exactly what reference.py computes, bit for bit, on every GPU, and
// the compile test checks that the PTX contains no `.ftz` and no f32 `fma`.

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// ---- exact IEEE fp32 / fp64 arithmetic (no FTZ, no contraction) -------------

__device__ __forceinline__ float f32_add(float a, float b) {
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ float f32_sub(float a, float b) {
    float r;
    asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ float f32_mul(float a, float b) {
    float r;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ float f32_div(float a, float b) {
    float r;  // NOTE: div.rn is the correctly rounded IEEE division (not div.approx)
    asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

__device__ __forceinline__ float f32_sqrt(float a) {
    float r;  // NOTE: sqrt.rn is correctly rounded, like NumPy's float32 sqrt
    asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}

__device__ __forceinline__ float f32_neg(float a) {
    // NOTE: flip the sign bit; `neg.ftz.f32` would flush a subnormal to zero
    return __uint_as_float(__float_as_uint(a) ^ 0x80000000u);
}

__device__ __forceinline__ bool f32_ge(float a, float b) {
    unsigned r;  // IEEE a >= b, subnormals compared as themselves (setp without .ftz)
    asm("{ .reg .pred p; setp.ge.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b));
    return r != 0u;
}

__device__ __forceinline__ bool f32_lt(float a, float b) {
    unsigned r;
    asm("{ .reg .pred p; setp.lt.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b));
    return r != 0u;
}

__device__ __forceinline__ double f32_to_f64(float a) {
    double r;  // exact; `cvt.ftz.f64.f32` would flush a subnormal input
    asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(a));
    return r;
}

__device__ __forceinline__ float f64_to_f32(double a) {
    float r;  // round to nearest even, subnormal results kept
    asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(a));
    return r;
}

// ---- classification by bit pattern (immune to FTZ) ---------------------------

__device__ __forceinline__ bool is_nan_f32(float v) {
    return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u;
}

__device__ __forceinline__ bool is_inf_f32(float v) {
    return (__float_as_uint(v) & 0x7fffffffu) == 0x7f800000u;
}

__device__ __forceinline__ bool is_finite_f32(float v) {
    return (__float_as_uint(v) & 0x7f800000u) != 0x7f800000u;
}

__device__ __forceinline__ bool is_nonzero_f32(float v) {
    // NOTE: any bit other than the sign set: a subnormal or a NaN counts as "set"
    return (__float_as_uint(v) << 1) != 0u;
}

__device__ __forceinline__ bool is_one_f32(float v) {
    return __float_as_uint(v) == 0x3f800000u;
}

// NumPy's maximum: NaN propagates, ties return the first argument.
__device__ __forceinline__ float f32_max_np(float a, float b) {
    return (is_nan_f32(a) || f32_ge(a, b)) ? a : b;
}

// ---- element access: read as fp32, store rounded to nearest even -------------
// NOTE: every NaN is stored as one canonical quiet NaN (0x7fc00000 / 0x7e00 /
// 0x7fc0). GPUs and CPUs disagree on NaN payloads; canonical NaNs make the
// results comparable bit for bit. Values that are not NaN are stored as is.

template <typename T>
struct Element;

template <>
struct Element<float> {
    static __device__ __forceinline__ float load(const float* p) { return *p; }
    static __device__ __forceinline__ void store(float* p, float v) {
        *p = is_nan_f32(v) ? __uint_as_float(0x7fc00000u) : v;
    }
};

template <>
struct Element<__half> {
    // NOTE: fp16 -> fp32 is exact, subnormal halves included (they are normal fp32).
    static __device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
    static __device__ __forceinline__ void store(__half* p, float v) {
        *p = is_nan_f32(v) ? __ushort_as_half((unsigned short)0x7e00u) : __float2half_rn(v);
    }
};

template <>
struct Element<__nv_bfloat16> {
    // NOTE: bf16 is the top half of an fp32, so widening is a shift (exact, and a
    // bf16 subnormal becomes an fp32 subnormal that FTZ would flush: we never
    // let an .ftz instruction see it).
    static __device__ __forceinline__ float load(const __nv_bfloat16* p) {
        return __uint_as_float(((unsigned)__bfloat16_as_ushort(*p)) << 16);
    }
    static __device__ __forceinline__ void store(__nv_bfloat16* p, float v) {
        const unsigned bits = __float_as_uint(v);
        // NOTE: round to nearest even on the bit pattern: add 0x7fff plus the
        // lowest kept bit, then drop 16 bits (overflow lands on inf, as IEEE says).
        const unsigned rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
        *p = __ushort_as_bfloat16((unsigned short)(is_nan_f32(v) ? 0x7fc0u : rounded));
    }
};

// ---- the chunk table ----------------------------------------------------------
// One int64 buffer, uploaded once per distinct list of arrays (launch.py caches it):
//   [0, n_lists * n_tensors)            data pointers, list-major: list l, tensor t at l * n_tensors + t
//   [n_lists * n_tensors, + n_tensors)  element counts of the tensors
//   [.., + n_chunks)                    one descriptor per block: (tensor << 32) | chunk index in that tensor
// Block b handles descriptor b: at most CUPYNET_CHUNK_SIZE elements of one tensor.

struct Chunk {
    int tensor;         // which tensor of the lists
    long long start;    // first element of the chunk inside that tensor
    int length;         // elements in the chunk (the last chunk of a tensor may be short)
};

__device__ __forceinline__ Chunk locate_chunk(const long long* table, int n_tensors, int n_lists) {
    const long long* sizes = table + (long long)n_lists * n_tensors;
    const long long desc = sizes[n_tensors + blockIdx.x];
    Chunk c;
    c.tensor = (int)(desc >> 32);
    c.start = (desc & 0xffffffffLL) * (long long)CUPYNET_CHUNK_SIZE;
    const long long left = sizes[c.tensor] - c.start;
    c.length = (int)(left < CUPYNET_CHUNK_SIZE ? left : CUPYNET_CHUNK_SIZE);
    return c;
}

template <typename T>
__device__ __forceinline__ T* chunk_pointer(const long long* table, int n_tensors, int list, const Chunk& c) {
    return reinterpret_cast<T*>(table[(long long)list * n_tensors + c.tensor]) + c.start;
}

// ---- deterministic block reductions (result valid in thread 0) -----------------
// NOTE: the order of the additions is fixed (a shuffle tree inside each warp,
// then the same tree over the warp sums), so a sum is identical run after run;
// reference.py replays this exact order.

__device__ __forceinline__ float warp_sum_f32(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = f32_add(v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    return v;
}

__device__ __forceinline__ int warp_sum_int(int v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

__device__ __forceinline__ float block_sum_f32(float v, float* scratch /* __shared__ [32] */) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum_f32(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < n_warps) ? scratch[threadIdx.x] : 0.0f;
    if (warp == 0) v = warp_sum_f32(v);
    __syncthreads();  // scratch may be reused by the caller
    return v;
}

__device__ __forceinline__ int block_sum_int(int v, int* scratch /* __shared__ [32] */) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum_int(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int n_warps = (blockDim.x + 31) >> 5;
    v = (threadIdx.x < n_warps) ? scratch[threadIdx.x] : 0;
    if (warp == 0) v = warp_sum_int(v);
    __syncthreads();
    return v;
}

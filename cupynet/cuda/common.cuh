// common.cuh -- the helpers every CUDA kernel of cupynet shares.
//
// cupynet.cuda.compile prepends this file to every .cu file (amp/kernels,
// optim/kernels, ops/kernels), after the launch constants taken from Python
// (#define CUPYNET_CHUNK_SIZE / CUPYNET_BLOCK_THREADS). Sections:
//   1. exact IEEE fp32 / fp64 arithmetic (what the bit-exact kernels compute with)
//   2. classification by bit pattern
//   3. element access: read as fp32, store rounded to nearest even
//   4. the chunk table of the multi-tensor kernels
//   5. warp and block reductions in a fixed order
//
// NOTE: why the exact arithmetic is written in inline PTX.
// CuPy compiles every RawModule with -ftz=true ("flush to zero"): fp32
// instructions then treat subnormal inputs and results as zero. The compiler
// also fuses a*b+c into one fma (one rounding instead of two). Both change the
// last bits of a result compared with a NumPy reference, which rounds every
// operation separately and keeps subnormals (IEEE 754). Inline PTX is opaque
// to the compiler: `mul.rn.f32` without `.ftz` is an IEEE, round-to-nearest-
// even multiply whatever -ftz says, and it is never fused. So the AMP and
// optimizer kernels compute exactly what their references compute, bit for
// bit, on every GPU; the compile test checks that their PTX contains no `.ftz`
// and no f32 `fma`. (The fused-op kernels use plain C++ arithmetic and the CUDA
// math library, and are compared with a tolerance.)
//
// NOTE: the `#ifdef __CUDA_ARCH__` guard. NVRTC and nvcc compile device code
// with __CUDA_ARCH__ defined, so a GPU always runs the PTX. The other branch
// exists for the CUDA-on-CPU compiler (cupynet/emulated_cuda/kernels.py), which compiles
// this very text as C++ with g++: there each operation is the same IEEE
// operation on the host (cupynet_emu::ieee_*), run with the CPU's flush-to-zero
// mode off (the harness turns it on everywhere else, to mirror -ftz=true).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define CUPYNET_INF __int_as_float(0x7f800000)
#define CUPYNET_NAN __int_as_float(0x7fc00000)

// ---- 1. exact IEEE fp32 / fp64 arithmetic (no FTZ, no contraction) -------------------

#ifdef __CUDA_ARCH__

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

__device__ __forceinline__ unsigned long long f32_to_u64_rz(float a) {
    unsigned long long r;  // round toward zero (a is >= 0 where it is used)
    asm("cvt.rzi.u64.f32 %0, %1;" : "=l"(r) : "f"(a));
    return r;
}

#else  // the CUDA-on-CPU harness: the same IEEE operations on the host, flush-to-zero off

__device__ __forceinline__ float f32_add(float a, float b) { return cupynet_emu::ieee_add(a, b); }
__device__ __forceinline__ float f32_sub(float a, float b) { return cupynet_emu::ieee_sub(a, b); }
__device__ __forceinline__ float f32_mul(float a, float b) { return cupynet_emu::ieee_mul(a, b); }
__device__ __forceinline__ float f32_div(float a, float b) { return cupynet_emu::ieee_div(a, b); }
__device__ __forceinline__ float f32_sqrt(float a) { return cupynet_emu::ieee_sqrt(a); }
__device__ __forceinline__ bool f32_ge(float a, float b) { return cupynet_emu::ieee_ge(a, b); }
__device__ __forceinline__ bool f32_lt(float a, float b) { return cupynet_emu::ieee_lt(a, b); }
__device__ __forceinline__ double f32_to_f64(float a) { return cupynet_emu::ieee_widen(a); }
__device__ __forceinline__ float f64_to_f32(double a) { return cupynet_emu::ieee_narrow(a); }
__device__ __forceinline__ unsigned long long f32_to_u64_rz(float a) { return (unsigned long long)a; }

#endif

__device__ __forceinline__ float f32_neg(float a) {
    // NOTE: flip the sign bit; `neg.ftz.f32` would flush a subnormal to zero
    return __uint_as_float(__float_as_uint(a) ^ 0x80000000u);
}

// ---- 2. classification by bit pattern (immune to FTZ) ----------------------------------

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

// ---- 3. element access: read as fp32, store rounded to nearest even ---------------------
// NOTE: every NaN is stored as one canonical quiet NaN (0x7fc00000 / 0x7e00 /
// 0x7fc0). GPUs and CPUs disagree on NaN payloads; canonical NaNs make the
// results comparable bit for bit. Values that are not NaN are stored as is.
// cupynet/cuda/reference.py has the NumPy twins (load_f32, store_f32).

__device__ __forceinline__ float load_f32(const float* p) { return *p; }

// NOTE: fp16 -> fp32 is exact, subnormal halves included (they are normal fp32).
__device__ __forceinline__ float load_f32(const __half* p) { return __half2float(*p); }

// NOTE: bf16 is the top half of an fp32, so widening is a shift (exact, and a
// bf16 subnormal becomes an fp32 subnormal that FTZ would flush: the bit-exact
// kernels never let an .ftz instruction see it).
__device__ __forceinline__ float load_f32(const __nv_bfloat16* p) {
    return __uint_as_float(((unsigned)__bfloat16_as_ushort(*p)) << 16);
}

__device__ __forceinline__ void store_f32(float* p, float v) {
    *p = is_nan_f32(v) ? __uint_as_float(0x7fc00000u) : v;
}

__device__ __forceinline__ void store_f32(__half* p, float v) {
    *p = is_nan_f32(v) ? __ushort_as_half((unsigned short)0x7e00u) : __float2half_rn(v);
}

__device__ __forceinline__ void store_f32(__nv_bfloat16* p, float v) {
    const unsigned bits = __float_as_uint(v);
    // NOTE: round to nearest even on the bit pattern: add 0x7fff plus the
    // lowest kept bit, then drop 16 bits (overflow lands on inf, as IEEE says).
    const unsigned rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    *p = __ushort_as_bfloat16((unsigned short)(is_nan_f32(v) ? 0x7fc0u : rounded));
}

// ---- 4. the chunk table of the multi-tensor kernels ---------------------------------------
// One int64 buffer, uploaded once per distinct list of arrays (cupynet/cuda/multi_tensor.py):
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

// ---- 5. warp and block reductions in a fixed order -----------------------------------------
// NOTE: a butterfly (__shfl_xor_sync) inside each warp, then the same butterfly
// over the warp results: the order of the operations is fixed, so a sum is the
// same bits run after run. Partners combine symmetrically (a + b == b + a in
// IEEE arithmetic), so every lane ends with lane 0's value, which is the
// shuffle-down tree "lane i += lane i + 16, + 8, + 4, + 2, + 1" that
// cupynet/cuda/reference.py replays. blockDim.x must be a multiple of 32.
// The operation is a struct: ExactSum (IEEE fp32, for the bit-exact kernels),
// Sum and Max (plain fp32: -ftz applies), IntSum.

struct ExactSum {
    typedef float value;
    static __device__ __forceinline__ float identity() { return 0.0f; }
    static __device__ __forceinline__ float combine(float a, float b) { return f32_add(a, b); }
};

struct Sum {
    typedef float value;
    static __device__ __forceinline__ float identity() { return 0.0f; }
    static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};

struct Max {
    typedef float value;
    static __device__ __forceinline__ float identity() { return -CUPYNET_INF; }
    // NOTE: fmaxf drops a NaN operand; a NaN row still gives a NaN sum of exp later
    static __device__ __forceinline__ float combine(float a, float b) { return fmaxf(a, b); }
};

struct IntSum {
    typedef int value;
    static __device__ __forceinline__ int identity() { return 0; }
    static __device__ __forceinline__ int combine(int a, int b) { return a + b; }
};

template <typename Op>
__device__ __forceinline__ typename Op::value warp_reduce(typename Op::value v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// The reduction of v over the block, returned to every thread.
template <typename Op>
__device__ __forceinline__ typename Op::value block_reduce(typename Op::value v,
                                                           typename Op::value* scratch /* __shared__ [32] */) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_reduce<Op>(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = warp_reduce<Op>(lane < n_warps ? scratch[lane] : Op::identity());
    __syncthreads();  // NOTE: scratch may be reused by the next reduction
    return v;
}

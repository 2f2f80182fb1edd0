// fused_common.cuh -- helpers shared by cupynet's fused hot-op kernels (cupynet/ops/kernels/*.cu).
//
// sources.py prepends this file to every .cu file of this package. Unlike the AMP
// kernels (cupynet/amp/kernels), these kernels do not promise bit-for-bit equality
// with their NumPy references: they use the CUDA math library (expf, logf, erff,
// tanhf) and let the compiler fuse multiply-adds. The tests compare them with a
// tolerance. What they do promise: every value is read as fp32, every sum is
// accumulated in fp32, and every result is rounded once into its storage dtype.

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define CUPYNET_FUSED_INF __int_as_float(0x7f800000)
#define CUPYNET_FUSED_NAN __int_as_float(0x7fc00000)

// ---- element access: read as fp32, store rounded to nearest even -------------

__device__ __forceinline__ float load_f32(const float* p) { return *p; }
__device__ __forceinline__ float load_f32(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load_f32(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ void store_f32(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_f32(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_f32(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// ---- block reductions, result broadcast to every thread ------------------------
// NOTE: blockDim.x must be a multiple of 32 (the launchers use 32..1024). The
// order of the additions is fixed (shuffle tree in each warp, then over warps),
// so the result is the same run after run.

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    // NOTE: fmaxf drops a NaN operand; a NaN row then still gives a NaN sum of exp later
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* scratch /* __shared__ [32] */) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < n_warps) ? scratch[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();  // NOTE: scratch may be reused by the next reduction
    return v;
}

__device__ __forceinline__ float block_max(float v, float* scratch /* __shared__ [32] */) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < n_warps) ? scratch[lane] : -CUPYNET_FUSED_INF;
    v = warp_max(v);
    __syncthreads();
    return v;
}

// l2norm.cu -- the global L2 norm of many tensors: sqrt(sum of v*v), accumulated in fp32.
//
// Two kernels, no atomics, so the result is deterministic (the same bits on
// every run, whatever the scheduling of the blocks):
//   l2norm_partial_kernel<T>: block b writes the sum of squares of chunk b to
//       partials[b] (one launch per dtype group, each at its own offset);
//   l2norm_finalize_kernel: one block adds the partials and writes sqrt(sum).
// NOTE: inside a block, thread t adds elements t, t + blockDim, t + 2 blockDim, ...
// in order, then block_reduce<ExactSum> (cupynet/cuda/common.cuh) adds the threads in a
// fixed tree. reference.py replays exactly this order, so the NumPy result is the same fp32 bits.

template <typename T>
__global__ void l2norm_partial_kernel(const long long* table, int n_tensors, float* partials)
{
    __shared__ float scratch[32];
    const Chunk c = locate_chunk(table, n_tensors, 1);
    const T* data = chunk_pointer<const T>(table, n_tensors, 0, c);
    float acc = 0.0f;
    for (int i = threadIdx.x; i < c.length; i += blockDim.x) {
        const float v = load_f32(data + i);
        acc = f32_add(acc, f32_mul(v, v));
    }
    acc = block_reduce<ExactSum>(acc, scratch);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void l2norm_finalize_kernel(const float* partials, int n_partials, float* out)
{
    __shared__ float scratch[32];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_partials; i += blockDim.x) acc = f32_add(acc, partials[i]);
    acc = block_reduce<ExactSum>(acc, scratch);
    if (threadIdx.x == 0) store_f32(out, f32_sqrt(acc));
}

// unscale.cu -- the fused inf/NaN check and unscale of GradScaler.unscale_().
//
// One launch per dtype group of gradients: every block takes one chunk of one
// tensor from the chunk table (see cupynet/cuda/common.cuh), so one launch covers any
// number of tensors of any size. Lists in the table: 0 = the data, 1 = the
// address of the tensor's [inf_count, nan_count] row of tensor_stats (a tensor's
// row is its index in the caller's whole list, which its dtype group does not know).
//
// Per element v (read as fp32):
//   if v is not finite:  *found_inf = 1.0f          (only ever set, never cleared)
//   if inv_scale != 1:   v = v * inv_scale, stored back in T (round to nearest even)
// NOTE: found_inf is only ever set so that several launches (one per dtype,
// one per optimizer) can share it without any ordering between them, and the
// host never has to look at it: the optimizer step reads it on the device.
// NOTE: when inv_scale == 1 (decided on the device, no sync) nothing is
// written, so the gradient keeps its exact bits, NaN payloads included.

template <typename T>
__global__ void non_finite_check_and_unscale_kernel(
    const long long* table, int n_tensors,
    float* found_inf, const float* inv_scale, int with_stats)
{
    __shared__ int scratch[32];
    const Chunk c = locate_chunk(table, n_tensors, 2);
    T* data = chunk_pointer<T>(table, n_tensors, 0, c);
    const float inv = *inv_scale;
    const bool rescale = !is_one_f32(inv);

    int n_inf = 0, n_nan = 0;
    for (int i = threadIdx.x; i < c.length; i += blockDim.x) {
        const float v = load_f32(data + i);
        n_inf += is_inf_f32(v) ? 1 : 0;
        n_nan += is_nan_f32(v) ? 1 : 0;
        if (rescale) store_f32(data + i, f32_mul(v, inv));
    }

    // One write per block that saw a non-finite value; every writer writes 1.0f,
    // so the racing plain stores need no atomic.
    if (__syncthreads_or(n_inf + n_nan) && threadIdx.x == 0) *found_inf = 1.0f;

    if (with_stats) {
        // Per-tensor counts: a block-level sum, then one atomicAdd per block and counter.
        n_inf = block_reduce<IntSum>(n_inf, scratch);
        n_nan = block_reduce<IntSum>(n_nan, scratch);
        if (threadIdx.x == 0) {
            int* row = reinterpret_cast<int*>(table[n_tensors + c.tensor]);
            if (n_inf) atomicAdd(row, n_inf);
            if (n_nan) atomicAdd(row + 1, n_nan);
        }
    }
}

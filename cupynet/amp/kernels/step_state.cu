// step_state.cu -- the small jobs around an AMP step, one launch each instead of a handful of
// CuPy calls: clipping all gradients by their global norm, starting an unscale, keeping an
// overflow record (and counting the overflowing steps of each tensor), and counting a step.
//
// clip_by_total_norm_kernel<T> (one block per chunk of the chunk table, list 0 = the data):
//     coef = min(max_norm / (total_norm + 1e-6), 1)       fp32, NaN propagates (NumPy's minimum)
//     v = v * T(coef)                                      coef rounded to T first, as `g * coef.astype(T)`
// NOTE: the product of two T values read as fp32 is exact for fp16 / bf16 (11 + 11 or 8 + 8
// significant bits), so one rounding into T gives what NumPy's (and CuPy's) half multiply gives.
//
// begin_unscale_kernel (one block):   inv_scale = fp32(1 / double(scale)); found_inf = 0; stats = 0
// record_overflow_kernel (one block): if found_inf != 0: record = stats; record_step = step;
//                                     hits[i] += (stats row i != [0, 0]) for each row (when n_hits > 0)
// record_step_kernel (one thread):    hit = found_inf != 0; skipped += hit; ring[slot] = (scale, hit)
// NOTE: "!= 0" is is_nonzero_f32: a NaN flag counts as set, -0 does not (as NumPy's `!= 0`).

template <typename T>
__global__ void clip_by_total_norm_kernel(
    const long long* table, int n_tensors, const float* total_norm, const float* max_norm_on_device,
    float max_norm, int use_max_norm_on_device)
{
    const Chunk c = locate_chunk(table, n_tensors, 1);
    T* data = chunk_pointer<T>(table, n_tensors, 0, c);
    const float limit = use_max_norm_on_device ? *max_norm_on_device : max_norm;
    const float ratio = f32_div(limit, f32_add(*total_norm, 1e-6f));
    const float coef = (is_nan_f32(ratio) || f32_lt(ratio, 1.0f)) ? ratio : 1.0f;
    T coef_t;
    store_f32(&coef_t, coef);
    const float factor = load_f32(&coef_t);
    for (int i = threadIdx.x; i < c.length; i += blockDim.x) {
        store_f32(data + i, f32_mul(load_f32(data + i), factor));
    }
}

__global__ void begin_unscale_kernel(const float* scale, float* inv_scale, float* found_inf, int* stats, int n_stats)
{
    for (int i = threadIdx.x; i < n_stats; i += blockDim.x) stats[i] = 0;
    if (threadIdx.x == 0) {
        // NOTE: the reciprocal in double, rounded once (PyTorch's rule; exact for a power of two)
        store_f32(inv_scale, f64_to_f32(__ddiv_rn(1.0, f32_to_f64(*scale))));
        *found_inf = 0.0f;
    }
}

__global__ void record_overflow_kernel(
    const float* found_inf, const int* stats, int* record_stats, int* record_step, int* record_hits, int n_stats,
    int n_hits, int step)
{
    if (!is_nonzero_f32(*found_inf)) return;
    for (int i = threadIdx.x; i < n_stats; i += blockDim.x) record_stats[i] = stats[i];
    // NOTE: row i of stats is [inf_count, nan_count] at 2i and 2i + 1; each row has one thread, so no atomics.
    // The count is added as unsigned (wraps modulo 2^32, as NumPy's int32 add) so that it is defined at 2^31 - 1.
    for (int i = threadIdx.x; i < n_hits; i += blockDim.x) {
        if (stats[2 * i] != 0 || stats[2 * i + 1] != 0) {
            record_hits[i] = (int)((unsigned int)record_hits[i] + 1u);
        }
    }
    if (threadIdx.x == 0) *record_step = step;
}

__global__ void record_step_kernel(
    const float* found_inf, int has_found, int* skipped, const float* scale, float* ring_scales,
    int* ring_skipped, int slot)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const int hit = (has_found && is_nonzero_f32(*found_inf)) ? 1 : 0;
    *skipped += hit;
    if (slot >= 0) {
        ring_scales[slot] = *scale;
        ring_skipped[slot] = hit;
    }
}

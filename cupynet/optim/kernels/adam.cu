// adam.cu -- multi-tensor Adam / AdamW (torch.optim.Adam's single-tensor math).
//
// Lists in the chunk table: 0 = params, 1 = grads (G), 2 = exp_avg, 3 = exp_avg_sq,
// 4 = max_exp_avg_sq (null pointers unless amsgrad). Everything but the grads is fp32.
//
// The step counter is an fp32 array on the device holding the number of steps
// already taken; this kernel uses step + 1 (as PyTorch increments before using
// it) and the launcher then runs increment_step_kernel (below), so the bias
// correction needs no host sync.
//
// Per block, thread 0 computes the two step coefficients in double:
//   n = step + 1;  bc1 = 1 - beta1**n;  bc2 = 1 - beta2**n
//   neg_step_size = fp32(-(lr / bc1));  bc2_sqrt = fp32(sqrt(bc2))
// NOTE: beta**n is exponentiation by squaring with correctly rounded double
// multiplies (not pow(), whose last bit differs between libraries), so the
// NumPy reference replays it exactly.
//
// Per element, in fp32, each operation rounded on its own:
//   g = grad * inv_scale (if given); g = -g if maximize
//   weight_decay != 0:  AdamW: p = p * (1 - lr * wd)      Adam: g = g + wd * p
//   m = lerp(m, g, 1 - beta1)                             (torch.lerp's two-branch formula)
//   v = v * beta2 + ((1 - beta2) * g) * g
//   amsgrad: vmax = maximum(vmax, v), and vmax replaces v below
//   denom = sqrt(v) / bc2_sqrt + eps
//   p = p + (neg_step_size * m) / denom              (torch.addcdiv's order)

__device__ __forceinline__ double pow_by_squaring(double base, unsigned long long n) {
    double result = 1.0;
    while (n != 0ull) {
        if (n & 1ull) result = __dmul_rn(result, base);
        base = __dmul_rn(base, base);
        n >>= 1;
    }
    return result;
}

__device__ __forceinline__ unsigned long long next_step_count(float step) {
    // NOTE: step holds an integer; values below 1 (or NaN) count as 0 and values
    // at or above 2**24 (where fp32 stops counting) are clamped there.
    unsigned long long n = 0ull;
    if (f32_ge(step, 16777216.0f)) n = 16777216ull;
    else if (f32_ge(step, 1.0f)) n = f32_to_u64_rz(step);
    return n + 1ull;
}

__device__ __forceinline__ void adam_step_coefficients(
    float step, double lr, double beta1, double beta2, float* coefficients)
{
    const unsigned long long n = next_step_count(step);
    const double bc1 = __dadd_rn(1.0, -pow_by_squaring(beta1, n));
    const double bc2 = __dadd_rn(1.0, -pow_by_squaring(beta2, n));
    coefficients[0] = f64_to_f32(-__ddiv_rn(lr, bc1));
    coefficients[1] = f64_to_f32(__dsqrt_rn(bc2));
}

__device__ __forceinline__ float lerp_like_torch(float start, float end, float weight,
                                                 float one_minus_weight, int weight_is_small) {
    return weight_is_small ? f32_add(start, f32_mul(weight, f32_sub(end, start)))
                           : f32_sub(end, f32_mul(f32_sub(end, start), one_minus_weight));
}

template <typename G>
__global__ void fused_adam_kernel(
    const long long* table, int n_tensors, const float* step,
    const float* found_inf, const float* inv_scale, int use_inv_scale,
    double lr, double beta1, double beta2,
    float lerp_weight, float one_minus_lerp_weight, int lerp_weight_is_small,
    float beta2_f32, float one_minus_beta2, float eps,
    float weight_decay, float decay_factor, int use_weight_decay, int decoupled,
    int amsgrad, int maximize)
{
    __shared__ float coefficients[2];
    if (is_nonzero_f32(*found_inf)) return;  // uniform across the block: all threads return
    if (threadIdx.x == 0) adam_step_coefficients(*step, lr, beta1, beta2, coefficients);
    __syncthreads();
    const float neg_step_size = coefficients[0], bc2_sqrt = coefficients[1];

    const Chunk c = locate_chunk(table, n_tensors, 5);
    float* param = chunk_pointer<float>(table, n_tensors, 0, c);
    const G* grad = chunk_pointer<const G>(table, n_tensors, 1, c);
    float* exp_avg = chunk_pointer<float>(table, n_tensors, 2, c);
    float* exp_avg_sq = chunk_pointer<float>(table, n_tensors, 3, c);
    float* max_exp_avg_sq = amsgrad ? chunk_pointer<float>(table, n_tensors, 4, c) : nullptr;
    const float inv = use_inv_scale ? *inv_scale : 1.0f;

    for (int i = threadIdx.x; i < c.length; i += blockDim.x) {
        float g = load_f32(grad + i);
        if (use_inv_scale) g = f32_mul(g, inv);
        if (maximize) g = f32_neg(g);
        float p = param[i];
        if (use_weight_decay) {
            if (decoupled) p = f32_mul(p, decay_factor);
            else g = f32_add(g, f32_mul(weight_decay, p));
        }
        const float m = lerp_like_torch(exp_avg[i], g, lerp_weight, one_minus_lerp_weight, lerp_weight_is_small);
        const float v = f32_add(f32_mul(exp_avg_sq[i], beta2_f32), f32_mul(f32_mul(one_minus_beta2, g), g));
        float v_used = v;
        if (amsgrad) {
            v_used = f32_max_np(max_exp_avg_sq[i], v);
            store_f32(max_exp_avg_sq + i, v_used);
        }
        const float denom = f32_add(f32_div(f32_sqrt(v_used), bc2_sqrt), eps);
        store_f32(exp_avg + i, m);
        store_f32(exp_avg_sq + i, v);
        store_f32(param + i, f32_add(p, f32_div(f32_mul(neg_step_size, m), denom)));
    }
}

// increment_step_kernel: step += 1 unless found_inf (one thread; the launcher runs it
// after every fused_adam_kernel launch of a step has read the old count). Adam's step
// counter is kept in fp32 on the device so bias correction needs no sync; exact below 2**24.
__global__ void increment_step_kernel(float* step, const float* found_inf)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    if (!is_nonzero_f32(*found_inf)) *step = f32_add(*step, 1.0f);
}

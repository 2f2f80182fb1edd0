// softmax_xent.cu -- fused log-softmax + cross-entropy over rows of (N, C) logits.
//
// One block per row. Forward reads the row twice (max, then sum of exp and the
// smoothing sum; the row is in L1/L2 the second time) and writes one fp32 loss and
// one fp32 log-sum-exp per row: no (N, C) log-probability or softmax array is
// ever stored. Backward recomputes softmax = exp(x - lse) from the logits and the
// saved lse and writes the (N, C) gradient in one pass.
//
//   loss[r] = -(1 - s) * w[t] * (x[t] - lse) - (s / C) * sum_c w[c] * (x[c] - lse)
//   dx[r, c] = g[r] * (p[c] * sum_q - q[c]),  q[c] = (1 - s) * w[t] * [c == t] + (s / C) * w[c]
//
// with t = target[r], s = label smoothing, w = class weights (1 when weight is
// null), sum_q = (1 - s) * w[t] + (s / C) * sum_c w[c]. A row whose target equals
// ignore_index gets loss 0 and gradient 0. A target outside [0, C) gets a NaN
// loss and a NaN gradient row (no host check: it would need a sync).

template <typename T>
__global__ void softmax_xent_forward_kernel(const T* logits, const long long* target, const float* weight,
                                            int n_classes, long long ignore_index, float smoothing,
                                            float* loss, float* lse_out)
{
    __shared__ float scratch[32];
    const T* x = logits + (long long)blockIdx.x * n_classes;
    float m = -CUPYNET_INF;
    for (int c = threadIdx.x; c < n_classes; c += blockDim.x) m = fmaxf(m, load_f32(x + c));
    m = block_reduce<Max>(m, scratch);
    // NOTE: sums are taken relative to the row max m: exp never overflows, and the
    // smoothing sum sum_c w[c] * (x[c] - m) has no large cancelling terms.
    float sum_exp = 0.0f, lin = 0.0f, sum_w = 0.0f;
    for (int c = threadIdx.x; c < n_classes; c += blockDim.x) {
        const float shifted = load_f32(x + c) - m;
        sum_exp += expf(shifted);
        if (smoothing != 0.0f) {
            const float wc = weight ? weight[c] : 1.0f;
            lin += wc * shifted;
            sum_w += wc;
        }
    }
    sum_exp = block_reduce<Sum>(sum_exp, scratch);
    if (smoothing != 0.0f) {
        lin = block_reduce<Sum>(lin, scratch);
        sum_w = block_reduce<Sum>(sum_w, scratch);
    }
    if (threadIdx.x != 0) return;
    const float lse = m + logf(sum_exp);
    lse_out[blockIdx.x] = lse;
    const long long t = target[blockIdx.x];
    if (t == ignore_index) {
        loss[blockIdx.x] = 0.0f;
        return;
    }
    if (t < 0 || t >= n_classes) {
        loss[blockIdx.x] = CUPYNET_NAN;
        return;
    }
    const float wt = weight ? weight[t] : 1.0f;
    float value = -(1.0f - smoothing) * wt * (load_f32(x + t) - lse);
    if (smoothing != 0.0f) {
        // NOTE: sum_c w[c] * (x[c] - lse) = lin - (lse - m) * sum_w
        value -= (smoothing / (float)n_classes) * (lin - (lse - m) * sum_w);
    }
    loss[blockIdx.x] = value;
}

template <typename T>
__global__ void softmax_xent_backward_kernel(const T* logits, const long long* target, const float* weight,
                                             const float* lse, const float* grad_rows, int grad_stride,
                                             const float* divisor, int has_divisor,
                                             int n_classes, long long ignore_index, float smoothing, T* grad)
{
    __shared__ float scratch[32];
    const long long row = blockIdx.x;
    const T* x = logits + row * n_classes;
    T* dx = grad + row * n_classes;
    const long long t = target[row];
    const bool ignored = t == ignore_index;
    const bool bad = !ignored && (t < 0 || t >= n_classes);
    float sum_w = (float)n_classes;
    if (weight && smoothing != 0.0f) {
        float acc = 0.0f;
        for (int c = threadIdx.x; c < n_classes; c += blockDim.x) acc += weight[c];
        sum_w = block_reduce<Sum>(acc, scratch);
    }
    if (ignored || bad) {
        const float fill = bad ? CUPYNET_NAN : 0.0f;
        for (int c = threadIdx.x; c < n_classes; c += blockDim.x) store_f32(dx + c, fill);
        return;
    }
    float g = grad_rows[row * grad_stride];
    if (has_divisor) {
        // NOTE: 'mean': the upstream gradient over the total weight, a zero total taken as 1 (every row's
        // weight is 0 then, so the gradient is 0, not 0 * inf); the correctly rounded division, as xp's
        const float d = *divisor;
        g = f32_div(g, is_nonzero_f32(d) ? d : 1.0f);
    }
    const float l = lse[row];
    const float wt = weight ? weight[t] : 1.0f;
    const float smooth = smoothing / (float)n_classes;
    const float sum_q = (1.0f - smoothing) * wt + smooth * sum_w;
    for (int c = threadIdx.x; c < n_classes; c += blockDim.x) {
        const float p = expf(load_f32(x + c) - l);
        float q = smooth * (weight ? weight[c] : 1.0f);
        if (c == t) q += (1.0f - smoothing) * wt;
        store_f32(dx + c, g * (p * sum_q - q));
    }
}

// softmax_xent_mean_kernel: the 'mean' reduction of the per-row losses in one launch (one block):
//   divisor = sum of w[t] over rows whose target is not ignore_index (1 per row without weights)
//   out     = T(sum_r loss[r] / divisor)        (0 / 0 = NaN, as PyTorch's mean over no rows)
// NOTE: both sums are fixed-order and exact-operation (thread t adds rows t, t + 256, ... in order,
// then block_reduce<ExactSum>), so the result is the same bits run after run and reference.py's
// softmax_xent_mean replays it; it differs from an xp `sum()` (another order) by rounding only.
template <typename T>
__global__ void softmax_xent_mean_kernel(const float* loss, const long long* target, const float* weight,
                                         long long n_rows, int n_classes, long long ignore_index,
                                         float* divisor, T* out)
{
    __shared__ float scratch[32];
    float total = 0.0f, count = 0.0f;
    for (long long r = threadIdx.x; r < n_rows; r += blockDim.x) {
        total = f32_add(total, loss[r]);
        const long long t = target[r];
        if (t != ignore_index) {
            const bool in_range = t >= 0 && t < n_classes;
            count = f32_add(count, weight ? (in_range ? weight[t] : CUPYNET_NAN) : 1.0f);
        }
    }
    total = block_reduce<ExactSum>(total, scratch);
    count = block_reduce<ExactSum>(count, scratch);
    if (threadIdx.x == 0) {
        store_f32(divisor, count);
        store_f32(out, f32_div(total, count));
    }
}

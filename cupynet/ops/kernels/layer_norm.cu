// layer_norm.cu -- layer norm over the last dimension of (rows, D), fp32 statistics.
//
// layer_norm_forward_kernel: one block per row; mean, then the centred (two-pass)
//   variance, rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * w + b, rounded
//   once. mean and rstd (fp32, one per row) are saved for backward.
// layer_norm_backward_kernel: one block per row;
//   dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w, xhat = (x - mean) * rstd.
// layer_norm_param_grad_kernel: blocks of 32 columns x 8 row lanes; block (bx, by)
//   sums g * xhat and g over its chunk of rows_per_chunk rows for 32 columns and
//   writes one partial per column (no atomics: deterministic). The launcher adds
//   the partials of the chunks (a small fp32 column sum).
// weight / bias are fp32 (the launcher casts them) and may be null.

template <typename T>
__global__ void layer_norm_forward_kernel(const T* x, const float* weight, const float* bias, int d, float eps,
                                          T* y, float* mean_out, float* rstd_out)
{
    __shared__ float scratch[32];
    const long long row = blockIdx.x;
    const T* xr = x + row * d;
    T* yr = y + row * d;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < d; c += blockDim.x) acc += load_f32(xr + c);
    const float mean = block_reduce<Sum>(acc, scratch) / (float)d;
    acc = 0.0f;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        const float centred = load_f32(xr + c) - mean;
        acc += centred * centred;
    }
    const float var = block_reduce<Sum>(acc, scratch) / (float)d;
    const float rstd = 1.0f / sqrtf(var + eps);
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        float v = (load_f32(xr + c) - mean) * rstd;
        if (weight) v *= weight[c];
        if (bias) v += bias[c];
        store_f32(yr + c, v);
    }
    if (threadIdx.x == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}

template <typename T>
__global__ void layer_norm_backward_kernel(const T* grad, const T* x, const float* mean, const float* rstd,
                                           const float* weight, int d, T* dx)
{
    __shared__ float scratch[32];
    const long long row = blockIdx.x;
    const T* gr = grad + row * d;
    const T* xr = x + row * d;
    const float mu = mean[row], rs = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        const float gw = load_f32(gr + c) * (weight ? weight[c] : 1.0f);
        sum_g += gw;
        sum_gx += gw * (load_f32(xr + c) - mu) * rs;
    }
    const float mean_g = block_reduce<Sum>(sum_g, scratch) / (float)d;
    const float mean_gx = block_reduce<Sum>(sum_gx, scratch) / (float)d;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        const float gw = load_f32(gr + c) * (weight ? weight[c] : 1.0f);
        const float xhat = (load_f32(xr + c) - mu) * rs;
        store_f32(dx + row * d + c, rs * (gw - mean_g - xhat * mean_gx));
    }
}

template <typename T>
__global__ void layer_norm_param_grad_kernel(const T* grad, const T* x, const float* mean, const float* rstd,
                                             long long n_rows, int d, int rows_per_chunk,
                                             float* partial_weight, float* partial_bias)
{
    __shared__ float sw[8][33];
    __shared__ float sb[8][33];
    const int col = blockIdx.x * 32 + threadIdx.x;
    const long long first = (long long)blockIdx.y * rows_per_chunk;
    long long last = first + rows_per_chunk;
    if (last > n_rows) last = n_rows;
    float acc_w = 0.0f, acc_b = 0.0f;
    if (col < d) {
        for (long long r = first + threadIdx.y; r < last; r += 8) {
            const float g = load_f32(grad + r * d + col);
            acc_w += g * (load_f32(x + r * d + col) - mean[r]) * rstd[r];
            acc_b += g;
        }
    }
    sw[threadIdx.y][threadIdx.x] = acc_w;
    sb[threadIdx.y][threadIdx.x] = acc_b;
    __syncthreads();
    if (threadIdx.y == 0 && col < d) {
        float tw = 0.0f, tb = 0.0f;
        for (int k = 0; k < 8; ++k) {
            tw += sw[k][threadIdx.x];
            tb += sb[k][threadIdx.x];
        }
        partial_weight[(long long)blockIdx.y * d + col] = tw;
        partial_bias[(long long)blockIdx.y * d + col] = tb;
    }
}

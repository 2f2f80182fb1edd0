// im2col.cu -- the 2-D window maps of convolution (cupynet/ops/_im2col.py), as gathers.
//
// im2col_2d_kernel: x (N, C, H, W) -> cols (G, N, OH, OW, C/G, KH, KW), one thread per
//   element of cols (consecutive threads write consecutive elements). Window (oh, ow)
//   tap (kh, kw) reads x at (oh * sh + kh * dh - ph, ow * sw + kw * dw - pw); outside the
//   input it is 0 (zero padding). This is exactly conv.py's _cols(x, geoms, groups).
// col2im_2d_kernel: the adjoint. cols (N, C, OH, OW, KH, KW) -> out (N, C, H, W), one
//   thread per output element, which GATHERS the taps that read it (no atomics, a
//   fixed order: deterministic), summed in fp32 and rounded once.

template <typename T>
__global__ void im2col_2d_kernel(const T* x, long long total, int n, int c, int h, int w, int groups,
                                 int kh, int kw, int sh, int sw, int dh, int dw, int ph, int pw,
                                 int oh, int ow, T* cols)
{
    const int cg = c / groups;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long rest = i;
        const int kx = (int)(rest % kw); rest /= kw;
        const int ky = (int)(rest % kh); rest /= kh;
        const int ci = (int)(rest % cg); rest /= cg;
        const int ox = (int)(rest % ow); rest /= ow;
        const int oy = (int)(rest % oh); rest /= oh;
        const int ni = (int)(rest % n); rest /= n;
        const int channel = (int)rest * cg + ci;
        const int iy = oy * sh + ky * dh - ph;
        const int ix = ox * sw + kx * dw - pw;
        float v = 0.0f;
        if (iy >= 0 && iy < h && ix >= 0 && ix < w) v = load_f32(x + (((long long)ni * c + channel) * h + iy) * w + ix);
        store_f32(cols + i, v);
    }
}

template <typename T>
__global__ void col2im_2d_kernel(const T* cols, long long total, int c, int h, int w,
                                 int kh, int kw, int sh, int sw, int dh, int dw, int ph, int pw,
                                 int oh, int ow, T* out)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const int ix = (int)(i % w);
        const int iy = (int)((i / w) % h);
        const long long plane = i / ((long long)w * h);  // n * C + c
        const T* base = cols + plane * oh * ow * kh * kw;
        float acc = 0.0f;
        for (int ky = 0; ky < kh; ++ky) {
            const int ty = iy + ph - ky * dh;
            if (ty < 0 || ty % sh != 0 || ty / sh >= oh) continue;
            const int oy = ty / sh;
            for (int kx = 0; kx < kw; ++kx) {
                const int tx = ix + pw - kx * dw;
                if (tx < 0 || tx % sw != 0 || tx / sw >= ow) continue;
                acc += load_f32(base + (((long long)oy * ow + tx / sw) * kh + ky) * kw + kx);
            }
        }
        store_f32(out + i, acc);
    }
}

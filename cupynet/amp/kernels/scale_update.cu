// scale_update.cu -- the loss-scale update rule, as a single-thread kernel.
//
// It runs as one thread on purpose: it touches a handful of scalars that live
// on the device, and keeping them there means the host never waits for the GPU
// (no .item(), no sync) to decide how the scale moves.

// update_scale_kernel: PyTorch's _amp_update_scale_, extended with hysteresis
// and bounds (reference.py: update_scale_ has the same rule in Python).
//
//   if found_inf:
//       hyst += 1
//       if hyst >= hysteresis: scale = max(fp32(scale * backoff), min_scale); hyst = 0
//                              (min_hit = 1 when the bound clamped)
//       tracker = 0
//   else:
//       hyst = 0; successful = tracker + 1
//       if successful == growth_interval:
//           new = fp32(scale * growth); if isfinite(new): scale = min(new, max_scale)
//           tracker = 0
//       else: tracker = successful
//
// NOTE: growth and backoff are doubles and the products are formed in double,
// then rounded once to fp32 -- exactly what PyTorch's CUDA and CPU kernels do,
// so with hysteresis == 1 and no bounds the scale sequence is PyTorch's, bit
// for bit. A growth that would overflow to inf is refused (the scale stays).
__global__ void update_scale_kernel(
    float* scale, int* growth_tracker, const float* found_inf,
    double growth_factor, double backoff_factor, int growth_interval,
    int hysteresis, int* hysteresis_tracker,
    float min_scale, float max_scale, int* min_hit)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const float current = *scale;
    if (is_nonzero_f32(*found_inf)) {
        const int hyst = *hysteresis_tracker + 1;
        if (hyst >= hysteresis) {
            float backed_off = f64_to_f32(__dmul_rn(f32_to_f64(current), backoff_factor));
            if (f32_lt(backed_off, min_scale)) {
                backed_off = min_scale;
                *min_hit = 1;
            }
            store_f32(scale, backed_off);
            *hysteresis_tracker = 0;
        } else {
            *hysteresis_tracker = hyst;
        }
        *growth_tracker = 0;
    } else {
        *hysteresis_tracker = 0;
        const int successful = *growth_tracker + 1;
        if (successful == growth_interval) {
            const float grown = f64_to_f32(__dmul_rn(f32_to_f64(current), growth_factor));
            if (is_finite_f32(grown)) store_f32(scale, f32_ge(grown, max_scale) ? max_scale : grown);
            *growth_tracker = 0;
        } else {
            *growth_tracker = successful;
        }
    }
}

// sgd.cu -- multi-tensor SGD (torch.optim.SGD's math) over fp32 parameters.
//
// Lists in the chunk table: 0 = params (float), 1 = grads (G: float, __half or
// __nv_bfloat16), 2 = momentum buffers (float; null pointers when momentum == 0).
//
// Per element, in fp32, each operation rounded on its own (see cupynet/cuda/common.cuh):
//   g = grad * inv_scale (when an inv_scale is given); g = -g if maximize
//   g = g + weight_decay * p                              (weight_decay != 0)
//   momentum != 0:  buf = g on the first step, else buf = buf * momentum + (1 - dampening) * g
//                   g = g + momentum * buf if nesterov, else g = buf
//   p = p + (-lr) * g
// NOTE: when *found_inf != 0 every block returns before touching memory: the
// step is skipped on the device and the host never needs to know.

template <typename G>
__global__ void fused_sgd_kernel(
    const long long* table, int n_tensors,
    const float* found_inf, const float* inv_scale, int use_inv_scale,
    float neg_lr, float momentum, float one_minus_dampening, float weight_decay,
    int use_weight_decay, int use_momentum, int nesterov, int maximize,
    const int* first_step)
{
    if (is_nonzero_f32(*found_inf)) return;
    const Chunk c = locate_chunk(table, n_tensors, 3);
    float* param = chunk_pointer<float>(table, n_tensors, 0, c);
    const G* grad = chunk_pointer<const G>(table, n_tensors, 1, c);
    float* buf = use_momentum ? chunk_pointer<float>(table, n_tensors, 2, c) : nullptr;
    const float inv = use_inv_scale ? *inv_scale : 1.0f;
    const bool first = *first_step != 0;

    for (int i = threadIdx.x; i < c.length; i += blockDim.x) {
        float g = load_f32(grad + i);
        if (use_inv_scale) g = f32_mul(g, inv);
        if (maximize) g = f32_neg(g);
        const float p = param[i];
        if (use_weight_decay) g = f32_add(g, f32_mul(weight_decay, p));
        if (use_momentum) {
            const float b = first ? g : f32_add(f32_mul(buf[i], momentum), f32_mul(one_minus_dampening, g));
            store_f32(buf + i, b);
            g = nesterov ? f32_add(g, f32_mul(momentum, b)) : b;
        }
        store_f32(param + i, f32_add(p, f32_mul(neg_lr, g)));
    }
}

// clear_flag_kernel: flag = 0 unless found_inf (one thread). The "first step" flag
// of SGD momentum on the device: the momentum buffers count as initialised only
// once a step really happened (the launcher runs it after fused_sgd_kernel).
__global__ void clear_flag_kernel(int* flag, const float* found_inf)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    if (!is_nonzero_f32(*found_inf)) *flag = 0;
}

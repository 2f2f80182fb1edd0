"""The CUDA-on-CPU harness itself (tests/cuda_emulation): what it mirrors of CUDA, and what it refuses.

Small kernels written here exercise each piece: fp16 / bf16 conversions (bit-exact against
NumPy and ml_dtypes), flush-to-zero (plain fp32 arithmetic flushes subnormals as under CuPy's
-ftz=true; common.cuh's exact operations do not), barriers from which returned threads drop
out, warp shuffles, atomics, and the argument checks. The negative controls are kernels and
launches that are wrong on a GPU: the harness must report each one.
"""

import cuda_emulation as emulation
import ml_dtypes
import numpy as np
import pytest

from cupynet.cuda.compile import COMMON_HEADER

pytestmark = pytest.mark.skipif(emulation.GXX is None, reason="the CUDA-on-CPU harness needs g++ (on Linux, "
                                                                 "x86-64 or AArch64)")

BF16 = np.dtype(ml_dtypes.bfloat16)
HEADERS = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"


@pytest.fixture
def gpu(monkeypatch):
    return emulation.install(monkeypatch)


def kernel(gpu, source, name, filename="test.cu"):
    """Compile ``source`` (one kernel, not a template) and return it, as a RawModule would."""
    module = gpu.RawModule(code=f"{HEADERS}// ---- {filename} ----\n{source}", options=("-std=c++17",),
                           name_expressions=[name])
    return module.get_function(name)


GRID_STRIDE = "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)"


def convert(gpu, source_type, target_type, expression, values, out_dtype):
    f = kernel(gpu, f"__global__ void convert_kernel(const {source_type}* in, {target_type}* out, long long n) {{\n"
                    f"    {GRID_STRIDE} out[i] = {expression};\n}}\n", "convert_kernel")
    src, out = gpu.asarray(values), gpu.empty(values.shape, out_dtype)
    f((4,), (256,), (src, out, np.int64(values.size)))
    return np.asarray(out)


def float_patterns():
    rng = np.random.default_rng(0)
    special = np.array([0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x33000000, 0x33000001, 0x337FFFFF, 0x38800000,
                        0x387FFFFF, 0x477FEFFF, 0x477FF000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x3F808000,
                        0x3F818000], np.uint32)
    exponents_near_half = rng.integers(0x30000000, 0x48000000, 100_000, dtype=np.uint32)  # the interesting range
    return np.concatenate([rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32), exponents_near_half,
                           special, special | 0x80000000]).view(np.float32)


# ----------------------------------------------------------------------------- what it mirrors


def test_half_conversions_are_bit_exact(gpu):
    every_half = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    widened = convert(gpu, "__half", "float", "__half2float(in[i])", every_half, np.float32)
    assert np.array_equal(widened.view(np.uint32), every_half.astype(np.float32).view(np.uint32))
    values = float_patterns()
    finite = values[~np.isnan(values)]
    with np.errstate(over="ignore"):
        expected = finite.astype(np.float16)
    narrowed = convert(gpu, "float", "__half", "__float2half_rn(in[i])", finite, np.float16)
    assert np.array_equal(narrowed.view(np.uint16), expected.view(np.uint16))
    nan = convert(gpu, "float", "__half", "__float2half_rn(in[i])", np.array([np.nan, -np.nan], np.float32),
                  np.float16)
    assert nan.view(np.uint16).tolist() == [0x7FFF, 0x7FFF]  # CUDA's NaN


def test_bfloat16_conversions_are_bit_exact(gpu):
    every_bf16 = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(BF16)
    widened = convert(gpu, "__nv_bfloat16", "float", "__bfloat162float(in[i])", every_bf16, np.float32)
    assert np.array_equal(widened.view(np.uint32), every_bf16.view(np.uint16).astype(np.uint32) << 16)
    finite = float_patterns()[~np.isnan(float_patterns())]
    narrowed = convert(gpu, "float", "__nv_bfloat16", "__float2bfloat16_rn(in[i])", finite, BF16)
    assert np.array_equal(narrowed.view(np.uint16), finite.astype(BF16).view(np.uint16))


def test_plain_fp32_flushes_subnormals_as_under_ftz_but_the_exact_operations_do_not(gpu):
    source = "#define CUPYNET_CHUNK_SIZE 65536\n" + COMMON_HEADER.read_text() + (
        "__global__ void ftz_kernel(const float* x, float* out) {\n"
        "    out[0] = x[0] * x[1];          // plain: a subnormal product is flushed to 0\n"
        "    out[1] = x[2] + 0.0f;          // plain: a subnormal input is read as 0\n"
        "    out[2] = f32_mul(x[0], x[1]);  // common.cuh: IEEE, subnormals kept\n"
        "    out[3] = f32_add(x[2], 0.0f);\n"
        "    out[4] = f32_sqrt(x[2]);\n"
        "}\n")
    x = gpu.asarray(np.array([1e-20, 1e-20, 3e-40], np.float32))
    out = gpu.zeros((5,), np.float32)
    kernel(gpu, source, "ftz_kernel")((1,), (1,), (x, out))
    exact = np.float32(1e-20) * np.float32(1e-20)
    assert exact != 0 and np.asarray(out).tolist() == [0.0, 0.0, exact, np.float32(3e-40), np.sqrt(np.float32(3e-40))]


def test_returned_threads_drop_out_of_barriers_and_votes_count(gpu):
    f = kernel(gpu, """
__global__ void vote_kernel(int* out) {
    __shared__ int seen[256];
    if (threadIdx.x >= 200) return;                    // these threads never reach a barrier
    seen[threadIdx.x] = threadIdx.x;
    __syncthreads();
    const int any = __syncthreads_or(threadIdx.x == 150);
    const int count = __syncthreads_count(threadIdx.x % 3 == 0);
    out[threadIdx.x] = seen[199 - threadIdx.x] * 100 + any * 10 + (count == 67);
}
""", "vote_kernel")
    out = gpu.zeros((256,), np.int32)
    f((2,), (256,), (out,))
    expected = np.concatenate([(199 - np.arange(200)) * 100 + 11, np.zeros(56, np.int32)])
    assert np.array_equal(np.asarray(out), expected)


def test_warp_shuffles_and_atomics(gpu):
    f = kernel(gpu, """
__global__ void shuffle_kernel(int* out, int* total) {
    const int v = threadIdx.x, lane = threadIdx.x & 31;
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 3);
    out[64 + threadIdx.x] = __shfl_up_sync(0xffffffffu, v, 5);
    out[128 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 16);
    out[192 + threadIdx.x] = __shfl_sync(0xffffffffu, v, 7);
    atomicAdd(total, lane);
}
""", "shuffle_kernel")
    out, total = gpu.zeros((4, 64), np.int32), gpu.zeros((1,), np.int32)
    f((3,), (64,), (out, total))
    t = np.arange(64)
    lane, base = t % 32, t - t % 32
    expected = [np.where(lane + 3 < 32, t + 3, t), np.where(lane >= 5, t - 5, t), base + (lane ^ 16), base + 7]
    assert np.array_equal(np.asarray(out), np.array(expected))
    assert np.asarray(total)[0] == 3 * 2 * sum(range(32))


# ----------------------------------------------------------------------------- negative controls: wrong on a GPU


def test_a_divergent_barrier_is_reported_with_its_place(gpu):
    f = kernel(gpu, """__global__ void divergent_kernel(float* out) {
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1.0f;
}
""", "divergent_kernel", filename="divergent.cu")
    with pytest.raises(emulation.KernelError, match=r"divergent __syncthreads: .*divergent\.cu:[35]"):
        f((1,), (64,), (gpu.zeros((64,), np.float32),))


def test_a_deadlock_is_reported(gpu):
    f = kernel(gpu, """
__global__ void deadlock_kernel(float* out) {
    float v = (float)threadIdx.x;
    if (threadIdx.x == 0) __syncthreads();                       // lane 0 waits for the block...
    else v = __shfl_xor_sync(0xffffffffu, v, 1);                 // ...while its warp waits for lane 0
    out[threadIdx.x] = v;
}
""", "deadlock_kernel")
    with pytest.raises(emulation.KernelError, match="deadlock: every running thread .* waits"):
        f((1,), (32,), (gpu.zeros((32,), np.float32),))


def test_a_lane_returning_during_a_shuffle_is_reported(gpu):
    f = kernel(gpu, """
__global__ void early_return_kernel(float* out) {
    if (threadIdx.x == 31) return;
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}
""", "early_return_kernel")
    with pytest.raises(emulation.KernelError, match="returned while its warp waits|only running lanes"):
        f((1,), (32,), (gpu.zeros((32,), np.float32),))


SCALE = """
__global__ void scale_kernel(float a, const float* x, float* y, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = a * x[i];
}
"""


@pytest.mark.parametrize("args, message", [
    (lambda g: (2.0, g.zeros((4,), np.float32), g.zeros((4,), np.float32), np.int32(4)),
     r"argument 0 is a 4-byte 'f' scalar; got a Python float, which CuPy passes as an 8-byte double"),
    (lambda g: (np.float32(2), g.zeros((4,), np.float32), g.zeros((4,), np.float32), 4),
     r"argument 3 is a 4-byte 'i' scalar; got a Python int, which CuPy passes as an 8-byte long long"),
    (lambda g: (np.float32(2), g.zeros((4,), np.float32), g.zeros((4,), np.float32), np.float32(4)),
     r"argument 3 is a 4-byte 'i' scalar; got float32"),
    (lambda g: (np.float32(2), g.zeros((4,), np.float64), g.zeros((4,), np.float32), np.int32(4)),
     r"argument 1 points to 4-byte 'f' values; got a float64 array"),
    (lambda g: (np.float32(2), np.zeros(4, np.float32), g.zeros((4,), np.float32), np.int32(4)),
     r"argument 1 is a pointer; got ndarray"),
    (lambda g: (np.float32(2), g.zeros((4,), np.float32), g.zeros((4,), np.float32)), r"takes 4 arguments; got 3"),
])
def test_arguments_that_do_not_fit_the_signature_are_refused(gpu, args, message):
    f = kernel(gpu, SCALE, "scale_kernel")
    with pytest.raises(emulation.KernelError, match=message):
        f((1,), (32,), args(gpu))
    y = gpu.zeros((4,), np.float32)
    f((1,), (32,), (np.float32(2), gpu.asarray(np.arange(4, dtype=np.float32)), y, np.int32(4)))
    assert np.asarray(y).tolist() == [0, 2, 4, 6]  # NOTE: the same kernel with fitting arguments runs


def test_an_out_of_bounds_write_is_caught_by_the_guards(gpu):
    f = kernel(gpu, SCALE, "scale_kernel")
    x, y = gpu.asarray(np.arange(8, dtype=np.float32)), gpu.zeros((4,), np.float32)
    f((1,), (32,), (np.float32(2), x, y, np.int32(4)))
    with pytest.raises(emulation.KernelError, match="scale_kernel wrote out of bounds, after an array of 16 bytes"):
        f((1,), (32,), (np.float32(2), x, y, np.int32(5)))


def test_a_source_that_does_not_compile_names_the_file_and_line(gpu):
    with pytest.raises(emulation.KernelError, match=r"broken\.cu:2.*undefined_name"):
        kernel(gpu, "__global__ void broken_kernel() {\n    undefined_name();\n}\n", "broken_kernel",
               filename="broken.cu")

"""Every CUDA kernel of cupynet, run on the CPU from its real source through its real launcher.

The harness (tests/cuda_emulation) replaces CuPy at ``cupynet.cuda.device.cupy`` and nowhere
else: the launchers build their chunk tables, grids and arguments as on a GPU, and the kernel
text they hand to ``cupy.RawModule`` is compiled with g++ and run one fiber per CUDA
thread. The AMP and optimizer kernels must then give their NumPy references' results bit for
bit (subnormals, planted inf / NaN at chunk boundaries, mixed dtypes, empty arrays); the
fused-op kernels, which use the CUDA math library, agree within a tolerance. Each test checks
which kernels it launched, and the last test checks that together they launch every
instantiation of every ``.cu`` file.
"""

import cuda_emulation as emulation
import numpy as np
import pytest
from cuda_emulation import cases
from cuda_emulation.cases import assert_same_bits, mixed_arrays, optimizer_problem, scalar

from cupynet.amp.kernels import launch as amp_launch
from cupynet.amp.kernels import reference as amp_reference
from cupynet.cuda.compile import CTYPE_OF_DTYPE
from cupynet.cuda.multi_tensor import group_by_dtype
from cupynet.ops._im2col import Geometry, output_length
from cupynet.ops.kernels import launch as ops_launch
from cupynet.ops.kernels import reference as ops_reference
from cupynet.optim.kernels import adam_coefficients, sgd_coefficients
from cupynet.optim.kernels import launch as optim_launch
from cupynet.optim.kernels import reference as optim_reference

pytestmark = pytest.mark.skipif(emulation.GXX is None, reason="the CUDA-on-CPU harness needs g++ (on Linux, "
                                                                 "x86-64 or AArch64)")

F16, F32, BF16 = cases.F16, cases.F32, cases.BF16


@pytest.fixture
def gpu(monkeypatch):
    """The emulated CuPy every launcher of cupynet uses during the test."""
    return emulation.install(monkeypatch)


def names(library, filename, dtype=None):
    """The name expressions of a file's kernels (for one element dtype, or all)."""
    ctype = None if dtype is None else CTYPE_OF_DTYPE[dtype]
    return {n for n in library.name_expressions[filename] if ctype is None or n.endswith(f"<{ctype}>")}


def on_device(gpu, arrays):
    return [gpu.asarray(a) for a in arrays]


# ----------------------------------------------------------------------------- AMP kernels, bit for bit


def run_unscale_both_ways(gpu, inv):
    """One unscale through the launcher and through the reference; asserts the same bits."""
    host = mixed_arrays(np.random.default_rng(0))
    control = [scalar(0.0), scalar(inv), np.full((len(host), 2), 3, np.int32)]
    dev, dev_control = on_device(gpu, host), on_device(gpu, control)
    amp_launch.non_finite_check_and_unscale_(group_by_dtype(dev), dev, *dev_control)
    amp_reference.non_finite_check_and_unscale_(host, *control)
    assert_same_bits(dev + dev_control, host + control)
    return control


@pytest.mark.parametrize("inv", [1 / 1024, 1.0, 0.0])
def test_unscale_kernel_gives_the_reference_bits(gpu, inv):
    found, _, stats = run_unscale_both_ways(gpu, inv)
    assert found[0] == 1.0 and stats[5].tolist() == [3 + 2, 3 + 1]  # the longest array: inf, -inf; NaN
    assert set(gpu.launches) == names(amp_launch.KERNELS, "unscale.cu")


def test_scale_update_kernel_gives_the_reference_bits(gpu):
    host = [scalar(2.0**16), scalar(0, np.int32), scalar(0, np.int32), scalar(0, np.int32)]
    dev = on_device(gpu, host)
    for found in (np.random.default_rng(2).random(40) < 0.4).astype(np.float32):
        for state, fi in ((dev, gpu.asarray(scalar(found))), (host, scalar(found))):
            impl = amp_launch if state is dev else amp_reference
            impl.update_scale_(state[0], state[1], fi, 1.5, 0.3, 3, 2, state[2], np.float32(1.0),
                               np.float32(2.0**20), state[3])
        assert_same_bits(dev, host)
    amp_launch.update_scale_(dev[0], dev[1], gpu.asarray(scalar(1.0)), 2.0, 0.5, 2000, 1, None, np.float32(0),
                             np.float32(np.inf), None)  # absent trackers: the launcher's scratch arrays
    assert set(gpu.launches) == names(amp_launch.KERNELS, "scale_update.cu")


@pytest.mark.parametrize("finite", [True, False])
def test_l2norm_kernels_give_the_reference_bits(gpu, finite):
    host = mixed_arrays(np.random.default_rng(5), finite=finite)
    dev = on_device(gpu, host)
    out = amp_launch.multi_tensor_l2norm(0, group_by_dtype(dev), dev)
    assert_same_bits([out], [amp_reference.multi_tensor_l2norm(host)])
    assert set(gpu.launches) == names(amp_launch.KERNELS, "l2norm.cu")


@pytest.mark.parametrize("finite, max_norm", [(True, 1.0), (True, 1e30), (True, "device"), (False, 1.0)])
def test_clip_by_total_norm_kernel_gives_the_reference_bits(gpu, finite, max_norm):
    host = mixed_arrays(np.random.default_rng(9), finite=finite)
    norm = amp_reference.multi_tensor_l2norm(host)
    limit = scalar(0.5) if max_norm == "device" else np.float32(max_norm)
    dev = on_device(gpu, host)
    amp_launch.clip_by_total_norm_(group_by_dtype(dev), dev, gpu.asarray(norm),
                                   gpu.asarray(limit) if max_norm == "device" else limit)
    amp_reference.clip_by_total_norm_(host, norm, limit)
    assert_same_bits(dev, host)
    assert set(gpu.launches) == names(amp_launch.KERNELS, "step_state.cu") - {
        "begin_unscale_kernel", "record_overflow_kernel", "record_step_kernel"}


def test_step_state_kernels_give_the_reference_bits(gpu):
    rng = np.random.default_rng(10)
    for scale_value, found_value, with_ring in ((2.0**16, 0.0, True), (3.0, 1.0, True), (0.0, np.nan, False),
                                                (2.0**-130, -0.0, False)):
        stats = rng.integers(1, 9, (5, 2)).astype(np.int32)
        stats[1] = 0  # NOTE: a row of zeros (no hit) and a row with NaNs only (a hit)
        stats[2, 0] = 0
        # NOTE: the last count starts at 2**31 - 1: both sides wrap it to -2**31 on a hit
        hits = np.array([0, 3, 0, 5, 2**31 - 1], np.int32)
        host = [scalar(scale_value), scalar(7.0), scalar(found_value), stats.copy(), np.full((5, 2), -1, np.int32),
                scalar(-1, np.int32), scalar(4, np.int32), np.zeros(3, np.float32), np.zeros(3, np.int32),
                hits.copy()]
        dev = on_device(gpu, host)
        for impl, arrays in ((amp_launch, dev), (amp_reference, host)):
            scale, inv, found, stats_rows, record, record_step, skipped, ring_scales, ring_skipped, counts = arrays
            impl.record_overflow_(found, stats_rows, record, record_step, 12, counts)
            impl.record_overflow_(found, stats_rows, record, record_step, 13)  # without counts: counts untouched
            impl.record_step_(found, skipped, scale, ring_scales if with_ring else None,
                              ring_skipped if with_ring else None, 2)
            impl.record_step_(None, skipped, scale, ring_scales if with_ring else None,
                              ring_skipped if with_ring else None, 0)
            impl.begin_unscale_(scale, inv, found, stats_rows)
        assert_same_bits(dev, host)
        assert host[2][0] == 0.0 and not host[3].any()  # found_inf and the stats rows zeroed
        if found_value != 0:  # NOTE: NaN counts as set, -0.0 does not (is_nonzero_f32)
            assert host[4].tolist() == stats.tolist() and host[5][0] == 13 and host[6][0] == 5
            assert host[9].tolist() == [1, 3, 1, 6, -2**31]
        else:
            assert host[9].tolist() == hits.tolist() and host[5][0] == -1
    assert set(gpu.launches) == {"begin_unscale_kernel", "record_overflow_kernel", "record_step_kernel"}


# ----------------------------------------------------------------------------- optimizer kernels, bit for bit


SGD_CASES = [dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False),
             dict(momentum=0.9, dampening=0.0, nesterov=True, weight_decay=1e-3, maximize=False),
             dict(momentum=0.7, dampening=0.2, nesterov=False, weight_decay=0.0, maximize=True)]


def run_sgd_both_ways(gpu, hyper, steps=3):
    """Three SGD steps through the launcher and through the reference; asserts the same bits after each."""
    params, grads = optimizer_problem(np.random.default_rng(3))
    host = params + [np.zeros_like(p) for p in params] + [scalar(1, np.int32)]
    dev = on_device(gpu, host)
    n, c = len(params), sgd_coefficients(lr=0.01, **hyper)
    for step in range(steps):
        inv, found = scalar(2.0**-step * 0.7), scalar(1.0 if step == 1 else 0.0)  # step 1 overflowed: skipped
        optim_launch.fused_sgd_(0, group_by_dtype(grads), dev[:n], on_device(gpu, grads), dev[n:2 * n], c,
                                dev[-1], gpu.asarray(found), gpu.asarray(inv))
        optim_reference.fused_sgd_(host[:n], grads, host[n:2 * n], c, host[-1], found, inv)
        assert_same_bits(dev, host)
    return dev


@pytest.mark.parametrize("case", range(len(SGD_CASES)))
def test_sgd_kernel_gives_the_reference_bits(gpu, case):
    dev = run_sgd_both_ways(gpu, SGD_CASES[case])
    assert np.asarray(dev[-1])[0] == 0  # the device first-step flag was cleared by the first step taken
    assert set(gpu.launches) == names(optim_launch.KERNELS, "sgd.cu")


@pytest.mark.parametrize("decoupled, amsgrad, maximize", [(False, False, False), (True, True, False),
                                                          (False, True, True)])
def test_adam_kernel_gives_the_reference_bits(gpu, decoupled, amsgrad, maximize):
    params, grads = optimizer_problem(np.random.default_rng(4))
    grads = [np.nan_to_num(g.astype(np.float32), nan=0.5, posinf=2.0, neginf=-2.0).astype(g.dtype) for g in grads]
    n = len(params)
    host = params + [np.zeros_like(p) for p in params * 3] + [scalar(0.0)]
    dev = on_device(gpu, host)
    c = adam_coefficients(1e-3, 0.9, 0.999, 1e-8, 0.01, decoupled, amsgrad, maximize)
    for step in range(4):
        inv, found = scalar(0.5), scalar(1.0 if step == 2 else 0.0)  # the third step overflowed: skipped
        for arrays, g, fi, iv in ((dev, on_device(gpu, grads), gpu.asarray(found), gpu.asarray(inv)),
                                  (host, grads, found, inv)):
            p, m, v, vmax = (arrays[i * n:(i + 1) * n] for i in range(4))
            if arrays is dev:
                optim_launch.fused_adam_(0, group_by_dtype(g), p, g, m, v, vmax, arrays[-1], c, fi, iv)
            else:
                optim_reference.fused_adam_(p, g, m, v, vmax, arrays[-1], c, fi, iv)
        assert_same_bits(dev, host)
    assert np.asarray(dev[-1])[0] == 3.0
    assert set(gpu.launches) == names(optim_launch.KERNELS, "adam.cu")


# ----------------------------------------------------------------------------- fused-op kernels, within tolerance

TOLERANCE = {F16: 2e-3, BF16: 1.6e-2, F32: 2e-6}


def assert_close(dev, host, dtype, scale=4.0):
    for d, h in zip(dev if isinstance(dev, tuple) else (dev,), host if isinstance(host, tuple) else (host,)):
        d = np.asarray(d)
        assert d.dtype == h.dtype and d.shape == h.shape
        tol = TOLERANCE[d.dtype if d.dtype in TOLERANCE else F32] * scale
        np.testing.assert_allclose(d.astype(np.float64), h.astype(np.float64), rtol=tol, atol=tol)


def with_device_arrays(gpu, fn, *args):
    return fn(*(gpu.asarray(a) if isinstance(a, np.ndarray) else a for a in args))


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_softmax_xent_kernels_match_the_reference(gpu, dtype):
    rng = np.random.default_rng(1)
    for n_classes in (5, 300):
        x = (rng.standard_normal((6, n_classes)) * 3).astype(dtype)
        x[0, 1] = -np.inf
        target = rng.integers(0, n_classes, 6)
        target[2], target[4] = -100, n_classes + 3  # an ignored row, a target out of range (NaN row)
        weight = rng.random(n_classes).astype(np.float32) + 0.5
        for smoothing, w in ((0.0, None), (0.1, weight)):
            host = ops_reference.softmax_xent_forward(x, target, w, -100, smoothing)
            dev = with_device_arrays(gpu, ops_launch.softmax_xent_forward, x, target, w, -100, smoothing)
            assert_close(dev, host, F32, 8)
            g = np.linspace(0.5, 1.5, 6).astype(np.float32)
            host_grad = ops_reference.softmax_xent_backward(x, target, w, host[1], g, -100, smoothing)
            dev_grad = with_device_arrays(gpu, ops_launch.softmax_xent_backward, x, target, w, host[1], g, -100,
                                          smoothing)
            assert_close(dev_grad, host_grad, dtype)
            divisor = scalar(2.5)
            assert_close(with_device_arrays(gpu, ops_launch.softmax_xent_backward, x, target, w, host[1], g[:1],
                                            -100, smoothing, divisor),
                         ops_reference.softmax_xent_backward(x, target, w, host[1], g[:1], -100, smoothing, divisor),
                         dtype)
            # NOTE: the 'mean' kernel adds in the reference's replayed order: the same bits
            rows = np.where(np.isnan(host[0]), np.float32(1.5), host[0])
            safe = np.where(target == n_classes + 3, 0, target)
            got = with_device_arrays(gpu, ops_launch.softmax_xent_mean, rows, safe, w, n_classes, -100, dtype)
            assert_same_bits(got, ops_reference.softmax_xent_mean(rows, safe, w, n_classes, -100, dtype))
    assert set(gpu.launches) == names(ops_launch.KERNELS, "softmax_xent.cu", dtype)


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_layer_norm_kernels_match_the_reference(gpu, dtype):
    rng = np.random.default_rng(6)
    for shape in ((4, 7), (20, 96)):
        x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
        w, b = rng.random(shape[-1]).astype(np.float32), rng.standard_normal(shape[-1]).astype(np.float32)
        host = ops_reference.layer_norm_forward(x, w, b, 1e-5)
        assert_close(with_device_arrays(gpu, ops_launch.layer_norm_forward, x, w, b, 1e-5), host, dtype)
        g = rng.standard_normal(shape).astype(dtype)
        host_grads = ops_reference.layer_norm_backward(g, x, host[1], host[2], w)
        dev_grads = with_device_arrays(gpu, ops_launch.layer_norm_backward, g, x, host[1], host[2], w)
        assert_close(dev_grads, host_grads, dtype, 16)
    assert set(gpu.launches) == names(ops_launch.KERNELS, "layer_norm.cu", dtype)


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_bias_activation_kernels_match_the_reference(gpu, dtype):
    rng = np.random.default_rng(7)
    x, b = (rng.standard_normal((9, 40)) * 3).astype(dtype), rng.standard_normal(40).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(dtype)
    for approximate in ("none", "tanh"):
        assert_close(with_device_arrays(gpu, ops_launch.bias_gelu_forward, x, b, approximate),
                     ops_reference.bias_gelu_forward(x, b, approximate), dtype)
        assert_close(with_device_arrays(gpu, ops_launch.bias_gelu_backward, g, x, b, approximate),
                     ops_reference.bias_gelu_backward(g, x, b, approximate), dtype, 16)
    y = ops_reference.bias_relu_forward(x, b)
    assert_close(with_device_arrays(gpu, ops_launch.bias_relu_forward, x, b), y, dtype)
    assert_close(with_device_arrays(gpu, ops_launch.bias_relu_backward, g, y), ops_reference.bias_relu_backward(g, y),
                 dtype, 16)
    # NOTE: the bias add is exact fp32 arithmetic and one rounding: the same bits as the reference
    bias = b.astype(dtype)
    assert_same_bits([with_device_arrays(gpu, ops_launch.bias_add, x, bias)], [ops_reference.bias_add(x, bias)])
    assert set(gpu.launches) == names(ops_launch.KERNELS, "bias_act.cu", dtype)


def geometry(size, kernel, stride, padding, dilation):
    return Geometry(kernel, stride, dilation, padding, size, output_length(size, kernel, stride, dilation, padding,
                                                                           padding))


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_im2col_kernels_match_the_reference(gpu, dtype):
    rng = np.random.default_rng(8)
    for size, kernel, stride, padding, dilation in (((5, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
                                                    ((7, 5), (3, 2), (2, 1), (0, 1), (1, 2))):
        x = rng.standard_normal((2, 4) + size).astype(dtype)
        geoms = tuple(geometry(*args) for args in zip(size, kernel, stride, padding, dilation))
        cols = with_device_arrays(gpu, ops_launch.im2col_2d, x, geoms, 2)
        np.testing.assert_array_equal(np.asarray(cols), ops_reference.im2col(x, geoms, 2))  # a gather: exact
        windows = rng.standard_normal((2, 4, geoms[0].out, geoms[1].out) + kernel).astype(dtype)
        assert_close(with_device_arrays(gpu, ops_launch.col2im_2d, windows, geoms),
                     ops_reference.col2im(windows, geoms, dtype), dtype)
    assert set(gpu.launches) == names(ops_launch.KERNELS, "im2col.cu", dtype)


# ----------------------------------------------------------------------------- negative controls
# Each is a bug the harness must catch: the very checks above, run on a mutated kernel text
# (what RawModule receives is edited) or through a launcher with a bug planted, must fail.


def mutate(gpu, monkeypatch, old, new):
    """Every module compiled during the test gets ``old`` replaced by ``new`` (which must be in its text)."""
    compile_module = gpu.RawModule

    def mutated(code, options=(), name_expressions=()):
        assert code.count(old) == 1, f"the mutation does not apply: {old!r}"
        return compile_module(code.replace(old, new), options, name_expressions)

    monkeypatch.setattr(gpu, "RawModule", mutated)


SGD_UPDATE = "store_f32(param + i, f32_add(p, f32_mul(neg_lr, g)));"


def test_control_a_broken_kernel_is_caught(gpu, monkeypatch):
    mutate(gpu, monkeypatch, SGD_UPDATE, "store_f32(param + i, f32_sub(p, f32_mul(neg_lr, g)));")
    with pytest.raises(AssertionError, match="elements differ"):
        run_sgd_both_ways(gpu, SGD_CASES[1], steps=1)


def test_control_plain_fp32_arithmetic_is_caught_because_ftz_is_mirrored(gpu, monkeypatch):
    # NOTE: `p + neg_lr * g` is what the exact helpers compute, but under -ftz=true a subnormal p
    # reads as 0: exactly the 4 subnormal parameters of array 1 differ (and -ffp-contract=off rules out an fma)
    mutate(gpu, monkeypatch, SGD_UPDATE, "store_f32(param + i, p + neg_lr * g);")
    with pytest.raises(AssertionError, match=r"array 1: 4 elements differ, first at \[0 1 2 3\]"):
        run_sgd_both_ways(gpu, SGD_CASES[0], steps=1)


CHUNK_START = "c.start = (desc & 0xffffffffLL) * (long long)CUPYNET_CHUNK_SIZE;"


def test_control_a_chunk_start_shifted_forward_is_caught(gpu, monkeypatch):
    mutate(gpu, monkeypatch, CHUNK_START, CHUNK_START.replace(";", " + 1;"))
    with pytest.raises(AssertionError, match="elements differ"):
        run_unscale_both_ways(gpu, 1 / 1024)


def test_control_a_chunk_start_shifted_back_is_caught_writing_out_of_bounds(gpu, monkeypatch):
    mutate(gpu, monkeypatch, CHUNK_START, CHUNK_START.replace(";", " - 1;"))
    with pytest.raises(emulation.KernelError, match="non_finite_check_and_unscale_kernel<.*> wrote out of bounds, "
                                                    "before an array"):
        run_unscale_both_ways(gpu, 1 / 1024)


def test_control_a_launcher_passing_a_python_int_is_caught(gpu, monkeypatch):
    monkeypatch.setattr(optim_launch, "c_int", int)  # NOTE: the planted bug: flags passed as Python ints
    with pytest.raises(emulation.KernelError, match=r"fused_sgd_kernel<__half>: argument 4 is a 4-byte 'i' scalar; "
                                                    "got a Python int, which CuPy passes as an 8-byte long long"):
        run_sgd_both_ways(gpu, SGD_CASES[0], steps=1)


# ----------------------------------------------------------------------------- coverage

TESTED_FILES = {"amp": ("unscale.cu", "scale_update.cu", "l2norm.cu", "step_state.cu"), "optim": ("sgd.cu", "adam.cu"),
                "ops": ("softmax_xent.cu", "layer_norm.cu", "bias_act.cu", "im2col.cu")}
"""The .cu files the tests above run, every instantiation of each (each test checks what it launched)."""


def test_every_cu_file_of_cupynet_is_run_by_the_harness():
    for package, library in emulation.LIBRARIES.items():
        assert sorted(TESTED_FILES[package]) == sorted(library.source_files()), package
    instantiations = sum(len(lib.name_expressions[f]) for lib in emulation.LIBRARIES.values()
                         for f in lib.source_files())
    kernels = {e.split("<")[0] for lib in emulation.LIBRARIES.values() for es in lib.name_expressions.values()
               for e in es}
    assert (sum(map(len, TESTED_FILES.values())), len(kernels), instantiations) == (10, 25, 61)

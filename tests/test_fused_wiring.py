"""The CuPy-path wiring of the fused kernels into ops (issue 14 §2), run without a GPU.

``fused.kernels_enabled`` is pointed at the harness's device arrays, so the ops take their GPU
branch: cross-entropy, layer norm and Linear+ReLU/GELU run their real kernels (``softmax_xent.cu``,
``layer_norm.cu``, ``bias_act.cu``) through the CUDA-on-CPU harness
(``tests/cuda_emulation``; device arrays raise on any host read, so a sync fails the test), and a
half-precision batched matmul drives the fake cuBLAS of ``test_fused_compile.py``. Each result is
compared with the op's NumPy path on the same values.
"""

import cuda_emulation as emulation
import ml_dtypes
import numpy as np
import pytest
from test_fused_compile import DevArray, dev, fake, fake_cublas  # noqa: F401 - fixtures

import cupynet as cn
from cupynet.cuda.compile import KERNEL_DTYPES
from cupynet.ops import kernels as fused
from cupynet.ops import linalg
from cupynet.ops.loss.classification import CrossEntropy, FusedCrossEntropy
from cupynet.tensor import Tensor

BF16 = np.dtype(ml_dtypes.bfloat16)
EPS32 = np.finfo(np.float32).eps


def _enable_for(monkeypatch, device_type):
    """Make ``fused.kernels_enabled`` say yes for arrays of ``device_type`` (as it does for CuPy arrays)."""
    monkeypatch.setattr(fused, "kernels_enabled", lambda *arrays: isinstance(arrays[0], device_type)
                        and arrays[0].dtype in KERNEL_DTYPES)


@pytest.fixture
def gpu(monkeypatch):
    if emulation.GXX is None:
        pytest.skip("the CUDA-on-CPU harness needs g++")
    emulated = emulation.install(monkeypatch)
    _enable_for(monkeypatch, emulation.DeviceArray)
    return emulated


def _xent(op, x, t, w, create_graph=False, upload=np.asarray, **kw):
    """Loss and d loss / d x (and d/dx of sum(grad^2) with create_graph) through a cross-entropy op."""
    xt = Tensor(x, requires_grad=True)
    # NOTE: the op itself (the public function's range check reads the targets on the host, off on GPUs)
    loss = op.apply(xt, Tensor(t), weight=None if w is None else Tensor(w), **kw)
    seed = upload(np.full(loss.shape, 0.7, np.float32).astype(x.dtype))
    (gx,) = cn.autograd.grad(loss, [xt], Tensor(seed), create_graph=create_graph)
    out = [np.asarray(loss.detach().array, np.float64), np.asarray(gx.detach().array, np.float64)]
    if create_graph:
        (ggx,) = cn.autograd.grad((gx * gx).sum(), [xt], Tensor(upload(np.ones((), x.dtype))))
        out.append(np.asarray(ggx.array, np.float64))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("kw", [{"reduction": "mean"}, {"reduction": "sum", "label_smoothing": 0.1},
                                {"reduction": "none", "weighted": True}, {"reduction": "mean", "weighted": True,
                                                                          "ignore_index": 2}],
                         ids=["mean", "sum-smoothing", "none-weight", "mean-weight-ignore"])
def test_cross_entropy_runs_the_fused_kernels_on_the_gpu_path(gpu, dtype, kw):
    kw = dict(kw)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((7, 33)) * 3).astype(dtype)
    t = rng.integers(0, 33, 7).astype(np.int64)
    t[3] = 2
    w = (rng.random(33) + 0.5).astype(np.float32) if kw.pop("weighted", False) else None
    host = _xent(CrossEntropy, x, t, w, **kw)
    device = _xent(FusedCrossEntropy, gpu.asarray(x), gpu.asarray(t), None if w is None else gpu.asarray(w),
                   upload=gpu.asarray, **kw)
    # NOTE: 'mean' takes its divisor and mean in one more kernel (the other reductions: none)
    mean = {"softmax_xent_mean_kernel"} if kw["reduction"] == "mean" else set()
    launched = {n.split("<")[0] for n in gpu.launches}
    assert launched == {"softmax_xent_forward_kernel", "softmax_xent_backward_kernel"} | mean
    # NOTE: both compute in fp32 (the kernel with CUDA's expf/logf, emulated): a few fp32 ulps, then each
    # result is rounded once to its dtype (one ulp of that dtype where the two land on either side)
    tol = max(16 * EPS32, 2 * np.finfo(dtype).eps if dtype is not BF16 else 2.0**-7)
    for got, want in zip(device, host):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


def test_cross_entropy_double_backward_after_the_fused_forward(monkeypatch):
    # NOTE: the fused forward's state feeds the graph backward; run on host arrays with the kernels'
    # reference (``kernels/reference.py``) standing in for the launcher, so every array is NumPy's
    from cupynet.ops.kernels import reference
    launches = []
    monkeypatch.setattr(fused, "kernels_enabled", lambda *arrays: True)
    monkeypatch.setattr(fused, "_launch", lambda: launches.append(1) or reference)
    rng = np.random.default_rng(1)
    x, t = rng.standard_normal((5, 9)).astype(np.float32), rng.integers(0, 9, 5).astype(np.int64)
    w = (rng.random(9) + 0.5).astype(np.float32)
    fused_run = _xent(FusedCrossEntropy, x, t, w, create_graph=True, label_smoothing=0.2)
    assert launches
    # NOTE: a graph kept for a second backward: a double backward, then a first-order one, on one node
    xt = Tensor(x, requires_grad=True)
    loss = FusedCrossEntropy.apply(xt, Tensor(t), weight=Tensor(w), label_smoothing=0.2)
    (g,) = cn.autograd.grad(loss, [xt], create_graph=True)
    loss.backward()
    np.testing.assert_allclose(xt.grad.numpy(), g.detach().numpy(), rtol=16 * EPS32, atol=16 * EPS32)
    monkeypatch.undo()
    host = _xent(CrossEntropy, x, t, w, create_graph=True, label_smoothing=0.2)
    for got, want in zip(fused_run, host):
        np.testing.assert_allclose(got, want, rtol=16 * EPS32, atol=16 * EPS32 * max(1.0, np.abs(want).max()))


def test_cross_entropy_on_numpy_keeps_its_array_path(monkeypatch):
    calls = []
    monkeypatch.setattr(fused, "softmax_xent_forward", lambda *a, **k: calls.append(a))
    x, t = cn.randn(4, 5, requires_grad=True), cn.tensor([0, 1, 2, 3])
    cn.nn.functional.cross_entropy(x, t).backward()
    assert calls == [] and x.grad is not None


def test_cross_entropy_takes_the_fused_op_where_the_kernels_run(monkeypatch):
    # NOTE: the public function chooses the op; the kernels' reference stands in for the launcher
    from cupynet.ops.kernels import reference
    launches = []
    monkeypatch.setattr(fused, "kernels_enabled", lambda *arrays: True)
    monkeypatch.setattr(fused, "_launch", lambda: launches.append(1) or reference)
    x, t = cn.randn(4, 5, requires_grad=True), cn.tensor([0, 1, 2, 3])
    cn.nn.functional.cross_entropy(x, t).backward()
    assert len(launches) == 3 and x.grad is not None  # NOTE: forward, 'mean', backward


@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 4, 5), (3, 5, 6)), ((2, 3, 4, 5), (2, 3, 5, 2)),
                                              ((4, 5), (3, 5, 2))])
@pytest.mark.usefixtures("fake_cublas")
def test_half_batched_matmul_takes_the_strided_batched_gemm(monkeypatch, dtype, a_shape, b_shape):
    _enable_for(monkeypatch, DevArray)
    calls = []
    real = fused.batched_matmul_half
    monkeypatch.setattr(fused, "batched_matmul_half", lambda a, b: calls.append(a.shape) or real(a, b))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)
    want = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
    got = linalg.matmul_arrays(dev(a), dev(b))
    assert calls == [a_shape] and got.dtype == dtype
    np.testing.assert_array_equal(np.asarray(got, np.float32), want.astype(np.float32))
    # NOTE: a transposed view (as backward's products pass ``b.mT``) is read in place by the GEMM
    b_view = dev(np.ascontiguousarray(b.swapaxes(-1, -2))).swapaxes(-1, -2)
    got_t = linalg.matmul_arrays(dev(a), b_view)
    assert len(calls) == 2
    np.testing.assert_array_equal(np.asarray(got_t, np.float32), want.astype(np.float32))


@pytest.mark.usefixtures("fake_cublas")
def test_fp32_out_and_broadcast_batches_keep_xp_matmul(monkeypatch):
    _enable_for(monkeypatch, DevArray)
    calls = []
    monkeypatch.setattr(fused, "batched_matmul_half", lambda a, b: calls.append(a.shape))
    a = dev(np.ones((2, 3, 4), np.float16))
    assert linalg.matmul_arrays(a, dev(np.ones((2, 4, 5), np.float16)), fp32_out=True).dtype == np.float32
    linalg.matmul_arrays(a, dev(np.ones((1, 4, 5), np.float16)))  # NOTE: a broadcast batch: not a strided batch
    assert calls == []


# ----------------------------------------------------------------------------- layer norm, bias + activation


def _grads(op, arrays, seed, upload=np.asarray, create_graph=False):
    """``op``'s output and the gradients of every input (seeded with ``seed``), as float64 host arrays."""
    ts = [Tensor(upload(a), requires_grad=True) for a in arrays]
    out = op(*ts)
    grads = cn.autograd.grad(out, ts, Tensor(upload(seed.astype(out.dtype))), create_graph=create_graph)
    return [np.asarray(out.detach().array, np.float64)] + [np.asarray(g.detach().array, np.float64) for g in grads]


def _tolerance(dtype, ulps):
    """``ulps`` fp32 ulps of compute, or two ulps of a half dtype where the result is rounded to one."""
    return max(ulps * EPS32, 2 * (np.finfo(dtype).eps if dtype is not BF16 else 2.0**-7))


def _assert_close_all(device, host, tol):
    for got, want in zip(device, host, strict=True):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


def _kernel_names(gpu):
    return {n.split("<")[0] for n in gpu.launches}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("shape, ndim", [((6, 40), 1), ((2, 3, 4, 5), 2)])
def test_layer_norm_runs_the_fused_kernels_on_the_gpu_path(gpu, dtype, shape, ndim):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    w = (rng.random(shape[-ndim:]) + 0.5).astype(np.float32)
    b = rng.standard_normal(shape[-ndim:]).astype(np.float32)
    seed = rng.standard_normal(shape)
    op = lambda xt, wt, bt: cn.nn.functional.layer_norm(xt, shape[-ndim:], wt, bt)  # noqa: E731
    host = _grads(op, (x, w, b), seed)
    device = _grads(op, (x, w, b), seed, upload=gpu.asarray)
    assert _kernel_names(gpu) == {"layer_norm_forward_kernel", "layer_norm_backward_kernel",
                                  "layer_norm_param_grad_kernel"}
    # NOTE: both in fp32 (a different summation order): the backward's sums over up to 60 terms take a few
    # more fp32 ulps; halves then round once (a half ulp each side, so two ulps between them)
    _assert_close_all(device, host, _tolerance(dtype, 64))


def test_layer_norm_without_affine_and_parameters_without_grad_on_the_gpu_path(gpu):
    rng = np.random.default_rng(4)
    x, seed = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal((5, 8))
    op = lambda xt: cn.nn.functional.layer_norm(xt, (8,))  # noqa: E731
    _assert_close_all(_grads(op, (x,), seed, upload=gpu.asarray), _grads(op, (x,), seed), 64 * EPS32)
    w = gpu.asarray(np.full(8, 2.0, np.float16))
    xt = Tensor(gpu.asarray(x), requires_grad=True)
    # NOTE: a half weight on an fp32 input: its gradient comes back as float16, the kernels' fp32 rounded once
    wt = Tensor(w, requires_grad=True)
    gx, gw = cn.autograd.grad(cn.nn.functional.layer_norm(xt, (8,), wt), [xt, wt],
                              Tensor(gpu.asarray(seed.astype(np.float32))))
    assert "layer_norm_param_grad_kernel" in _kernel_names(gpu)
    assert gx.dtype == np.float32 and gw.dtype == np.float16 and gw.shape == (8,)
    # NOTE: ``sum grad * xhat`` over the rows, from the fp32 normalized input (a half-ulp rounding)
    xhat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(gw.array, np.float64), (seed * xhat).sum(0), rtol=2**-10, atol=2**-10 * 5)


def test_layer_norm_double_backward_after_the_fused_forward(monkeypatch):
    # NOTE: create_graph takes the graph formula after a fused forward; the kernels' reference stands in
    from cupynet.ops.kernels import reference
    launches = []
    monkeypatch.setattr(fused, "kernels_enabled", lambda *arrays: True)
    monkeypatch.setattr(fused, "_launch", lambda: launches.append(1) or reference)
    rng = np.random.default_rng(5)
    x, w, b = rng.standard_normal((4, 6)), rng.random(6) + 0.5, rng.standard_normal(6)
    arrays = [a.astype(np.float32) for a in (x, w, b)]
    op = lambda *ts: cn.nn.functional.layer_norm(ts[0], (6,), ts[1], ts[2])  # noqa: E731

    def second_order():
        ts = [Tensor(a, requires_grad=True) for a in arrays]
        gx, = cn.autograd.grad(op(*ts).pow(2).sum(), [ts[0]], create_graph=True)
        return [np.asarray(g.array, np.float64) for g in cn.autograd.grad((gx * gx).sum(), ts)]

    fused_run = second_order()
    assert launches
    monkeypatch.undo()
    _assert_close_all(fused_run, second_order(), 64 * EPS32)


def test_layer_norm_on_numpy_keeps_its_array_path(monkeypatch):
    calls = []
    monkeypatch.setattr(fused, "layer_norm_forward", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(fused, "layer_norm_backward", lambda *a, **k: calls.append(a))
    x, w, b = cn.randn(3, 4, requires_grad=True), cn.ones(4, requires_grad=True), cn.zeros(4, requires_grad=True)
    cn.nn.functional.layer_norm(x, (4,), w, b).sum().backward()
    assert calls == [] and x.grad is not None


def _linear_act(pair):
    from cupynet.ops.linear_gelu import linear_gelu
    from cupynet.ops.linear_relu import linear_relu
    return {"relu": linear_relu, "gelu": linear_gelu}[pair]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("pair, kernels", [("relu", {"bias_relu_forward_kernel", "bias_relu_backward_kernel"}),
                                           ("gelu", {"bias_gelu_forward_kernel", "bias_gelu_backward_kernel"})])
def test_linear_bias_activation_runs_the_fused_kernels_on_the_gpu_path(gpu, dtype, pair, kernels):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 12)).astype(dtype)
    w = (rng.standard_normal((16, 12)) / 4).astype(dtype)
    b = rng.standard_normal(16).astype(dtype)
    seed = rng.standard_normal((2, 5, 16))
    host = _grads(_linear_act(pair), (x, w, b), seed)
    device = _grads(_linear_act(pair), (x, w, b), seed, upload=gpu.asarray)
    assert _kernel_names(gpu) == kernels
    # NOTE: the GPU path adds the bias in fp32 to the GEMM's rounded output (the host path rounds after the
    # add): an ulp of the dtype before the activation; then fp32 math (the kernel's erf/exp) rounded once
    _assert_close_all(device, host, _tolerance(dtype, 16))


@pytest.mark.parametrize("pair", ["relu", "gelu"])
def test_linear_bias_activation_double_backward_after_the_fused_forward(monkeypatch, pair):
    from cupynet.ops.kernels import reference
    launches = []
    monkeypatch.setattr(fused, "kernels_enabled", lambda *arrays: True)
    monkeypatch.setattr(fused, "_launch", lambda: launches.append(1) or reference)
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5, 4), (5,))]

    def second_order():
        ts = [Tensor(a, requires_grad=True) for a in arrays]
        gx, = cn.autograd.grad(_linear_act(pair)(*ts).pow(2).sum(), [ts[0]], create_graph=True)
        return [np.asarray(g.array, np.float64) for g in cn.autograd.grad((gx * gx).sum(), ts)]

    fused_run = second_order()
    assert launches
    monkeypatch.undo()
    _assert_close_all(fused_run, second_order(), 64 * EPS32)


@pytest.mark.parametrize("pair", ["relu", "gelu"])
def test_linear_bias_activation_on_numpy_keeps_its_array_path(monkeypatch, pair):
    calls = []
    for name in ("bias_relu_forward", "bias_relu_backward", "bias_gelu_forward", "bias_gelu_backward"):
        monkeypatch.setattr(fused, name, lambda *a, **k: calls.append(a))
    x = cn.randn(3, 4, requires_grad=True)
    _linear_act(pair)(x, cn.randn(5, 4, requires_grad=True), cn.randn(5, requires_grad=True)).sum().backward()
    assert calls == [] and x.grad is not None

"""The CuPy-path wiring of the fused kernels into ops (issue 14 §2), run without a GPU.

``fused.kernels_enabled`` is pointed at the harness's device arrays, so the ops take their GPU
branch: cross-entropy runs the real ``softmax_xent.cu`` kernels through the CUDA-on-CPU harness
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
from cupynet.ops import fused, linalg
from cupynet.ops.loss import CrossEntropy
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


def _xent(x, t, w, create_graph=False, upload=np.asarray, **kw):
    """Loss and d loss / d x (and d/dx of sum(grad^2) with create_graph) through the CrossEntropy op."""
    xt = Tensor(x, requires_grad=True)
    # NOTE: the op itself (the public function's range check reads the targets on the host, off on GPUs)
    loss = CrossEntropy.apply(xt, Tensor(t), weight=None if w is None else Tensor(w), **kw)
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
    host = _xent(x, t, w, **kw)
    device = _xent(gpu.asarray(x), gpu.asarray(t), None if w is None else gpu.asarray(w), upload=gpu.asarray, **kw)
    assert {n.split("<")[0] for n in gpu.launches} == {"softmax_xent_forward_kernel", "softmax_xent_backward_kernel"}
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
    fused_run = _xent(x, t, w, create_graph=True, label_smoothing=0.2)
    assert launches
    # NOTE: a graph kept for a second backward: a double backward, then a first-order one, on one node
    xt = Tensor(x, requires_grad=True)
    loss = CrossEntropy.apply(xt, Tensor(t), weight=Tensor(w), label_smoothing=0.2)
    (g,) = cn.autograd.grad(loss, [xt], create_graph=True)
    loss.backward()
    np.testing.assert_allclose(xt.grad.numpy(), g.detach().numpy(), rtol=16 * EPS32, atol=16 * EPS32)
    monkeypatch.undo()
    host = _xent(x, t, w, create_graph=True, label_smoothing=0.2)
    for got, want in zip(fused_run, host):
        np.testing.assert_allclose(got, want, rtol=16 * EPS32, atol=16 * EPS32 * max(1.0, np.abs(want).max()))


def test_cross_entropy_on_numpy_keeps_its_array_path(monkeypatch):
    calls = []
    monkeypatch.setattr(fused, "softmax_xent_forward", lambda *a, **k: calls.append(a))
    x, t = cn.randn(4, 5, requires_grad=True), cn.tensor([0, 1, 2, 3])
    cn.nn.functional.cross_entropy(x, t).backward()
    assert calls == [] and x.grad is not None


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

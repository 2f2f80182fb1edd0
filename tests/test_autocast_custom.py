"""custom_fwd / custom_bwd for user Functions (port of torch's test_autocast_custom_enabled / _cast_inputs)."""

import threading

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp
from cupynet.autograd import Function
from cupynet.autograd.state import STATE


class MyMM(Function):
    """a @ b with custom_fwd (no cast_inputs) / custom_bwd: both run under the forward's autocast state."""

    seen = []

    @staticmethod
    @amp.custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        MyMM.seen.append(("fwd", a.dtype, b.dtype, amp.is_autocast_enabled("cpu")))
        ctx.save_for_backward(a, b)
        return cn.matmul(a, b)  # NOTE: a cupynet op: autocast applies to it inside the forward

    @staticmethod
    @amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        MyMM.seen.append(("bwd", grad.dtype, amp.is_autocast_enabled("cpu")))
        return cn.matmul(grad, b.mT), cn.matmul(a.mT, grad)


class MyMMFp32(Function):
    """a @ b forced to fp32 with custom_fwd(cast_inputs=float32)."""

    seen = []

    @staticmethod
    @amp.custom_fwd(device_type="cpu", cast_inputs=cn.float32)
    def forward(ctx, a, b):
        MyMMFp32.seen.append(("fwd", a.dtype, b.dtype, amp.is_autocast_enabled("cpu")))
        ctx.save_for_backward(a, b)
        return cn.matmul(a, b)

    @staticmethod
    @amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        MyMMFp32.seen.append(("bwd", grad.dtype, amp.is_autocast_enabled("cpu")))
        return cn.matmul(grad, b.mT), cn.matmul(a.mT, grad)


@pytest.fixture(autouse=True)
def _reset():
    MyMM.seen.clear()
    MyMMFp32.seen.clear()
    yield
    assert (STATE.autocast, STATE.autocast_nesting, len(STATE.cast_cache)) == ({}, 0, 0)


def _inputs():
    rng = np.random.default_rng(0)
    return (cn.tensor(rng.standard_normal((3, 4)), dtype=cn.float32, requires_grad=True),
            cn.tensor(rng.standard_normal((4, 5)), dtype=cn.float32, requires_grad=True))


def test_custom_enabled_forward_and_backward_see_autocast():
    a, b = _inputs()
    with amp.autocast("cpu", dtype=cn.float16):
        out = MyMM.apply(a, b)
    assert out.dtype == cn.float16
    out.float().sum().backward()  # NOTE: outside the region: custom_bwd restores the forward's state
    assert MyMM.seen[0] == ("fwd", cn.float32, cn.float32, True)
    assert MyMM.seen[1][2] is True
    assert a.grad.dtype == cn.float32 and b.grad.dtype == cn.float32


def test_custom_bwd_in_another_thread_sees_forward_state():
    a, b = _inputs()
    with amp.autocast("cpu", dtype=cn.bfloat16):
        out = MyMM.apply(a, b)
    worker = threading.Thread(target=lambda: out.float().sum().backward())
    worker.start()
    worker.join()
    assert MyMM.seen[-1][2] is True
    assert a.grad is not None and a.grad.dtype == cn.float32


def test_custom_enabled_without_autocast_stays_off():
    a, b = _inputs()
    out = MyMM.apply(a, b)
    out.sum().backward()
    assert out.dtype == cn.float32
    assert MyMM.seen == [("fwd", cn.float32, cn.float32, False), ("bwd", cn.float32, False)]


def test_custom_cast_inputs_runs_fp32_with_autocast_off():
    a, b = _inputs()
    a16, b16 = a.half(), b.half()
    with amp.autocast("cpu", dtype=cn.float16):
        out = MyMMFp32.apply(a16, b16)
        assert amp.is_autocast_enabled("cpu"), "the forward's disabled region must be closed again"
    assert out.dtype == cn.float32
    assert MyMMFp32.seen[0] == ("fwd", cn.float32, cn.float32, False)
    out.sum().backward()
    assert MyMMFp32.seen[1] == ("bwd", cn.float32, False)
    # the gradients come back in the dtypes of the inputs given to apply (float16 here)
    assert a.grad.dtype == cn.float32 and b.grad.dtype == cn.float32
    np.testing.assert_allclose(a.grad.numpy(), np.ones((3, 5)) @ b16.float().detach().numpy().T, rtol=1e-2)


def test_custom_cast_inputs_grad_dtype_follows_input_dtype():
    a16 = cn.randn(3, 4).half().requires_grad_()
    b16 = cn.randn(4, 5).half().requires_grad_()
    with amp.autocast("cpu", dtype=cn.float16):
        out = MyMMFp32.apply(a16, b16)
    out.sum().backward()
    assert a16.grad.dtype == cn.float16 and b16.grad.dtype == cn.float16


def test_custom_cast_inputs_without_autocast_does_nothing():
    a16 = cn.randn(3, 4).half()
    b16 = cn.randn(4, 5).half()
    out = MyMMFp32.apply(a16, b16)
    assert out.dtype == cn.float16
    assert MyMMFp32.seen[0] == ("fwd", cn.float16, cn.float16, False)


def test_cast_inputs_never_touches_float64_or_ints():
    seen = []

    class Probe(Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=cn.float16)
        def forward(ctx, x, y, pair=None):
            seen.append((x.dtype, y.dtype, [t.dtype for t in pair]))
            return x.array.astype(cn.float32)

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    with amp.autocast("cpu"):
        Probe.apply(cn.randn(2).double(), cn.tensor([1, 2]), pair=[cn.randn(2), cn.randn(2).double()])
    assert seen == [(cn.float64, cn.int64, [cn.float16, cn.float64])]


def test_decorators_without_parentheses():
    class Twice(Function):
        @staticmethod
        @amp.custom_fwd
        def forward(ctx, x):
            return x.array * 2

        @staticmethod
        @amp.custom_bwd
        def backward(ctx, grad):
            return grad * 2

    x = cn.randn(3, requires_grad=True)
    Twice.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0, dtype=np.float32))


def test_bad_arguments():
    with pytest.raises(ValueError, match="custom_fwd: cast_inputs must be a floating dtype .*got int32"):
        amp.custom_fwd(cast_inputs=cn.int32)
    with pytest.raises(ValueError, match="custom_fwd: unknown device_type 'gpu'"):
        amp.custom_fwd(device_type="gpu")
    with pytest.raises(ValueError, match="custom_bwd: unknown device_type 'tpu'"):
        amp.custom_bwd(device_type="tpu")
    with pytest.raises(TypeError, match="custom_fwd: expected the static forward/backward function"):
        amp.custom_fwd(42)
    with pytest.raises(TypeError, match="custom_bwd: expected the static forward/backward function"):
        amp.custom_bwd("backward")

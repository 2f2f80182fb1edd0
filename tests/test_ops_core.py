"""Core arithmetic, shape, sum/mean and matmul ops through the shared harness."""

import numpy as np
import pytest
from op_harness import check_op

import cupynet as cn


@pytest.mark.parametrize("fn", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b * b + 1),
])
def test_binary_broadcast(fn):
    check_op([(3, 4), (4,)], fn)


def test_pow_scalar_and_tensor():
    check_op([(3, 4)], lambda a: a ** 3)
    check_op([(3, 4), (3, 4)], lambda a, b: a ** b, low=0.5, high=2.0)


def test_matmul_shapes():
    check_op([(3, 4), (4, 5)], lambda a, b: a @ b)
    check_op([(2, 3, 4), (4, 5)], lambda a, b: a @ b)
    check_op([(2, 3, 4), (2, 4, 5)], lambda a, b: a @ b)
    check_op([(4,), (4, 5)], lambda a, b: a @ b)
    check_op([(3, 4), (4,)], lambda a, b: a @ b)


def test_shape_ops():
    check_op([(2, 3, 4)], lambda a: a.reshape(6, 4) * 2)
    check_op([(2, 3, 4)], lambda a: a.permute(2, 0, 1) * 1.5)
    check_op([(2, 1, 4)], lambda a: a.expand(2, 3, 4) * a.expand(2, 3, 4))
    check_op([(2, 3, 4)], lambda a: a.transpose(0, 2).flatten() ** 2)


def test_sum_mean():
    check_op([(2, 3, 4)], lambda a: a.sum(dim=1) ** 2)
    check_op([(2, 3, 4)], lambda a: a.mean(dim=(0, 2), keepdim=True) ** 2)


def test_half_sum_accumulates_in_fp32():
    x = cn.ones(4096, dtype=cn.float16) * 0.1
    # NOTE: a half accumulator would stall near 256; fp32 accumulation then rounding gives ~409.5
    assert abs(float(x.sum().item()) - 409.5) < 1.0


def test_matmul_shape_mismatch_names_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"matmul: shapes \(3, 4\) and \(5, 6\) cannot be multiplied"):
        cn.randn(3, 4) @ cn.randn(5, 6)


def test_int_tensor_to_a_floating_op_promotes_as_torch():
    # NOTE: torch.tensor([1, 2, 3]).exp() is float32 (the default dtype): integer inputs promote (issue 16)
    out = cn.tensor([1, 2, 3]).exp()
    assert out.dtype == cn.float32
    np.testing.assert_allclose(out.numpy(), np.exp(np.array([1, 2, 3], dtype=np.float32)), rtol=2.0 ** -22)
    assert cn.tensor([1, 2, 3]).sigmoid().dtype == cn.float32


def test_int_times_float_scalar_is_float32():
    assert (cn.tensor([1, 2]) * 2.5).dtype == cn.float32
    assert np.allclose((cn.tensor([1, 2]) * 2.5).numpy(), [2.5, 5.0])


def test_zero_dim_tensor_does_not_promote_like_pytorch():
    h = cn.ones(3, dtype=cn.float16, requires_grad=True)
    s = cn.tensor(2.0, requires_grad=True)  # 0-d float32
    y = h * s
    assert y.dtype == cn.float16  # PyTorch: float16
    y.sum().backward()
    assert s.grad.dtype == cn.float32 and s.grad.item() == 3.0
    assert h.grad.dtype == cn.float16
    assert (cn.ones(3, dtype=cn.float16) * cn.ones(1)).dtype == cn.float32  # both dimensioned: normal promotion


@pytest.mark.parametrize("dtype", [cn.float16, cn.float32, cn.float64])
def test_arithmetic_backward_on_arrays_equals_the_recorded_backward(dtype):
    # NOTE: without create_graph, mul/div/sub backward runs on raw arrays; it must give the op path's bits
    rng = np.random.default_rng(5)
    a = cn.tensor(rng.uniform(0.5, 2, (3, 4)), dtype=dtype, requires_grad=True)
    b = cn.tensor(rng.uniform(0.5, 2, (4,)), dtype=dtype, requires_grad=True)
    c = cn.tensor(rng.uniform(0.5, 2, (3, 1)), dtype=dtype, requires_grad=True)

    def loss():
        return ((a * b - c) / b + 3.0 * a - a / 7.0 - 2.0 / c).sum()

    fast = cn.autograd.grad(loss(), (a, b, c))
    recorded = cn.autograd.grad(loss(), (a, b, c), create_graph=True)
    for f, r in zip(fast, recorded):
        assert f.dtype == r.dtype and f.shape == r.shape
        assert f.detach().numpy().tobytes() == r.detach().numpy().tobytes()


def test_arithmetic_backward_of_0d_tensors_gives_array_gradients():
    a = cn.tensor(3.0, requires_grad=True)
    b = cn.tensor(0.5, requires_grad=True)
    (a * b / b - b).backward()
    assert type(a.grad.array) is np.ndarray and type(b.grad.array) is np.ndarray
    assert a.grad.item() == 1.0 and b.grad.item() == -1.0


def test_number_over_tensor_rounds_as_torch_both_as_operator_and_as_div():
    torch = pytest.importorskip("torch")
    # NOTE: every step is one correctly rounded IEEE operation, so the bits are the same on any CPU
    x = np.linspace(0.3, 9.7, 97).astype(np.float32)
    differ = 0
    for number in (3.0, 10.0, 0.7):
        want_op = (number / torch.tensor(x)).numpy()  # reciprocal(x) * number, PyTorch's __rdiv__
        want_div = torch.div(number, torch.tensor(x)).numpy()  # a true division
        differ += int((want_op != want_div).sum())
        np.testing.assert_array_equal((number / cn.tensor(x)).numpy(), want_op)
        np.testing.assert_array_equal(cn.div(number, cn.tensor(x)).numpy(), want_div)
    assert differ > 0  # the two roundings really differ on these values, so both paths are told apart

"""torch's small Tensor methods that real programs call (issue 13): metadata, new_* factories, narrow, t."""

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")


def _pair(shape=(3, 4), dtype="float32"):
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return cn.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("layout", ["plain", "T", "slice"])
def test_metadata_matches_torch(layout):
    x, tx = _pair((3, 4, 2))
    view = {"plain": lambda v: v, "T": lambda v: v.transpose(0, 2), "slice": lambda v: v[:, ::2]}[layout]
    x, tx = view(x), view(tx)
    assert x.stride() == tx.stride() and x.stride(1) == tx.stride(1)
    assert x.is_contiguous() == tx.is_contiguous()
    assert (x.nelement(), x.ndimension(), x.element_size()) == (tx.nelement(), tx.ndimension(), tx.element_size())
    assert x.nbytes == tx.nbytes and x.is_floating_point() and not cn.ones(2, dtype=cn.int64).is_floating_point()
    assert (x.is_cpu, x.is_xpu, x.get_device()) == (tx.is_cpu, tx.is_xpu, tx.get_device())
    assert x.data_ptr() == x.array.__array_interface__["data"][0]


def test_new_factories_follow_dtype_and_device_as_torch():
    x, tx = _pair(dtype="float64")
    for name, args in (("new_zeros", (2, 3)), ("new_ones", ((2, 3),)), ("new_full", ((2,), 7.5)),
                       ("new_empty", (0, 2))):
        got, want = getattr(x, name)(*args), getattr(tx, name)(*args)
        assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype).replace("torch.", "")
        if name != "new_empty":
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    made = x.new_tensor([1, 2], requires_grad=True)
    assert made.dtype == cn.float64 and made.requires_grad and made.grad_fn is None
    assert x.new_zeros(2, dtype=cn.int32).dtype == cn.int32
    assert x.type_as(cn.ones(1, dtype=cn.float16)).dtype == cn.float16
    assert x.reshape_as(cn.ones(4, 3)).shape == (4, 3)
    assert x.pin_memory() is x and x.share_memory_() is x and not x.is_pinned()


@pytest.mark.parametrize("dim, start, length", [(0, 1, 2), (1, -3, 2), (-1, 0, 0), (1, 4, 0)])
def test_narrow_is_a_view_with_torch_values_and_gradients(dim, start, length):
    x, tx = _pair()
    x.requires_grad_(True)
    tx.requires_grad_(True)
    y, ty = x.narrow(dim, start, length), tx.narrow(dim, start, length)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    (y * 2).sum().backward()
    (ty * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert cn.narrow(x.detach(), dim, start, length).array.base is not None  # NOTE: a view, as torch's


def test_t_and_bad_inputs_as_torch():
    x, tx = _pair()
    np.testing.assert_array_equal(x.t().numpy(), tx.t().numpy())
    assert cn.t(cn.ones(3)).shape == (3,) and cn.t(cn.tensor(1.0)).shape == ()
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        cn.ones(2, 2, 2).t()
    with pytest.raises(IndexError, match="exceeds dimension size"):
        x.narrow(1, 3, 2)
    with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim tensor"):
        cn.tensor(1.0).narrow(0, 0, 1)


@pytest.mark.parametrize("size", [("a",), (2, -1), ((2, 1.5),)])
def test_new_factories_refuse_a_bad_size_naming_it(size):
    with pytest.raises(TypeError, match="argument 'size' must be a tuple of non-negative ints"):
        cn.ones(2).new_zeros(*size)

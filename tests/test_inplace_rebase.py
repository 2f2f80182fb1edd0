"""In-place ops on graph tensors rebase history as in PyTorch, or refuse with PyTorch's error; checked against torch."""

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")


def pair(values, requires_grad=True):
    return (cn.tensor(np.array(values, np.float64), requires_grad=requires_grad),
            torch.tensor(np.array(values, np.float64), requires_grad=requires_grad))


EPS = np.finfo(np.float64).eps


def same(a, b):
    """Equal up to a few float64 roundings (a BLAS may sum a product in another order than torch)."""
    mine, theirs = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(mine, theirs, rtol=8 * EPS, atol=8 * EPS * float(np.abs(theirs).max(initial=1.0)))


CASES = {  # the same program for both libraries: (inputs) -> loss
    "accumulate a sum": lambda lib, x, w: _accumulate(x, w),
    "residual add": lambda lib, x, w: _residual(lib, x, w),
    "scale in place": lambda lib, x, w: _scaled(x, w),
    "subtract and divide": lambda lib, x, w: _sub_div(x, w),
    "add with alpha": lambda lib, x, w: _alpha(x, w),
    "constant joins the graph": lambda lib, x, w: _constant_joins(lib, x, w),
}


def _accumulate(x, w):
    total = (x * w).sum()
    for k in range(3):
        total += (x ** (k + 2)).sum()  # the gradient-penalty shape: grad_norm += g.pow(2).sum()
    return total


def _residual(lib, x, w):
    out = lib.matmul(lib.outer(w, w), lib.tanh(x))
    out += x  # a ResNet block's out += identity (matmul keeps its inputs, not its output)
    return lib.relu(out).sum()


def _scaled(x, w):
    y = x * w
    y *= w
    return (y * y).sum()


def _sub_div(x, w):
    y = x + w
    y -= x * 3
    y /= w + 2
    return y.sum()


def _alpha(x, w):
    y = x * 1.5
    y.add_(w, alpha=-2.0)
    return (y ** 2).sum()


def _constant_joins(lib, x, w):
    acc = lib.zeros(3, dtype=x.dtype)
    acc += x * w  # acc needs no grad, x does: acc joins the graph
    return (acc ** 2).sum()


def check_against_torch(program, x_values, w_values):
    """Run ``program(lib, x, w) -> loss`` in cupynet and torch: the losses and both gradients must match."""
    (x, tx), (w, tw) = pair(x_values), pair(w_values)
    loss, tloss = program(cn, x, w), program(torch, tx, tw)
    same(loss, tloss)
    loss.backward()
    tloss.backward()
    same(x.grad, tx.grad)
    same(w.grad, tw.grad)


@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_match_torch(name):
    check_against_torch(CASES[name], [0.5, -1.0, 2.0], [1.5, 0.25, -0.75])


def test_the_tensor_takes_the_new_node_and_keeps_its_memory():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    memory, version = y.array, y._version
    y += 1
    assert y.grad_fn.name() == "AddBackward" and y.array is memory and y._version == version + 1
    assert y.tolist() == [3.0, 5.0] and y.requires_grad and not y.is_leaf


def test_double_backward_through_a_rebased_tensor():
    (x, tx), _ = pair([0.5, -1.0, 2.0]), None
    y, ty = x * x, tx * tx
    y += x
    ty += tx
    (g,) = cn.autograd.grad(y.sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
    same(g, tg)
    (gg,) = cn.autograd.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    same(gg, tgg)


def test_a_saved_output_written_over_is_an_error_at_backward_as_in_torch():
    x, tx = pair([0.5, -1.0, 2.0])
    y, ty = x.exp(), tx.exp()  # exp keeps its output for backward
    y += 1
    ty += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_an_activation_that_keeps_its_output_cannot_be_added_to_in_place_as_in_torch():
    x, tx = pair([0.5, -1.0, 2.0])
    out, tout = cn.tanh(x), torch.tanh(tx)
    out += x
    tout += tx
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tout.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation: output 0 of TanhBackward"):
        out.sum().backward()


def test_a_saved_input_written_over_is_an_error_at_backward_as_in_torch():
    x, tx = pair([0.5, -1.0, 2.0])
    h, th = x * 2, tx * 2
    y, ty = h * h, th * th  # mul saves h
    h += 1
    th += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_leaf_that_requires_grad_is_refused_and_unchanged():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x += 1
    assert x.tolist() == [1.0, 2.0] and x._version == 0


def test_a_view_in_a_graph_rebases_its_base_as_in_torch():
    x, tx = pair([[1.0, 2.0], [3.0, 4.0]])
    v, tv = (x * 1).T, (tx * 1).T  # memory is a view: the base's history takes the write (CopySlices)
    v += x
    tv += tx
    same(v, tv)
    (v * v).sum().backward()
    (tv * tv).sum().backward()
    same(x.grad, tx.grad)


def test_a_broadcast_that_would_grow_the_tensor_is_refused_as_in_torch():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    with pytest.raises(RuntimeError, match=r"add_: output with shape \[2\] doesn't match the broadcast shape \[3, 2\]"):
        y += cn.ones(3, 2)
    assert y.tolist() == [1.0, 2.0] and y.grad_fn.name() == "MulBackward"


def test_no_grad_and_plain_tensors_record_nothing():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    with cn.no_grad():
        x += 1  # what optimizers do
    assert x.is_leaf and x.tolist() == [2.0, 3.0]
    buf = cn.zeros(2)
    buf += cn.ones(2)
    assert buf.grad_fn is None and not buf.requires_grad


def test_half_precision_accumulator_takes_its_own_dtype_with_a_gradient():
    x = cn.tensor([1.0, 2.0], requires_grad=True)  # float32
    acc = cn.zeros(2, dtype=cn.float16)
    acc += x * 3
    assert acc.dtype == cn.float16
    acc.sum().backward()
    assert x.grad.dtype == cn.float32 and x.grad.tolist() == [3.0, 3.0]


def test_unsqueeze_and_squeeze_in_place_keep_the_memory_and_refuse_graph_tensors():
    # NOTE: the char-RNN generation tutorial's target_line_tensor.unsqueeze_(-1)
    t = cn.tensor([1, 2, 3])
    memory, version = t.array, t._version
    assert t.unsqueeze_(-1) is t and t.shape == (3, 1) and np.shares_memory(t.array, memory)
    assert t._version == version + 1
    assert t.squeeze_().shape == (3,) and t.squeeze_(0).shape == (3,)
    with pytest.raises(IndexError):
        t.unsqueeze_(2)
    assert t.shape == (3,)
    leaf = cn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"unsqueeze_: changing the shape of a tensor that requires grad in place is "
                                           r"not supported by cupynet .* use unsqueeze\(\)"):
        leaf.unsqueeze_(0)
    assert leaf.shape == (2,)
    with cn.no_grad():
        assert leaf.unsqueeze_(0).shape == (1, 2)

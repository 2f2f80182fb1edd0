"""Writes through views, ``__setitem__`` and in-place ops on graph tensors, version counters, ``.data`` and
``format``: each checked against torch running the same program (values, gradients, errors, versions)."""

import pytest
from test_inplace_rebase import check_against_torch, pair, same  # one torch-twin runner for the in-place tests

import cupynet as cn

torch = pytest.importorskip("torch")

X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 3.0, 0.125]]
W = [0.75, -1.25, 2.5]


def _slice_mul(lib, x, w):
    y = x * 1
    y[:, 0].mul_(w)  # a column view: the base's history must include the write
    return (y * y).sum()


def _transpose_add(lib, x, w):
    y = x * 2
    y.T.add_(lib.outer(w, w))
    return (y ** 3).sum()


def _reshape_view(lib, x, w):
    y = x * 1
    y.view(-1)[1:4].mul_(w)
    return (y * x).sum()


def _view_of_view(lib, x, w):
    y = x * w
    y[1:][:, 1].add_(w[:2] * 3)
    return (y ** 2).sum()


def _setitem_into_plain(lib, x, w):
    z = lib.zeros(3, 3, dtype=x.dtype)
    z[:, 0] = x[:, 1] * w  # z needs no grad, the value does: z joins the graph
    z[2] = w
    return (z * z).sum()


def _setitem_mask(lib, x, w):
    y = x * w
    y[y > 0.5] = 0
    return (y * x).sum()


def _setitem_value_broadcast(lib, x, w):
    y = x + 1
    y[0:2] = w  # a (3,) value written into two rows: its gradient sums both
    return (y ** 2 * x).sum()


def _setitem_advanced(lib, x, w):
    y = x * 2
    y[[0, 2], 1] = w[:2]
    return (y ** 2).sum()


def _masked_fill(lib, x, w):
    y = x * w
    y.masked_fill_(x < 0, 0.5)
    return (y ** 2).sum()


def _copy_into_view(lib, x, w):
    y = x * 3
    y[1].copy_(w * w)
    return (y * x).sum()


def _zero_and_fill(lib, x, w):
    y = x * w
    y[0].zero_()
    y[:, 2].fill_(1.5)
    return (y * y).sum()


def _fill_with_tensor(lib, x, w):
    y = x * 1
    y[2].fill_(w.sum())
    return (y * x).sum()


def _clamp(lib, x, w):
    y = x * w
    y.clamp_(min=-0.5, max=1.0)
    return (y * x).sum()


def _sibling_view(lib, x, w):
    y = x * 1
    first = y[0]  # made before the write through another view of y
    y[0:2].mul_(w)
    return (first * first).sum() + y.sum()


def _base_written_view_read(lib, x, w):
    y = x * 1
    row = y[1]
    y.mul_(w)  # the base itself: the view must see the new history
    return (row ** 2).sum()


def _dunders_on_view(lib, x, w):
    y = x * 1
    v = y[:, 1:]
    v += 1
    v -= w[1:]
    v *= w[:2]
    v /= 4
    return (y ** 2).sum()


CASES = {f.__name__.lstrip("_"): f for f in (
    _slice_mul, _transpose_add, _reshape_view, _view_of_view, _setitem_into_plain, _setitem_mask,
    _setitem_value_broadcast, _setitem_advanced, _masked_fill, _copy_into_view, _zero_and_fill, _fill_with_tensor,
    _clamp, _sibling_view, _base_written_view_read, _dunders_on_view)}


@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_match_torch(name):
    check_against_torch(CASES[name], X, W)


@pytest.mark.parametrize("name", ["slice_mul", "view_of_view", "setitem_into_plain", "sibling_view"])
def test_second_order_gradients_match_torch(name):
    (x, tx), (w, tw) = pair(X), pair(W)
    (g,) = cn.autograd.grad(CASES[name](cn, x, w), x, create_graph=True)
    (tg,) = torch.autograd.grad(CASES[name](torch, tx, tw), tx, create_graph=True)
    same(g, tg)
    (gw,) = cn.autograd.grad((g * g).sum(), w)
    (tgw,) = torch.autograd.grad((tg * tg).sum(), tw)
    same(gw, tgw)


def test_the_base_takes_a_copy_slices_node_and_the_view_is_made_again():
    x = cn.tensor(X, requires_grad=True)
    y = x * 1
    v = y[0]
    v.add_(1)
    assert y.grad_fn.name() == "CopySlicesBackward" and v.grad_fn.name() == "GetItemBackward"
    assert v.grad_fn.next_edges[0][0] is y.grad_fn


def test_versions_are_shared_by_a_view_and_its_base_as_in_torch():
    x, tx = pair(X)
    seen = []
    for t in (x, tx):
        y = t * 1
        v, r = y[0], y.view(-1)
        v.add_(1)
        y[1] = 0
        r.mul_(2)
        seen.append((y._version, v._version, r._version))
    assert seen[0] == seen[1]


def test_a_saved_tensor_changed_through_a_view_is_an_error_at_backward_as_in_torch():
    x, tx = pair(X)
    for t in (x, tx):
        h = t * 2
        s = h * h  # mul saves h
        h[0] = 5
        with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; expected "
                                               "version 0 instead"):
            s.sum().backward()


def test_a_view_of_a_leaf_that_requires_grad_is_refused_and_unchanged():
    x = cn.tensor(X, requires_grad=True)
    tx = torch.tensor(X, requires_grad=True)
    message = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    with pytest.raises(RuntimeError, match=message):
        tx[0].add_(1)
    with pytest.raises(RuntimeError, match=message):
        x[0].add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x[0] = 1.0  # setitem on the leaf itself
    assert x.tolist() == X and x._version == 0


def test_a_leaf_may_be_written_under_no_grad_through_a_view():
    x = cn.tensor(X, requires_grad=True)
    with cn.no_grad():
        x[0].mul_(0)
        x[1] = 2.0
    assert x.is_leaf and x.tolist()[0] == [0.0, 0.0, 0.0] and x.tolist()[1] == [2.0] * 3


def test_expand_is_not_writable_as_in_torch():
    message = "unsupported operation: more than one element of the written-to tensor refers to a single memory"
    with pytest.raises(RuntimeError, match=message):
        torch.zeros(3).expand(2, 3).add_(1)
    with pytest.raises(RuntimeError, match=message):
        cn.zeros(3).expand(2, 3).add_(1)
    y = cn.tensor(W, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match=message):
        y.expand(2, 3).mul_(2)
    assert y.tolist() == W


def test_split_and_unbind_pieces_in_a_graph_are_refused_as_in_torch():
    y = cn.tensor(X, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="Output 0 of SplitBackward is a view and is being modified inplace. "
                                           "This view is the output of a function that returns multiple views"):
        y.split(2)[0].add_(1)
    with pytest.raises(RuntimeError, match="Output 1 of UnbindBackward is a view"):
        y.unbind(0)[1].mul_(2)
    assert y.tolist() == X and y._version == 0
    plain = cn.tensor(X)
    plain.split(1)[0].add_(1)  # no graph: allowed, as in torch
    assert plain.tolist()[0] == [1.5, 0.0, 3.0] and plain._version == 1


def test_a_view_made_under_no_grad_written_with_grad_on_is_refused_as_in_torch():
    y = cn.tensor(X, requires_grad=True) * 1
    ty = torch.tensor(X, requires_grad=True) * 1
    with cn.no_grad():
        v = y[0]
    with torch.no_grad():
        tv = ty[0]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
        tv.add_(1)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
        v.add_(1)
    assert y.tolist() == X


def test_a_bad_write_into_a_graph_tensor_leaves_it_untouched():
    y = cn.tensor(X, requires_grad=True) * 1
    node = y.grad_fn
    with pytest.raises(RuntimeError, match="setitem_: cannot assign a value of shape"):
        y[:, 0] = cn.ones(2)
    with pytest.raises(RuntimeError, match=r"add_: output with shape \[3\] doesn't match the broadcast shape"):
        y[0].add_(cn.ones(2, 3))
    with pytest.raises(RuntimeError, match="copy_: the size of src"):
        y[0].copy_(cn.ones(4))
    assert y.tolist() == X and y.grad_fn is node and y._version == 0


def test_fill_refuses_a_value_tensor_with_dimensions_as_in_torch():
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           "dimensions."):
        torch.zeros(3).fill_(torch.ones(2))
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 "
                                           "dimensions."):
        cn.zeros(3).fill_(cn.ones(2))


# ---- .data ------------------------------------------------------------------------------------------
def test_data_is_a_tensor_sharing_memory_without_history_or_version():
    p = cn.nn.Parameter(cn.tensor([1.0, 2.0]))
    tp = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    for t in (p, tp):
        d = t.data
        assert type(d).__name__ == "Tensor" and not d.requires_grad and d.grad_fn is None
        d.add_(1)
        d.mul_(2)
        assert t.tolist() == [4.0, 6.0]
        assert t._version == 0 and d._version == 2  # NOTE: .data does not share the version counter
    assert p.data.array is p.array


def test_data_ops_that_real_training_code_uses():
    p = cn.nn.Parameter(cn.zeros(2, 3))
    p.data.copy_(cn.ones(2, 3))
    p.data.clamp_(max=0.5)
    assert p.tolist() == [[0.5] * 3] * 2
    p.data.zero_()
    assert p.tolist() == [[0.0] * 3] * 2
    cn.manual_seed(0)
    p.data.normal_(0.0, 0.02)
    assert 0 < float(p.abs().max()) < 0.2 and p.is_leaf and p.requires_grad
    p.data.uniform_(-1.0, -0.5)
    assert all(-1.0 <= v < -0.5 for row in p.tolist() for v in row)


def test_setting_data_replaces_the_array_shape_and_dtype_may_change_as_in_torch():
    p = cn.nn.Parameter(cn.zeros(3))
    tp = torch.nn.Parameter(torch.zeros(3))
    for t, lib in ((p, cn), (tp, torch)):
        t.data = lib.ones(2, 2, dtype=lib.float64)
        assert tuple(t.shape) == (2, 2) and t.dtype == lib.float64 and t.requires_grad and t._version == 0
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        tp.data = 3
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        p.data = 3
    assert tuple(p.shape) == (2, 2)


# ---- format ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", [".4f", ">8", "", "e", ".2%"])
def test_format_of_a_zero_dim_tensor_is_the_scalar_s_as_in_torch(spec):
    assert format(cn.tensor(1.5), spec) == format(torch.tensor(1.5), spec)
    assert format(cn.tensor(3), spec if spec not in (".4f", "e", ".2%") else "d") == \
        format(torch.tensor(3), spec if spec not in (".4f", "e", ".2%") else "d")
    loss = cn.tensor(0.25, requires_grad=True) * 2
    assert f"{loss:.3f}" == "0.500"


def test_format_of_other_tensors_takes_only_the_empty_spec_as_in_torch():
    assert format(cn.ones(2), "") == str(cn.ones(2))
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        format(torch.ones(2), ".4f")
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        format(cn.ones(2), ".4f")

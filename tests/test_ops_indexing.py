"""Indexing ops: getitem/setitem, gather/scatter_add/index_select, where/masked_fill, cat/stack/split/chunk/unbind,
tril/triu, repeat/tile, flip, roll."""

import numpy as np
import pytest
from op_harness import check_op, host

import cupynet as cn
from cupynet import ops
from cupynet.ops import indexing


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# ---- getitem ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda a: a[1], lambda a: a[:, 1:3], lambda a: a[..., None, 0], lambda a: a[None, 1:, ..., ::2],
    lambda a: a[[0, 0, 2]],                      # repeated rows: the gradient accumulates
    lambda a: a[[0, 2, 0], [1, 1, 1]],           # repeated elements
    lambda a: a[1:, [3, 0, 3]],                  # slice + array
    lambda a: a[[[0], [2]], [1, 2]] * 2.0,       # broadcast index arrays
])
def test_getitem_matches_torch(fn):
    check_op([(3, 4)], fn)


def test_getitem_negative_steps(torch):
    check_op([(3, 4)], lambda a: a[::-1, 3:0:-2], lambda a: a.flip(0)[:, [3, 1]])


def test_getitem_with_tensors_and_masks(torch):
    mask = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
    check_op([(3, 4)], lambda a: a[cn.tensor(mask)], lambda a: a[torch.tensor(mask)])
    check_op([(3, 4)], lambda a: a[cn.tensor([2, 2, 0])] ** 2, lambda a: a[torch.tensor([2, 2, 0])] ** 2)
    check_op([(3, 4)], lambda a: a[:, np.array([True, False, True, True])],
             lambda a: a[:, torch.tensor([True, False, True, True])])
    assert cn.randn(3, 4)[cn.tensor(1)].shape == (4,)
    assert cn.randn(3, 4)[[]].shape == (0, 4)


def test_getitem_gradient_accumulates_repeats_in_half():
    x = cn.zeros(2, dtype=cn.float16, requires_grad=True)
    x[[0] * 3000 + [1]].sum().backward()
    # NOTE: fp32 accumulation: a half accumulator would stop at 2048
    assert x.grad.tolist() == [3000.0, 1.0] and x.grad.dtype == cn.float16


def test_basic_index_is_a_view_sharing_the_version_counter():
    x = cn.zeros(3, 4)
    row = x[1]
    row.add_(1.0)
    assert x.numpy()[1].tolist() == [1.0] * 4 and x._version == row._version == 1
    assert x[[1]]._version == 0  # advanced indexing copies


def test_getitem_bad_indices():
    x = cn.randn(3, 4)
    with pytest.raises(IndexError, match=r"getitem: index 5 is out of bounds .* tensor of shape \(3, 4\)"):
        x[5]
    with pytest.raises(IndexError, match=r"getitem: index 7 is out of bounds"):
        x[:, [0, 7]]
    with pytest.raises(IndexError, match=r"getitem: tensors used as indices must be long, int, byte or bool.*float32"):
        x[cn.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match=r"getitem: only integers, slices, None, Ellipsis .* got float 1.5"):
        x[1.5]


# ---- setitem_ ----------------------------------------------------------------------------------------------
def test_setitem_writes_in_place_and_bumps_version():
    x = cn.zeros(3, 4)
    x[0] = 1.0
    x[1:, [0, 3]] = cn.tensor([[2.0, 3.0]], dtype=cn.float64)  # cast to float32, broadcast over rows
    x[x > 2.5] = -1.0
    assert x.numpy().tolist() == [[1.0] * 4, [2.0, 0.0, 0.0, -1.0], [2.0, 0.0, 0.0, -1.0]]
    assert x._version == 3 and x.dtype == cn.float32


def test_setitem_rules_and_errors_leave_state_untouched():
    w = cn.zeros(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="setitem_: a leaf Variable that requires grad is being used in an in-place"):
        w[0] = 1.0
    with cn.no_grad():
        w[0] = 1.0  # allowed without grad mode, as in PyTorch (initialisation)
    assert w.detach().numpy().tolist() == [[1.0] * 3, [0.0] * 3]
    x = cn.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"setitem_: cannot assign a value of shape \(4,\) into a tensor of shape"):
        x[0] = cn.zeros(4)
    with pytest.raises(IndexError, match=r"setitem_: index 9 is out of bounds"):
        x[9] = 0.0
    assert x.numpy().tolist() == [[1.0] * 3] * 2 and x._version == 0


# ---- gather / scatter_add / index_select ----------------------------------------------------------------
def test_gather_scatter_index_select_match_torch(torch):
    idx = np.array([[0, 0, 3], [1, 2, 2]])
    check_op([(2, 4)], lambda a: a.gather(1, cn.tensor(idx)), lambda a: a.gather(1, torch.tensor(idx)))
    idx0 = np.array([[2, 0, 2, 1], [0, 0, 1, 2]])
    check_op([(3, 4)], lambda a: ops.gather(a, 0, cn.tensor(idx0)), lambda a: torch.gather(a, 0, torch.tensor(idx0)))
    sidx = np.array([[0, 0, 2], [2, 2, 2]])
    check_op([(3, 4), (2, 3)], lambda a, s: a.scatter_add(0, cn.tensor(sidx), s),
             lambda a, s: a.scatter_add(0, torch.tensor(sidx), s))
    check_op([(3, 4)], lambda a: a.index_select(1, cn.tensor([3, 0, 3])),
             lambda a: a.index_select(1, torch.tensor([3, 0, 3])))


def test_scatter_add_src_larger_than_index():
    # NOTE: PyTorch 2.x's own backward fails here (src grad of the index's shape), so gradcheck is the oracle
    sidx = cn.tensor([[0, 0, 2], [2, 2, 2]])
    a, src = np.arange(12.0).reshape(3, 4), np.arange(10.0).reshape(2, 5)
    want = a.copy()
    np.add.at(want, (sidx.numpy(), np.arange(3)[None, :]), src[:, :3])
    assert cn.tensor(a).scatter_add(0, sidx, cn.tensor(src)).tolist() == want.tolist()
    inputs = (cn.tensor(a, dtype=cn.float64, requires_grad=True), cn.tensor(src, dtype=cn.float64, requires_grad=True))
    cn.autograd.gradcheck(lambda x, s: ops.scatter_add(x, 0, sidx, s) ** 2, inputs)
    cn.autograd.gradgradcheck(lambda x, s: ops.scatter_add(x, 0, sidx, s) ** 2, inputs)


def test_gather_scatter_bad_inputs_name_the_op():
    x = cn.randn(2, 3)
    with pytest.raises(RuntimeError, match=r"gather: expected index to be an int32 or int64 tensor, got float32"):
        x.gather(1, cn.tensor([[0.0]]))
    with pytest.raises(RuntimeError, match=r"gather: Index tensor must have the same number of dimensions as input"):
        x.gather(1, cn.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"gather: Size does not match at dimension 0: .*\(3, 1\).*\(2, 3\)"):
        x.gather(1, cn.tensor([[0], [0], [0]]))
    with pytest.raises(IndexError, match=r"gather: index 3 is out of bounds"):
        x.gather(1, cn.tensor([[3]]))
    with pytest.raises(RuntimeError, match=r"scatter_add: Expected self.dtype to be equal to src.dtype"):
        x.scatter_add(0, cn.tensor([[0]]), cn.ones(1, 1, dtype=cn.float64))
    with pytest.raises(IndexError, match=r"index_select: expected index with 0 or 1 dimensions, got shape \(1, 1\)"):
        x.index_select(0, cn.tensor([[0]]))


# ---- where / masked_fill ---------------------------------------------------------------------------------
def test_where_and_masked_fill_match_torch(torch):
    cond = np.array([[True, False, True, False]])
    check_op([(3, 4), (4,)], lambda a, b: ops.where(cn.tensor(cond), a, b),
             lambda a, b: torch.where(torch.tensor(cond), a, b))
    check_op([(3, 4)], lambda a: ops.where(cn.tensor(cond), a, 0.5), lambda a: torch.where(torch.tensor(cond), a, 0.5))
    check_op([(3, 4)], lambda a: a.masked_fill(cn.tensor(cond), -1.0),
             lambda a: a.masked_fill(torch.tensor(cond), -1.0))
    check_op([(3, 4), ()], lambda a, v: a.masked_fill(cn.tensor(cond), v),
             lambda a, v: a.masked_fill(torch.tensor(cond), v))


def test_where_promotes_and_keeps_nonfinite_gradients_out():
    half, full = cn.randn(3, dtype=cn.float16), cn.randn(3)
    cond = cn.tensor([True, False, True])
    assert ops.where(cond, half, full).dtype == cn.float32 and ops.where(cond, half, 0.0).dtype == cn.float16
    assert ops.where(cond, cn.tensor([1, 2, 3]), 0.5).dtype == cn.float32
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    ops.where(cn.tensor([True, False]), x, 0.0).backward(cn.tensor([1.0, float("inf")]))
    assert x.grad.tolist() == [1.0, 0.0]  # NOTE: not nan: the unselected inf never meets a 0 multiplier
    assert [t.tolist() for t in ops.where(cn.tensor([[True, False], [False, True]]))] == [[0, 1], [0, 1]]


def test_masked_fill_in_place_and_errors():
    x = cn.zeros(2, 3)
    x.masked_fill_(cn.tensor([True, False, True]), 7.0)
    assert x.numpy().tolist() == [[7.0, 0.0, 7.0]] * 2 and x._version == 1
    with pytest.raises(RuntimeError, match=r"masked_fill: expected mask to be a boolean tensor, but got .*int64"):
        x.masked_fill(cn.tensor([1, 0, 1]), 1.0)
    with pytest.raises(RuntimeError, match=r"masked_fill_: only supports a 0-dimensional value tensor"):
        x.masked_fill_(cn.tensor([True, False, True]), cn.ones(3))
    with pytest.raises(RuntimeError, match=r"masked_fill_: mask of shape \(4, 2, 3\) does not broadcast to"):
        x.masked_fill_(cn.ones(4, 2, 3).bool(), 1.0)
    with pytest.raises(RuntimeError, match=r"where: shapes cannot be broadcast together: condition \(2,\), input"):
        ops.where(cn.tensor([True, False]), cn.ones(3), 0.0)
    assert x._version == 1


# ---- cat / stack / split / chunk / unbind --------------------------------------------------------------
def test_joining_and_splitting_match_torch(torch):
    check_op([(2, 3), (1, 3), (4, 3)], lambda a, b, c: cn.cat([a, b, c]), lambda a, b, c: torch.cat([a, b, c]))
    check_op([(2, 3), (2, 1)], lambda a, b: cn.cat((a, b), dim=-1), lambda a, b: torch.cat((a, b), dim=-1))
    check_op([(2, 3), (2, 3)], lambda a, b: cn.stack([a, b], 1), lambda a, b: torch.stack([a, b], 1))
    check_op([(5, 3)], lambda a: a.split(2))
    check_op([(3, 5)], lambda a: a.split([1, 4], dim=1))
    check_op([(5, 3)], lambda a: a.chunk(3))
    check_op([(3, 2)], lambda a: a.unbind(1))
    check_op([(3, 2)], lambda a: a.split(2)[1] * 3.0)  # an unused piece gets zero gradient


def test_joining_promotes_dtypes():
    half, full = cn.randn(2, 3, dtype=cn.float16), cn.randn(1, 3)
    assert cn.cat([half, full]).dtype == cn.float32 and cn.stack([half, half]).dtype == cn.float16
    assert [p.shape for p in cn.chunk(cn.arange(6), 4)] == [(2,), (2,), (2,)]


def test_joining_bad_inputs_name_the_tensors():
    a = cn.randn(2, 3)
    with pytest.raises(RuntimeError, match=r"cat: expects each tensor to have matching sizes except in dimension 0, "
                                           r"but tensors\[0\] has shape \(2, 3\) and tensors\[2\] has shape \(1, 4\)"):
        cn.cat([a, a, cn.randn(1, 4)])
    with pytest.raises(RuntimeError, match=r"stack: expects each tensor to have equal size, but tensors\[0\] has "
                                           r"shape \(2, 3\) and tensors\[1\] has shape \(3, 3\)"):
        cn.stack([a, cn.randn(3, 3)])
    with pytest.raises(RuntimeError, match=r"cat: Tensors must have same number of dimensions"):
        cn.cat([a, cn.randn(3)])
    for parts, at in (([cn.tensor(1.0)], 0), ([cn.zeros(2), cn.tensor(1.0)], 1), ([cn.zeros(0), cn.tensor(1.0)], 1)):
        with pytest.raises(RuntimeError, match=rf"cat: zero-dimensional tensor \(at position {at}\) cannot be "
                                               r"concatenated"):  # torch's text (the BiLSTM-CRF tutorial hits it)
            cn.cat(parts)
    with pytest.raises(RuntimeError, match=r"cat: expected a non-empty list of Tensors"):
        cn.cat([])
    with pytest.raises(TypeError, match=r"stack: expected Tensors, but tensors\[1\] is ndarray"):
        cn.stack([a, np.zeros((2, 3))])
    with pytest.raises(RuntimeError, match=r"split: split_sizes must be .* sum exactly to 2 .* split_sizes=\[1, 2\]"):
        a.split([1, 2])
    with pytest.raises(RuntimeError, match=r"chunk: expects `chunks` to be a positive int, got 0"):
        a.chunk(0)


# ---- rearranging ----------------------------------------------------------------------------------------
def test_rearranging_ops_match_torch(torch):
    check_op([(3, 4)], lambda a: a.tril())
    check_op([(2, 3, 4)], lambda a: a.triu(1) + a.tril(-1) * 2.0)
    check_op([(2, 3)], lambda a: a.repeat(2, 1, 3))
    check_op([(2, 3)], lambda a: a.tile((2,)))
    check_op([(2, 3, 4)], lambda a: a.flip((0, -1)))
    check_op([(3, 4)], lambda a: a.roll(1, 0) * a.roll((2, -1), (1, 0)))
    check_op([(3, 4)], lambda a: a.roll(5))


def test_rearranging_bad_inputs():
    with pytest.raises(RuntimeError, match=r"repeat: Number of dimensions of repeat dims \(1\) can not be smaller"):
        cn.randn(2, 3).repeat(2)
    with pytest.raises(RuntimeError, match=r"tril: input tensor must have at least 2 dimensions, got shape \(3,\)"):
        cn.randn(3).tril()
    with pytest.raises(RuntimeError, match=r"flip: dims \(0, -2\) name the same dimension more than once"):
        cn.randn(2, 3).flip((0, -2))
    with pytest.raises(RuntimeError, match=r"roll: shifts and dimensions must align"):
        cn.randn(2, 3).roll((1, 2), 0)


# ---- policies ------------------------------------------------------------------------------------------
def test_policies_follow_the_amp_reference():
    promote = {indexing.ScatterAdd, indexing.Cat, indexing.Stack}
    classes = [c for c in cn.ops.OP_CLASSES if c.__module__ == indexing.__name__]
    assert promote <= set(classes) and {indexing.Flip, indexing.Tril, indexing.Split} <= set(classes)
    assert {c: c.amp_policy for c in classes} == {c: ("promote" if c in promote else None) for c in classes}


def test_cat_and_scatter_add_promote_under_autocast():
    from cupynet import amp
    half, full = cn.randn(2, 3, dtype=cn.float16), cn.randn(2, 3)
    with amp.autocast("cpu", dtype=cn.float16):
        assert cn.cat([half, full]).dtype == cn.float32 and cn.stack([half, half]).dtype == cn.float16
        out = half.scatter_add(0, cn.tensor([[1, 0, 1]]), full)
    assert out.dtype == cn.float32
    np.testing.assert_allclose(host(out), host(half.float().scatter_add(0, cn.tensor([[1, 0, 1]]), full)))

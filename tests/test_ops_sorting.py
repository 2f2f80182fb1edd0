"""sort / argsort / topk / kthvalue / median / unique / searchsorted against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch


def _distinct(*shape, seed=0):
    """float64 values with no ties (ties make the chosen index, hence the gradient, implementation-defined)."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.prod(shape)).reshape(shape) / 7.0 - 1.0


def _pair(array, dtype=None):
    return cn.tensor(array, dtype=dtype), torch.tensor(array)


@pytest.mark.parametrize("dim,descending", [(-1, False), (0, True), (1, False)])
def test_sort_values_and_grads(dim, descending):
    x = _distinct(3, 4, 5)
    check_op([x.shape], lambda t: t.sort(dim=dim, descending=descending)[0], arrays=[x])
    got = cn.sort(cn.tensor(x), dim, descending).indices.numpy()
    np.testing.assert_array_equal(got, torch.sort(torch.tensor(x), dim, descending).indices.numpy())


def test_sort_stable_ties_and_nan_order_match_torch():
    x = np.array([2.0, np.nan, 1.0, 2.0, 1.0, np.nan, -np.inf])
    for descending in (False, True):
        got = cn.sort(cn.tensor(x), descending=descending, stable=True)
        want = torch.sort(torch.tensor(x), descending=descending, stable=True)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(cn.argsort(cn.tensor(x), descending=descending, stable=True).numpy(),
                                      want.indices.numpy())


def test_sort_integers_and_0d():
    a, t = _pair(np.array([[3, 1, 2], [0, 5, 5]], dtype=np.int64))
    np.testing.assert_array_equal(a.sort(descending=True, stable=True).indices.numpy(),
                                  t.sort(descending=True, stable=True).indices.numpy())
    v, i = cn.sort(cn.tensor(3.0))
    assert v.shape == () and i.shape == () and int(i) == 0


@pytest.mark.parametrize("k,dim,largest", [(2, -1, True), (3, 0, False), (0, 1, True)])
def test_topk(k, dim, largest):
    x = _distinct(4, 5)
    check_op([x.shape], lambda t: t.topk(k, dim=dim, largest=largest)[0], arrays=[x])
    got = cn.topk(cn.tensor(x), k, dim, largest)
    np.testing.assert_array_equal(got.indices.numpy(), torch.topk(torch.tensor(x), k, dim, largest).indices.numpy())


def test_kthvalue_and_median_with_grads():
    x = _distinct(3, 5)
    check_op([x.shape], lambda t: cn.kthvalue(t, 2, dim=1)[0], torch_fn=lambda t: torch.kthvalue(t, 2, dim=1)[0],
             arrays=[x])
    check_op([x.shape], lambda t: cn.median(t, dim=0, keepdim=True)[0],
             torch_fn=lambda t: torch.median(t, dim=0, keepdim=True)[0], arrays=[x])
    check_op([x.shape], lambda t: cn.median(t), torch_fn=lambda t: torch.median(t), arrays=[x])
    for fn in ("kthvalue", "median"):
        args = (2, 1) if fn == "kthvalue" else (1,)
        np.testing.assert_array_equal(getattr(cn, fn)(cn.tensor(x), *args).indices.numpy(),
                                      getattr(torch, fn)(torch.tensor(x), *args).indices.numpy())


def test_median_and_nanmedian_with_nan_match_torch():
    x = np.array([[1.0, np.nan, 2.0, 4.0], [3.0, 1.0, 2.0, 0.0], [np.nan, np.nan, np.nan, np.nan]])
    for name in ("median", "nanmedian"):
        got, want = getattr(cn, name)(cn.tensor(x), 1), getattr(torch, name)(torch.tensor(x), 1)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        # NOTE: which NaN of an all-NaN row is reported is implementation-defined (torch's NaN sort is unstable)
        np.testing.assert_array_equal(got.indices.numpy()[:2], want.indices.numpy()[:2])
        assert 0 <= int(got.indices[2]) < 4
        np.testing.assert_array_equal(getattr(cn, name)(cn.tensor(x)).numpy(), getattr(torch, name)(torch.tensor(x)))
    assert np.isnan(cn.median(cn.tensor(np.zeros(0))).item())


def test_bad_inputs_raise_torch_errors():
    x = cn.tensor(_distinct(5))
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        cn.topk(x, 6)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
        cn.kthvalue(x, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        cn.sort(x, dim=2)
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        cn.median(cn.zeros(2, 0), dim=1)
    with pytest.raises(TypeError, match="expected input to be a Tensor"):
        cn.sort([1, 2])


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_matches_torch(dim):
    x = np.array([[3, 1, 3], [3, 1, 3], [0, 2, 2]], dtype=np.int64)
    got = cn.unique(cn.tensor(x), return_inverse=True, return_counts=True, dim=dim)
    want = torch.unique(torch.tensor(x), return_inverse=True, return_counts=True, dim=dim)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(cn.tensor(x).unique().numpy(), torch.tensor(x).unique().numpy())


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_consecutive_matches_torch(dim):
    x = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [3, 1, 1, 1]], dtype=np.int64)
    got = cn.unique_consecutive(cn.tensor(x), return_inverse=True, return_counts=True, dim=dim)
    want = torch.unique_consecutive(torch.tensor(x), return_inverse=True, return_counts=True, dim=dim)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    bounds = np.array([1.0, 2.0, 2.0, 3.0])
    values = np.array([[0.5, 2.0, 3.0], [3.5, 1.0, 2.5]])
    got = cn.searchsorted(cn.tensor(bounds), cn.tensor(values), right=right)
    np.testing.assert_array_equal(got.numpy(), torch.searchsorted(torch.tensor(bounds), torch.tensor(values),
                                                                  right=right).numpy())
    rows = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 9.0]])
    got = cn.searchsorted(cn.tensor(rows), cn.tensor(values), side="right" if right else "left", out_int32=True)
    want = torch.searchsorted(torch.tensor(rows), torch.tensor(values), right=right, out_int32=True)
    assert got.dtype == cn.int32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(cn.bucketize(cn.tensor(values), cn.tensor(bounds), right=right).numpy(),
                                  torch.bucketize(torch.tensor(values), torch.tensor(bounds), right=right).numpy())
    assert int(cn.searchsorted(cn.tensor(bounds), 2.0, right=right)) == int(
        torch.searchsorted(torch.tensor(bounds), 2.0, right=right))


def test_searchsorted_sorter_and_errors():
    seq = np.array([3.0, 1.0, 2.0])
    sorter = np.argsort(seq)
    got = cn.searchsorted(cn.tensor(seq), cn.tensor([2.5]), sorter=cn.tensor(sorter))
    assert got.tolist() == torch.searchsorted(torch.tensor(seq), torch.tensor([2.5]),
                                              sorter=torch.tensor(sorter)).tolist()
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        cn.searchsorted(cn.tensor([[1.0, 2.0]]), cn.tensor([[1.0], [2.0]]))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        cn.searchsorted(cn.tensor(seq), cn.tensor([1.0]), right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        cn.bucketize(cn.tensor([1.0]), cn.tensor([[1.0, 2.0]]))

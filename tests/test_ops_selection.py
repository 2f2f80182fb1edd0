"""nonzero / argwhere / masked_select / count_nonzero / isin / bincount / histc / multinomial (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch

X = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0]])


def test_nonzero_argwhere_count_nonzero():
    a, t = cn.tensor(X), torch.tensor(X)
    np.testing.assert_array_equal(cn.nonzero(a).numpy(), torch.nonzero(t).numpy())
    for g, w in zip(a.nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(cn.argwhere(a).numpy(), torch.argwhere(t).numpy())
    assert cn.nonzero(cn.tensor(2.0)).shape == torch.nonzero(torch.tensor(2.0)).shape
    for dim in (None, 0, (0, 1)):
        np.testing.assert_array_equal(cn.count_nonzero(a, dim).numpy(), torch.count_nonzero(t, dim).numpy())


def test_masked_select_broadcasts_and_differentiates():
    mask = np.array([True, False, True])
    cm, tm = cn.tensor(mask), torch.tensor(mask)
    check_op([(2, 3)], lambda t: cn.masked_select(t, cm), torch_fn=lambda t: torch.masked_select(t, tm))
    check_op([(3,)], lambda t: t.masked_select(cn.tensor([[True], [False]])),
             torch_fn=lambda t: t.masked_select(torch.tensor([[True], [False]])))


def test_isin_bincount_histc():
    e, s = np.array([[1, 2], [3, 4]]), np.array([2, 4, 9])
    for invert in (False, True):
        np.testing.assert_array_equal(cn.isin(cn.tensor(e), cn.tensor(s), invert=invert).numpy(),
                                      torch.isin(torch.tensor(e), torch.tensor(s), invert=invert).numpy())
    assert cn.isin(cn.tensor(e), 3).tolist() == torch.isin(torch.tensor(e), 3).tolist()
    v = np.array([0, 3, 3, 1])
    np.testing.assert_array_equal(cn.bincount(cn.tensor(v), minlength=6).numpy(),
                                  torch.bincount(torch.tensor(v), minlength=6).numpy())
    for dtype in (np.float32, np.float64):
        w = np.array([0.5, 1.0, 2.0, 0.25], dtype=dtype)
        got, want = cn.tensor(v).bincount(cn.tensor(w)), torch.tensor(v).bincount(torch.tensor(w))
        assert str(got.dtype) == str(want.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    data = np.array([0.1, 0.5, 0.5, 2.0, -1.0, 3.0], dtype=np.float32)
    for args in ((4, 0, 2), (5, 0, 0), (3, -1, 3)):
        np.testing.assert_array_equal(cn.histc(cn.tensor(data), *args).numpy(),
                                      torch.histc(torch.tensor(data), *args).numpy())


def test_multinomial_frequencies_and_constraints():
    cn.manual_seed(0)
    p = cn.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]])
    draws = cn.multinomial(p, 20000, replacement=True).numpy()
    freq = np.stack([np.bincount(row, minlength=4) / row.size for row in draws])
    expected = p.numpy() / p.numpy().sum(1, keepdims=True)
    # NOTE: 4 binomial standard deviations of a frequency from 20000 draws: sqrt(0.25 / 20000) * 4 ~ 0.014
    np.testing.assert_allclose(freq, expected, atol=0.015)
    distinct = cn.multinomial(p, 4).numpy()
    assert all(sorted(row) == [0, 1, 2, 3] for row in distinct)
    assert distinct[0, 3] == 1  # the zero-weight category comes last
    firsts = np.bincount([int(cn.multinomial(cn.tensor([1.0, 3.0]), 1)) for _ in range(4000)], minlength=2) / 4000
    np.testing.assert_allclose(firsts, [0.25, 0.75], atol=0.03)
    cn.manual_seed(5)
    a = cn.multinomial(p, 3).numpy()
    cn.manual_seed(5)
    np.testing.assert_array_equal(cn.multinomial(p, 3).numpy(), a)  # cupynet's generator: reproducible


def test_bad_inputs_raise_torch_errors():
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        cn.masked_select(cn.ones(3), cn.ones(3))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        cn.bincount(cn.tensor([-1, 1]))
    with pytest.raises(NotImplementedError, match="not implemented for 'float32'"):
        cn.bincount(cn.tensor([1.0]))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        cn.histc(cn.ones(3), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        cn.histc(cn.ones(3), min=2, max=1)
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        cn.multinomial(cn.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        cn.multinomial(cn.tensor([0.0, 0.0]), 1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        cn.multinomial(cn.tensor([1.0, 1.0]), 3)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        cn.multinomial(cn.ones(2, 2, 2), 1)

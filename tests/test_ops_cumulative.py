"""cummax / cummin / logcumsumexp against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cum_extremes(name, dim):
    check_op([(4, 5)], lambda t: getattr(cn, name)(t, dim)[0], torch_fn=lambda t: getattr(torch, name)(t, dim)[0])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cum_extreme_indices_with_ties_and_nan(name):
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0], [2.0, 1.0, 1.0, np.nan, 0.0, 5.0]])
    got, want = getattr(cn, name)(cn.tensor(x), 1), getattr(torch, name)(torch.tensor(x), 1)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    ints = np.array([3, 1, 4, 1, 5])
    np.testing.assert_array_equal(getattr(cn.tensor(ints), name)(0).indices.numpy(),
                                  getattr(torch.tensor(ints), name)(0).indices.numpy())


@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp(dim):
    check_op([(4, 5)], lambda t: cn.logcumsumexp(t, dim), torch_fn=lambda t: torch.logcumsumexp(t, dim))
    check_op([(4, 5)], lambda t: t.logcumsumexp(dim), torch_fn=lambda t: t.logcumsumexp(dim), low=-30, high=30,
             dtypes=("float32",), gradgrad=False)


def test_logcumsumexp_is_stable_far_from_the_max():
    x = np.array([-1000.0, 0.0, 1000.0, -np.inf])
    got = cn.tensor(x, requires_grad=True)
    out = cn.logcumsumexp(got, 0)
    np.testing.assert_allclose(out.detach().numpy(), torch.logcumsumexp(torch.tensor(x), 0).numpy())
    out.sum().backward()
    assert np.isfinite(got.grad.numpy()).all()


def test_bad_inputs():
    with pytest.raises(RuntimeError, match="expected a floating point input"):
        cn.logcumsumexp(cn.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        cn.cummax(cn.ones(3), 1)

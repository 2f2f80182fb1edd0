"""meshgrid / cartesian_prod / repeat_interleave / take_along_dim / diff / rot90 / atleast_nd / clamp_min/max
against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    for k in range(3):
        check_op([(2,), (3,), (4,)], lambda a, b, c, k=k: cn.meshgrid(a, b, c, indexing=indexing)[k],
                 torch_fn=lambda a, b, c, k=k: torch.meshgrid(a, b, c, indexing=indexing)[k])
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        cn.meshgrid(cn.ones(2), cn.ones(3))


def test_cartesian_prod_and_repeat_interleave():
    check_op([(2,), (3,)], cn.cartesian_prod, torch_fn=torch.cartesian_prod)
    check_op([(2, 3)], lambda t: t.repeat_interleave(2), torch_fn=lambda t: t.repeat_interleave(2))
    # NOTE: the lambdas make their index tensors, so check_op's device context puts them beside the inputs
    check_op([(2, 3)], lambda t: cn.repeat_interleave(t, cn.tensor([1, 0, 3]), dim=1),
             torch_fn=lambda t: torch.repeat_interleave(t, torch.tensor([1, 0, 3]), dim=1))
    np.testing.assert_array_equal(cn.repeat_interleave(cn.tensor([1, 0, 3])).numpy(),
                                  torch.repeat_interleave(torch.tensor([1, 0, 3])).numpy())


def test_take_along_dim():
    idx = np.array([[0, 2], [1, 1], [2, 0]])
    ti, trow = torch.tensor(idx), torch.tensor([[2, 0, 1, 0]])
    check_op([(3, 4)], lambda t: cn.take_along_dim(t, cn.tensor(idx), 1),
             torch_fn=lambda t: torch.take_along_dim(t, ti, 1))
    check_op([(3, 4)], lambda t: t.take_along_dim(cn.tensor(idx)), torch_fn=lambda t: t.take_along_dim(ti))
    check_op([(3, 4)], lambda t: cn.take_along_dim(t, cn.tensor([[2, 0, 1, 0]]), 0),
             torch_fn=lambda t: torch.take_along_dim(t, trow, 0))


def test_diff_rot90_atleast_clamp():
    check_op([(3, 5)], lambda t: cn.diff(t), torch_fn=lambda t: torch.diff(t))
    check_op([(3, 5), (3, 1), (3, 2)], lambda t, p, a: cn.diff(t, n=2, dim=1, prepend=p, append=a),
             torch_fn=lambda t, p, a: torch.diff(t, n=2, dim=1, prepend=p, append=a))
    b = np.array([True, False, False, True])
    np.testing.assert_array_equal(cn.diff(cn.tensor(b)).numpy(), torch.diff(torch.tensor(b)).numpy())
    for k in (-1, 0, 1, 2, 3, 5):
        check_op([(2, 3, 4)], lambda t, k=k: cn.rot90(t, k, (2, 0)), torch_fn=lambda t, k=k: torch.rot90(t, k, (2, 0)))
    for n in (1, 2, 3):
        for shape in ((), (4,), (2, 3), (2, 3, 4)):
            got = getattr(cn, f"atleast_{n}d")(cn.zeros(shape))
            assert got.shape == getattr(torch, f"atleast_{n}d")(torch.ones(shape)).shape
    check_op([(3, 4)], lambda t: t.clamp_min(0.1), torch_fn=lambda t: t.clamp_min(0.1))
    check_op([(3, 4), (4,)], cn.clamp_max, torch_fn=torch.clamp_max)


def test_bad_inputs_raise_torch_errors():
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, but got repeats.size"):
        cn.repeat_interleave(cn.ones(3), cn.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        cn.repeat_interleave(cn.ones(3), cn.tensor([1, -2, 1]))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        cn.diff(cn.ones(3), n=-1)
    with pytest.raises(RuntimeError, match="expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"):
        cn.rot90(cn.ones(3, 3), 1, (0, 0))
    with pytest.raises(RuntimeError, match="indexing must be one of"):
        cn.meshgrid(cn.ones(2), indexing="xx")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        cn.meshgrid(cn.ones(2, 2), indexing="ij")

"""scatter / scatter_reduce / index_add / index_copy / index_fill against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch

INDEX = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])  # rows of a (3, 4) input: column 0 is hit twice


def _ti(array):
    return cn.tensor(array), torch.tensor(array)


def test_scatter_src_and_value():
    idx = np.array([[0, 1, 2, 0], [1, 2, 0, 2]])         # each (row, column) target written once
    ci, ti = _ti(idx)
    check_op([(3, 4), (2, 4)], lambda a, s: cn.scatter(a, 0, ci, s), torch_fn=lambda a, s: torch.scatter(a, 0, ti, s))
    # a src larger than index: only its leading block is read (torch's own backward of this case fails)
    src = cn.tensor(np.arange(10.0).reshape(2, 5), dtype=cn.float32, requires_grad=True)
    cn.ones(3, 4).scatter(0, ci, src).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), np.pad(np.ones((2, 4)), ((0, 0), (0, 1))))
    check_op([(3, 4)], lambda a: cn.scatter(a, 1, ci[:, :2], 1.5),
             torch_fn=lambda a: torch.scatter(a, 1, ti[:, :2], 1.5))
    check_op([(3, 4)], lambda a: cn.scatter(a, 0, ci, value=-2.0),
             torch_fn=lambda a: torch.scatter(a, 0, ti, value=-2.0))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    ci, ti = _ti(INDEX)
    check_op([(3, 4), (2, 4)], lambda a, s: cn.scatter_reduce(a, 0, ci, s, reduce, include_self=include_self),
             torch_fn=lambda a, s: torch.scatter_reduce(a, 0, ti, s, reduce, include_self=include_self),
             low=0.5, high=2.0, dtypes=("float32",))


def test_scatter_reduce_grads_with_ties_and_zeros_match_torch():
    ci, ti = _ti(INDEX)
    for reduce, a, s in (("amax", np.ones((3, 4)), np.ones((2, 4))),
                         ("prod", np.array([[0.0, 2, 3, 1], [1, 0, 2, 2], [3, 1, 0, 0]]), np.array(
                             [[2.0, 0, 1, 3], [0, 1, 2, 2]]))):
        check_op([a.shape, s.shape], lambda x, y: cn.scatter_reduce(x, 0, ci, y, reduce),
                 torch_fn=lambda x, y: torch.scatter_reduce(x, 0, ti, y, reduce), arrays=[a, s],
                 dtypes=("float64",), gradgrad=False)


def test_scatter_legacy_reduce_and_integers():
    ci, ti = _ti(INDEX)
    a = np.arange(12).reshape(3, 4)
    got = cn.scatter(cn.tensor(a), 0, ci, cn.tensor(np.ones((2, 4), dtype=np.int64)), reduce="add")
    np.testing.assert_array_equal(got.numpy(), torch.tensor(a).scatter(0, ti, torch.ones(2, 4, dtype=torch.long),
                                                                       reduce="add").numpy())
    got = cn.scatter_reduce(cn.tensor(a), 0, ci, cn.tensor(a[:2] + 1), "amax", include_self=False)
    np.testing.assert_array_equal(got.numpy(), torch.scatter_reduce(torch.tensor(a), 0, ti, torch.tensor(a[:2] + 1),
                                                                    "amax", include_self=False).numpy())


def test_index_add_copy_fill():
    idx = np.array([2, 0])
    ci, ti = _ti(idx)
    check_op([(3, 4), (2, 4)], lambda a, s: cn.index_add(a, 0, ci, s, alpha=2.0),
             torch_fn=lambda a, s: torch.index_add(a, 0, ti, s, alpha=2.0))
    rep, trep = _ti(np.array([1, 1, 3]))
    check_op([(2, 4), (2, 3)], lambda a, s: a.index_add(1, rep, s), torch_fn=lambda a, s: a.index_add(1, trep, s))
    check_op([(3, 4), (3, 2)], lambda a, s: cn.index_copy(a, 1, ci, s),
             torch_fn=lambda a, s: torch.index_copy(a, 1, ti, s))
    check_op([(3, 4)], lambda a: a.index_fill(0, ci, -1.0), torch_fn=lambda a: a.index_fill(0, ti, -1.0))


def test_bad_inputs_raise_torch_errors():
    a = cn.ones(2, 3)
    with pytest.raises(RuntimeError, match="index 2 is out of bounds for dimension 0 with size 2"):
        cn.scatter(a, 0, cn.tensor([[0, 1, 2]]), cn.ones(1, 3))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        cn.scatter_reduce(a, 0, cn.tensor([[0, 1, 1]]), cn.ones(1, 3), "max2")
    with pytest.raises(RuntimeError, match=r"Number of indices \(3\) should be equal to source.size\(dim\) \(2\)"):
        cn.index_add(a, 0, cn.tensor([0, 1, 1]), cn.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        cn.scatter(a, 0, cn.tensor([[0]]), cn.ones(1, 1, dtype=cn.float64))
    with pytest.raises(RuntimeError, match="expected index to be an int32 or int64 tensor"):
        cn.index_fill(a, 0, cn.tensor([0.0]), 1.0)
    with pytest.raises(TypeError, match="exactly one of src"):
        cn.scatter(a, 0, cn.tensor([[0]]))
    before = a.numpy().copy()
    cn.scatter(a, 0, cn.tensor([[1, 0, 1]]), cn.zeros(1, 3))
    np.testing.assert_array_equal(a.numpy(), before)  # out of place: the input is untouched

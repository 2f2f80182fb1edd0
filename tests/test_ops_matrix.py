"""diagonal / diag_embed / diag / trace / block_diag / kron / cross / cdist / tri*_indices against PyTorch
(issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch


@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (1, 1, 2), (-1, 2, 0), (5, 0, 1)])
def test_diagonal(offset, dim1, dim2):
    check_op([(3, 4, 5)], lambda t: cn.diagonal(t, offset, dim1, dim2),
             torch_fn=lambda t: torch.diagonal(t, offset, dim1, dim2))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0)])
def test_diag_embed(offset, dim1, dim2):
    check_op([(2, 3)], lambda t: cn.diag_embed(t, offset, dim1, dim2),
             torch_fn=lambda t: torch.diag_embed(t, offset, dim1, dim2))


def test_diag_trace_block_diag_kron():
    check_op([(4,)], lambda t: cn.diag(t, 1), torch_fn=lambda t: torch.diag(t, 1))
    check_op([(3, 4)], lambda t: t.diag(-1), torch_fn=lambda t: t.diag(-1))
    check_op([(3, 4)], cn.trace, torch_fn=torch.trace)
    check_op([(2, 3), (1, 1), (2,)], cn.block_diag, torch_fn=torch.block_diag)
    check_op([(2, 3), (3, 1, 2)], cn.kron, torch_fn=torch.kron)


def test_cross_and_cdist():
    check_op([(4, 3), (4, 3)], lambda a, b: cn.cross(a, b, dim=1), torch_fn=lambda a, b: torch.cross(a, b, dim=1))
    check_op([(3, 5), (3, 5)], lambda a, b: a.cross(b, dim=0), torch_fn=lambda a, b: a.cross(b, dim=0))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        assert cn.cross(cn.ones(2, 3), cn.ones(2, 3)).shape == (2, 3)
    for p in (2.0, 1.0, 3.0, np.inf):
        check_op([(2, 4, 3), (2, 5, 3)], lambda a, b, p=p: cn.cdist(a, b, p=p),
                 torch_fn=lambda a, b, p=p: torch.cdist(a, b, p=p), dtypes=("float32",), gradgrad=p == 2.0)
    check_op([(4, 3), (5, 3)], lambda a, b: cn.cdist(a, b, p=0.0), torch_fn=lambda a, b: torch.cdist(a, b, p=0.0),
             dtypes=("float32",), grad=False)


def test_cdist_of_equal_rows_has_zero_gradient_as_torch():
    x = cn.tensor(np.ones((2, 3)), requires_grad=True)
    cn.cdist(x, x.detach()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


class _CupyReductionRules(np.ndarray):
    """A NumPy array whose ``max``/``min`` follow CuPy's rules: no ``initial=``, and no reduction over an empty axis."""

    def max(self, axis=None, out=None, keepdims=False, **kwargs):
        return self._reduce(np.ndarray.max, axis, out, keepdims, kwargs)

    def min(self, axis=None, out=None, keepdims=False, **kwargs):
        return self._reduce(np.ndarray.min, axis, out, keepdims, kwargs)

    def _reduce(self, method, axis, out, keepdims, kwargs):
        if kwargs:
            raise TypeError(f"{method.__name__}() got unexpected keyword arguments {sorted(kwargs)} (CuPy has none)")
        result = method(self.view(np.ndarray), axis, out, keepdims)
        if np.size(result) and 0 in self.shape:  # NOTE: CuPy returns an empty result, else refuses any empty input
            raise ValueError(f"zero-size array to reduction operation {method.__name__} which has no identity")
        return result


def _cupy_rules_tensor(array):
    return cn.Tensor(np.asarray(array, dtype=np.float32).view(_CupyReductionRules))


@pytest.mark.parametrize("shapes", [((4, 3), (5, 3)), ((2, 4, 0), (2, 5, 0)), ((0, 3), (5, 3)), ((4, 0), (0, 0))])
def test_cdist_inf_follows_cupy_reduction_rules_and_matches_torch(shapes):
    # NOTE: the inf-norm only subtracts and selects, in float32 on both sides: the results are equal bit for bit
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape).astype(np.float32) for shape in shapes)
    got = cn.cdist(_cupy_rules_tensor(a), _cupy_rules_tensor(b), p=np.inf)
    want = torch.cdist(torch.tensor(a), torch.tensor(b), p=np.inf)
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(np.asarray(got.array), want.numpy())


def test_triangle_indices():
    for name in ("triu_indices", "tril_indices"):
        for args in ((3, 4, 0), (4, 3, 1), (3, 3, -1)):
            np.testing.assert_array_equal(getattr(cn, name)(*args).numpy(), getattr(torch, name)(*args).numpy())


def test_bad_inputs_raise_torch_errors():
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        cn.diag(cn.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        cn.trace(cn.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 0, 0"):
        cn.diagonal(cn.ones(2, 2), 0, 0, 0)
    with pytest.raises(RuntimeError, match="Input tensors must have 2 or fewer dimensions. Input 0 has 3"):
        cn.block_diag(cn.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"), pytest.warns(UserWarning):
        cn.cross(cn.ones(2, 4), cn.ones(2, 4))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 2 X2: 3"):
        cn.cdist(cn.ones(3, 2), cn.ones(3, 3))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        cn.cdist(cn.ones(3, 2), cn.ones(3, 2), p=-1)

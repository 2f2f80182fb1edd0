"""Reductions: var/std, max/min/amax/amin/argmax/argmin, logsumexp, prod, cumsum, cumprod, norms, all/any."""

import math

import numpy as np
import pytest
from op_harness import check_op, host

import cupynet as cn
from cupynet import ops


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _grad_of(fn, array, cot=None):
    """cupynet gradient of sum(fn(x) * cot) at a float64 array."""
    x = cn.tensor(array, dtype=cn.float64, requires_grad=True)
    out = fn(x)
    out.backward(cn.tensor(np.ones(out.shape) if cot is None else cot, dtype=cn.float64))
    return host(x.grad)


def _torch_grad_of(torch, fn, array, cot=None):
    x = torch.tensor(array, dtype=torch.float64, requires_grad=True)
    out = fn(x)
    out.backward(torch.ones_like(out) if cot is None else torch.tensor(cot))
    return x.grad.numpy()


# ---- var / std ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda a: a.var(1), lambda a: a.var(), lambda a: a.var(dim=(0, 2), keepdim=True),
    lambda a: a.std(0, correction=0), lambda a: a.std(dim=-1, unbiased=False, keepdim=True), lambda a: a.std(),
])
def test_var_std_match_torch(fn):
    check_op([(2, 3, 4)], fn)


def test_var_half_accumulates_in_fp32_and_keeps_dtype():
    x = np.random.default_rng(0).uniform(0, 1, 4096)
    got = cn.tensor(x, dtype=cn.float16).var()
    assert got.dtype == cn.float16
    assert abs(got.item() - np.asarray(x, np.float16).astype(np.float64).var(ddof=1)) < 1e-3


def test_var_single_element_is_nan_like_torch():
    assert math.isnan(cn.tensor([3.0]).var().item())
    assert cn.tensor([3.0]).var(correction=0).item() == 0.0


def test_var_bad_inputs():
    with pytest.raises(TypeError, match="var: expected a floating point input"):
        cn.tensor([1, 2, 3]).var()
    with pytest.raises(TypeError, match="std: pass either unbiased or correction, not both"):
        cn.randn(3).std(unbiased=True, correction=0)
    with pytest.raises(IndexError, match=r"var: Dimension out of range .* but got 2"):
        cn.randn(2, 3).var(2)
    with pytest.raises(RuntimeError, match="var: dim .* names the same dimension more than once"):
        cn.randn(2, 3).var((1, -1))


# ---- max / min ----------------------------------------------------------------------------------------------
def test_max_min_amax_amin_match_torch():
    check_op([(3, 4)], lambda a: a.max())
    check_op([(3, 4)], lambda a: a.min(1))
    check_op([(2, 3, 4)], lambda a: a.max(dim=-1, keepdim=True))
    check_op([(2, 3, 4)], lambda a: a.amax(dim=(0, 2)))
    check_op([(2, 3, 4)], lambda a: a.amin(1, keepdim=True))


def test_max_with_dim_is_a_namedtuple():
    x = cn.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    values, indices = cn.max(x, 1)
    out = x.max(dim=1)
    assert type(out).__name__ == "max" and out.values.tolist() == [5.0, 7.0] and out.indices.tolist() == [1, 0]
    assert values.tolist() == [5.0, 7.0] and indices.dtype == cn.int64
    assert cn.min(x, 0, keepdim=True).indices.tolist() == [[0, 1, 0]]
    assert cn.max(x, cn.zeros(2, 3)).tolist() == [[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]]  # the maximum overload


def test_tie_gradients_match_torch(torch):
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    cot = np.array([0.5, -2.0])
    # with a dim: the whole gradient goes to the returned (first) index; without: split among ties
    for mine, theirs in [(lambda x: x.max(1).values, lambda x: x.max(1).values),
                         (lambda x: x.min(1).values, lambda x: x.min(1).values),
                         (lambda x: x.amax(1), lambda x: x.amax(1))]:
        np.testing.assert_allclose(_grad_of(mine, a, cot), _torch_grad_of(torch, theirs, a, cot))
    np.testing.assert_allclose(_grad_of(lambda x: x.max(), a), _torch_grad_of(torch, lambda x: x.max(), a))
    assert cn.tensor(a).max(1).indices.tolist() == torch.tensor(a).max(1).indices.tolist()


def test_argmax_argmin():
    x = cn.tensor([[1.0, 9.0, 9.0], [4.0, -1.0, 4.0]])
    assert x.argmax().item() == 1 and x.argmin().item() == 4
    assert x.argmax(1).tolist() == [1, 0] and x.argmin(0).tolist() == [0, 1, 1]
    assert x.argmax(1, keepdim=True).shape == (2, 1) and x.argmax(keepdim=True).shape == (1, 1)
    assert x.argmax().dtype == cn.int64 and not x.argmax().requires_grad


def test_max_bad_inputs():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0"):
        cn.zeros(0).max()
    with pytest.raises(IndexError, match=r"min\(\): Expected reduction dim 0 to have non-zero size"):
        cn.zeros(0, 3).min(0)
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size"):
        cn.zeros(0, 3).amax(0)
    with pytest.raises(RuntimeError, match=r"argmax\(\): Expected reduction dim to be specified"):
        cn.zeros(0).argmax()
    with pytest.raises(IndexError, match=r"max: Dimension out of range .* but got 3"):
        cn.randn(2, 3).max(3)


# ---- logsumexp ----------------------------------------------------------------------------------------------
def test_logsumexp_matches_torch():
    check_op([(3, 4)], lambda a: a.logsumexp(1))
    check_op([(2, 3, 4)], lambda a: a.logsumexp((0, 2), keepdim=True))


def test_logsumexp_is_stable_and_handles_infinities():
    big = cn.tensor([[1000.0, 1000.0], [-1000.0, -1000.0]])
    np.testing.assert_allclose(big.logsumexp(1).numpy(), [1000 + math.log(2), -1000 + math.log(2)], rtol=1e-6)
    inf = float("inf")
    out = cn.tensor([[-inf, -inf], [inf, 0.0], [-inf, 0.0]]).logsumexp(1).numpy()
    assert out[0] == -inf and out[1] == inf and out[2] == 0.0
    half = cn.tensor([[60000.0, 60000.0]], dtype=cn.float16).logsumexp(1)
    assert half.dtype == cn.float16 and np.isfinite(half.numpy()).all()
    assert cn.tensor([[1, 2]]).logsumexp(1).dtype == cn.float32


# ---- prod / cumsum / cumprod ------------------------------------------------------------------------------
def test_prod_cumsum_cumprod_match_torch():
    check_op([(3, 4)], lambda a: a.prod(), low=0.5, high=1.5)
    check_op([(2, 3, 4)], lambda a: a.prod(1, keepdim=True), low=-1.5, high=1.5)
    check_op([(2, 3, 4)], lambda a: a.cumsum(1))
    check_op([(3, 5)], lambda a: a.cumsum(-1) * a)
    check_op([(3, 4)], lambda a: a.cumprod(1), low=0.5, high=1.5)
    check_op([(4, 3)], lambda a: a.cumprod(0) * a, low=-1.5, high=1.5)


@pytest.mark.parametrize("row", [[2.0, 0.0, 3.0, 0.5], [2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 1.5],
                                 [1.5, 2.0, -1.0, 0.0]])
def test_products_with_zeros_first_and_second_order(torch, row):
    a = np.array([row, row[::-1]])
    cot = np.arange(1.0, 9.0).reshape(2, 4) / 4
    for name in ("prod", "cumprod"):
        mine = (lambda x, n=name: getattr(x, n)(1))
        theirs = (lambda x, n=name: getattr(x, n)(1))
        c = cot if name == "cumprod" else cot[:, 0]
        np.testing.assert_allclose(_grad_of(mine, a, c), _torch_grad_of(torch, theirs, a, c), atol=1e-12)
        x = cn.tensor(a, dtype=cn.float64, requires_grad=True)
        cn.autograd.gradcheck(mine, (x,))
        cn.autograd.gradgradcheck(mine, (x,))


def test_cumulative_dtypes():
    ints = cn.tensor([[1, 2, 3]], dtype=cn.int32)
    assert ints.cumsum(1).dtype == cn.int64 and ints.cumsum(1).tolist() == [[1, 3, 6]]
    assert ints.cumprod(1).tolist() == [[1, 2, 6]] and ints.prod().dtype == cn.int64
    assert cn.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]
    assert ints.cumsum(1, dtype=cn.float32).dtype == cn.float32
    assert cn.tensor(3.0).cumsum(0).shape == () and cn.tensor(3.0).prod(0).item() == 3.0
    # NOTE: a half cumsum accumulates in fp32: 4096 * 0.1 is ~409.5, not a stalled half accumulator
    assert abs(cn.full((4096,), 0.1, dtype=cn.float16).cumsum(0)[-1].item() - 409.5) < 1.0


def test_prod_bad_inputs():
    with pytest.raises(TypeError, match=r"prod: dim must be one int"):
        cn.randn(2, 3).prod((0, 1))
    with pytest.raises(TypeError, match=r"prod: keepdim=True needs a dim"):
        cn.randn(2, 3).prod(keepdim=True)
    with pytest.raises(IndexError, match=r"cumsum: Dimension out of range"):
        cn.randn(2, 3).cumsum(2)


# ---- norms -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, 3, float("inf"), -float("inf"), "fro"])
def test_norm_matches_torch(p):
    check_op([(3, 4)], lambda a: a.norm(p))
    check_op([(2, 3, 4)], lambda a: a.norm(p, dim=(0, 2), keepdim=True), dtypes=("float32",))


def test_vector_norm_matches_torch(torch):
    check_op([(3, 4)], lambda a: ops.linalg_vector_norm(a, 2, dim=1),
             lambda a: torch.linalg.vector_norm(a, 2, dim=1))
    check_op([(3, 4)], lambda a: cn.vector_norm(a, 1), lambda a: torch.linalg.vector_norm(a, 1))
    assert ops.linalg_vector_norm(cn.tensor([3.0, 0.0, -4.0]), 0).item() == 2.0


def test_norm_of_zero_vector_has_zero_gradient():
    x = cn.zeros(3, requires_grad=True)
    x.norm().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("p", [0.5, 0.3, -1.0, -2.5])
@pytest.mark.parametrize("values", [[1.0, -2.0, 3.0, 0.5], [0.0, 2.0, -1.0, 0.0]], ids=["nonzero", "zeros"])
def test_vector_norm_with_order_below_one_matches_torch(torch, p, values):
    x = cn.tensor(values, dtype=cn.float64, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    out, tout = ops.linalg_vector_norm(x, p), torch.linalg.vector_norm(tx, p)
    out.backward()
    tout.backward()
    # NOTE: a few pow/sum roundings, amplified by 1/|p| in the final root: 1e-13 is ~450 float64 ulps
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-13, atol=0)
    if 0.0 not in values:
        check_op([(2, 3)], lambda a: ops.linalg_vector_norm(a, p, dim=1),
                 lambda a: torch.linalg.vector_norm(a, p, dim=1), low=0.5, high=2.0)


def test_norm_bad_inputs():
    with pytest.raises(ValueError, match=r"norm: unsupported norm order 'nuc'"):
        cn.randn(3).norm("nuc")
    with pytest.raises(ValueError, match=r"linalg_vector_norm: unsupported norm order nan"):
        ops.linalg_vector_norm(cn.randn(3), float("nan"))
    with pytest.raises(TypeError, match=r"norm: expected a floating point input .* got int64"):
        cn.tensor([1, 2]).norm()
    with pytest.raises(IndexError, match=r"linalg_vector_norm\(\): Expected reduction dim 0 to have non-zero"):
        ops.linalg_vector_norm(cn.zeros(0), float("inf"))


# ---- all / any ---------------------------------------------------------------------------------------------
def test_all_any():
    x = cn.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert x.all().item() is False and x.any().item() is True
    assert x.all(1).tolist() == [False, True] and x.any(0, keepdim=True).tolist() == [[True, True]]
    assert cn.zeros(0).all().item() is True and x.all().dtype == cn.bool


# ---- autocast policies ------------------------------------------------------------------------------------
def test_policies_follow_the_amp_reference():
    from cupynet.ops import reduce
    expected = {reduce.Var: None, reduce.Std: None, reduce.Amax: None, reduce.Amin: None, reduce.MaxDim: None,
                reduce.MinDim: None, reduce.LogSumExp: "fp32", reduce.Sum: "fp32", reduce.Prod: "fp32",
                reduce.CumSum: "fp32", reduce.CumProd: "fp32", reduce.Norm: "fp32",
                reduce.VectorNorm: "fp32"}
    assert {cls: cls.amp_policy for cls in expected} == expected
    listed = set(cn.ops.OP_CLASSES)
    assert all(cls in listed for cls in expected), "every reduce op class is in the op reference"


def test_fp32_ops_give_float32_under_autocast():
    from cupynet import amp
    x = cn.randn(3, 4)
    with amp.autocast("cpu", dtype=cn.float16):
        outs = [x.half().cumsum(1), x.half().prod(1), x.half().logsumexp(1), x.half().norm(), x.half().cumprod(0)]
        assert [o.dtype for o in outs] == [cn.float32] * 5
        assert x.half().max().dtype == cn.float16 and x.half().var().dtype == cn.float16

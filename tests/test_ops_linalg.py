"""linalg ops: linear, mm/bmm/mv, the add-product family, dot/vdot/outer, einsum, tensordot."""

import numpy as np
import pytest
from op_harness import check_op

import cupynet as cn
from cupynet import ops
from cupynet.ops import contraction as einsum_ops
from cupynet.ops import linalg

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (4,)])
def test_linear_any_leading_dims(shape):
    check_op([shape, (5, 4), (5,)], ops.linear, F.linear)
    check_op([shape, (5, 4)], ops.linear, F.linear, dtypes=("float32",))


def test_products_match_torch():
    check_op([(3, 4), (4, 5)], ops.mm, torch.mm)
    check_op([(2, 3, 4), (2, 4, 5)], ops.bmm, torch.bmm)
    check_op([(3, 4), (4,)], ops.mv, torch.mv)
    check_op([(5,), (5,)], ops.dot, torch.dot)
    check_op([(5,), (5,)], ops.vdot, torch.vdot)
    check_op([(3,), (4,)], ops.outer, torch.outer)


@pytest.mark.parametrize("name, shapes", [
    ("addmm", [(3, 5), (3, 4), (4, 5)]), ("addmm", [(5,), (3, 4), (4, 5)]),
    ("addmv", [(3,), (3, 4), (4,)]), ("addr", [(3, 4), (3,), (4,)]),
    ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)]), ("addbmm", [(3, 5), (2, 3, 4), (2, 4, 5)]),
])
def test_add_products_with_beta_alpha(name, shapes):
    mine, theirs = getattr(ops, name), getattr(torch, name)
    check_op(shapes, mine, theirs)
    check_op(shapes, lambda i, a, b: mine(i, a, b, beta=0.5, alpha=-2.0),
             lambda i, a, b: theirs(i, a, b, beta=0.5, alpha=-2.0), dtypes=("float32",))


def test_beta_zero_ignores_nan_input():
    out = ops.addmm(cn.tensor([[float("nan")]]), cn.ones(1, 2), cn.ones(2, 1), beta=0)
    assert out.numpy().tolist() == [[2.0]]


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]), ("...ij,jk", [(2, 3, 4), (4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 3, 4)]),
    ("ij,kj->i", [(3, 4), (2, 4)]), ("i,i->i", [(4,), (1,)]),
])
def test_einsum(eq, shapes):
    check_op(shapes, lambda *xs: ops.einsum(eq, *xs), lambda *xs: torch.einsum(eq, *xs))


def test_einsum_list_form_and_diagonal_forward():
    a = cn.tensor(np.arange(9.0).reshape(3, 3))
    assert ops.einsum("ii->i", a).numpy().tolist() == [0.0, 4.0, 8.0]
    assert ops.einsum("ij,jk->ik", [a, a]).shape == (3, 3)



@pytest.mark.parametrize("eq, shapes", [("ii->i", [(3, 3)]), ("ii->", [(3, 3)]), ("iij->ij", [(2, 2, 3)]),
                                        ("ii,i->i", [(3, 3), (3,)]), ("bii->bi", [(2, 3, 3)])])
def test_einsum_gradient_through_a_repeated_subscript(eq, shapes):
    check_op(shapes, lambda *xs: ops.einsum(eq, *xs), lambda *xs: torch.einsum(eq, *xs))


@pytest.mark.parametrize("dims, shapes", [
    (2, [(2, 3, 4), (3, 4, 5)]), (([1, 0], [0, 1]), [(3, 2, 4), (2, 3)]), (0, [(2,), (3,)]), (1, [(3, 4), (4, 2)]),
])
def test_tensordot(dims, shapes):
    check_op(shapes, lambda a, b: ops.tensordot(a, b, dims), lambda a, b: torch.tensordot(a, b, dims))


def test_amp_policies():
    lower = ["Matmul", "Linear", "Addmm", "Addmv", "Addr", "Baddbmm", "Addbmm"]
    assert all(getattr(linalg, name).amp_policy == "lower" for name in lower)
    assert einsum_ops.Einsum.amp_policy == "lower"
    assert linalg.Dot.amp_policy == linalg.Vdot.amp_policy == einsum_ops.Tensordot.amp_policy == "promote"
    assert linalg.Linear.op_name == "linear" and linalg.Addbmm.op_name == "addbmm"


def test_half_linear_accumulates_in_fp32_and_adds_bias_before_rounding():
    x = cn.ones(1, 4096, dtype=cn.float16) * 0.1
    w = cn.ones(1, 4096, dtype=cn.float16)
    out = ops.linear(x, w, cn.tensor([0.25], dtype=cn.float16))
    assert out.dtype == cn.float16
    # NOTE: a half accumulator stalls near 256; fp32 gives 409.5 (+0.25), then one rounding to fp16
    assert abs(float(out.item()) - 409.75) < 0.5


def test_linear_bad_inputs():
    with pytest.raises(RuntimeError, match=r"linear: input has 3 features \(shape \(2, 3\)\) but weight expects 4 "
                                           r"\(weight shape \(5, 4\)\)"):
        ops.linear(cn.randn(2, 3), cn.randn(5, 4))
    with pytest.raises(RuntimeError, match=r"linear: bias must have shape \(5,\)"):
        ops.linear(cn.randn(2, 4), cn.randn(5, 4), cn.randn(4))
    with pytest.raises(RuntimeError, match="linear: expected all inputs to have the same dtype"):
        ops.linear(cn.randn(2, 4), cn.randn(5, 4, dtype=cn.float16))


def test_product_bad_inputs():
    with pytest.raises(RuntimeError, match=r"mm: mat2 must be a 2D tensor, got shape \(4,\)"):
        ops.mm(cn.randn(3, 4), cn.randn(4))
    with pytest.raises(RuntimeError, match=r"bmm: batch sizes differ"):
        ops.bmm(cn.randn(2, 3, 4), cn.randn(3, 4, 5))
    with pytest.raises(RuntimeError, match=r"addmm: shapes \(3, 4\) and \(5, 2\) cannot be multiplied"):
        ops.addmm(cn.randn(3, 2), cn.randn(3, 4), cn.randn(5, 2))
    with pytest.raises(RuntimeError, match=r"addmm: input of shape \(4, 2\) cannot be broadcast"):
        ops.addmm(cn.randn(4, 2), cn.randn(3, 4), cn.randn(4, 2))
    with pytest.raises(RuntimeError, match=r"dot: 1D tensors expected, but got 2D and 1D"):
        ops.dot(cn.randn(2, 2), cn.randn(2))
    with pytest.raises(RuntimeError, match="dot: inconsistent tensor size"):
        ops.dot(cn.randn(3), cn.randn(2))


def test_einsum_and_tensordot_bad_inputs():
    with pytest.raises(ValueError, match="einsum: equation 'ij,jk->ik' has 2 operand"):
        ops.einsum("ij,jk->ik", cn.randn(2, 3))
    with pytest.raises(ValueError, match="einsum: subscript 'j' in 'ij,jk->ik' has size 4"):
        ops.einsum("ij,jk->ik", cn.randn(2, 3), cn.randn(4, 2))
    with pytest.raises(ValueError, match="einsum: operand subscripts 'ij' .* name 2 dimensions"):
        ops.einsum("ij->i", cn.randn(2, 3, 4))
    with pytest.raises(ValueError, match="einsum: output subscripts 'z'"):
        ops.einsum("ij->z", cn.randn(2, 3))
    with pytest.raises(RuntimeError, match="tensordot: contracted dimensions need the same size"):
        ops.tensordot(cn.randn(2, 3), cn.randn(4, 2), dims=1)
    with pytest.raises(IndexError, match=r"tensordot: dimension 5 out of range"):
        ops.tensordot(cn.randn(2, 3), cn.randn(3, 2), dims=([5], [0]))


def test_tensor_methods():
    a, b = cn.randn(3, 4), cn.randn(4, 2)
    np.testing.assert_allclose(a.mm(b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5)
    np.testing.assert_allclose(cn.randn(3).outer(cn.ones(2)).shape, (3, 2))

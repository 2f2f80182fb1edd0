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
    with pytest.raises(RuntimeError, match="linear: expected input and weight to have the same dtype, but got "
                                           "float32 and float16"):
        ops.linear(cn.randn(2, 4), cn.randn(5, 4, dtype=cn.float16))
    with pytest.raises(RuntimeError, match=r"linear: bias must have shape \(5,\) \(or \(\) for one shared value\)"):
        ops.linear(cn.randn(2, 4), cn.randn(5, 4), cn.randn(1, 5))


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


# ---- mixed dtypes: PyTorch's products never promote; autocast casts first (issue 16) -----------------------------
def _lib_tensor(lib, a, dtype):
    """``a`` as a tensor of ``lib`` (torch or cupynet) in ``dtype`` (a NumPy dtype name)."""
    if lib is torch:
        return torch.tensor(np.asarray(a, dtype=np.float64)).to(getattr(torch, dtype))
    return cn.tensor(np.asarray(a, dtype=np.float64), dtype=dtype)


# NOTE: (name, call, shapes): the first operand takes the first dtype, every other operand the second
_MIXED = [
    ("linear", lambda lib, x, w: nnf(lib).linear(x, w), [(2, 3), (4, 3)]),
    ("linear-3d", lambda lib, x, w: nnf(lib).linear(x, w), [(2, 2, 3), (4, 3)]),
    ("linear-bias", lambda lib, x, w, b: nnf(lib).linear(x, w, b), [(2, 3), (4, 3), (4,)]),
    ("linear-0d-bias", lambda lib, x, w, b: nnf(lib).linear(x, w, b), [(2, 3), (4, 3), ()]),
    ("matmul", lambda lib, a, b: lib.matmul(a, b), [(2, 3), (3, 4)]),
    ("matmul-1d", lambda lib, a, b: lib.matmul(a, b), [(3,), (3,)]),
    ("matmul-batched", lambda lib, a, b: lib.matmul(a, b), [(2, 2, 3), (2, 3, 4)]),
    ("matmul-2d-1d", lambda lib, a, b: a @ b, [(2, 3), (3,)]),
    ("mm", lambda lib, a, b: lib.mm(a, b), [(2, 3), (3, 4)]),
    ("bmm", lambda lib, a, b: lib.bmm(a, b), [(2, 2, 3), (2, 3, 4)]),
    ("mv", lambda lib, a, b: lib.mv(a, b), [(2, 3), (3,)]),
    ("addmm", lambda lib, i, a, b: lib.addmm(i, a, b), [(2, 4), (2, 3), (3, 4)]),
    ("addmv", lambda lib, i, a, b: lib.addmv(i, a, b), [(2,), (2, 3), (3,)]),
    ("baddbmm", lambda lib, i, a, b: lib.baddbmm(i, a, b), [(2, 2, 4), (2, 2, 3), (2, 3, 4)]),
    ("addbmm", lambda lib, i, a, b: lib.addbmm(i, a, b), [(2, 4), (2, 2, 3), (2, 3, 4)]),
    ("dot", lambda lib, a, b: lib.dot(a, b), [(3,), (3,)]),
    ("vdot", lambda lib, a, b: lib.vdot(a, b), [(3,), (3,)]),
    ("einsum", lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    ("tensordot", lambda lib, a, b: lib.tensordot(a, b, dims=1), [(2, 3), (3, 4)]),
]


def nnf(lib):
    return lib.nn.functional


def _mixed_args(lib, shapes, first, rest):
    arrays = [np.linspace(-1, 1, int(np.prod(s))).reshape(s) for s in shapes]
    return [_lib_tensor(lib, a, first if i == 0 else rest) for i, a in enumerate(arrays)]


@pytest.mark.parametrize("first, rest", [("float32", "float64"), ("float64", "float32"), ("float16", "float32"),
                                         ("bfloat16", "float32"), ("float32", "int64")])
@pytest.mark.parametrize("name, call, shapes", _MIXED, ids=[m[0] for m in _MIXED])
def test_mixed_dtypes_raise_as_in_torch(name, call, shapes, first, rest):
    with pytest.raises(RuntimeError):
        call(torch, *_mixed_args(torch, shapes, first, rest))
    with pytest.raises(RuntimeError, match=f"^{name.split('-')[0]}: expected .* to have the same dtype, but got"):
        call(cn, *_mixed_args(cn, shapes, first, rest))


# NOTE: the products on PyTorch's CPU autocast list too (cupynet uses the CUDA list on every device, a superset)
_AUTOCAST = [m for m in _MIXED if m[0] in ("linear", "linear-3d", "linear-bias", "linear-0d-bias", "matmul",
                                           "matmul-batched", "mm", "bmm", "addmm", "baddbmm", "addbmm")]


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name, call, shapes", _AUTOCAST, ids=[m[0] for m in _AUTOCAST])
def test_autocast_casts_mixed_products_before_the_dtype_check(name, call, shapes, low):
    for first, rest in (("float16", "float32"), ("float32", "bfloat16"), ("float32", "float32")):
        with torch.autocast("cpu", dtype=getattr(torch, low)):
            want = call(torch, *_mixed_args(torch, shapes, first, rest))
        with cn.amp.autocast("cpu", dtype=low):
            got = call(cn, *_mixed_args(cn, shapes, first, rest))
        assert str(got.dtype) == low == str(want.dtype).removeprefix("torch.")
        tol = 1e-2 if low == "bfloat16" else 2e-3
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol)
    # NOTE: float64 is never autocast: a float64 operand still meets a half one, and both refuse
    with torch.autocast("cpu", dtype=getattr(torch, low)), pytest.raises(RuntimeError):
        call(torch, *_mixed_args(torch, shapes, "float32", "float64"))
    with cn.amp.autocast("cpu", dtype=low), pytest.raises(RuntimeError, match="same dtype"):
        call(cn, *_mixed_args(cn, shapes, "float32", "float64"))


@pytest.mark.parametrize("dtypes", [("float32", "float32", "float64"), ("float64", "float32", "float32"),
                                    ("float16", "float16", "float32"), ("bfloat16", "float16", "float16"),
                                    ("int64", "int64", "float32"), ("float32", "int64", "int64")])
def test_addr_promotes_as_in_torch(dtypes):
    # NOTE: PyTorch's addr is elementwise math on expanded operands: it promotes instead of raising
    arrays = [np.arange(12.0).reshape(3, 4) / 4 - 1, np.arange(3.0) - 1, np.arange(4.0) / 2]
    for kw in ({}, {"beta": 2, "alpha": -1}):
        want = torch.addr(*(_lib_tensor(torch, a, d) for a, d in zip(arrays, dtypes)), **kw)
        got = cn.addr(*(_lib_tensor(cn, a, d) for a, d in zip(arrays, dtypes)), **kw)
        assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.double().numpy(), rtol=1e-2)
    floats = [i for i, d in enumerate(dtypes) if "float" in d]
    leaves = [_lib_tensor(cn, a, d).requires_grad_(i in floats) for i, (a, d) in enumerate(zip(arrays, dtypes))]
    t_leaves = [_lib_tensor(torch, a, d).requires_grad_(i in floats) for i, (a, d) in enumerate(zip(arrays, dtypes))]
    (cn.addr(*leaves, alpha=0.5) ** 2).sum().backward()
    # NOTE: the oracle casts explicitly: PyTorch's own addr backward fails on mixed dtypes (its mv refuses them)
    target = want.dtype
    (torch.addr(*(t.to(target) for t in t_leaves), alpha=0.5) ** 2).sum().backward()
    for i in floats:  # NOTE: each gradient comes back in its own operand's dtype
        assert str(leaves[i].grad.dtype) == dtypes[i] == str(t_leaves[i].grad.dtype).removeprefix("torch.")
        np.testing.assert_allclose(leaves[i].grad.numpy().astype(np.float64), t_leaves[i].grad.double().numpy(),
                                   rtol=2e-2, atol=2e-2)


def test_addr_of_integers_refuses_a_float_alpha_or_beta_as_torch():
    i, v = np.ones((2, 2)), np.ones(2)
    for kw in ({"alpha": 1.5}, {"beta": 0.5}):
        name = next(iter(kw))
        message = f"For integral input tensors, argument {name} must not be a floating point number."
        with pytest.raises(RuntimeError, match=message):
            torch.addr(*(_lib_tensor(torch, a, "int64") for a in (i, v, v)), **kw)
        with pytest.raises(RuntimeError, match=f"addr: {message}"):
            cn.addr(*(_lib_tensor(cn, a, "int64") for a in (i, v, v)), **kw)
    assert cn.addr(*(_lib_tensor(cn, a, "int64") for a in (i, v, v)), alpha=3).numpy().tolist() == [[4, 4], [4, 4]]


@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 3), (3,)])
def test_linear_with_a_zero_dim_bias(shape):
    # NOTE: one value added to every output, inside the op (so autocast casts it and the dtype check sees it)
    check_op([shape, (4, 3), ()], ops.linear, F.linear)
    check_op([shape, (4, 3), ()], ops.linear, F.linear, dtypes=("float32", "float16", "bfloat16"), gradgrad=False)


def test_half_linear_backward_on_the_cpu_is_fp32_math_rounded_once():
    # NOTE: the array backward widens the gradient once for both GEMMs and the bias sum: the same bits
    # as widening per product (matmul_arrays) and summing with an fp32 accumulator
    import ml_dtypes
    bf16 = np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(bf16) for s in ((4, 6, 5), (3, 5), (3,)))
    g = rng.standard_normal((4, 6, 3)).astype(bf16)
    xt, wt, bt = (cn.tensor(a, requires_grad=True) for a in (x, w, b))
    cn.nn.functional.linear(xt, wt, bt).backward(cn.tensor(g))
    f32 = np.float32
    g2, x2 = g.reshape(24, 3).astype(f32), x.reshape(24, 5).astype(f32)
    expected = ((g2 @ w.astype(f32)).astype(bf16).reshape(x.shape), (g2.T @ x2).astype(bf16),
                np.add.reduce(g.reshape(24, 3), axis=0, dtype=f32).astype(bf16))
    for got, want in zip((xt.grad, wt.grad, bt.grad), expected):
        assert got.dtype == bf16
        np.testing.assert_array_equal(got.numpy().view(np.uint16), want.view(np.uint16))

"""cupynet.linalg (and torch.det/inverse/svd aliases) against torch.linalg: values, gradients, errors (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch
FLOAT = ("float32",)


def _well_conditioned(*shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=shape)
    return a + 3 * np.eye(shape[-1])


def _spd(a):
    """A symmetric positive-definite matrix from any square ``a`` (works on cupynet and torch tensors)."""
    return a @ a.mT + 2 * _eye_like(a)


def _eye_like(a):
    n = a.shape[-1]
    return cn.eye(n, dtype=a.dtype) if isinstance(a, cn.Tensor) else torch.eye(n, dtype=a.dtype)


def test_inv_solve_det_slogdet():
    a = _well_conditioned(2, 3, 3)
    check_op([a.shape], cn.linalg.inv, torch_fn=torch.linalg.inv, arrays=[a], dtypes=FLOAT)
    check_op([a.shape], cn.linalg.det, torch_fn=torch.linalg.det, arrays=[a], dtypes=FLOAT)
    check_op([a.shape], lambda t: cn.linalg.slogdet(t)[1], torch_fn=lambda t: torch.linalg.slogdet(t)[1],
             arrays=[a], dtypes=FLOAT)
    b = np.random.default_rng(1).uniform(-1, 1, size=(2, 3, 2))
    check_op([a.shape, b.shape], cn.linalg.solve, torch_fn=torch.linalg.solve, arrays=[a, b], dtypes=FLOAT)
    v = np.random.default_rng(2).uniform(-1, 1, size=(3,))
    check_op([a[0].shape, v.shape], cn.linalg.solve, torch_fn=torch.linalg.solve, arrays=[a[0], v], dtypes=FLOAT)
    bt = np.ascontiguousarray(b.transpose(0, 2, 1))
    check_op([a.shape, bt.shape], lambda x, y: cn.linalg.solve(x, y, left=False),
             torch_fn=lambda x, y: torch.linalg.solve(x, y, left=False), arrays=[a, bt], dtypes=FLOAT)
    sign = cn.linalg.slogdet(cn.tensor(-a)).sign.numpy()
    np.testing.assert_array_equal(sign, torch.linalg.slogdet(torch.tensor(-a)).sign.numpy())


def test_torch_top_level_aliases():
    a = _well_conditioned(3, 3)
    check_op([a.shape], cn.inverse, torch_fn=torch.inverse, arrays=[a], dtypes=FLOAT)
    check_op([a.shape], cn.det, torch_fn=torch.det, arrays=[a], dtypes=FLOAT)
    check_op([a.shape], lambda t: t.logdet(), torch_fn=lambda t: t.logdet(), arrays=[a], dtypes=FLOAT)
    check_op([a.shape], cn.pinverse, torch_fn=torch.pinverse, arrays=[a], dtypes=FLOAT, gradgrad=False)
    assert np.isnan(cn.logdet(cn.tensor(-np.eye(3))).item())
    u, s, v = cn.svd(cn.tensor(a))
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, a, atol=1e-10)


def test_cholesky_and_eigh_through_symmetric_inputs():
    a = np.random.default_rng(3).uniform(-1, 1, size=(2, 3, 3))
    check_op([a.shape], lambda t: cn.linalg.cholesky(_spd(t)), torch_fn=lambda t: torch.linalg.cholesky(_spd(t)),
             arrays=[a], dtypes=FLOAT)
    check_op([a.shape], lambda t: cn.linalg.cholesky(_spd(t), upper=True),
             torch_fn=lambda t: torch.linalg.cholesky(_spd(t), upper=True), arrays=[a], dtypes=FLOAT)
    sym = (lambda t: t + t.mT)
    check_op([a.shape], lambda t: cn.linalg.eigvalsh(sym(t)), torch_fn=lambda t: torch.linalg.eigvalsh(sym(t)),
             arrays=[a], dtypes=FLOAT)
    # NOTE: eigenvectors are defined up to sign: compare the sign-free v * v
    check_op([a.shape], lambda t: cn.linalg.eigh(sym(t))[1] ** 2, torch_fn=lambda t: torch.linalg.eigh(sym(t))[1] ** 2,
             arrays=[a], dtypes=FLOAT)


def test_qr_and_svd():
    a = np.random.default_rng(4).uniform(-1, 1, size=(2, 4, 3))
    for k in (0, 1):  # NOTE: Q's columns and R's rows are defined up to sign: compare Q*Q and R*R
        check_op([a.shape], lambda t, k=k: cn.linalg.qr(t)[k] ** 2, torch_fn=lambda t, k=k: torch.linalg.qr(t)[k] ** 2,
                 arrays=[a], dtypes=FLOAT)
    check_op([a.shape], cn.linalg.svdvals, torch_fn=torch.linalg.svdvals, arrays=[a], dtypes=FLOAT)
    check_op([a.shape], lambda t: cn.linalg.svd(t, full_matrices=False)[0] ** 2,
             torch_fn=lambda t: torch.linalg.svd(t, full_matrices=False)[0] ** 2, arrays=[a], dtypes=FLOAT)
    check_op([a.shape], lambda t: cn.linalg.svd(t, full_matrices=False)[2] ** 2,
             torch_fn=lambda t: torch.linalg.svd(t, full_matrices=False)[2] ** 2, arrays=[a], dtypes=FLOAT)
    q, r = cn.qr(cn.tensor(a[0]))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a[0], atol=1e-12)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf])
def test_matrix_norm_and_norm(ord):
    a = np.random.default_rng(5).uniform(-1, 1, size=(2, 3, 4))
    check_op([a.shape], lambda t: cn.linalg.matrix_norm(t, ord), torch_fn=lambda t: torch.linalg.matrix_norm(t, ord),
             arrays=[a], dtypes=FLOAT, gradgrad=ord in ("fro",))
    check_op([a.shape], lambda t: cn.linalg.norm(t, ord, dim=(0, 2), keepdim=True),
             torch_fn=lambda t: torch.linalg.norm(t, ord, dim=(0, 2), keepdim=True), arrays=[a], dtypes=FLOAT,
             gradgrad=False)


def test_vector_norm_pinv_rank_lstsq_multi_dot_vecdot_cross_diagonal():
    rng = np.random.default_rng(6)
    a, b, c = rng.uniform(-1, 1, size=(3, 4)), rng.uniform(-1, 1, size=(4, 2)), rng.uniform(-1, 1, size=(2, 5))
    check_op([a.shape], lambda t: cn.linalg.norm(t, 3, dim=1), torch_fn=lambda t: torch.linalg.norm(t, 3, dim=1),
             arrays=[a], dtypes=FLOAT)
    check_op([a.shape], cn.linalg.pinv, torch_fn=torch.linalg.pinv, arrays=[a], dtypes=FLOAT, gradgrad=False)
    check_op([a.shape, b.shape, c.shape], lambda x, y, z: cn.linalg.multi_dot([x, y, z]),
             torch_fn=lambda x, y, z: torch.linalg.multi_dot([x, y, z]), arrays=[a, b, c], dtypes=FLOAT)
    check_op([a.shape, a.shape], cn.linalg.vecdot, torch_fn=torch.linalg.vecdot, arrays=[a, a[::-1].copy()],
             dtypes=FLOAT)
    check_op([(4, 3), (1, 3)], cn.linalg.cross, torch_fn=torch.linalg.cross, dtypes=FLOAT)
    check_op([(2, 3, 4)], lambda t: cn.linalg.diagonal(t, offset=1),
             torch_fn=lambda t: torch.linalg.diagonal(t, offset=1), dtypes=FLOAT)
    tall = rng.uniform(-1, 1, size=(5, 3))
    rhs = rng.uniform(-1, 1, size=(5, 2))
    check_op([tall.shape, rhs.shape], lambda x, y: cn.linalg.lstsq(x, y).solution,
             torch_fn=lambda x, y: torch.linalg.lstsq(x, y).solution, arrays=[tall, rhs], dtypes=FLOAT, gradgrad=False)
    low_rank = a[:, :1] @ b[:1]
    assert int(cn.linalg.matrix_rank(cn.tensor(low_rank))) == int(torch.linalg.matrix_rank(torch.tensor(low_rank)))
    np.testing.assert_array_equal(cn.linalg.matrix_rank(cn.tensor(np.stack([a, a * 0]))).numpy(),
                                  torch.linalg.matrix_rank(torch.tensor(np.stack([a, a * 0]))).numpy())


def test_errors_match_torch():
    with pytest.raises(cn.linalg.LinAlgError, match="singular"):
        cn.linalg.inv(cn.zeros(3, 3))
    with pytest.raises(RuntimeError, match="singular"):
        cn.linalg.solve(cn.zeros(2, 2), cn.ones(2))
    with pytest.raises(cn.linalg.LinAlgError, match="not positive-definite"):
        cn.linalg.cholesky(-cn.eye(3))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        cn.linalg.inv(cn.ones(2, 3))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        cn.linalg.det(cn.eye(2, dtype=cn.float16))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        cn.linalg.inv(cn.tensor([[1, 0], [0, 1]]))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        cn.linalg.svd(cn.ones(3))
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3"):
        cn.linalg.cross(cn.ones(2, 4), cn.ones(2, 4))
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        cn.linalg.multi_dot([cn.ones(2, 2)])
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        cn.linalg.solve(cn.eye(3), cn.ones(2, 1))
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D"):
        cn.linalg.norm(cn.ones(2, 2, 2), 2)
    assert issubclass(cn.linalg.LinAlgError, RuntimeError)


# ---- eig, matrix_exp, matrix_power, solve_triangular, *_ex, cond, vander (issue 13)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig_and_eigvals_match_torch(dtype):
    a = np.random.default_rng(4).standard_normal((3, 5, 5))
    w, v = cn.linalg.eig(cn.tensor(a, dtype=dtype))
    tw = torch.linalg.eigvals(torch.tensor(a).to(getattr(torch, dtype)))
    assert str(w.dtype) == str(v.dtype) == {"float32": "complex64", "float64": "complex128"}[dtype]
    eps = np.finfo(dtype).eps
    tol = 50 * eps * np.abs(a).sum(-1).max()  # NOTE: backward-stable geev: error ~ n * eps * ||A||
    # NOTE: both are LAPACK geev, but builds may order eigenvalues differently: compare sorted
    key = lambda z: np.lexsort((z.imag.round(4), z.real.round(4)), axis=-1)  # noqa: E731
    got, want = w.numpy(), tw.numpy()
    np.testing.assert_allclose(np.take_along_axis(got, key(got), -1), np.take_along_axis(want, key(want), -1),
                               atol=tol)
    vv = v.numpy()
    np.testing.assert_allclose(a.astype(dtype) @ vv, vv * got[..., None, :], atol=tol)
    np.testing.assert_allclose(np.linalg.norm(vv, axis=-2), 1.0, atol=10 * eps)
    np.testing.assert_array_equal(cn.linalg.eigvals(cn.tensor(a, dtype=dtype)).numpy(), got)


def test_eig_refuses_a_graph_input_loudly():
    a = cn.tensor(np.random.default_rng(5).standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="linalg.eig: A requires grad.*no_grad"):
        cn.linalg.eig(a)
    with cn.no_grad():
        assert cn.linalg.eigvals(a).shape == (3,)
    assert cn.linalg.eigvals(a.detach()).shape == (3,)
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
        cn.linalg.eig(cn.eye(2, dtype=cn.float16))


@pytest.mark.parametrize("scale", [0.3, 4.0])
def test_matrix_exp_matches_torch(scale):
    # NOTE: scale 4 gives 1-norms near 8: three squarings after the series
    a = np.random.default_rng(6).uniform(-1, 1, size=(2, 3, 3)) * scale
    check_op([a.shape], cn.linalg.matrix_exp, torch_fn=torch.linalg.matrix_exp, arrays=[a], dtypes=FLOAT,
             tol={"float32": ((1e-5 * scale ** 2, 1e-4), (1e-4 * scale ** 2, 1e-3))})
    np.testing.assert_allclose(cn.linalg.matrix_exp(cn.zeros(2, 2)).numpy(), np.eye(2))


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power_matches_torch(n):
    a = _well_conditioned(2, 3, 3) / 3
    check_op([a.shape], lambda t: cn.linalg.matrix_power(t, n), torch_fn=lambda t: torch.linalg.matrix_power(t, n),
             arrays=[a], dtypes=FLOAT + ("float16",) * (n >= 0), grad=n != 0)


@pytest.mark.parametrize("kw", [{"upper": True}, {"upper": False}, {"upper": True, "left": False},
                                {"upper": False, "unitriangular": True}])
def test_solve_triangular_matches_torch(kw):
    a = _well_conditioned(2, 3, 3, seed=7)
    b = np.random.default_rng(8).uniform(-1, 1, size=(2, 3, 2) if kw.get("left", True) else (2, 2, 3))
    check_op([a.shape, b.shape], lambda x, y: cn.linalg.solve_triangular(x, y, **kw),
             torch_fn=lambda x, y: torch.linalg.solve_triangular(x, y, **kw), arrays=[a, b], dtypes=FLOAT)


def test_cholesky_ex_and_inv_ex_info_match_torch():
    mats = np.stack([np.eye(3) * 2, np.diag([1.0, -1.0, 1.0]), np.diag([1.0, 1.0, 0.0]),
                     np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])])
    for mine, theirs in ((cn.linalg.cholesky_ex, torch.linalg.cholesky_ex), (cn.linalg.inv_ex, torch.linalg.inv_ex)):
        got, want = mine(cn.tensor(mats)), theirs(torch.tensor(mats))
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
        assert got[1].dtype == cn.int32
        np.testing.assert_allclose(got[0].numpy()[0], want[0].numpy()[0])
        assert np.isnan(got[0].numpy()[got[1].numpy() > 0]).all()
        with pytest.raises(cn.linalg.LinAlgError):
            mine(cn.tensor(mats), check_errors=True)
    good = _well_conditioned(2, 3, 3)
    check_op([good.shape], lambda t: cn.linalg.inv_ex(t).inverse, torch_fn=lambda t: torch.linalg.inv_ex(t).inverse,
             arrays=[good], dtypes=FLOAT)
    assert cn.linalg.cholesky_ex(cn.tensor(good @ good.transpose(0, 2, 1))).info.numpy().tolist() == [0, 0]


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf")])
def test_cond_matches_torch(p):
    a = _well_conditioned(2, 3, 3, seed=9)
    np.testing.assert_allclose(cn.linalg.cond(cn.tensor(a), p).numpy(), torch.linalg.cond(torch.tensor(a), p).numpy(),
                               rtol=1e-12)
    # NOTE: torch 2.13's own cond backward fails for these p (it writes in place into inv_ex's saved output),
    # so the gradient oracle is the definition ||A|| ||A^-1|| in torch
    oracle = (lambda t: torch.linalg.cond(t, p)) if p in (None, 2, -2) else (
        lambda t: torch.linalg.matrix_norm(t, p) * torch.linalg.matrix_norm(torch.linalg.inv(t), p))
    check_op([a.shape], lambda t: cn.linalg.cond(t, p), torch_fn=oracle, arrays=[a], dtypes=FLOAT,
             gradgrad=p not in (1, -1, float("inf")))


def test_vander_matches_torch():
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    check_op([x.shape], lambda t: cn.linalg.vander(t, N=4), torch_fn=lambda t: torch.linalg.vander(t, N=4),
             arrays=[x], dtypes=FLOAT + ("float16",))
    check_op([x.shape], cn.linalg.vander, torch_fn=torch.linalg.vander, arrays=[x], dtypes=FLOAT)


def test_new_linalg_bad_inputs():
    with pytest.raises(TypeError, match="linalg.matrix_power: n must be an int, got 1.5"):
        cn.linalg.matrix_power(cn.eye(2), 1.5)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        cn.linalg.matrix_exp(cn.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.solve_triangular: The input tensor B must have at least 2"):
        cn.linalg.solve_triangular(cn.eye(2), cn.ones(2), upper=True)
    with pytest.raises(TypeError, match="upper"):
        cn.linalg.solve_triangular(cn.eye(2), cn.ones(2, 1))  # NOTE: keyword-only and required, as in torch
    with pytest.raises(RuntimeError, match="linalg.vander: x must have at least one dimension"):
        cn.linalg.vander(cn.tensor(1.0))


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_matrix_exp_of_a_non_finite_matrix_is_nan_as_torch(bad):
    # NOTE: used to raise a bare OverflowError from int(ceil(log2(inf))) while choosing the squarings
    a = np.array([[bad, 0.0], [0.0, 1.0]], dtype=np.float32)
    ours = cn.linalg.matrix_exp(cn.tensor(a))
    theirs = torch.linalg.matrix_exp(torch.tensor(a))
    assert ours.dtype == cn.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

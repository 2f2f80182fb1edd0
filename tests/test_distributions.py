"""cupynet.distributions against torch.distributions (issue 13).

Densities, entropies, moments and KL divergences must equal torch's (float64, to
rounding) with the same gradients with respect to every parameter. Samples cannot
equal torch's (different generators, docs/differences.md): their statistics are
checked against the exact moments with bounds of 6 standard errors for the sample size.
"""

import math
import re

import numpy as np
import pytest

import cupynet as cn
from cupynet import distributions as cd

torch = pytest.importorskip("torch")
td = torch.distributions

RNG = np.random.default_rng(0)
LOC, SCALE, VALUE = RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2.0, size=(3,)), RNG.normal(size=(4, 2, 3))
LOGITS = RNG.normal(size=(2, 4))


def _run(fn, arrays):
    """``fn(lib, dist_module, *tensors)`` in cupynet and torch (float64 leaves); outputs and gradients of a
    random weighted sum, as NumPy arrays."""
    results = []
    for lib, mod, make in ((cn, cd, lambda a: cn.tensor(a, dtype=cn.float64, requires_grad=True)),
                           (torch, td, lambda a: torch.tensor(a, dtype=torch.float64, requires_grad=True))):
        leaves = [make(a) for a in arrays]
        out = fn(lib, mod, *leaves)
        weight = np.random.default_rng(1).uniform(0.5, 1.5, size=tuple(out.shape))
        (out * lib.tensor(weight, dtype=out.dtype)).sum().backward()
        grads = [leaf.grad.detach().numpy() if leaf.grad is not None else None for leaf in leaves]
        results.append((out.detach().numpy(), grads))
    return results


def _assert_matches_torch(fn, *arrays):
    (out, grads), (ref, ref_grads) = _run(fn, arrays)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    for g, rg in zip(grads, ref_grads):
        if rg is None:
            assert g is None or not np.any(g)
        else:
            np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, fn", [
    ("log_prob", lambda lib, d, loc, scale, v: d.Normal(loc, scale).log_prob(v)),
    ("cdf", lambda lib, d, loc, scale, v: d.Normal(loc, scale).cdf(v)),
    ("entropy", lambda lib, d, loc, scale, v: d.Normal(loc, scale).entropy() + 0 * v.sum()),
    ("moments", lambda lib, d, loc, scale, v: d.Normal(loc, scale).mean + d.Normal(loc, scale).stddev
     + d.Normal(loc, scale).variance + 0 * v.sum()),
])
def test_normal_matches_torch(name, fn):
    _assert_matches_torch(fn, LOC, SCALE, VALUE)


def test_normal_icdf_matches_torch():
    p = RNG.uniform(0.01, 0.99, size=(2, 3))
    _assert_matches_torch(lambda lib, d, loc, scale, q: d.Normal(loc, scale).icdf(q), LOC, SCALE, p)


def test_normal_numbers_and_shapes():
    n = cd.Normal(0.0, 1.0)
    assert n.batch_shape == () and n.event_shape == () and n.sample().shape == ()
    assert n.sample((5, 2)).shape == (5, 2) and n.sample(3).shape == (3,)
    assert cd.Normal(cn.zeros(3), 1.0).rsample((4,)).shape == (4, 3)
    assert repr(n) == "Normal(loc: 0.0, scale: 1.0)"
    assert n.log_prob(cn.tensor(0.5)).item() == pytest.approx(td.Normal(0.0, 1.0).log_prob(torch.tensor(0.5)).item())
    assert cd.Normal(cn.zeros(2, dtype=cn.float64), 1.0).scale.dtype == cn.float64


def test_normal_rsample_is_reparametrized():
    loc = cn.tensor(LOC, requires_grad=True)
    scale = cn.tensor(SCALE, requires_grad=True)
    x = cd.Normal(loc, scale).rsample((7,))
    x.sum().backward()
    eps = (x.detach().numpy() - LOC) / SCALE
    np.testing.assert_allclose(loc.grad.numpy(), np.full(LOC.shape, 7.0))
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(axis=(0, 1)), rtol=1e-5, atol=1e-5)
    s = cd.Normal(loc, scale).sample((3,))
    assert not s.requires_grad and s.grad_fn is None


def _within_six_sigma(estimate, exact, sd, n):
    """|estimate - exact| <= 6 standard errors of a mean of n draws."""
    assert np.all(np.abs(estimate - exact) <= 6 * sd / math.sqrt(n) + 1e-12), (estimate, exact)


def test_normal_sample_statistics():
    cn.manual_seed(0)
    n = 200_000
    x = cd.Normal(cn.tensor([1.0, -2.0]), cn.tensor([0.5, 3.0])).sample((n,)).numpy().astype(np.float64)
    _within_six_sigma(x.mean(0), np.array([1.0, -2.0]), np.array([0.5, 3.0]), n)
    # NOTE: the standard error of the sample variance of a normal is sigma^2 sqrt(2 / n)
    _within_six_sigma(x.var(0), np.array([0.25, 9.0]), np.array([0.25, 9.0]) * math.sqrt(2), n)


def test_uniform_matches_torch_and_statistics():
    low, high = RNG.uniform(-2, 0, size=(3,)), RNG.uniform(0.5, 2, size=(3,))
    v = RNG.uniform(0.0, 0.4, size=(5, 3))   # inside every [low, high)
    _assert_matches_torch(lambda lib, d, lo, hi, x: d.Uniform(lo, hi).log_prob(x), low, high, v)
    _assert_matches_torch(lambda lib, d, lo, hi, x: d.Uniform(lo, hi).cdf(x), low, high, v)
    _assert_matches_torch(lambda lib, d, lo, hi, x: d.Uniform(lo, hi).entropy() + d.Uniform(lo, hi).stddev
                          + d.Uniform(lo, hi).mean + 0 * x.sum(), low, high, v)
    outside = cd.Uniform(0.0, 1.0, validate_args=False).log_prob(cn.tensor([1.5, 1.0, 0.0]))
    np.testing.assert_array_equal(outside.numpy(), [-np.inf, -np.inf, 0.0])
    cn.manual_seed(1)
    n = 100_000
    x = cd.Uniform(cn.tensor(-1.0), cn.tensor(3.0)).sample((n,)).numpy().astype(np.float64)
    assert x.min() >= -1.0 and x.max() < 3.0
    _within_six_sigma(x.mean(), 1.0, 4 / math.sqrt(12), n)
    lo, hi = cn.tensor(-1.0, requires_grad=True), cn.tensor(3.0, requires_grad=True)
    r = cd.Uniform(lo, hi).rsample((10,))
    r.sum().backward()
    u = (r.detach().numpy() + 1) / 4
    assert lo.grad.item() == pytest.approx((1 - u).sum(), rel=1e-5)
    assert hi.grad.item() == pytest.approx(u.sum(), rel=1e-5)


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_categorical_matches_torch(param):
    arr = np.exp(LOGITS) if param == "probs" else LOGITS
    value = np.array([[0, 3], [2, 1], [1, 1]])   # (3, 2): broadcast against batch (2,)

    def make(lib, d, p):
        return d.Categorical(**{param: p})
    _assert_matches_torch(lambda lib, d, p: make(lib, d, p).log_prob(lib.tensor(value)), arr)
    _assert_matches_torch(lambda lib, d, p: make(lib, d, p).entropy(), arr)
    _assert_matches_torch(lambda lib, d, p: make(lib, d, p).probs * 2 + make(lib, d, p).logits, arr)
    c, t = make(cn, cd, cn.tensor(arr)), make(torch, td, torch.tensor(arr))
    assert c.batch_shape == tuple(t.batch_shape) and c.event_shape == () and c.param_shape == tuple(t.param_shape)
    np.testing.assert_array_equal(c.mode.numpy(), t.mode.numpy())
    assert np.isnan(c.mean.numpy()).all() and c.mean.shape == (2,) and np.isnan(c.variance.numpy()).all()


def test_categorical_zero_probability_category():
    probs = np.array([0.0, 0.3, 0.7])
    c, t = cd.Categorical(cn.tensor(probs)), td.Categorical(torch.tensor(probs))
    assert c.entropy().item() == pytest.approx(t.entropy().item(), rel=1e-6)
    assert c.log_prob(cn.tensor(2)).item() == pytest.approx(t.log_prob(torch.tensor(2)).item(), rel=1e-6)
    cn.manual_seed(2)
    assert (cd.Categorical(cn.tensor(probs)).sample((10_000,)).numpy() != 0).all()


def test_categorical_sample_frequencies():
    cn.manual_seed(3)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    n = 100_000
    s = cd.Categorical(cn.tensor(probs)).sample((n,))
    assert s.shape == (n, 2) and s.dtype == cn.int64
    freq = np.stack([(s.numpy() == k).mean(0) for k in range(3)], axis=-1)
    _within_six_sigma(freq, probs, np.sqrt(probs * (1 - probs)), n)


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_bernoulli_matches_torch(param):
    arr = RNG.uniform(0.05, 0.95, size=(3,)) if param == "probs" else RNG.normal(size=(3,))
    value = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    _assert_matches_torch(lambda lib, d, p: d.Bernoulli(**{param: p}).log_prob(lib.tensor(value, dtype=p.dtype)),
                          arr)
    _assert_matches_torch(lambda lib, d, p: d.Bernoulli(**{param: p}).entropy(), arr)
    _assert_matches_torch(lambda lib, d, p: d.Bernoulli(**{param: p}).mean + d.Bernoulli(**{param: p}).variance
                          + d.Bernoulli(**{param: p}).logits, arr)
    cn.manual_seed(4)
    n = 100_000
    s = cd.Bernoulli(cn.tensor([0.2, 0.9])).sample((n,))
    assert s.dtype == cn.float32 and set(np.unique(s.numpy())) <= {0.0, 1.0}
    _within_six_sigma(s.numpy().mean(0), np.array([0.2, 0.9]), np.sqrt([0.16, 0.09]), n)


@pytest.mark.parametrize("name, make_p, make_q, arrays", [
    ("normal", lambda d, a, b: d.Normal(a, b), lambda d, a, b: d.Normal(a * 0.5 + 1, b * 2 + 0.1), (LOC, SCALE)),
    ("categorical", lambda d, a, b: d.Categorical(logits=a), lambda d, a, b: d.Categorical(logits=a * b + 1),
     (LOGITS, RNG.uniform(0.5, 1.5, size=(4,)))),
    ("bernoulli", lambda d, a, b: d.Bernoulli(probs=a), lambda d, a, b: d.Bernoulli(probs=b),
     (RNG.uniform(0.05, 0.95, size=(3,)), RNG.uniform(0.05, 0.95, size=(3,)))),
    ("uniform", lambda d, a, b: d.Uniform(a, b), lambda d, a, b: d.Uniform(a - 1, b + 2),
     (RNG.uniform(-2, 0, size=(3,)), RNG.uniform(0.5, 2, size=(3,)))),
])
def test_kl_divergence_matches_torch(name, make_p, make_q, arrays):
    _assert_matches_torch(lambda lib, d, a, b: d.kl_divergence(make_p(d, a, b), make_q(d, a, b)), *arrays)


def test_kl_edge_cases_and_missing_pair():
    p, q = cd.Categorical(cn.tensor([0.0, 1.0])), cd.Categorical(cn.tensor([0.5, 0.5]))
    assert cd.kl_divergence(p, q).item() == pytest.approx(math.log(2))
    assert cd.kl_divergence(q, p).item() == math.inf
    assert cd.kl_divergence(cd.Uniform(0.0, 2.0), cd.Uniform(0.0, 1.0)).item() == math.inf
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q "
                                                  "type Categorical"):
        cd.kl_divergence(cd.Normal(0.0, 1.0), q)


# ---- MultivariateNormal (issue 13)
_A = RNG.normal(size=(2, 3, 3))
COV = _A @ _A.transpose(0, 2, 1) + np.eye(3)
MVN_LOC, MVN_VALUE = RNG.normal(size=(3,)), RNG.normal(size=(4, 2, 3))


def _spd(lib, m):
    """A symmetric positive-definite matrix from any square leaf: gradients reach every entry of ``m``."""
    return m @ m.transpose(-2, -1) + lib.eye(3, dtype=m.dtype)


def _tril(lib, m):
    """A lower-triangular matrix with a positive diagonal from any square leaf."""
    return m.tril(-1) + lib.diag_embed(m.diagonal(0, -2, -1).exp())


_MVN_PARAMS = {"covariance_matrix": _spd, "precision_matrix": _spd, "scale_tril": _tril}


@pytest.mark.parametrize("param", list(_MVN_PARAMS))
@pytest.mark.parametrize("name, fn", [
    ("log_prob", lambda d, v: d.log_prob(v)),
    ("entropy", lambda d, v: d.entropy() + 0 * v.sum()),
    ("moments", lambda d, v: d.mean + d.variance + d.stddev + 0 * v.sum()),
    ("matrices", lambda d, v: d.covariance_matrix + d.precision_matrix + d.scale_tril + 0 * v.sum()),
])
def test_multivariate_normal_matches_torch(param, name, fn):
    make = _MVN_PARAMS[param]
    _assert_matches_torch(lambda lib, d, loc, m, v: fn(d.MultivariateNormal(loc, **{param: make(lib, m)}), v),
                          MVN_LOC, _A, MVN_VALUE)


def test_multivariate_normal_kl_matches_torch():
    b = RNG.normal(size=(3, 3))
    _assert_matches_torch(lambda lib, d, loc, m, n: d.kl_divergence(
        d.MultivariateNormal(loc, covariance_matrix=_spd(lib, m)), d.MultivariateNormal(loc * 2, scale_tril=_tril(
            lib, n))), MVN_LOC, _A, b)


def test_multivariate_normal_rsample_statistics_and_gradients():
    cn.manual_seed(0)
    n, cov = 100_000, COV[0]
    loc = cn.tensor([1.0, -2.0, 0.5], dtype=cn.float64, requires_grad=True)
    tril = cn.tensor(np.linalg.cholesky(cov), requires_grad=True)
    d = cd.MultivariateNormal(loc, scale_tril=tril)
    x = d.rsample((n,))
    assert x.shape == (n, 3) and x.dtype == cn.float64
    sample = x.detach().numpy()
    sd = np.sqrt(np.diag(cov))
    _within_six_sigma(sample.mean(0), loc.detach().numpy(), sd, n)
    # NOTE: the standard error of a sample covariance entry is sqrt((S_ii S_jj + S_ij^2) / n)
    se = np.sqrt(np.outer(np.diag(cov), np.diag(cov)) + cov ** 2)
    _within_six_sigma(np.cov(sample.T), cov, se, n)
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [n] * 3)  # NOTE: d(loc + L eps)/d loc = I per draw
    eps = np.linalg.solve(np.linalg.cholesky(cov), (sample - loc.detach().numpy()).T).T  # the draws' eps
    # NOTE: d(L eps)/dL is eps on every row, upper triangle included (torch differentiates the full matrix too)
    np.testing.assert_allclose(tril.grad.numpy(), np.ones((3, 1)) * eps.sum(0)[None, :], rtol=1e-8)
    s = d.sample((2, 5))
    assert s.shape == (2, 5, 3) and not s.requires_grad


def _torch_message(fn):
    with pytest.raises(Exception) as info:
        fn(torch, td)
    return str(info.value).replace("torch.Size([", "(").replace("])", ",)").replace("tensor(", "")


@pytest.mark.parametrize("fn, expected", [
    (lambda lib, d: d.Normal(lib.zeros(2), lib.tensor([1.0, -1.0])),
     r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution Normal\(loc: \(2,\), scale: \(2,\)\) "
     r"to satisfy the constraint GreaterThan\(lower_bound=0.0\), but found invalid values"),
    (lambda lib, d: d.Normal(0.0, 1.0).log_prob(lib.tensor(float("nan"))),
     r"Expected value argument \(Tensor of shape \(\)\) to be within the support \(Real\(\)\)"),
    (lambda lib, d: d.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
     r"Value is not broadcastable with batch_shape\+event_shape: \(2,\) vs \(3,\)"),
    (lambda lib, d: d.Normal(0.0, 1.0).log_prob([0.0]), "The value argument to log_prob must be a Tensor"),
    (lambda lib, d: d.Categorical(), r"Either `probs` or `logits` must be specified, but not both"),
    (lambda lib, d: d.Categorical(lib.tensor([0.5]), lib.tensor([0.0])),
     r"Either `probs` or `logits` must be specified, but not both"),
    (lambda lib, d: d.Categorical(lib.tensor([-1.0, 3.0])),
     r"Expected parameter probs \(Tensor of shape \(2,\)\) of distribution Categorical\(probs: \(2,\)\) to satisfy "
     r"the constraint Simplex\(\)"),
    (lambda lib, d: d.Categorical(lib.tensor([0.5, 0.5])).log_prob(lib.tensor(2)),
     r"to be within the support \(IntegerInterval\(lower_bound=0, upper_bound=1\)\)"),
    (lambda lib, d: d.Categorical(lib.tensor(0.5)), "`probs` parameter must be at least one-dimensional"),
    (lambda lib, d: d.Bernoulli(lib.tensor([1.5])),
     r"to satisfy the constraint Interval\(lower_bound=0.0, upper_bound=1.0\)"),
    (lambda lib, d: d.Bernoulli(lib.tensor([0.5])).log_prob(lib.tensor([0.5])),
     r"to be within the support \(Boolean\(\)\)"),
    (lambda lib, d: d.Uniform(1.0, 0.0),
     r"Expected parameter low \(Tensor of shape \(\)\) of distribution Uniform\(low: 1.0, high: 0.0\) to satisfy "
     r"the constraint LessThan\(upper_bound=0.0\)"),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2)),
     "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), lib.eye(2), scale_tril=lib.eye(2)),
     "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."),
    (lambda lib, d: d.MultivariateNormal(lib.tensor(0.0), lib.eye(1)), "loc must be at least one-dimensional."),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2)),
     "scale_tril matrix must be at least two-dimensional, with optional leading batch dimensions"),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
     r"Expected parameter covariance_matrix \(Tensor of shape \(2, 2\)\) of distribution MultivariateNormal\(loc: "
     r"\(2,\), covariance_matrix: \(2, 2,?\)\) to satisfy the constraint PositiveDefinite\(\)"),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), lib.ones(2)),
     "covariance_matrix must be at least two-dimensional, with optional leading batch dimensions"),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), precision_matrix=lib.tensor([[1.0, 0.5], [0.0, 1.0]])),
     r"to satisfy the constraint PositiveDefinite\(\)"),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), scale_tril=lib.tensor([[1.0, 0.5], [0.0, 1.0]])),
     r"to satisfy the constraint LowerCholesky\(\)"),
    (lambda lib, d: d.MultivariateNormal(lib.zeros(2), scale_tril=lib.eye(2)).log_prob(lib.zeros(3)),
     r"The right-most size of value must match event_shape: \(3,\) vs \(2,\)"),
    (lambda lib, d: d.Uniform(0.0, 1.0).log_prob(lib.tensor(2.0)),
     r"within the support \(Interval\(lower_bound=0.0, upper_bound=1.0\)\) of the distribution Uniform\(low: 0.0, "
     r"high: 1.0\)"),
])
def test_bad_arguments_raise_torchs_errors(fn, expected):
    assert re.search(expected, _torch_message(fn)), _torch_message(fn)   # the pattern is torch's own text
    with pytest.raises(ValueError, match=expected):
        fn(cn, cd)


def test_validate_args_off_and_default_switch():
    assert cd.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    cd.Distribution.set_default_validate_args(False)
    try:
        cd.Normal(0.0, -1.0)
    finally:
        cd.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="GreaterThan"):
        cd.Normal(0.0, -1.0)
    with pytest.raises(TypeError, match="sample_shape must be a tuple of non-negative ints"):
        cd.Normal(0.0, 1.0).sample((2.5,))
    with pytest.raises(ValueError, match="must all be instances of numbers.Number or Tensor, got str"):
        cd.Normal("0", 1.0)
    with pytest.raises(NotImplementedError, match="Categorical has no rsample"):
        cd.Categorical(cn.tensor([0.5, 0.5])).rsample()


@pytest.mark.parametrize("make,expected", [
    (lambda: cd.MultivariateNormal(cn.zeros(2), cn.eye(2, dtype=cn.float64)),
     r"loc \(float32\) and covariance_matrix \(float64\) must have one floating dtype"),
    (lambda: cd.MultivariateNormal(cn.zeros(2, dtype=cn.int64), scale_tril=cn.eye(2)),
     r"loc \(int64\) and scale_tril \(float32\) must have one floating dtype"),
    (lambda: cd.MultivariateNormal(cn.zeros(3, 2), cn.eye(2).expand(4, 2, 2)),
     r"the batch shapes of loc \(3, 2\) and covariance_matrix \(4, 2, 2\) do not broadcast"),
])
def test_multivariate_normal_names_mismatched_parameters_up_front(make, expected):
    # NOTE: these used to be accepted and fail later inside solve/matmul, or with NumPy's bare broadcast error
    with pytest.raises(ValueError, match=expected):
        make()

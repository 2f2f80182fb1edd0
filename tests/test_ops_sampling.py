"""Random sampling (issue 13): normal (every overload), bernoulli, poisson and the in-place fills.

cupynet draws from NumPy's/CuPy's generators, not torch's, so values cannot match PyTorch
(docs/differences.md). What is checked against torch: shapes, dtypes, gradients (zero, recorded),
errors. What is checked statistically: each sample mean (and variance or frequency) lies within
6 standard errors of the exact moment for the sample size, a bound a correct sampler breaks about
once in 500 million runs; a seeded ``Generator`` reproduces its draws.
"""

import math

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")
N = 40000


def _gen(seed=0):
    return cn.Generator().manual_seed(seed)


def _mean_within(values, mean, var, n=N):
    """The sample mean is within 6 standard errors (sqrt(var / n)) of the exact mean."""
    got = float(np.mean(values, dtype=np.float64))
    assert abs(got - mean) <= 6 * math.sqrt(var / n), f"sample mean {got}, exact {mean}"


def _var_within(values, var, fourth_central, n=N):
    """The sample variance is within 6 standard errors (sqrt((mu4 - var^2) / n)) of the exact variance."""
    got = float(np.var(values, dtype=np.float64))
    assert abs(got - var) <= 6 * math.sqrt((fourth_central - var * var) / n), f"sample variance {got}, exact {var}"


def test_normal_tensor_mean_and_std_broadcast_with_exact_moments():
    mean = cn.tensor(np.array([[-1.0], [2.0]]), dtype=cn.float32)
    std = cn.tensor(np.array([0.5, 3.0]), dtype=cn.float32)
    out = cn.normal(mean, cn.tensor(np.tile(std.array, N // 2)), generator=_gen())
    assert out.shape == (2, N) and out.dtype == cn.float32
    for row, m in enumerate((-1.0, 2.0)):
        for col, s in enumerate((0.5, 3.0)):
            x = out.array[row, col::2]
            _mean_within(x, m, s * s, n=x.size)
            _var_within(x, s * s, 3 * s ** 4, n=x.size)  # NOTE: a normal's fourth central moment is 3 s^4


@pytest.mark.parametrize(("mean", "std"), [(lambda: cn.zeros(N), 2.0), (lambda: 1.5, lambda: cn.full((N,), 0.5))])
def test_normal_mixed_overloads(mean, std):
    m = mean() if callable(mean) else mean
    s = std() if callable(std) else std
    out = cn.normal(m, s, generator=_gen(1))
    m_val, s_val = (0.0, 2.0) if isinstance(m, cn.Tensor) else (1.5, 0.5)
    assert out.shape == (N,)
    _mean_within(out.array, m_val, s_val ** 2)


def test_normal_of_numbers_takes_size_dtype_device_requires_grad():
    out = cn.normal(3.0, 0.25, (N,), generator=_gen(2), dtype=cn.float64, requires_grad=True)
    assert out.dtype == cn.float64 and out.requires_grad and out.grad_fn is None
    _mean_within(out.array, 3.0, 0.0625)
    assert torch.normal(3.0, 0.25, (2, 3)).dtype == torch.float32 and cn.normal(3.0, 0.25, (2, 3)).dtype == cn.float32


def test_sampling_ops_are_recorded_with_zero_gradients_as_torch():
    m, s = cn.zeros(3, requires_grad=True), cn.ones(3, requires_grad=True)
    cn.normal(m, s).sum().backward()
    tm, ts = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
    torch.normal(tm, ts).sum().backward()
    assert m.grad.tolist() == tm.grad.tolist() == [0.0] * 3 and s.grad.tolist() == ts.grad.tolist()
    for fn in (cn.bernoulli, cn.poisson):
        p = cn.full((3,), 0.5, requires_grad=True)
        y = fn(p)
        assert y.requires_grad
        y.sum().backward()
        assert p.grad.tolist() == [0.0] * 3


def test_bernoulli_frequency_and_p_overload():
    probs = np.array([0.1, 0.5, 0.9])
    out = cn.bernoulli(cn.tensor(np.tile(probs, (N, 1))), generator=_gen(3))
    assert set(np.unique(out.array)) <= {0.0, 1.0} and out.dtype == cn.float64
    for j, p in enumerate(probs):
        _mean_within(out.array[:, j], p, p * (1 - p))
    fixed = cn.bernoulli(cn.zeros(N, dtype=cn.float16), 0.25, generator=_gen(4))
    assert fixed.dtype == cn.float16
    _mean_within(fixed.float().array, 0.25, 0.25 * 0.75)


def test_poisson_mean_and_variance():
    out = cn.poisson(cn.full((N,), 4.0), generator=_gen(5))
    assert out.dtype == cn.float32 and np.all(out.array == np.round(out.array))
    _mean_within(out.array, 4.0, 4.0)
    _var_within(out.array, 4.0, 4.0 + 3 * 16.0)  # NOTE: Poisson's fourth central moment is lam + 3 lam^2


def test_in_place_fills_have_their_distributions():
    x = cn.zeros(N, dtype=cn.float64)
    _mean_within(x.bernoulli_(0.3, generator=_gen(6)).array, 0.3, 0.21)
    _mean_within(x.exponential_(2.0, generator=_gen(7)).array, 0.5, 0.25)
    g = x.geometric_(0.25, generator=_gen(8)).array
    assert g.min() >= 1 and np.all(g == np.round(g))
    _mean_within(g, 4.0, 0.75 / 0.0625)
    # NOTE: a Cauchy has no mean: check its median and quartiles (median +- sigma) by frequency
    c = x.cauchy_(1.0, 2.0, generator=_gen(9)).array
    for q, at in ((0.25, -1.0), (0.5, 1.0), (0.75, 3.0)):
        _mean_within(c <= at, q, q * (1 - q))
    ln = np.log(x.log_normal_(0.5, 0.75, generator=_gen(10)).array)
    _mean_within(ln, 0.5, 0.5625)


@pytest.mark.parametrize(("args", "low", "high"), [((), 0, 2 ** 24), ((10,), 0, 9), ((3, 7), 3, 6)])
def test_random_fill_is_uniform_on_integers(args, low, high):
    x = cn.zeros(N).random_(*args, generator=_gen(11))
    v = x.array.astype(np.float64)
    assert v.min() >= low and v.max() <= high and np.all(v == np.round(v))
    n_values = high - low + 1
    _mean_within(v, (low + high) / 2, (n_values ** 2 - 1) / 12)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "float16", "bfloat16"])
def test_random_fill_range_by_dtype_as_torch(dtype):
    x = cn.zeros(1000, dtype=dtype).random_(generator=_gen(12))
    assert x.dtype == cn.dtypes.as_dtype(dtype)
    limit = {"int32": 2 ** 31 - 1, "int64": 2 ** 63 - 1, "bool": 1, "float16": 2 ** 11, "bfloat16": 2 ** 8}[dtype]
    v = x.array.astype(np.float64)
    assert v.min() >= 0 and v.max() <= limit and v.max() > limit / 4


def test_generator_reproduces_and_default_stream_advances():
    a = cn.normal(cn.zeros(5), 1.0, generator=_gen(13))
    b = cn.normal(cn.zeros(5), 1.0, generator=_gen(13))
    assert a.tolist() == b.tolist()
    cn.manual_seed(0)
    first = cn.zeros(5).exponential_().tolist()
    assert cn.zeros(5).exponential_().tolist() != first
    cn.manual_seed(0)
    assert cn.zeros(5).exponential_().tolist() == first


def test_in_place_fill_of_a_graph_tensor_rebases_with_zero_gradient():
    w = cn.ones(4, requires_grad=True)
    y = w * 2.0
    y.exponential_()
    assert y.grad_fn is not None
    y.sum().backward()
    assert w.grad is None or w.grad.tolist() == [0.0] * 4  # NOTE: torch gives zeros; no gradient flows either way
    leaf = cn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.cauchy_()


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: cn.bernoulli(cn.tensor([1.5])), RuntimeError, "p_in >= 0 && p_in <= 1"),
    (lambda: cn.bernoulli(cn.tensor([1, 0])), TypeError, "floating point"),
    (lambda: cn.poisson(cn.tensor([-1.5])), RuntimeError, "invalid Poisson rate"),
    (lambda: cn.normal(cn.zeros(2), -cn.ones(2)), RuntimeError, "all elements of std >= 0.0"),
    (lambda: cn.normal(0.0, -1.0, (2,)), RuntimeError, "normal expects std >= 0.0"),
    (lambda: cn.normal(0.0, 1.0), TypeError, "size must be given"),
    (lambda: cn.normal(cn.zeros(2), cn.ones(3)), RuntimeError, "do not broadcast"),
    (lambda: cn.normal(cn.zeros(2), 1.0, (2,)), TypeError, "size is only accepted"),
    (lambda: cn.zeros(2).exponential_(-1.0), RuntimeError, "exponential_ expects lambda > 0.0"),
    (lambda: cn.zeros(2).geometric_(1.5), RuntimeError, r"geometric_ expects p to be in \(0, 1\)"),
    (lambda: cn.zeros(2).cauchy_(0.0, -1.0), RuntimeError, "cauchy_ expects sigma > 0.0"),
    (lambda: cn.zeros(2).log_normal_(0.0, -1.0), RuntimeError, "log_normal_ expects std > 0.0"),
    (lambda: cn.zeros(2).random_(5, 2), RuntimeError, "'from' to be less than 'to'"),
    (lambda: cn.zeros(2).bernoulli_(1.5), RuntimeError, r"bernoulli_ expects p to be in \[0, 1\]"),
    (lambda: cn.zeros(2).exponential_(generator=3), TypeError, "generator"),
    (lambda: cn.zeros(2, dtype="int64").exponential_(), TypeError, "floating point"),
])
def test_bad_inputs_are_refused_as_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_refused_fill_leaves_the_tensor_untouched():
    x = cn.arange(3.0)
    with pytest.raises(RuntimeError):
        x.geometric_(0.0)
    assert x.tolist() == [0.0, 1.0, 2.0] and x._version == 0

"""The CPU random stream against torch's, bit for bit: seeding, state, and every transform over sizes that cross
torch's thresholds (16 values for the block Box-Muller, 2**28 for 64-bit randint draws)."""

import warnings
from fractions import Fraction

import numpy as np
import pytest

import cupynet as cn
import cupynet.nn.functional as F
from cupynet import nn
from cupynet.random import mt19937_stream, normal_fill

torch = pytest.importorskip("torch")

SIZES = (1, 2, 15, 16, 17, 31, 32, 33, 1000, 4099)
SEEDS = (0, 3, 2**40 + 11)
FLOATS = {"float32": (cn.float32, torch.float32), "float64": (cn.float64, torch.float64),
          "float16": (cn.float16, torch.float16), "bfloat16": (cn.bfloat16, torch.bfloat16)}


def _same(ours, theirs):
    """Bit-for-bit equality of a cupynet Tensor and a torch tensor (values, dtype width, shape)."""
    ours = ours.detach().numpy() if isinstance(ours, cn.Tensor) else np.asarray(ours)
    theirs = theirs.detach()
    if theirs.dtype == torch.bfloat16:
        theirs, ours = theirs.float(), ours.astype(np.float32)
    theirs = theirs.numpy()
    return ours.shape == theirs.shape and ours.dtype.itemsize == theirs.dtype.itemsize and np.array_equal(
        ours.view(f"u{ours.dtype.itemsize}") if ours.dtype.kind == "f" else ours,
        theirs.view(f"u{theirs.dtype.itemsize}") if theirs.dtype.kind == "f" else theirs)


def _seed(seed):
    cn.manual_seed(seed)
    torch.manual_seed(seed)


# ---- seeding and state ----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", (0, 1, 42, 2**32 + 5, 2**63 + 7, 2**64 - 1))
@pytest.mark.parametrize("draws", (0, 1, 623, 624, 700))
def test_state_bytes_equal_torch_after_seeding_and_draws(seed, draws):
    _seed(seed)
    if draws:
        assert _same(cn.randint(0, 5, (draws,)), torch.randint(0, 5, (draws,)))
    assert _same(cn.random.default_generator.get_state(), torch.get_rng_state())


def test_state_carries_the_cached_normal_and_moves_both_ways():
    _seed(3)
    assert _same(cn.randn(1, dtype=cn.float64), torch.randn(1, dtype=torch.float64))  # NOTE: caches the sine
    assert _same(cn.random.default_generator.get_state(), torch.get_rng_state())
    ours = cn.random.default_generator.get_state()
    torch.set_rng_state(torch.from_numpy(ours.numpy()))
    cn.manual_seed(9)
    cn.random.default_generator.set_state(ours)
    assert _same(cn.randn(5), torch.randn(5))
    torch.manual_seed(11)
    torch.rand(7)
    cn.random.default_generator.set_state(cn.tensor(torch.get_rng_state().numpy()))
    assert _same(cn.randn(40), torch.randn(40))


def test_get_rng_state_round_trips_as_plain_data():
    cn.manual_seed(5)
    cn.rand(3)
    saved = cn.get_rng_state()
    expected = cn.randn(20).numpy()
    cn.manual_seed(6)
    cn.set_rng_state(saved)
    np.testing.assert_array_equal(cn.randn(20).numpy(), expected)


def test_set_rng_state_takes_torchs_byte_tensor():
    torch.manual_seed(21)
    torch.randn(3)
    cn.set_rng_state(cn.tensor(torch.get_rng_state().numpy()))
    assert _same(cn.randn(50), torch.randn(50))


def test_set_state_rejects_bad_states_and_keeps_the_stream():
    g = cn.Generator().manual_seed(4)
    before = g.get_state().numpy()
    with pytest.raises(RuntimeError, match="expected a state of 5056 bytes"):
        g.set_state(cn.zeros(100, dtype=cn.uint8))
    corrupt = before.copy()
    corrupt[8:12] = np.frombuffer(np.int32(0).tobytes(), np.uint8)   # NOTE: left = 0 is impossible
    with pytest.raises(RuntimeError, match="state is corrupt"):
        g.set_state(cn.tensor(corrupt))
    np.testing.assert_array_equal(g.get_state().numpy(), before)


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_objects_give_torchs_streams(seed):
    ours, theirs = cn.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    assert _same(cn.rand(20, generator=ours), torch.rand(20, generator=theirs))
    assert _same(cn.randn(33, generator=ours), torch.randn(33, generator=theirs))
    assert _same(cn.randint(0, 7, (9,), generator=ours), torch.randint(0, 7, (9,), generator=theirs))
    assert _same(cn.randperm(12, generator=ours), torch.randperm(12, generator=theirs))
    assert _same(ours.get_state(), theirs.get_state())


# ---- uniform -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("seed", SEEDS)
def test_rand_matches_torch(dtype, seed):
    ours, theirs = FLOATS[dtype]
    _seed(seed)
    for n in SIZES:
        assert _same(cn.rand(n, dtype=ours), torch.rand(n, dtype=theirs)), n


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("bounds", ((-0.3, 0.7), (2.0, 2.02), (1.0, 1.0 + 2**-20), (-5.0, 5.0)))
def test_uniform_matches_torch_including_values_that_round_to_the_upper_bound(dtype, bounds):
    ours, theirs = FLOATS[dtype]
    _seed(1)
    for n in (1, 17, 5000):
        assert _same(cn.empty(n, dtype=ours).uniform_(*bounds), torch.empty(n, dtype=theirs).uniform_(*bounds))
        assert _same(nn.init.uniform_(cn.empty(n, dtype=ours), *bounds),
                     torch.nn.init.uniform_(torch.empty(n, dtype=theirs), *bounds))


# ---- normal --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("moments", ((0.0, 1.0), (0.5, 2.5), (-3.0, 0.01)))
def test_normal_matches_torch_across_the_block_threshold(dtype, seed, moments):
    ours, theirs = FLOATS[dtype]
    _seed(seed)
    for n in SIZES:
        assert _same(cn.empty(n, dtype=ours).normal_(*moments), torch.empty(n, dtype=theirs).normal_(*moments)), n
    assert _same(cn.randn(4, 25, dtype=ours), torch.randn(4, 25, dtype=theirs))


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
@pytest.mark.parametrize("moments", ((0.0, 1.0), (0.5, 2.5)))
def test_half_normal_matches_torch_including_its_own_last_block(dtype, moments):
    ours, theirs = FLOATS[dtype]
    _seed(2)
    for n in SIZES + (18, 20, 24, 1024):
        assert _same(cn.empty(n, dtype=ours).normal_(*moments), torch.empty(n, dtype=theirs).normal_(*moments)), n


@pytest.mark.parametrize("fill", ("normal_", "uniform_"))
def test_non_contiguous_tensors_fill_in_memory_order_as_torch(fill):
    _seed(13)
    views = (lambda lib: lib.empty(3, 40).t(), lambda lib: lib.empty(16, 7)[::2], lambda lib: lib.empty(4, 5, 6)[:, 1])
    for make in views:
        ours, theirs = make(cn), make(torch)
        assert _same(getattr(ours, fill)(), getattr(theirs, fill)())
        assert _same(getattr(nn.init, fill)(make(cn)), getattr(torch.nn.init, fill)(make(torch)))


@pytest.mark.parametrize("dtype", list(FLOATS))
def test_normal_function_overloads_match_torch(dtype):
    ours, theirs = FLOATS[dtype]
    mean = np.linspace(-1, 1, 40).astype(np.float32)
    std = np.linspace(0.1, 2, 40).astype(np.float32)
    _seed(14)
    for n in (5, 40):
        assert _same(cn.normal(2.0, 3.0, (n,), dtype=ours), torch.normal(2.0, 3.0, (n,), dtype=theirs))
    assert _same(cn.normal(cn.tensor(mean).to(ours), cn.tensor(std).to(ours)),
                 torch.normal(torch.from_numpy(mean).to(theirs), torch.from_numpy(std).to(theirs)))
    assert _same(cn.normal(cn.tensor(mean).to(ours), 0.5), torch.normal(torch.from_numpy(mean).to(theirs), 0.5))


def test_scalar_normals_share_the_cached_second_value_across_calls():
    _seed(8)
    for _ in range(5):
        assert _same(cn.randn(3), torch.randn(3))
        assert _same(cn.randn(1, dtype=cn.float64), torch.randn(1, dtype=torch.float64))


def test_one_million_randn_values_match():
    _seed(0)
    assert _same(cn.randn(1 << 20), torch.randn(1 << 20))


# ---- integers, permutations, Bernoulli, multinomial ----------------------------------------------------

@pytest.mark.parametrize("bounds", ((0, 10), (3, 1000), (-50, 50), (0, 2**28 - 1), (0, 2**28), (0, 2**31),
                                    (-2**31, 2**31 - 1), (-5, 2**40), (-2**62, 2**62)))
@pytest.mark.parametrize("dtype", ("int64", "int32", "float64", "float32"))
def test_randint_matches_torch_on_both_sides_of_the_64_bit_threshold(bounds, dtype):
    low, high = bounds
    if dtype == "int32" and (low < -2**31 or high > 2**31):
        return
    _seed(6)
    for n in (1, 17, 1000):
        assert _same(cn.randint(low, high, (n,), dtype=getattr(cn, dtype)),
                     torch.randint(low, high, (n,), dtype=getattr(torch, dtype))), n


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("bounds", ((0, 2**25), (-2**30 - 7, 2**27 + 3), (-5, 2**40 + 1), (2**60, 2**61)))
def test_randint_and_random_move_bounds_a_float_cannot_hold_as_torch(dtype, bounds):
    ours, theirs = FLOATS[dtype]
    low, high = bounds
    _seed(18)
    if dtype == "float16" and max(abs(low), abs(high - 1)) > 65504:
        with pytest.raises(RuntimeError, match="out of bounds"):
            torch.randint(low, high, (3,), dtype=theirs)
        before = cn.random.default_generator.get_state().numpy()
        with pytest.raises(RuntimeError, match="out of bounds for float16"):
            cn.randint(low, high, (3,), dtype=ours)
        with pytest.raises(RuntimeError, match="out of bounds for float16"):
            cn.empty(3, dtype=ours).random_(low, high)
        np.testing.assert_array_equal(cn.random.default_generator.get_state().numpy(), before)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # NOTE: torch warns that such bounds are out of the exact range
        for n in (1, 17, 300):
            assert _same(cn.randint(low, high, (n,), dtype=ours), torch.randint(low, high, (n,), dtype=theirs))
            assert _same(cn.empty(n, dtype=ours).random_(low, high), torch.empty(n, dtype=theirs).random_(low, high))
        assert _same(cn.empty(9, dtype=ours).random_(high), torch.empty(9, dtype=theirs).random_(high))


@pytest.mark.parametrize("n", (0, 1, 2, 15, 16, 17, 1000, 5000))
def test_randperm_matches_torch(n):
    _seed(7)
    assert _same(cn.randperm(n), torch.randperm(n))
    assert _same(cn.rand(3), torch.rand(3))  # NOTE: and consumed the same draws


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_bernoulli_matches_torch_with_scalar_and_tensor_probabilities(dtype):
    ours, theirs = FLOATS[dtype]
    probs = np.random.default_rng(1).random(1000).astype(dtype)
    _seed(4)
    for n in (1, 17, 1000):
        assert _same(cn.empty(n, dtype=ours).bernoulli_(0.3), torch.empty(n, dtype=theirs).bernoulli_(0.3))
    assert _same(cn.bernoulli(cn.tensor(probs)), torch.bernoulli(torch.from_numpy(probs)))
    assert _same(cn.empty(1000, dtype=ours).bernoulli_(cn.tensor(probs)),
                 torch.empty(1000, dtype=theirs).bernoulli_(torch.from_numpy(probs)))
    assert _same(cn.rand(5), torch.rand(5))


@pytest.mark.parametrize("p", (0.1, 0.3, 0.5, 0.9))
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_dropout_masks_match_torch(p, dtype):
    ours, theirs = FLOATS[dtype]
    x = np.random.default_rng(2).standard_normal((8, 3, 5, 5)).astype(np.float32)
    ours_dtype, theirs_dtype = FLOATS[dtype]
    _seed(5)
    for shape in ((1,), (17,), (8, 75), (8, 3, 5, 5)):
        values = x.reshape(-1)[:int(np.prod(shape))].reshape(shape)
        assert _same(F.dropout(cn.tensor(values).to(ours_dtype), p),
                     torch.nn.functional.dropout(torch.from_numpy(values).to(theirs_dtype), p))
    assert _same(nn.Dropout(p)(cn.tensor(x).to(ours_dtype)), torch.nn.Dropout(p)(torch.from_numpy(x).to(theirs_dtype)))
    assert _same(nn.Dropout2d(p)(cn.tensor(x).to(ours_dtype)),
                 torch.nn.Dropout2d(p)(torch.from_numpy(x).to(theirs_dtype)))


@pytest.mark.parametrize("dtype", ("float32", "float64", "bfloat16"))
def test_rrelu_slopes_and_gradients_match_torch(dtype):
    ours_dtype, theirs_dtype = FLOATS[dtype]
    x = np.random.default_rng(5).standard_normal((3, 100)).astype(np.float32)
    _seed(20)
    ours = cn.tensor(x).to(ours_dtype).requires_grad_()
    theirs = torch.from_numpy(x).to(theirs_dtype).requires_grad_()
    out_ours, out_theirs = F.rrelu(ours, training=True), torch.nn.functional.rrelu(theirs, training=True)
    assert _same(out_ours, out_theirs)
    out_ours.sum().backward()
    out_theirs.sum().backward()
    assert _same(ours.grad, theirs.grad)
    assert _same(cn.rand(3), torch.rand(3))


def test_attention_dropout_masks_match_torch():
    # NOTE: zero queries give uniform attention and an identity value matrix shows each kept entry, so the
    # output's zeros are exactly the dropped entries of the mask
    q = np.zeros((2, 3, 6, 4), dtype=np.float32)
    v = np.broadcast_to(np.eye(6, dtype=np.float32), (2, 3, 6, 6)).copy()
    _seed(17)
    ours = F.scaled_dot_product_attention(cn.tensor(q), cn.tensor(q), cn.tensor(v), dropout_p=0.4).numpy()
    theirs = torch.nn.functional.scaled_dot_product_attention(torch.from_numpy(q), torch.from_numpy(q),
                                                                torch.from_numpy(v), dropout_p=0.4).numpy()
    np.testing.assert_array_equal(ours == 0, theirs == 0)
    assert _same(cn.rand(3), torch.rand(3))


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("replacement", (True, False))
def test_multinomial_matches_torch(dtype, replacement):
    weights = np.random.default_rng(3).random((4, 9)).astype(dtype) ** 3
    _seed(9)
    for samples in (1, 5, 9) if not replacement else (1, 17, 100):
        assert _same(cn.multinomial(cn.tensor(weights), samples, replacement),
                     torch.multinomial(torch.from_numpy(weights), samples, replacement))
        assert _same(cn.multinomial(cn.tensor(weights[0]), samples, replacement),
                     torch.multinomial(torch.from_numpy(weights[0]), samples, replacement))


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
def test_half_bernoulli_and_exponential_match_torch(dtype):
    ours, theirs = FLOATS[dtype]
    _seed(12)
    for n in (1, 17, 1000):
        assert _same(cn.empty(n, dtype=ours).bernoulli_(0.3), torch.empty(n, dtype=theirs).bernoulli_(0.3))
        assert _same(cn.empty(n, dtype=ours).exponential_(), torch.empty(n, dtype=theirs).exponential_())


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_other_fills_match_torch(dtype):
    ours, theirs = FLOATS[dtype]
    _seed(15)
    for n in (1, 17, 200):
        assert _same(cn.empty(n, dtype=ours).log_normal_(0.5, 0.75),
                     torch.empty(n, dtype=theirs).log_normal_(0.5, 0.75))
        assert _same(cn.empty(n, dtype=ours).cauchy_(1.0, 2.0), torch.empty(n, dtype=theirs).cauchy_(1.0, 2.0))
        assert _same(cn.empty(n, dtype=ours).geometric_(0.3), torch.empty(n, dtype=theirs).geometric_(0.3))
        assert _same(cn.empty(n, dtype=ours).random_(0, 10), torch.empty(n, dtype=theirs).random_(0, 10))
        assert _same(cn.empty(n, dtype=ours).random_(), torch.empty(n, dtype=theirs).random_())
        assert _same(cn.rand_like(cn.empty(n, dtype=ours)), torch.rand_like(torch.empty(n, dtype=theirs)))
        assert _same(cn.randn_like(cn.empty(n, dtype=ours)), torch.randn_like(torch.empty(n, dtype=theirs)))
        assert _same(nn.init.trunc_normal_(cn.empty(n, dtype=ours), 0.0, 0.02),
                     torch.nn.init.trunc_normal_(torch.empty(n, dtype=theirs), 0.0, 0.02))
    assert _same(cn.empty(50, dtype=cn.int64).random_(), torch.empty(50, dtype=torch.int64).random_())


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_poisson_matches_torch_on_both_sides_of_rate_10(dtype):
    ours, theirs = FLOATS[dtype]
    rates = np.linspace(0, 40, 81).astype(dtype)
    _seed(22)
    assert _same(cn.poisson(cn.tensor(rates)), torch.poisson(torch.from_numpy(rates)))
    assert _same(cn.poisson(cn.tensor(rates[:7]).to(ours) * 0 + 3), torch.poisson(torch.from_numpy(rates[:7]) * 0 + 3))
    assert _same(cn.rand(3), torch.rand(3))


def test_exponential_matches_torch():
    _seed(10)
    for n in (1, 17, 1000):
        assert _same(cn.empty(n).exponential_(), torch.empty(n).exponential_())
        assert _same(cn.empty(n, dtype=cn.float64).exponential_(2.5),
                     torch.empty(n, dtype=torch.float64).exponential_(2.5))


@pytest.mark.parametrize("sample_shape", ((), (3,), (2, 5)))
def test_distribution_samples_match_torch(sample_shape):
    ours, theirs = cn.distributions, torch.distributions
    probs = np.random.default_rng(4).random((4, 6)).astype(np.float32)
    loc, scale = np.linspace(-1, 1, 20).astype(np.float32), np.linspace(0.5, 2, 20).astype(np.float32)
    _seed(16)
    assert _same(ours.Categorical(probs=cn.tensor(probs)).sample(sample_shape),
                 theirs.Categorical(probs=torch.from_numpy(probs)).sample(sample_shape))
    assert _same(ours.Normal(cn.tensor(loc), cn.tensor(scale)).sample(sample_shape),
                 theirs.Normal(torch.from_numpy(loc), torch.from_numpy(scale)).sample(sample_shape))
    assert _same(ours.Uniform(cn.tensor(loc), cn.tensor(loc + scale)).sample(sample_shape),
                 theirs.Uniform(torch.from_numpy(loc), torch.from_numpy(loc + scale)).sample(sample_shape))
    assert _same(ours.Bernoulli(probs=cn.tensor(probs)).sample(sample_shape),
                 theirs.Bernoulli(probs=torch.from_numpy(probs)).sample(sample_shape))
    cov, mean = np.array([[2.0, 0.3], [0.3, 1.0]], np.float32), np.array([1.0, -1.0], np.float32)
    ours_mvn = ours.MultivariateNormal(cn.tensor(mean), covariance_matrix=cn.tensor(cov)).sample(sample_shape)
    theirs_mvn = theirs.MultivariateNormal(torch.from_numpy(mean), covariance_matrix=torch.from_numpy(cov))
    # NOTE: the same normals; the Cholesky factor and the product round differently (a few float32 ulps of 2)
    np.testing.assert_allclose(ours_mvn.numpy(), theirs_mvn.sample(sample_shape).numpy(), rtol=0,
                               atol=8 * np.finfo(np.float32).eps * 2)
    assert _same(cn.rand(3), torch.rand(3))


# ---- initialisation ------------------------------------------------------------------------------------

def _models(lib):
    """Layers that draw their initial weights, built in the same order from ``lib`` (cupynet.nn or torch.nn)."""
    return (lib.Linear(20, 30), lib.Linear(3, 1000), lib.Conv2d(3, 8, 3), lib.Conv1d(4, 6, 5), lib.Embedding(50, 7),
            lib.LayerNorm(12), lib.Sequential(lib.Linear(784, 128), lib.ReLU(), lib.Linear(128, 10)),
            lib.Conv2d(2, 4, 5, bias=False), lib.Conv1d(3, 3, 1), lib.ConvTranspose2d(3, 4, 3), lib.Conv3d(2, 3, 2),
            lib.LSTM(5, 7), lib.GRU(3, 4, num_layers=2), lib.RNN(3, 4), lib.LSTMCell(3, 5),
            lib.MultiheadAttention(8, 2), lib.TransformerEncoderLayer(8, 2, 16), lib.BatchNorm2d(4), lib.PReLU(),
            lib.GroupNorm(2, 4), lib.EmbeddingBag(10, 3))


def test_layers_start_from_torchs_weights_after_the_same_seed():
    _seed(1234)
    for ours, theirs in zip(_models(nn), _models(torch.nn)):
        ours_params, theirs_params = dict(ours.named_parameters()), dict(theirs.named_parameters())
        assert ours_params.keys() == theirs_params.keys()
        for name in ours_params:
            assert _same(ours_params[name], theirs_params[name]), (type(ours).__name__, name)


@pytest.mark.parametrize("init", ("kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_",
                                  "normal_", "uniform_"))
def test_init_functions_match_torch(init):
    _seed(77)
    for shape in ((3, 5), (64, 32), (16, 3, 3, 3)):
        assert _same(getattr(nn.init, init)(cn.empty(*shape)), getattr(torch.nn.init, init)(torch.empty(*shape)))


@pytest.mark.parametrize("shape", ((5, 3), (3, 5), (64, 32), (4, 2, 3)))
def test_orthogonal_draws_torchs_matrix(shape):
    _seed(19)
    ours = nn.init.orthogonal_(cn.empty(*shape)).numpy()
    theirs = torch.nn.init.orthogonal_(torch.empty(*shape)).numpy()
    # NOTE: the same normal draws; the QR factorisations (NumPy's LAPACK, torch's MKL) differ by rounding,
    # whose size is bounded by a few units of float32's eps times the matrix dimension
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=max(shape) * np.finfo(np.float32).eps)
    assert _same(cn.rand(3), torch.rand(3))


# ---- the exact fused multiply-adds the transforms rely on ----------------------------------------------

def _exact_fma(a, b, c, dtype):
    return np.array([float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                     for x, y, z in zip(a, b, c)]).astype(dtype) if dtype == np.float32 else None


def test_fma32_rounds_once_even_on_float64_midpoints():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(2000).astype(np.float32)
    b = rng.standard_normal(2000).astype(np.float32)
    c = rng.standard_normal(2000).astype(np.float32)
    # NOTE: a*b + c whose float64 rounding lands on a float32 midpoint: c = 1, a*b = 2**-24 + 2**-60
    a = np.concatenate([a, np.float32([1 + 2**-23, 1 + 2**-23])])
    b = np.concatenate([b, np.float32([2**-24 * (1 - 2**-23), -2**-25])])
    c = np.concatenate([c, np.float32([1.0, 1.0])])
    expected = np.array([Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)) for x, y, z in zip(a, b, c)])
    got = normal_fill.fma32(a, b, c)
    for value, exact in zip(got, expected):
        below, above = np.float32(float(exact)), None
        # NOTE: the float32 nearest to the exact value (ties to even), found by checking both neighbours
        candidates = [np.nextafter(below, np.float32(-np.inf)), below, np.nextafter(below, np.float32(np.inf))]
        distances = [abs(Fraction(float(v)) - exact) for v in candidates]
        best = min(distances)
        above = [v for v, d in zip(candidates, distances) if d == best]
        assert value in above and (len(above) == 1 or int(np.float32(value).view(np.int32)) % 2 == 0)


def test_fma64_rounds_once():
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((3, 3000))
    c[:1000] = -a[:1000] * b[:1000]          # NOTE: cancellation, where an unfused a*b+c loses everything
    got = normal_fill.fma64(a, b, c)
    for value, x, y, z in zip(got, a, b, c):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        nearest = float(exact)                 # NOTE: Fraction -> float rounds correctly (ties to even)
        assert value == nearest


def test_seed_key_uses_the_low_32_bits():
    np.testing.assert_array_equal(mt19937_stream.seed_key(5), mt19937_stream.seed_key(2**32 + 5))

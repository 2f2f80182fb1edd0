"""nn.init: the same bounds / standard deviations as PyTorch's scheme, in place, version bumped."""

import math

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.nn import init


def _values(t):
    return t.detach().numpy().astype(np.float64)


def test_calculate_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for name in ("linear", "conv2d", "sigmoid", "tanh", "relu", "selu"):
        assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(torch.nn.init.calculate_gain("leaky_relu", 0.2))
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("fn, kwargs, bound", [
    (init.kaiming_uniform_, {"a": math.sqrt(5)}, 1 / math.sqrt(50)),
    (init.kaiming_uniform_, {"nonlinearity": "relu", "mode": "fan_out"}, math.sqrt(6 / 200)),
    (init.xavier_uniform_, {"gain": 2.0}, 2.0 * math.sqrt(6 / 250)),
    (init.uniform_, {"a": -0.3, "b": 0.3}, 0.3),
])
def test_uniform_initialisers_bounds(fn, kwargs, bound):
    t = cn.empty(200, 50)
    version = t._version
    assert fn(t, **kwargs) is t and t._version > version
    v = _values(t)
    assert v.min() >= -bound and v.max() <= bound
    assert v.max() > 0.98 * bound and v.min() < -0.98 * bound
    assert v.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)


@pytest.mark.parametrize("fn, kwargs, std", [
    (init.kaiming_normal_, {"nonlinearity": "relu"}, math.sqrt(2 / 50)),
    (init.xavier_normal_, {}, math.sqrt(2 / 250)),
    (init.normal_, {"mean": 1.0, "std": 0.5}, 0.5),
])
def test_normal_initialisers_std(fn, kwargs, std):
    t = fn(cn.empty(200, 50), **kwargs)
    assert _values(t).std() == pytest.approx(std, rel=0.03)
    assert _values(t).mean() == pytest.approx(kwargs.get("mean", 0.0), abs=0.03 * std + 1e-3)


def test_trunc_normal_bounds():
    t = init.trunc_normal_(cn.empty(10000), mean=0.0, std=1.0, a=-1.0, b=0.5)
    v = _values(t)
    assert v.min() >= -1.0 and v.max() <= 0.5 and v.min() < -0.99 and v.max() > 0.49
    torch = pytest.importorskip("torch")
    ref = torch.nn.init.trunc_normal_(torch.empty(10000), a=-1.0, b=0.5).numpy()
    assert v.mean() == pytest.approx(ref.mean(), abs=0.03) and v.std() == pytest.approx(ref.std(), rel=0.05)


def test_constants_and_half_precision():
    t = cn.empty(3, 3, dtype=cn.float16)
    init.ones_(t)
    assert (_values(t) == 1).all() and t.dtype == cn.float16
    init.zeros_(t)
    assert (_values(t) == 0).all()
    init.constant_(t, 0.25)
    assert (_values(t) == 0.25).all()
    init.kaiming_uniform_(t)
    assert t.dtype == cn.float16 and np.abs(_values(t)).max() <= math.sqrt(6 / (1 + 0.01 ** 2)) / math.sqrt(3)


def test_default_layer_inits_follow_torch_scheme():
    lin = nn.Linear(64, 500)
    bound = 1 / math.sqrt(64)
    for p in (lin.weight, lin.bias):
        assert np.abs(_values(p)).max() <= bound and np.abs(_values(p)).max() > 0.95 * bound
    conv = nn.Conv2d(4, 64, 3)
    bound = 1 / math.sqrt(4 * 9)
    assert np.abs(_values(conv.weight)).max() <= bound and np.abs(_values(conv.bias)).max() <= bound
    tconv = nn.ConvTranspose2d(4, 8, 3)  # fan_in = weight.shape[1] * k * k = 8 * 9, as in PyTorch
    assert np.abs(_values(tconv.weight)).max() <= 1 / math.sqrt(72)
    emb = nn.Embedding(1000, 20)
    assert _values(emb.weight).std() == pytest.approx(1.0, rel=0.05)
    ln = nn.LayerNorm(3)
    assert (_values(ln.weight) == 1).all() and (_values(ln.bias) == 0).all()
    bn = nn.BatchNorm1d(3)
    assert (_values(bn.running_var) == 1).all() and bn.num_batches_tracked.dtype == cn.int64
    mha = nn.MultiheadAttention(8, 2)
    assert (_values(mha.in_proj_bias) == 0).all() and (_values(mha.out_proj.bias) == 0).all()
    assert np.abs(_values(mha.in_proj_weight)).max() <= math.sqrt(6 / (24 + 8))


def test_seeded_init_is_reproducible():
    cn.manual_seed(3)
    a = _values(nn.Linear(4, 4).weight)
    cn.manual_seed(3)
    b = _values(nn.Linear(4, 4).weight)
    np.testing.assert_array_equal(a, b)


def test_init_bad_inputs():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(cn.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(cn.empty(2, 2), mode="fan_avg")
    with pytest.raises(TypeError, match=r"expected a floating point tensor \(float16, .*\), got int64"):
        init.normal_(cn.zeros(3, dtype=cn.int64))
    with pytest.raises(TypeError, match="expected tensor to be a Tensor, got ndarray"):
        init.uniform_(np.zeros(3))
    with pytest.raises(ValueError, match="expected a < b"):
        init.trunc_normal_(cn.empty(3), a=1.0, b=-1.0)


@pytest.mark.parametrize("shape, gain", [((6, 4), 1.0), ((4, 6), 2.0), ((8, 2, 3, 3), math.sqrt(2)), ((5, 5), 0.5)])
def test_orthogonal_has_orthonormal_rows_or_columns_times_gain(shape, gain):
    # NOTE: issue 13: pytorch/examples super_resolution initialises its convolutions with orthogonal_
    w = cn.empty(*shape)
    version = w._version
    assert init.orthogonal_(w, gain) is w and w._version > version
    m = _values(w).reshape(shape[0], -1)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    # NOTE: float32 values, products summed over at most 18 terms: a few eps of float32
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(len(gram)), atol=32 * 2.0 ** -23 * gain ** 2)


def test_orthogonal_is_haar_distributed_and_reproducible():
    # NOTE: over Haar-random 3x3 orthogonal matrices every entry has mean 0 and mean square 1/3; QR
    # without the sign fix biases the diagonal (numpy's Householder QR gives Q[0, 0] < 0 mostly)
    gen = cn.Generator().manual_seed(5)
    draws = np.stack([_values(init.orthogonal_(cn.empty(3, 3, dtype=cn.float64), generator=gen))
                      for _ in range(2000)])
    standard_error = math.sqrt(1 / 3 / 2000)
    np.testing.assert_allclose(draws.mean(axis=0), 0.0, atol=5 * standard_error)
    # NOTE: an entry squared is Beta(1/2, 1) for n = 3: variance 4/45
    np.testing.assert_allclose((draws ** 2).mean(axis=0), 1 / 3, atol=5 * math.sqrt(4 / 45 / 2000))
    first = _values(init.orthogonal_(cn.empty(4, 3), generator=cn.Generator().manual_seed(1)))
    np.testing.assert_array_equal(first, _values(init.orthogonal_(cn.empty(4, 3),
                                                                  generator=cn.Generator().manual_seed(1))))


def test_orthogonal_refuses_what_torch_refuses():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        torch.nn.init.orthogonal_(torch.ones(3))
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported, got a 1-D"):
        init.orthogonal_(cn.ones(3))
    with pytest.raises(TypeError, match=r"expected a floating point tensor \(float16, .*\), got int64"):
        init.orthogonal_(cn.zeros(2, 2, dtype=cn.int64))
    assert init.orthogonal_(cn.ones(0, 3)).shape == (0, 3)

"""The activations of issue 13 against PyTorch: selu, celu, softsign, logsigmoid, tanhshrink, threshold,
hardshrink, softshrink, rrelu, softmin, gumbel_softmax, their layers, and their refusals.

Random ones (rrelu in training, gumbel_softmax) draw from cupynet's generators, not torch's: their values
cannot match, so their statistics are checked with bounds from the sample size (6 standard errors).
"""

import math

import numpy as np
import pytest
from op_harness import check_op, requires_torch

import cupynet as cn
import cupynet.nn as nn
import cupynet.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# NOTE: inputs kept off the kinks (0, +-lambd, threshold) so central differences see one smooth piece
_AWAY = np.array([[-2.3, -1.1, -0.7, -0.31, 0.33, 0.8, 1.4, 2.2]])


@requires_torch
@pytest.mark.parametrize(("name", "kwargs"), [
    ("selu", {}), ("celu", {}), ("celu", {"alpha": 0.4}), ("softsign", {}), ("logsigmoid", {}), ("tanhshrink", {}),
    ("threshold", {"threshold": 0.5, "value": -1.5}), ("hardshrink", {}), ("hardshrink", {"lambd": 1.0}),
    ("softshrink", {}), ("softshrink", {"lambd": 0.2}), ("rrelu", {}), ("rrelu", {"lower": 0.2, "upper": 0.4}),
])
def test_pointwise_activation_matches_torch(name, kwargs):
    check_op([_AWAY.shape], lambda x: getattr(F, name)(x, **kwargs),
             torch_fn=lambda x: getattr(TF, name)(x, **kwargs), arrays=[_AWAY * 1.0])


@requires_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmin_matches_torch(dim):
    check_op([(3, 4)], lambda x: F.softmin(x, dim=dim), torch_fn=lambda x: TF.softmin(x, dim=dim))


def test_logsigmoid_is_finite_in_both_tails():
    x = cn.tensor([-200.0, -40.0, 40.0, 200.0], dtype="float32")
    want = TF.logsigmoid(torch.tensor([-200.0, -40.0, 40.0, 200.0]))
    np.testing.assert_allclose(F.logsigmoid(x).array, want.numpy(), rtol=1e-6)


def test_threshold_on_integers_stays_integer():
    x = cn.tensor([-2, 0, 3, 5])
    out = F.threshold(x, 1, 7)
    assert out.dtype == np.int64
    assert out.tolist() == TF.threshold(torch.tensor([-2, 0, 3, 5]), 1, 7).tolist()


def test_inplace_writes_when_no_graph():
    x = cn.tensor([-1.0, 2.0])
    assert F.selu(x, inplace=True) is x
    np.testing.assert_allclose(x.array, TF.selu(torch.tensor([-1.0, 2.0])).numpy(), rtol=1e-12)


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: F.hardshrink(cn.ones(2), -0.1), RuntimeError, "lambda must be greater or equal to 0"),
    (lambda: F.softshrink(cn.ones(2), -1.0), RuntimeError, "lambda must be greater or equal to 0"),
    (lambda: F.celu(cn.ones(2), 0.0), RuntimeError, "alpha must be non-zero"),
    (lambda: F.rrelu(cn.ones(2), 0.5, 0.1), ValueError, "Lower bound should be less than or equal"),
    (lambda: F.selu([1.0]), TypeError, "expected input to be a Tensor"),
    (lambda: F.logsigmoid(cn.tensor([1, 2])), TypeError, "floating"),
    (lambda: F.threshold(cn.tensor([True]), 0.5, 1.0), TypeError, "Boolean"),
    (lambda: F.threshold(cn.ones(2), float("nan"), 1.0), ValueError, "finite number"),
    (lambda: F.gumbel_softmax(cn.ones(3), tau=0.0), ValueError, "tau must be > 0"),
    (lambda: nn.Softshrink(-1.0), RuntimeError, "lambda must be greater or equal to 0"),
    (lambda: nn.RReLU(0.5, 0.1), ValueError, "Lower bound"),
    (lambda: nn.Threshold(0.1), TypeError, "value"),
    (lambda: nn.Softmax2d()(cn.ones(2, 3)), ValueError, "3D or 4D"),
])
def test_bad_inputs_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_refusal_leaves_input_untouched():
    x = cn.tensor([-1.0, 2.0])
    with pytest.raises(RuntimeError):
        F.softshrink(x, -1.0)
    assert x.tolist() == [-1.0, 2.0]


def _six_sigma(p, n):
    return 6.0 * math.sqrt(p * (1.0 - p) / n)


def test_rrelu_training_slopes_are_uniform_and_are_the_gradient():
    n, lower, upper = 40000, 0.1, 0.3
    x = cn.full((n,), -1.0, requires_grad=True)
    y = F.rrelu(x, lower, upper, training=True, generator=cn.Generator().manual_seed(3))
    slopes = -y.array
    assert slopes.min() >= lower and slopes.max() <= upper
    # NOTE: U(a, b) has mean (a + b) / 2 and sd (b - a) / sqrt(12): the mean of n is within 6 standard errors
    assert abs(slopes.mean() - 0.2) < 6 * (upper - lower) / math.sqrt(12 * n)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.array, slopes)
    pos = cn.tensor([0.5, 2.0])
    assert F.rrelu(pos, training=True).tolist() == [0.5, 2.0]


def test_rrelu_layer_is_random_in_training_and_fixed_in_eval():
    layer, x = nn.RReLU(), cn.full((1000,), -1.0)
    assert len(set(layer(x).tolist())) > 1
    layer.eval()
    np.testing.assert_allclose(layer(x).array, -(1 / 8 + 1 / 3) / 2)


def test_rrelu_generator_reproduces():
    x = cn.full((50,), -1.0)
    a = F.rrelu(x, training=True, generator=cn.Generator().manual_seed(7))
    b = F.rrelu(x, training=True, generator=cn.Generator().manual_seed(7))
    assert a.tolist() == b.tolist()


def test_gumbel_softmax_soft_sums_to_one_with_softmax_gradients():
    logits = cn.tensor(np.log([[0.2, 0.3, 0.5]] * 4), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, generator=cn.Generator().manual_seed(0))
    np.testing.assert_allclose(y.array.sum(-1), 1.0, rtol=1e-12)
    (y * cn.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(logits.grad.array.sum(-1), 0.0, atol=1e-12)  # NOTE: softmax's gradient sums to 0


def test_gumbel_softmax_hard_is_one_hot_and_samples_the_categorical():
    n, probs = 20000, np.array([0.2, 0.3, 0.5])
    logits = cn.tensor(np.tile(np.log(probs), (n, 1)), requires_grad=True)
    y = F.gumbel_softmax(logits, hard=True, generator=cn.Generator().manual_seed(1))
    assert set(np.unique(y.array)) == {0.0, 1.0}
    np.testing.assert_array_equal(y.array.sum(-1), 1.0)
    # NOTE: the Gumbel-max trick: argmax(log p + g) is Categorical(p); each frequency within 6 standard errors
    freq = y.array.mean(0)
    assert np.all(np.abs(freq - probs) < [_six_sigma(p, n) for p in probs])
    y.sum().backward()  # NOTE: straight-through: the gradient is the soft sample's (sums to 0 per row)
    np.testing.assert_allclose(logits.grad.array.sum(-1), 0.0, atol=1e-9)


def test_gumbel_softmax_eps_warns_as_torch():
    with pytest.warns(UserWarning, match="deprecated"):
        F.gumbel_softmax(cn.ones(3), eps=1e-5)


@pytest.mark.parametrize(("layer", "torch_layer"), [
    (lambda: nn.SELU(), lambda: torch.nn.SELU()), (lambda: nn.CELU(0.5), lambda: torch.nn.CELU(0.5)),
    (lambda: nn.Softsign(), lambda: torch.nn.Softsign()), (lambda: nn.LogSigmoid(), lambda: torch.nn.LogSigmoid()),
    (lambda: nn.Tanhshrink(), lambda: torch.nn.Tanhshrink()),
    (lambda: nn.Threshold(0.1, 20.0), lambda: torch.nn.Threshold(0.1, 20.0)),
    (lambda: nn.Softshrink(0.3), lambda: torch.nn.Softshrink(0.3)),
    (lambda: nn.Hardshrink(0.3), lambda: torch.nn.Hardshrink(0.3)),
    (lambda: nn.Softmin(1), lambda: torch.nn.Softmin(1)), (lambda: nn.Softmax2d(), lambda: torch.nn.Softmax2d()),
])
def test_layers_match_torch(layer, torch_layer):
    x = np.random.default_rng(0).uniform(-2, 2, (2, 3, 4, 5))
    np.testing.assert_allclose(layer()(cn.tensor(x)).array, torch_layer()(torch.tensor(x)).numpy(), rtol=1e-12,
                               atol=1e-15)


@pytest.mark.parametrize(("name", "args"), [
    ("SELU", ()), ("SELU", (True,)), ("CELU", (0.5,)), ("Softsign", ()), ("LogSigmoid", ()), ("Tanhshrink", ()),
    ("Threshold", (0.1, 20.0)), ("Softshrink", (0.3,)), ("Hardshrink", ()), ("RReLU", ()), ("RReLU", (0.1, 0.2, True)),
    ("Softmin", (1,)), ("Softmax2d", ()),
])
def test_repr_is_torchs(name, args):
    assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))

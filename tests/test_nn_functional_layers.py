"""The layer family over functional ops (issue 13): each class against torch.nn, forward and backward in
float64, its repr, its constructor binding and its refusals."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(13)
X = RNG.standard_normal((4, 6)) * 3          # NOTE: spans every branch (negative, |x| > 1, > 3, > 6 rarely)
Y = RNG.standard_normal((4, 6))
SIGN = np.where(RNG.standard_normal((4, 6)) > 0, 1.0, -1.0)
COUNTS = RNG.poisson(2.0, (4, 6)).astype(np.float64)

# name: (make(module namespace), inputs); every input is float64 and gets a gradient unless it is a target
ACTIVATIONS = {
    "Mish": (lambda m: m.Mish(), [X]),
    "Hardswish": (lambda m: m.Hardswish(), [X]),
    "Hardsigmoid": (lambda m: m.Hardsigmoid(), [X]),
    "ELU": (lambda m: m.ELU(alpha=0.7), [X]),
    "Softplus": (lambda m: m.Softplus(beta=2.0, threshold=5.0), [X]),
    "Hardtanh": (lambda m: m.Hardtanh(-2.0, 1.5), [X]),
    "ReLU6": (lambda m: m.ReLU6(), [X]),
    "GLU": (lambda m: m.GLU(dim=1), [X]),
    "LeakyReLU": (lambda m: m.LeakyReLU(0.2), [X]),
}
LOSSES = {
    "HuberLoss": (lambda m: m.HuberLoss(delta=0.5), [X, Y], 2),
    "HuberLoss_sum": (lambda m: m.HuberLoss("sum"), [X, Y], 2),
    "MarginRankingLoss": (lambda m: m.MarginRankingLoss(margin=0.3), [X, Y, SIGN], 2),
    "SoftMarginLoss": (lambda m: m.SoftMarginLoss(reduction="none"), [X, SIGN], 1),
    "PoissonNLLLoss": (lambda m: m.PoissonNLLLoss(), [X / 3, COUNTS], 1),
    "PoissonNLLLoss_full": (lambda m: m.PoissonNLLLoss(log_input=False, full=True), [np.abs(X) + 0.1, COUNTS], 1),
    "CosineSimilarity": (lambda m: m.CosineSimilarity(dim=0), [X, Y], 2),
}


def _run(lib, make, arrays, n_grad):
    tensors = [lib.tensor(a, requires_grad=i < n_grad) for i, a in enumerate(arrays)]
    out = make(lib.nn)(*tensors)
    out.sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t in tensors[:n_grad]]


@pytest.mark.parametrize("name", sorted(ACTIVATIONS) + sorted(LOSSES))
def test_layer_forward_and_backward_match_torch(name):
    make, arrays, n_grad = LOSSES[name] if name in LOSSES else ACTIVATIONS[name] + (1,)
    out, grads = _run(cn, make, arrays, n_grad)
    ref, ref_grads = _run(torch, make, arrays, n_grad)
    # NOTE: float64 throughout: agreement to a few ulps of the formulas, not a tuned tolerance. Except
    # torch's Hardsigmoid backward, whose slope 1/6 is a float32 constant even for float64 (half an ulp
    # of float32 off: 2**-24 relative), where cupynet's is the float64 1/6.
    grad_rtol = 2.0 ** -24 if name == "Hardsigmoid" else 1e-12
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=grad_rtol, atol=1e-12)


def test_prelu_has_torchs_parameter_and_gradients():
    x = RNG.standard_normal((2, 3, 4))
    ours, theirs = nn.PReLU(3, init=0.1), torch.nn.PReLU(3, init=0.1)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    ours.load_state_dict({"weight": np.array([0.1, -0.5, 2.0], dtype=np.float32)})
    theirs.load_state_dict({"weight": torch.tensor([0.1, -0.5, 2.0])})
    a, b = cn.tensor(x.astype(np.float32), requires_grad=True), torch.tensor(x.astype(np.float32), requires_grad=True)
    ours(a).sum().backward()
    theirs(b).sum().backward()
    np.testing.assert_allclose(ours(a).detach().numpy(), theirs(b).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5)
    assert repr(ours) == repr(theirs) == "PReLU(num_parameters=3)"


@pytest.mark.parametrize("make", [
    lambda m: m.Mish(True), lambda m: m.Hardswish(True), lambda m: m.Hardsigmoid(), lambda m: m.ELU(0.5, True),
    lambda m: m.ReLU6(True), lambda m: m.Hardtanh(), lambda m: m.Softplus(), lambda m: m.GLU(),
    lambda m: m.LeakyReLU(), lambda m: m.ReLU(), lambda m: m.GELU("tanh"), lambda m: m.Tanh(),
    lambda m: m.HuberLoss(), lambda m: m.MarginRankingLoss(), lambda m: m.PoissonNLLLoss(),
    lambda m: m.CosineSimilarity(), lambda m: m.KLDivLoss(reduction="batchmean"),
])
def test_repr_is_torchs(make):
    assert repr(make(nn)) == repr(make(torch.nn))


def test_constructor_binds_arguments_as_torch_and_refuses_others():
    layer = nn.Hardtanh(-3.0, max_val=2.0, inplace=True)
    assert (layer.min_val, layer.max_val, layer.inplace) == (-3.0, 2.0, True)
    loss = nn.PoissonNLLLoss(False, True, None, 1e-3)
    assert (loss.log_input, loss.full, loss.eps, loss.reduction) == (False, True, 1e-3, "mean")
    with pytest.raises(TypeError, match=r"ELU\(\): too many positional arguments"):
        nn.ELU(1.0, False, 3)
    with pytest.raises(TypeError, match=r"Softplus\(\): got an unexpected keyword argument 'alpha'"):
        nn.Softplus(alpha=1.0)
    with pytest.raises(ValueError, match="HuberLoss: 'avg' is not a valid value for reduction"):
        nn.HuberLoss(reduction="avg")
    with pytest.raises(TypeError, match="MarginRankingLoss: size_average must be a bool or None"):
        nn.MarginRankingLoss(size_average=1.0)


def test_bad_inputs_name_the_layer_and_what_was_expected():
    with pytest.raises(TypeError, match="MarginRankingLoss: expected target to be a Tensor, got ndarray"):
        nn.MarginRankingLoss()(cn.ones(3), cn.ones(3), np.ones(3))
    with pytest.raises(TypeError, match=r"MarginRankingLoss.forward\(\) takes input1, input2, target; got 2"):
        nn.MarginRankingLoss()(cn.ones(3), cn.ones(3))
    with pytest.raises(TypeError, match="Mish: expected input to be a Tensor, got list"):
        nn.Mish()([1.0])
    with pytest.raises(RuntimeError):  # torch: "Halving dimension must be even"
        torch.nn.GLU()(torch.ones(2, 3))
    with pytest.raises((RuntimeError, ValueError), match="glu"):
        nn.GLU()(cn.ones(2, 3))
    with pytest.raises(ValueError, match="PReLU: num_parameters must be a positive int, got 0"):
        nn.PReLU(0)
    with pytest.raises(ValueError, match="HuberLoss|huber_loss"):
        nn.HuberLoss(delta=-1.0)(cn.ones(2), cn.ones(2))


def test_layers_run_under_autocast_with_their_ops_policy():
    amp = pytest.importorskip("cupynet.amp")
    x, w = cn.randn(2, 4, dtype=cn.float32), cn.randn(2, 4, dtype=cn.float32)
    with amp.autocast("cpu", dtype=cn.float16):
        assert nn.Softplus()(x).dtype == cn.float32          # softplus: fp32 list
        assert nn.HuberLoss()(x.half(), w.half()).dtype == cn.float32   # huber_loss: fp32 list
        assert nn.PReLU(device="cpu")(x).dtype == cn.float16  # prelu: lower list
        assert nn.Mish()(x).dtype == cn.float32               # unlisted: runs in the input dtype

"""Layers against torch.nn: load torch's state dict (as NumPy), compare forward outputs; modes; bad inputs."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn


def _pair(torch, make, seed=0):
    """(ours, torch's) layer with torch's (random) weights copied into ours as NumPy arrays."""
    torch.manual_seed(seed)
    theirs = make(torch.nn)
    ours = make(nn)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _compare(torch, ours, theirs, x, atol=1e-5):
    out = ours(cn.tensor(x))
    ref = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=atol, rtol=1e-5)


X4 = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
X3 = np.random.default_rng(1).standard_normal((2, 4, 7)).astype(np.float32)
X2 = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)

CASES = {
    "linear": (lambda m: m.Linear(6, 4), X2),
    "linear_nobias": (lambda m: m.Linear(6, 4, bias=False), X2),
    "conv1d": (lambda m: m.Conv1d(4, 5, 3, stride=2, padding=1), X3),
    "conv2d": (lambda m: m.Conv2d(3, 4, 3, padding=1, stride=1), X4),
    "conv2d_groups_dilation": (lambda m: m.Conv2d(3, 6, 2, groups=3, dilation=2, bias=False), X4),
    "conv_transpose2d": (lambda m: m.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), X4),
    "maxpool": (lambda m: m.MaxPool2d(2), X4),
    "maxpool_stride_pad": (lambda m: m.MaxPool2d(3, stride=2, padding=1), X4),
    "avgpool": (lambda m: m.AvgPool2d(2), X4),
    "adaptive_avgpool": (lambda m: m.AdaptiveAvgPool2d((2, 3)), X4),
    "flatten": (lambda m: m.Flatten(), X4),
    "unflatten": (lambda m: m.Unflatten(1, (2, 3)), X2),
    "layernorm": (lambda m: m.LayerNorm(6), X2),
    "layernorm_2d": (lambda m: m.LayerNorm((6, 6)), X4),
    "groupnorm": (lambda m: m.GroupNorm(1, 3), X4),
    "relu": (lambda m: m.ReLU(), X2),
    "leaky_relu": (lambda m: m.LeakyReLU(0.2), X2),
    "gelu": (lambda m: m.GELU(), X2),
    "gelu_tanh": (lambda m: m.GELU(approximate="tanh"), X2),
    "silu": (lambda m: m.SiLU(), X2),
    "tanh": (lambda m: m.Tanh(), X2),
    "sigmoid": (lambda m: m.Sigmoid(), X2),
    "softmax": (lambda m: m.Softmax(dim=1), X2),
    "log_softmax": (lambda m: m.LogSoftmax(dim=-1), X2),
    "identity": (lambda m: m.Identity(3, foo=1), X2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_torch(name):
    torch = pytest.importorskip("torch")
    make, x = CASES[name]
    ours, theirs = _pair(torch, make)
    _compare(torch, ours, theirs, x)


def test_layers_are_differentiable():
    m = nn.Sequential(nn.Conv2d(3, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(32, 2))
    m(cn.tensor(X4)).sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in m.parameters())


def test_embedding_matches_torch_and_padding_row():
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(torch, lambda m: m.Embedding(7, 3, padding_idx=0))
    idx = np.array([[0, 2, 6], [1, 1, 0]])
    out = ours(cn.tensor(idx))
    np.testing.assert_allclose(out.detach().numpy(), theirs(torch.tensor(idx)).detach().numpy())
    fresh = nn.Embedding(7, 3, padding_idx=-1)
    assert fresh.padding_idx == 6 and float(np.abs(fresh.weight.detach().numpy()[6]).sum()) == 0
    with pytest.raises(TypeError, match="integer index tensor"):
        ours(cn.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=5)


@pytest.mark.parametrize("kind", ["1d", "1d_3d", "2d"])
def test_batchnorm_train_and_eval_match_torch(kind):
    torch = pytest.importorskip("torch")
    make, x = {"1d": (lambda m: m.BatchNorm1d(6), X2), "1d_3d": (lambda m: m.BatchNorm1d(4, momentum=0.3), X3),
               "2d": (lambda m: m.BatchNorm2d(3), X4)}[kind]
    ours, theirs = _pair(torch, make)
    for step in range(2):
        _compare(torch, ours, theirs, x * (step + 1))
    for key in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(ours, key).numpy(), getattr(theirs, key).numpy(), atol=1e-6)
    assert int(ours.num_batches_tracked.item()) == 2
    ours.eval()
    theirs.eval()
    _compare(torch, ours, theirs, x)
    assert int(ours.num_batches_tracked.item()) == 2


def test_batchnorm_half_keeps_fp32_running_stats():
    bn = nn.BatchNorm2d(3).half()
    out = bn(cn.tensor(X4, dtype=cn.float16))
    assert out.dtype == cn.float16
    assert bn.running_mean.dtype == cn.float32 and bn.running_var.dtype == cn.float32
    expected = 0.1 * X4.astype(np.float16).astype(np.float32).mean(axis=(0, 2, 3))
    np.testing.assert_allclose(bn.running_mean.numpy(), expected, atol=1e-3)


def test_batchnorm_momentum_none_and_no_tracking():
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(torch, lambda m: m.BatchNorm1d(6, momentum=None))
    for scale in (1.0, 3.0):
        _compare(torch, ours, theirs, X2 * scale)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), atol=1e-5)
    ours, theirs = _pair(torch, lambda m: m.BatchNorm2d(3, track_running_stats=False))
    ours.eval()
    theirs.eval()
    _compare(torch, ours, theirs, X4)  # no running stats: batch statistics even in eval


def test_dropout_train_and_eval():
    drop = nn.Dropout(0.5)
    x = cn.ones(2000)
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


@pytest.mark.parametrize("name, make, kwargs", [
    ("cross_entropy", lambda m, **k: m.CrossEntropyLoss(**k), {"label_smoothing": 0.1}),
    ("cross_entropy_weight", lambda m, **k: m.CrossEntropyLoss(**k), {"ignore_index": 1}),
    ("nll", lambda m, **k: m.NLLLoss(**k), {"reduction": "sum"}),
    ("mse", lambda m, **k: m.MSELoss(**k), {}),
    ("l1", lambda m, **k: m.L1Loss(**k), {"reduction": "none"}),
    ("smooth_l1", lambda m, **k: m.SmoothL1Loss(**k), {"beta": 0.5}),
    ("bce", lambda m, **k: m.BCELoss(**k), {}),
    ("bce_logits", lambda m, **k: m.BCEWithLogitsLoss(**k), {}),
    ("kl_div", lambda m, **k: m.KLDivLoss(**k), {"reduction": "batchmean"}),
])
def test_losses_match_torch(name, make, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    labels = np.array([0, 1, 4, 2])
    probs = (1 / (1 + np.exp(-logits))).astype(np.float32)
    targets = rng.uniform(size=(4, 5)).astype(np.float32)
    if name.startswith("cross") or name == "nll":
        x = logits if name.startswith("cross") else np.log(np.exp(logits) / np.exp(logits).sum(1, keepdims=True))
        x, t = x.astype(np.float32), labels
    elif name == "bce":
        x, t = probs, targets
    elif name == "kl_div":
        x, t = np.log(probs), targets
    else:
        x, t = logits, targets
    ours, theirs = make(nn, **kwargs), make(torch.nn, **kwargs)
    out = ours(cn.tensor(x), cn.tensor(t))
    ref = theirs(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-5, rtol=1e-5)


def test_loss_weight_is_a_buffer_and_bad_reduction():
    loss = nn.CrossEntropyLoss(weight=cn.ones(3))
    assert list(loss.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(TypeError, match="MSELoss: expected target to be a Tensor"):
        nn.MSELoss()(cn.ones(2), np.ones(2))


@pytest.mark.parametrize("make", [lambda m: m.MSELoss(), lambda m: m.L1Loss(reduction="sum"),
                                  lambda m: m.SmoothL1Loss(beta=0.5)])
def test_regression_loss_modules_warn_and_broadcast_another_target_shape_as_torch(make):
    # NOTE: issue 16: PyTorch's modules warn (pointing at their forward) and broadcast; cupynet's do the same
    torch = pytest.importorskip("torch")
    x, t = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0, 1, 4)
    with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[4\]\)\)"):
        want = make(torch.nn)(torch.tensor(x), torch.tensor(t))
    with pytest.warns(UserWarning, match=r"^Using a target size \(4,\) that is different to the input size \(3, 4\)"):
        got = make(nn)(cn.tensor(x), cn.tensor(t))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


def test_bce_loss_modules_refuse_another_target_shape_as_torch():
    torch = pytest.importorskip("torch")
    for name in ("BCELoss", "BCEWithLogitsLoss"):
        with pytest.raises(ValueError):
            getattr(torch.nn, name)()(torch.full((3, 4), 0.5), torch.full((4,), 0.5))
        with pytest.raises(ValueError, match="binary_cross_entropy"):
            getattr(nn, name)()(cn.full((3, 4), 0.5), cn.full((4,), 0.5))


def test_linear_wrong_features_names_layer_and_shapes():
    layer = nn.Linear(4, 2)
    with pytest.raises(ValueError) as info:
        layer(cn.ones(3, 5))
    text = str(info.value)
    assert "Linear(in_features=4, out_features=2, bias=True)" in text and "(3, 5)" in text and "(2, 4)" in text
    with pytest.raises(TypeError, match="expected input to be a Tensor, got ndarray"):
        layer(np.ones((3, 4)))


def test_bad_layer_arguments_and_inputs():
    with pytest.raises(ValueError, match="Conv2d: in_channels \\(3\\) and out_channels \\(4\\) must both be "
                                         "divisible by groups \\(2\\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="kernel_size must be an int or a tuple of 2 ints, got \\(1, 2, 3\\)"):
        nn.Conv2d(1, 1, (1, 2, 3))
    with pytest.raises(ValueError, match="expected input with 3 channels"):
        nn.Conv2d(3, 1, 1)(cn.ones(1, 2, 4, 4))
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input"):
        nn.BatchNorm2d(3)(cn.ones(3, 4, 4))
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input"):
        nn.BatchNorm1d(3)(cn.ones(1, 3, 4, 4))
    with pytest.raises(ValueError, match="num_channels \\(5\\) must be divisible by num_groups \\(2\\)"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ValueError, match="expected input with trailing shape \\(4,\\)"):
        nn.LayerNorm(4)(cn.ones(2, 3))
    with pytest.raises(ValueError, match="approximate must be one of 'none', 'tanh'"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match="only padding_mode='zeros'"):
        nn.Conv1d(1, 1, 1, padding_mode="reflect")


def test_linear_with_wrong_feature_count_names_layer_and_both_shapes():
    model = cn.nn.Sequential(cn.nn.Linear(4, 2))
    with pytest.raises(ValueError, match=r"Linear\(in_features=4, out_features=2, bias=True\): expected input with "
                                         r"last dimension 4 \(in_features\), got input of shape \(3, 5\) "
                                         r"\(weight shape \(2, 4\)\)"):
        model(cn.randn(3, 5))


@pytest.mark.parametrize("loss", ["MSELoss", "L1Loss", "CrossEntropyLoss", "BCEWithLogitsLoss"])
def test_loss_layers_turn_legacy_arguments_into_a_reduction(loss):
    # NOTE: PyTorch's rule and warning (the spatial transformer tutorial's size_average=False)
    with pytest.warns(UserWarning, match=r"please use reduction='sum' instead"):
        assert getattr(cn.nn, loss)(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match=r"please use reduction='none' instead"):
        assert getattr(cn.nn, loss)(size_average=True, reduce=False, reduction="sum").reduction == "none"
    with pytest.raises(TypeError, match=f"{loss}: size_average must be a bool or None .* got 'yes'"):
        getattr(cn.nn, loss)(size_average="yes")

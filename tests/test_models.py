"""cupynet.models: shapes for digits / MNIST / CIFAR inputs, registry, a training step, bad inputs."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.models import CNN, MLP, TransformerClassifier, available_models, build_model


@pytest.mark.parametrize("name, shape", [
    ("mlp", (64,)), ("mlp", (1, 8, 8)), ("cnn", (1, 8, 8)), ("cnn", (1, 28, 28)), ("cnn", (3, 32, 32)),
    ("transformer", (64,)), ("transformer", (1, 8, 8)), ("transformer", (3, 32, 32)),
])
def test_build_model_output_shapes(name, shape):
    kw = {"patch_size": 8} if name == "transformer" and shape == (3, 32, 32) else {}
    model = build_model(name, shape, 10, **kw)
    model.eval()
    out = model(cn.randn(2, *shape))
    assert tuple(out.shape) == (2, 10) and np.isfinite(out.detach().numpy()).all()


def test_registry_and_bad_names():
    assert available_models() == ["cnn", "mlp", "transformer"]
    with pytest.raises(ValueError, match="unknown model 'resnet'; available: \\['cnn', 'mlp', 'transformer'\\]"):
        build_model("resnet", (64,), 10)
    with pytest.raises(ValueError, match="num_classes must be a positive integer, got 0"):
        build_model("mlp", (64,), 0)
    with pytest.raises(ValueError, match="expected an image shape \\(C, H, W\\), got \\(64,\\); reshape the data "
                                         "to \\(1, 8, 8\\)"):
        build_model("cnn", (64,), 10)


def test_mlp_keys_match_torch_sequential():
    torch = pytest.importorskip("torch")
    ours = MLP(64, (32, 16), 10, dropout=0.1)
    theirs = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                 torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                 torch.nn.Linear(16, 10)).eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    ours.eval()
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    np.testing.assert_allclose(ours(cn.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               atol=1e-5)


def test_cnn_training_step_reduces_loss():
    cn.manual_seed(0)
    model = CNN((1, 8, 8), num_classes=3, channels=(4, 8), hidden=16)
    x = cn.randn(12, 1, 8, 8)
    y = cn.tensor(np.arange(12) % 3)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(5):
        model.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        for p in model.parameters():
            p.array -= 0.1 * p.grad.array
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_transformer_tokens_and_keys():
    model = TransformerClassifier((1, 8, 8), 10, d_model=16, nhead=2, num_layers=2, dim_feedforward=32)
    assert tuple(model.tokens(cn.randn(2, 1, 8, 8)).shape) == (2, 8, 8)  # one token per row
    patched = TransformerClassifier((3, 32, 32), 10, d_model=16, nhead=2, num_layers=1, patch_size=8)
    assert tuple(patched.tokens(cn.randn(1, 3, 32, 32)).shape) == (1, 16, 192)
    keys = list(model.state_dict())
    assert "encoder.layers.1.self_attn.in_proj_weight" in keys and keys[:3] == ["pos_embed", "embed.weight",
                                                                              "embed.bias"]
    assert np.abs(model.pos_embed.detach().numpy()).max() <= 0.04
    out = model(cn.randn(2, 1, 8, 8))
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_model_bad_inputs():
    with pytest.raises(ValueError, match="CNN: expected input of shape \\(N, 1, 8, 8\\), got \\(2, 1, 28, 28\\)"):
        CNN((1, 8, 8))(cn.randn(2, 1, 28, 28))
    with pytest.raises(ValueError, match="CNN: input_shape must be \\(C, H, W\\) with H, W >= 4"):
        CNN((1, 2, 2))
    with pytest.raises(ValueError, match="MLP: hidden must be a positive integer, got 0"):
        MLP(64, (0,))
    with pytest.raises(ValueError, match="patch_size 5 must divide H=8"):
        TransformerClassifier((1, 8, 8), 10, patch_size=5)
    with pytest.raises(ValueError, match="TransformerClassifier: expected input of shape \\(N, 64\\)"):
        TransformerClassifier((64,), 10, d_model=16, nhead=2)(cn.randn(2, 63))


def test_half_model_forward_keeps_dtype():
    model = MLP(64, (16,), 4).half()
    out = model(cn.randn(2, 64, dtype=cn.float16))
    assert out.dtype == cn.float16

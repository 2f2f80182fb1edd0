"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch with torch's weights (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from tests.op_harness import requires_torch

try:
    import torch
except ImportError:
    torch = None

pytestmark = requires_torch


def _load_from_torch(mine, theirs):
    state = {k: cn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(mine.state_dict()) == list(state)
    mine.load_state_dict(state)


def _compare(mine, theirs, inputs, kwargs_mine, kwargs_theirs, atol=2e-5):
    xs_c = [cn.tensor(a, requires_grad=True) for a in inputs]
    xs_t = [torch.tensor(a, requires_grad=True) for a in inputs]
    yc, yt = mine(*xs_c, **kwargs_mine), theirs(*xs_t, **kwargs_theirs)
    np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), atol=atol, rtol=1e-4)
    cot = np.random.default_rng(5).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yc * cn.tensor(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    for xc, xt in zip(xs_c, xs_t):
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), atol=1e-4, rtol=1e-3)
    grads = dict(theirs.named_parameters())
    for name, p in mine.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[name].grad.numpy(), atol=1e-4, rtol=1e-3, err_msg=name)


def _masks(t, s, n):
    causal = np.triu(np.full((t, t), -np.inf, dtype=np.float32), 1)
    pad = np.zeros((n, s), dtype=bool)
    pad[0, -2:] = True
    return causal, pad


@pytest.mark.parametrize("norm_first,batch_first,activation", [(False, False, "relu"), (True, True, "gelu")])
def test_decoder_layer_matches_torch(norm_first, batch_first, activation):
    kw = {"dim_feedforward": 16, "dropout": 0.0, "norm_first": norm_first, "batch_first": batch_first,
          "activation": activation}
    torch.manual_seed(0)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, **kw)
    mine = nn.TransformerDecoderLayer(8, 2, **kw)
    _load_from_torch(mine, theirs)
    rng = np.random.default_rng(0)
    t, s, n = 4, 5, 2
    shape_t, shape_s = ((n, t, 8), (n, s, 8)) if batch_first else ((t, n, 8), (s, n, 8))
    tgt, mem = rng.standard_normal(shape_t).astype(np.float32), rng.standard_normal(shape_s).astype(np.float32)
    causal, pad = _masks(t, s, n)
    _compare(mine, theirs, [tgt, mem], {"tgt_mask": cn.tensor(causal), "memory_key_padding_mask": cn.tensor(pad)},
             {"tgt_mask": torch.tensor(causal), "memory_key_padding_mask": torch.tensor(pad)})


def test_transformer_matches_torch_from_its_state_dict():
    torch.manual_seed(0)
    kw = {"d_model": 8, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 2, "dim_feedforward": 16,
          "dropout": 0.0}
    theirs, mine = torch.nn.Transformer(**kw), nn.Transformer(**kw)
    _load_from_torch(mine, theirs)
    rng = np.random.default_rng(1)
    src, tgt = rng.standard_normal((5, 2, 8)).astype(np.float32), rng.standard_normal((4, 2, 8)).astype(np.float32)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(mask.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    _compare(mine, theirs, [src, tgt], {"tgt_mask": mask}, {"tgt_mask": torch.tensor(mask.numpy())})


def test_transformer_init_is_xavier_and_repr_keys():
    model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    w = model.decoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6.0 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert "decoder.layers.0.multihead_attn.in_proj_weight" in model.state_dict()
    assert "decoder.norm.weight" in model.state_dict()


def test_transformer_bad_inputs():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        model(cn.zeros(3, 2, 8), cn.zeros(3, 3, 8))
    with pytest.raises(RuntimeError, match="equal to d_model"):
        model(cn.zeros(3, 2, 4), cn.zeros(3, 2, 4))
    with pytest.raises(ValueError, match="num_layers must be a positive integer"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), 0)
    with pytest.raises(TypeError, match="must be a Module"):
        nn.TransformerDecoder("layer", 2)

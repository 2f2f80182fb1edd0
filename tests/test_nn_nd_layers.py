"""1-D / 3-D layer variants (Conv3d, ConvTranspose1d/3d, pools, channel dropout) against torch.nn (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
import cupynet.nn.functional as F
from cupynet import nn
from tests.op_harness import requires_torch

try:
    import torch
except ImportError:
    torch = None

pytestmark = requires_torch

CASES = [
    ("Conv3d", (2, 3, 2), {"padding": 1, "stride": (1, 2, 1)}, (2, 2, 3, 4, 3)),
    ("ConvTranspose1d", (2, 3, 3), {"stride": 2, "output_padding": 1}, (2, 2, 4)),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2}, (1, 2, 2, 3, 2)),
    ("Conv1d", (2, 4, 3), {"groups": 2, "bias": False}, (3, 2, 6)),
    ("ConvTranspose2d", (2, 3, 3), {"padding": 1}, (2, 2, 3, 3)),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, (2, 3, 7)),
    ("MaxPool3d", (2,), {}, (1, 2, 4, 4, 4)),
    ("AvgPool1d", (3,), {"stride": 2, "count_include_pad": False, "padding": 1}, (2, 3, 7)),
    ("AvgPool3d", (2,), {"ceil_mode": True}, (1, 2, 3, 5, 4)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 7)),
    ("AdaptiveAvgPool3d", ((2, None, 1),), {}, (1, 2, 4, 3, 5)),
    ("MaxPool2d", (2,), {"ceil_mode": True}, (2, 5, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_nd_layer_matches_torch(name, args, kw, shape):
    theirs = getattr(torch.nn, name)(*args, **kw)
    mine = getattr(nn, name)(*args, **kw)
    mine.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    xc, xt = cn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yc, yt = mine(xc), theirs(xt)
    np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yc * cn.tensor(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    grads = dict(theirs.named_parameters())
    for pname, p in mine.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[pname].grad.numpy(), rtol=1e-4, atol=1e-4)
    if not name.startswith("AvgPool1d"):  # NOTE: torch's AvgPool1d prints its arguments as 1-tuples
        assert repr(mine) == repr(theirs)


def test_max_pool_layer_returns_indices_as_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    out, idx = nn.MaxPool1d(3, stride=2, return_indices=True)(cn.tensor(x))
    tout, tidx = torch.nn.MaxPool1d(3, stride=2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    np.testing.assert_array_equal(out.numpy(), tout.numpy())


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_channel_dropout_drops_whole_channels(nd):
    layer = getattr(nn, f"Dropout{nd}d")(p=0.5)
    x = cn.ones(*((4, 6) + (3,) * nd))
    y = layer(x).numpy().reshape(4, 6, -1)
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert np.all(y.min(axis=-1) == y.max(axis=-1))  # one draw per (sample, channel)
    assert 0 < (y[..., 0] == 0).sum() < 24
    layer.eval()
    assert layer(x) is x
    assert repr(layer) == repr(getattr(torch.nn, f"Dropout{nd}d")(p=0.5))


def test_nd_layer_bad_inputs():
    with pytest.raises(ValueError, match="expected a 2D \\(unbatched\\) or 3D"):
        nn.MaxPool1d(2)(cn.zeros(1, 2, 3, 4))
    with pytest.raises(ValueError, match="expected input with 2 channels"):
        nn.Conv3d(2, 3, 2)(cn.zeros(1, 3, 4, 4, 4))
    with pytest.raises(ValueError, match="expected a 2-D \\(C, L\\) or 3-D"):
        F.dropout1d(cn.zeros(2, 3, 4, 5))
    with pytest.raises(NotImplementedError, match="output_size"):
        nn.ConvTranspose1d(2, 3, 3)(cn.zeros(1, 2, 4), output_size=(6,))

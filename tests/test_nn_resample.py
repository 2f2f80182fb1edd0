"""Padding, Upsample, PixelShuffle and Fold/Unfold layers against torch.nn (issue 13)."""

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

LAYERS = [
    ("ZeroPad1d", (2,), (2, 3, 5)), ("ZeroPad2d", ((1, 0, 2, 1),), (2, 3, 4, 5)), ("ZeroPad3d", (1,), (1, 2, 2, 3, 2)),
    ("ConstantPad1d", ((1, -1), 2.5), (3, 5)), ("ConstantPad2d", (1, -1.0), (2, 3, 4, 5)),
    ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 2, 0, 3),), (2, 3, 4, 5)),
    ("ReplicationPad1d", ((3, 0),), (3, 5)), ("ReplicationPad2d", (2,), (2, 3, 4, 5)),
    ("ReplicationPad3d", (1,), (1, 2, 2, 3, 2)), ("CircularPad1d", (2,), (2, 3, 5)),
    ("CircularPad2d", ((1, 2, 2, 1),), (2, 3, 4, 5)), ("ReflectionPad3d", (1,), (1, 2, 2, 3, 2)),
    ("Upsample", ((7, 3), None, "bilinear"), (2, 3, 4, 5)), ("Upsample", (None, 2.0, "nearest"), (2, 3, 5)),
    ("UpsamplingNearest2d", (None, 2), (2, 3, 4, 5)), ("UpsamplingBilinear2d", ((6, 8),), (2, 3, 4, 5)),
    ("PixelShuffle", (2,), (2, 8, 3, 2)), ("PixelUnshuffle", (2,), (2, 2, 4, 6)),
    ("Unfold", ((2, 3), 1, 1, 2), (2, 3, 4, 5)), ("Fold", ((4, 5), 2, 1, 0, 1), (2, 8, 12)),
]


@pytest.mark.parametrize("name,args,shape", LAYERS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    mine, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    xc, xt = cn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yc, yt = mine(xc), theirs(xt)
    np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    cot = np.random.default_rng(1).standard_normal(yt.shape).astype(np.float32)
    (yc * cn.tensor(cot)).sum().backward()
    (yt * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert repr(mine) == repr(theirs)


def test_pad_layer_bad_padding():
    with pytest.raises(ValueError, match="tuple of 4 ints"):
        nn.ReflectionPad2d((1, 2))
    with pytest.raises(TypeError, match="expected input to be a Tensor, got ndarray"):
        nn.ZeroPad2d(1)(np.zeros((1, 2, 2)))

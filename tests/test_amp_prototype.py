"""The early torch.amp prototype's API (add_amp_attributes, enable_autocasting, unscale_and_step, ...).

Every example of the prototype's documentation runs here as written (CUDA adapted to the default
device) and is compared with the same loop written with the torch-style ``GradScaler``.
"""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.tensor import Tensor


# ---- clip_grad_norm_ with a Tensor max_norm (the prototype clips to max_norm * S) ------------------------
@pytest.mark.parametrize("max_norm", [np.float32(0.75), np.float64(0.5), np.int64(3), 0.75])
def test_clip_grad_norm_accepts_a_one_element_tensor_max_norm_like_torch(max_norm):
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    p = cn.tensor(np.zeros((3, 4), np.float32), requires_grad=True)
    p.grad = Tensor(g.copy())
    tp = torch.zeros(3, 4, requires_grad=True)
    tp.grad = torch.tensor(g)
    as_tensor = not isinstance(max_norm, float)
    ours = Tensor(np.array(max_norm)) if as_tensor else max_norm
    theirs = torch.tensor(np.array(max_norm)) if as_tensor else max_norm
    norm = nn.utils.clip_grad_norm_([p], ours)
    tnorm = torch.nn.utils.clip_grad_norm_([tp], theirs)
    assert norm.item() == tnorm.item()
    np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())


def test_clip_grad_norm_refuses_a_tensor_max_norm_that_is_not_one_real_value():
    p = cn.tensor(np.zeros(2, np.float32), requires_grad=True)
    p.grad = Tensor(np.array([3.0, 4.0], np.float32))
    for bad in (Tensor(np.ones(2, np.float32)), Tensor(np.array(True))):
        with pytest.raises(ValueError, match="max_norm must be a real number or a one-element real Tensor"):
            nn.utils.clip_grad_norm_([p], bad)
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 4.0])

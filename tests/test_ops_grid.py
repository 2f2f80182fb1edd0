"""affine_grid and grid_sample (issue 13) against torch: values, gradients to input, grid and theta, errors."""

import numpy as np
import pytest
from op_harness import check_op, make_arrays

import cupynet as cn
from cupynet import ops

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    # NOTE: grid points reach 1.4 past the edges, so every padding rule is exercised; random points sit on
    # no kink (pixel boundary, border, reflection fold) where the finite differences would straddle one
    x, g = make_arrays([(2, 3, 5, 6), (2, 4, 3, 2)], seed=1, low=-1.4, high=1.4)
    kw = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    check_op(None, lambda a, b: ops.grid_sample(a, b, **kw), lambda a, b: F.grid_sample(a, b, **kw), arrays=[x, g],
             dtypes=("float32", "float16"))


def test_grid_sample_identity_grid_reproduces_the_input():
    x = cn.tensor(make_arrays([(1, 2, 4, 5)])[0])
    theta = cn.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=cn.float64)
    for align_corners in (False, True):
        grid = ops.affine_grid(theta, (1, 2, 4, 5), align_corners=align_corners)
        out = ops.grid_sample(x, grid, align_corners=align_corners)
        np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-12)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    theta = make_arrays([(2, 2, 3)], seed=2)[0]
    check_op(None, lambda t: ops.affine_grid(t, (2, 3, 4, 5), align_corners=align_corners),
             lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=align_corners), arrays=[theta],
             dtypes=("float32",))


def test_spatial_transformer_gradient_reaches_theta():
    # NOTE: the spatial transformer tutorial's chain: theta -> affine_grid -> grid_sample -> loss
    x, theta = make_arrays([(2, 1, 6, 6), (2, 2, 3)], seed=3)
    check_op(None, lambda a, t: ops.grid_sample(a, ops.affine_grid(t, (2, 1, 4, 4), align_corners=False),
                                                align_corners=False),
             lambda a, t: F.grid_sample(a, F.affine_grid(t, (2, 1, 4, 4), align_corners=False), align_corners=False),
             arrays=[x, theta * 0.6], dtypes=("float32",))


@pytest.mark.parametrize("call, error, match", [
    (lambda: ops.grid_sample(cn.ones(1, 1, 2, 2), cn.zeros(1, 2, 2, 2), mode="bicubic"), ValueError,
     "expected mode to be 'bilinear' or 'nearest'"),
    (lambda: ops.grid_sample(cn.ones(1, 1, 2, 2), cn.zeros(1, 2, 2, 2), padding_mode="wrap"), ValueError,
     "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'wrap'"),
    (lambda: ops.grid_sample(cn.ones(1, 1, 2, 2), cn.zeros(1, 2, 2, 3)), RuntimeError,
     r"expected grid of shape \(N, H_out, W_out, 2\)"),
    (lambda: ops.grid_sample(cn.ones(1, 1, 2, 2, 2), cn.zeros(1, 2, 2, 2, 3)), NotImplementedError,
     "cupynet samples 4-D inputs"),
    (lambda: ops.grid_sample(cn.ones(1, 1, 0, 2), cn.zeros(1, 2, 2, 2)), RuntimeError,
     "expected input to have non-empty spatial dimensions"),
    (lambda: ops.affine_grid(cn.zeros(1, 2, 3), (2, 1, 3, 3)), ValueError,
     "Expected a batch of 2D affine matrices of shape Nx2x3"),
    (lambda: ops.affine_grid(cn.zeros(0, 2, 3), (0, 1, 3, 3)), ValueError,
     r"Expected non-zero, positive output size. Got \(0, 1, 3, 3\)"),
    (lambda: ops.affine_grid(cn.zeros(1, 2, 3, dtype=cn.int64), (1, 1, 3, 3)), ValueError,
     "Expected theta to have floating point type"),
])
def test_grid_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()

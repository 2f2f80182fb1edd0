"""Convolutions: forward/backward/double backward against PyTorch, groups, padding modes, bad inputs."""

import numpy as np
import pytest
from op_harness import check_op

import cupynet as cn
from cupynet import ops
from cupynet.ops import conv

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kw, x_shape, w_shape", [
    ({}, (2, 2, 4, 4), (3, 2, 3, 3)),
    ({"stride": 2, "padding": 1}, (1, 2, 6, 5), (3, 2, 3, 3)),
    ({"stride": (2, 1), "padding": (0, 2), "dilation": (1, 2)}, (1, 2, 7, 6), (2, 2, 3, 2)),
    ({"groups": 2, "padding": "same"}, (1, 4, 4, 3), (4, 2, 2, 3)),
    ({"padding": "valid", "dilation": 2}, (1, 1, 6, 6), (2, 1, 2, 2)),
])
def test_conv2d_matches_torch(kw, x_shape, w_shape):
    check_op([x_shape, w_shape, (w_shape[0],)], lambda x, w, b: ops.conv2d(x, w, b, **kw),
             lambda x, w, b: F.conv2d(x, w, b, **kw))


def test_conv2d_no_bias_and_unbatched():
    check_op([(2, 4, 4), (3, 2, 2, 2)], ops.conv2d, F.conv2d, dtypes=("float32",))


def test_conv1d_and_conv3d():
    check_op([(2, 2, 7), (3, 2, 3), (3,)], lambda x, w, b: ops.conv1d(x, w, b, stride=2, padding=1),
             lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1))
    check_op([(1, 2, 3, 4, 3), (2, 2, 2, 2, 2)], lambda x, w: ops.conv3d(x, w, padding=(1, 0, 1)),
             lambda x, w: F.conv3d(x, w, padding=(1, 0, 1)), dtypes=("float32",))


@pytest.mark.parametrize("kw, x_shape, w_shape", [
    ({}, (2, 3, 3, 3), (3, 2, 3, 3)),
    ({"stride": 2, "padding": 1, "output_padding": 1}, (1, 2, 3, 4), (2, 3, 3, 3)),
    ({"stride": (2, 1), "groups": 2, "dilation": (1, 2)}, (1, 4, 3, 3), (4, 1, 2, 2)),
])
def test_conv_transpose2d_matches_torch(kw, x_shape, w_shape):
    out_channels = w_shape[1] * kw.get("groups", 1)
    check_op([x_shape, w_shape, (out_channels,)], lambda x, w, b: ops.conv_transpose2d(x, w, b, **kw),
             lambda x, w, b: F.conv_transpose2d(x, w, b, **kw))


def test_conv_transpose1d():
    check_op([(1, 2, 4), (2, 3, 3)], lambda x, w: ops.conv_transpose1d(x, w, stride=3, padding=1),
             lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=1), dtypes=("float32",))


def test_amp_policies_and_names():
    assert conv.Conv2d.amp_policy == conv.ConvTranspose2d.amp_policy == conv.Conv1d.amp_policy == "lower"
    assert conv.Conv2d.op_name == "conv2d" and conv.ConvTranspose2d.op_name == "conv_transpose2d"


def test_half_conv_keeps_dtype_and_accumulates_in_fp32():
    x = cn.ones(1, 1024, 1, 1, dtype=cn.float16) * 0.1
    w = cn.ones(1, 1024, 1, 1, dtype=cn.float16)
    y = ops.conv2d(x, w)
    assert y.dtype == cn.float16
    # NOTE: a half accumulator stalls at 64 for 1024 * 0.1; fp32 accumulation then rounding gives ~102.4
    assert abs(float(y.item()) - 102.4) < 0.2


def test_conv2d_channel_mismatch_message():
    with pytest.raises(RuntimeError, match=r"conv2d: expected input with 3 channels \(weight shape \(8, 3, 3, 3\), "
                                           r"groups=1\) but got input of shape \(2, 4, 8, 8\)"):
        ops.conv2d(cn.randn(2, 4, 8, 8), cn.randn(8, 3, 3, 3))


@pytest.mark.parametrize("call, error, match", [
    (lambda: ops.conv2d(cn.randn(8, 8), cn.randn(1, 1, 3, 3)), RuntimeError,
     r"conv2d: expected 3D \(unbatched\) or 4D \(batched\) input, but got input of shape \(8, 8\)"),
    (lambda: ops.conv2d(cn.randn(1, 1, 4, 4), cn.randn(1, 1, 3)), RuntimeError, "conv2d: expected a 4D weight"),
    (lambda: ops.conv2d(cn.randn(1, 4, 4, 4), cn.randn(3, 2, 1, 1), groups=2), RuntimeError,
     r"conv2d: out_channels \(weight.shape\[0\]=3\) must be divisible by groups=2"),
    (lambda: ops.conv2d(cn.randn(1, 1, 4, 4), cn.randn(1, 1, 3, 3), stride=2, padding="same"), ValueError,
     "conv2d: padding='same' is not supported for strided convolutions"),
    (lambda: ops.conv2d(cn.randn(1, 1, 2, 2), cn.randn(1, 1, 3, 3)), RuntimeError,
     "conv2d: padded input size 2 is smaller than the dilated kernel size 3"),
    (lambda: ops.conv2d(cn.randn(1, 1, 4, 4), cn.randn(1, 1, 3, 3), stride=0), ValueError,
     "conv2d: stride must be >= 1"),
    (lambda: ops.conv2d(cn.randn(1, 1, 4, 4), cn.randn(1, 1, 3, 3), padding="full"), ValueError,
     "conv2d: padding must be an int, a tuple, 'same' or 'valid'"),
    (lambda: ops.conv2d(cn.randn(1, 1, 4, 4), cn.randn(1, 1, 3, 3), cn.randn(2)), RuntimeError,
     r"conv2d: expected bias of shape \(1,\)"),
    (lambda: ops.conv2d(cn.randn(1, 1, 4, 4), cn.randn(1, 1, 3, 3, dtype=cn.float16)), RuntimeError,
     "conv2d: input, weight and bias must have the same dtype"),
    (lambda: ops.conv2d(cn.tensor(np.ones((1, 1, 4, 4), dtype=np.int64)), cn.randn(1, 1, 3, 3)), TypeError,
     "conv2d: expected a floating point input"),
    (lambda: ops.conv_transpose2d(cn.randn(1, 2, 3, 3), cn.randn(3, 1, 3, 3)), RuntimeError,
     r"conv_transpose2d: expected input with 3 channels"),
    (lambda: ops.conv_transpose2d(cn.randn(1, 2, 3, 3), cn.randn(2, 1, 3, 3), stride=2, output_padding=2),
     ValueError, "conv_transpose2d: output padding must be smaller than either stride or dilation"),
])
def test_conv_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_conv_weight_grad_is_itself_differentiable_twice():
    # NOTE: third-order check: grad of (grad of conv wrt w) wrt x, done through ConvWeight's own backward
    x = cn.tensor(np.random.default_rng(0).standard_normal((1, 2, 4, 4)), dtype="float64", requires_grad=True)
    w = cn.tensor(np.random.default_rng(1).standard_normal((2, 2, 3, 3)), dtype="float64", requires_grad=True)
    tx, tw = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w))
    (gw,) = cn.autograd.grad((ops.conv2d(x, w, padding=1) ** 2).sum(), [w], create_graph=True)
    (gx,) = cn.autograd.grad((gw ** 2).sum(), [x])
    (tgw,) = torch.autograd.grad((F.conv2d(tx, tw, padding=1) ** 2).sum(), [tw], create_graph=True)
    (tgx,) = torch.autograd.grad((tgw ** 2).sum(), [tx])
    np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-8, atol=1e-8)


def test_autocast_runs_conv_and_linear_in_half_with_fp32_grads():
    amp = pytest.importorskip("cupynet.amp", reason="cupynet.amp (autocast) is written by another engineer")
    x = cn.randn(2, 3, 6, 6, requires_grad=True)
    w = cn.randn(4, 3, 3, 3, requires_grad=True)
    b = cn.randn(4, requires_grad=True)
    with amp.autocast("cpu", dtype=cn.float16):
        y = ops.conv2d(x, w, b, padding=1)
        z = ops.linear(y.flatten(1), cn.randn(5, 144))
        d = ops.dot(cn.randn(3), cn.randn(3, dtype=cn.float16))
        # NOTE: mixed input dtypes are legal under autocast: the dtype check runs after the policy's casts
        mixed = [ops.conv2d(x.half(), w), ops.addmm(cn.randn(2), cn.randn(3, 4, dtype=cn.float16), cn.randn(4, 2)),
                 ops.einsum("ij,jk", cn.randn(2, 3), cn.randn(3, 2, dtype=cn.float16))]
        t = ops.tensordot(cn.randn(3, dtype=cn.float16), cn.randn(3), 1)
    assert [m.dtype for m in mixed] == [cn.float16] * 3 and t.dtype == cn.float32
    assert y.dtype == z.dtype == cn.float16
    assert d.dtype == cn.float32  # NOTE: dot is a 'promote' op: any fp32 input makes it run in fp32
    z.float().sum().backward()
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == cn.float32


def test_conv_on_non_contiguous_input():
    base = np.random.default_rng(0).standard_normal((1, 2, 6, 5)).astype(np.float32)
    x = cn.tensor(base).transpose(2, 3)  # (1, 2, 5, 6), not contiguous
    w = np.random.default_rng(1).standard_normal((3, 2, 3, 3)).astype(np.float32)
    want = F.conv2d(torch.tensor(base, dtype=torch.float32).transpose(2, 3), torch.tensor(w), padding=1)
    np.testing.assert_allclose(ops.conv2d(x, cn.tensor(w), padding=1).numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


# ---- mixed dtypes (issue 16): PyTorch's convolutions never promote; under autocast the inputs are cast first -------
_CONVS = [("conv1d", (1, 2, 5), (3, 2, 2)), ("conv2d", (1, 2, 4, 4), (3, 2, 2, 2)), ("conv3d", (1, 2, 3, 3, 3),
                                                                                        (3, 2, 2, 2, 2)),
          ("conv_transpose1d", (1, 2, 5), (2, 3, 2)), ("conv_transpose2d", (1, 2, 4, 4), (2, 3, 2, 2)),
          ("conv_transpose3d", (1, 2, 3, 3, 3), (2, 3, 2, 2, 2))]


def _conv_args(lib, x_shape, w_shape, dtypes):
    """Input, weight and bias (3 output channels) of ``lib`` in the three given dtypes."""
    arrays = [np.linspace(-1, 1, int(np.prod(s))).reshape(s) for s in (x_shape, w_shape, (3,))]
    if lib is torch:
        return [torch.tensor(a).to(getattr(torch, d)) for a, d in zip(arrays, dtypes)]
    return [cn.tensor(a, dtype=d) for a, d in zip(arrays, dtypes)]


@pytest.mark.parametrize("dtypes", [("float32", "float64", "float64"), ("float64", "float32", "float32"),
                                    ("float16", "float32", "float32"), ("float32", "float32", "float64"),
                                    ("bfloat16", "bfloat16", "float32")])
@pytest.mark.parametrize("name, x_shape, w_shape", _CONVS, ids=[c[0] for c in _CONVS])
def test_conv_mixed_dtypes_raise_as_in_torch(name, x_shape, w_shape, dtypes):
    # NOTE: one exception in PyTorch's CPU build: its slow conv_transpose1d/2d kernel adds a bias of another dtype
    # in place (casting it); conv_transpose3d and the cuDNN path (check_input_same_type_as_parameters) refuse it.
    # cupynet refuses it everywhere, as on the GPU.
    if not (name in ("conv_transpose1d", "conv_transpose2d") and dtypes[0] == dtypes[1]):
        with pytest.raises(RuntimeError):
            getattr(torch.nn.functional, name)(*_conv_args(torch, x_shape, w_shape, dtypes))
    with pytest.raises(RuntimeError, match=f"{name}: input, weight and bias must have the same dtype, but got "
                                           f"input {dtypes[0]}, weight {dtypes[1]}, bias {dtypes[2]}"):
        getattr(ops, name)(*_conv_args(cn, x_shape, w_shape, dtypes))


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
@pytest.mark.parametrize("name, x_shape, w_shape", _CONVS, ids=[c[0] for c in _CONVS])
def test_conv_under_autocast_casts_mixed_inputs_first(name, x_shape, w_shape, low):
    for dtypes in (("float16", "float32", "float32"), ("float32", "bfloat16", "float16")):
        with torch.autocast("cpu", dtype=getattr(torch, low)):
            want = getattr(torch.nn.functional, name)(*_conv_args(torch, x_shape, w_shape, dtypes))
        with cn.amp.autocast("cpu", dtype=low):
            got = getattr(ops, name)(*_conv_args(cn, x_shape, w_shape, dtypes))
        assert str(got.dtype) == low == str(want.dtype).removeprefix("torch.")
        tol = 2e-2 if low == "bfloat16" else 2e-3
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol)
    # NOTE: float64 is never autocast, so a float64 weight still meets a half input: both refuse
    mixed = ("float32", "float64", "float64")
    with torch.autocast("cpu", dtype=getattr(torch, low)), pytest.raises(RuntimeError):
        getattr(torch.nn.functional, name)(*_conv_args(torch, x_shape, w_shape, mixed))
    with cn.amp.autocast("cpu", dtype=low), pytest.raises(RuntimeError, match="must have the same dtype"):
        getattr(ops, name)(*_conv_args(cn, x_shape, w_shape, mixed))


@pytest.mark.parametrize("nd, kw", [(2, dict(stride=2, padding=1, dilation=2, groups=2)), (1, dict(padding=2)),
                                    (3, dict(stride=(1, 2, 1), padding=1))])
def test_channels_first_columns_of_the_cupy_path_match_torch_on_numpy(monkeypatch, nd, kw):
    # NOTE: the GPU's column layout (fused im2col/col2im, their NumPy references here), forced on the CPU
    monkeypatch.setattr(conv, "channels_last", lambda x: False)
    size, kernel = (5, 6, 4)[:nd], (3, 2, 2)[:nd]
    fn, tfn = getattr(ops, f"conv{nd}d"), getattr(F, f"conv{nd}d")
    tfn_t, fn_t = getattr(F, f"conv_transpose{nd}d"), getattr(ops, f"conv_transpose{nd}d")
    groups = kw.get("groups", 1)
    check_op([(2, 4) + size, (6, 4 // groups) + kernel, (6,)], lambda x, w, b: fn(x, w, b, **kw),
             lambda x, w, b: tfn(x, w, b, **kw))
    tkw = {k: v for k, v in kw.items() if k != "dilation"}
    check_op([(2, 4) + size, (4, 6 // groups) + kernel, (6,)], lambda x, w, b: fn_t(x, w, b, **tkw),
             lambda x, w, b: tfn_t(x, w, b, **tkw))


@pytest.mark.parametrize("kw", [dict(padding=1), dict(padding=(2, 0), dilation=2), dict(padding="same", groups=2),
                                dict(padding=0), dict(stride=2, padding=1),
                                dict(stride=(2, 3), dilation=(1, 2), groups=4)])
def test_input_gradient_by_tap_matches_torch(kw):
    # NOTE: the NumPy input gradient (one GEMM per kernel tap, _transpose_by_tap) for 16 channels per group
    groups = kw.get("groups", 1)
    check_op([(2, 16 * groups, 7, 8), (4 * groups, 16, 3, 3), (4 * groups,)], lambda x, w, b: ops.conv2d(x, w, b, **kw),
             lambda x, w, b: F.conv2d(x, w, b, **kw), gradgrad=False)
    check_op([(2, 4, 5, 6), (4, 16, 3, 3), (16,)], lambda x, w, b: ops.conv_transpose2d(x, w, b),
             lambda x, w, b: F.conv_transpose2d(x, w, b), gradgrad=False)


@pytest.mark.parametrize("nd,kernel,stride,dilation,padding,groups", [
    (1, (4,), (3,), (2,), (3,), 1), (2, (3, 2), (1, 2), (2, 1), (1, 0), 2),
    (3, (2, 3, 2), (2, 1, 1), (1, 1, 2), (1, 1, 0), 3)])
def test_transpose_by_tap_is_the_adjoint_of_conv(nd, kernel, stride, dilation, padding, groups):
    # NOTE: <conv(x, w), g> == <x, conv_transpose(g, w)> for every x and g: the identity that makes the
    # per-tap scatter the input gradient. float64 sums of ~1e3 products: agreement to ~1e-13 relative.
    from cupynet.ops._conv_args import check_conv
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3 * groups) + (7, 6, 5)[:nd])
    w = rng.standard_normal((2 * groups, 3) + kernel)
    geoms, _ = check_conv(f"conv{nd}d", nd, cn.tensor(x), cn.tensor(w), None, stride, padding, dilation, groups)
    g = rng.standard_normal((2, 2 * groups) + tuple(gm.out for gm in geoms))
    y = conv.conv_arrays(x, w, None, geoms, groups)
    dx = conv.conv_transpose_arrays(g, w, None, geoms, groups)
    assert dx.shape == x.shape and dx.flags.c_contiguous
    lhs, rhs = float(np.sum(y * g)), float(np.sum(x * dx))
    assert abs(lhs - rhs) <= 1e-12 * max(1.0, float(np.sum(np.abs(y * g))))


@pytest.mark.parametrize("nd,kernel,stride,dilation,padding,groups", [
    (1, (4,), (3,), (2,), (3,), 1), (2, (3, 3), (1, 1), (1, 1), (1, 1), 1), (2, (3, 2), (1, 2), (2, 1), (1, 0), 2),
    (3, (2, 3, 2), (2, 1, 1), (1, 1, 2), (1, 1, 0), 3)])
def test_both_numpy_column_orders_agree(monkeypatch, nd, kernel, stride, dilation, padding, groups):
    # NOTE: channels-last columns and per-sample by-tap columns hold the same products, summed in another
    # order: float64 results agree to a few ulps of the largest partial sum
    from cupynet.ops._conv_args import check_conv
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 2 * groups) + (9, 8, 7)[:nd])
    w = rng.standard_normal((2 * groups, 2) + kernel)
    geoms, _ = check_conv(f"conv{nd}d", nd, cn.tensor(x), cn.tensor(w), None, stride, padding, dilation, groups)
    g = rng.standard_normal((3, 2 * groups) + tuple(gm.out for gm in geoms))
    results = {}
    for per_sample in (True, False):
        monkeypatch.setattr(conv, "_per_sample_columns", lambda *a, per_sample=per_sample: per_sample)
        y, cols = conv.conv_arrays(x, w, None, geoms, groups, keep_cols=True)
        assert cols.ndim == (4 if per_sample else 3)
        results[per_sample] = (y, conv.conv_weight_arrays(x, g, geoms, groups, cols=cols),
                         conv.conv_weight_arrays(x, g, geoms, groups))
    for a, b in zip(results[True], results[False]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)

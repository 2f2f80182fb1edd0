"""Normalization ops: layer/group/instance/batch/rms norm and normalize, against PyTorch and by gradcheck."""

import numpy as np
import pytest
from op_harness import check_op

import cupynet as cn
from cupynet import amp
from cupynet.ops.norm import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, Normalize, RMSNorm


def _t(m, a):
    """A tensor of array ``a`` in module ``m`` (cupynet or torch)."""
    return m.tensor(a) if a is not None else None


def test_layer_norm_matches_torch_and_gradgrad():
    F = pytest.importorskip("torch.nn.functional")
    check_op([(2, 3, 4), (3, 4), (3, 4)], lambda x, w, b: cn.layer_norm(x, (3, 4), w, b),
             torch_fn=lambda x, w, b: F.layer_norm(x, (3, 4), w, b))
    check_op([(3, 4)], lambda x: cn.layer_norm(x, 4, eps=1e-3), torch_fn=lambda x: F.layer_norm(x, (4,), eps=1e-3))


def test_group_and_instance_norm_match_torch():
    F = pytest.importorskip("torch.nn.functional")
    check_op([(2, 4, 3), (4,), (4,)], lambda x, w, b: cn.group_norm(x, 2, w, b),
             torch_fn=lambda x, w, b: F.group_norm(x, 2, w, b))
    check_op([(2, 3, 2, 2)], lambda x: cn.group_norm(x, 3), torch_fn=lambda x: F.group_norm(x, 3))
    check_op([(2, 3, 4), (3,), (3,)], lambda x, w, b: cn.instance_norm(x, weight=w, bias=b),
             torch_fn=lambda x, w, b: F.instance_norm(x, weight=w, bias=b))


def test_batch_norm_training_and_eval_match_torch():
    F = pytest.importorskip("torch.nn.functional")
    check_op([(4, 3, 2), (3,), (3,)], lambda x, w, b: cn.batch_norm(x, None, None, w, b, training=True),
             torch_fn=lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True))
    rm, rv = np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.5, 2.0])
    check_op([(4, 3), (3,), (3,)],
             lambda x, w, b: cn.batch_norm(x, cn.tensor(rm), cn.tensor(rv), w, b, training=False),
             torch_fn=lambda x, w, b: F.batch_norm(x, _t(F.torch, rm), _t(F.torch, rv), w, b, training=False))


def test_batch_norm_running_stats_fp32_unbiased_in_place():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((5, 3, 4)) * 3 + 1
    rm, rv = cn.zeros(3), cn.ones(3)
    version = rm._version
    out = cn.batch_norm(cn.tensor(x, dtype=cn.float16), rm, rv, training=True, momentum=0.3)
    trm, trv = torch.zeros(3), torch.ones(3)
    torch.nn.functional.batch_norm(torch.tensor(x, dtype=torch.float32), trm, trv, training=True, momentum=0.3)
    assert out.dtype == cn.float16 and rm.dtype == cn.float32 and rv.dtype == cn.float32
    assert rm._version == version + 1 and not rm.requires_grad and rm.grad_fn is None
    # NOTE: fp16 input rounding is the only difference: statistics are accumulated in fp32
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=2e-3, atol=2e-3)


def test_half_statistics_accumulate_in_fp32():
    # NOTE: 2048 values near 300 with a small spread: a half-precision accumulation would drift badly
    x = 300.0 + np.random.default_rng(1).standard_normal((1, 2048)) * 2.0
    xh = np.asarray(x, dtype=np.float16).astype(np.float64)
    want = (xh - xh.mean()) / np.sqrt(xh.var() + 1e-5)
    got = cn.layer_norm(cn.tensor(x, dtype=cn.float16), 2048).numpy().astype(np.float64)
    np.testing.assert_allclose(got, want, atol=1e-2)


def test_rms_norm_and_normalize_match_torch():
    F = pytest.importorskip("torch.nn.functional")
    check_op([(3, 4), (4,)], lambda x, w: cn.rms_norm(x, (4,), w, 1e-5),
             torch_fn=lambda x, w: F.rms_norm(x, (4,), w, 1e-5))
    for p in (1.0, 2.0, 3.0):
        check_op([(3, 4)], lambda x: cn.normalize(x, p=p, dim=1), torch_fn=lambda x: F.normalize(x, p=p, dim=1))
    check_op([(2, 3, 4)], lambda x: cn.normalize(x, dim=-1), torch_fn=lambda x: F.normalize(x, dim=-1))


def test_normalize_zero_row_uses_eps():
    x = cn.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    y = cn.normalize(x, dim=1)
    np.testing.assert_allclose(y.detach().numpy(), [[0, 0], [0.6, 0.8]], atol=1e-6)
    y.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def test_amp_policies_and_autocast_dtypes():
    assert LayerNorm.amp_policy == "fp32" and GroupNorm.amp_policy == "fp32" and Normalize.amp_policy == "fp32"
    assert BatchNorm.amp_policy is None and InstanceNorm.amp_policy is None and RMSNorm.amp_policy is None
    x = cn.randn(4, 3, 2, dtype=cn.float16)
    w, b = cn.ones(3, requires_grad=True), cn.zeros(3, requires_grad=True)
    with amp.autocast("cpu", dtype=cn.float16):
        assert cn.layer_norm(x, 2).dtype == cn.float32
        assert cn.group_norm(x, 3, w, b).dtype == cn.float32
        out = cn.batch_norm(x, cn.zeros(3), cn.ones(3), w, b, training=True)
    assert out.dtype == cn.float16
    out.float().sum().backward()
    assert w.grad.dtype == cn.float32 and b.grad.dtype == cn.float32


def test_bad_inputs_raise_clear_errors_and_leave_state():
    x = cn.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"layer_norm: normalized_shape \(5,\) must match .* \(2, 3, 4\)"):
        cn.layer_norm(x, 5)
    with pytest.raises(RuntimeError, match=r"layer_norm: expected weight of shape \(4,\)"):
        cn.layer_norm(x, 4, weight=cn.ones(3))
    with pytest.raises(TypeError, match="layer_norm: expected a floating point input"):
        cn.layer_norm(cn.tensor([[1, 2]]), 2)
    with pytest.raises(RuntimeError, match=r"group_norm: expected number of channels in input \(3\) to be "
                                           r"divisible by num_groups, got num_groups=2"):
        cn.group_norm(x, 2)
    with pytest.raises(ValueError, match="layer_norm: eps must be a non-negative number, got -1"):
        cn.layer_norm(x, 4, eps=-1)
    rm, rv = cn.zeros(3), cn.ones(3)
    with pytest.raises(ValueError, match="batch_norm: Expected more than 1 value per channel when training"):
        cn.batch_norm(cn.randn(1, 3), rm, rv, training=True)
    with pytest.raises(ValueError, match="batch_norm: momentum must be a number in"):
        cn.batch_norm(x, rm, rv, training=True, momentum=None)
    with pytest.raises(RuntimeError, match=r"batch_norm: expected running_var to be a floating Tensor of shape "
                                           r"\(3,\), got shape \(4,\)"):
        cn.batch_norm(x, rm, cn.ones(4), training=True)
    with pytest.raises(ValueError, match="batch_norm: running_mean and running_var must be defined in "
                                         "evaluation mode"):
        cn.batch_norm(x, None, None, training=False)
    assert rm._version == 0 and np.all(rm.numpy() == 0) and np.all(rv.numpy() == 1)
    with pytest.raises(ValueError, match="normalize: p must be a finite number >= 1"):
        cn.normalize(x, p=float("inf"))
    with pytest.raises(IndexError, match="normalize: Dimension out of range"):
        cn.normalize(x, dim=3)


NORM_CASES = {
    "batch_norm": (lambda x, w, b: cn.batch_norm(x, None, None, w, b, training=True), (4,)),
    "group_norm": (lambda x, w, b: cn.group_norm(x, 2, w, b), (4,)),
    "instance_norm": (lambda x, w, b: cn.instance_norm(x, weight=w, bias=b), (4,)),
    "layer_norm": (lambda x, w, b: cn.layer_norm(x, (5, 5), w, b), (5, 5)),
}


@pytest.mark.parametrize("name", sorted(NORM_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_first_order_array_backward_equals_the_graph_backward(name, dtype):
    # NOTE: first order runs the array formula (saved xhat and rstd), create_graph the graph formula:
    # the same math in another rounding order, in fp32 (fp64) before the one rounding to the dtype
    fn, pshape = NORM_CASES[name]
    rng = np.random.default_rng(5)
    x = cn.tensor(rng.standard_normal((3, 4, 5, 5)) * 2 + 1, dtype=dtype, requires_grad=True)
    w = cn.tensor(rng.random(pshape) + 0.5, dtype=dtype, requires_grad=True)
    b = cn.tensor(rng.standard_normal(pshape), dtype=dtype, requires_grad=True)
    g = cn.tensor(rng.standard_normal((3, 4, 5, 5)), dtype=dtype)
    fast = cn.autograd.grad(fn(x, w, b), (x, w, b), g)
    graph = cn.autograd.grad(fn(x, w, b), (x, w, b), g, create_graph=True)
    tol = {"float32": 1e-5, "float16": 2e-3, "float64": 1e-12}[dtype]
    for f, s in zip(fast, graph):
        assert f.dtype == s.dtype and f.grad_fn is None
        np.testing.assert_allclose(f.numpy().astype(np.float64), s.detach().numpy().astype(np.float64),
                                   rtol=tol, atol=tol * 10)


def test_batch_norm_4d_and_channels_last_input_match_torch():
    F = pytest.importorskip("torch.nn.functional")
    check_op([(3, 4, 3, 3), (4,), (4,)], lambda x, w, b: cn.batch_norm(x, None, None, w, b, training=True),
             torch_fn=lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True))
    # a conv's output is an (N, C, H, W) view with channels-last strides
    check_op([(3, 3, 3, 4), (4,), (4,)],
             lambda x, w, b: cn.batch_norm(x.permute(0, 3, 1, 2), None, None, w, b, training=True),
             torch_fn=lambda x, w, b: F.batch_norm(x.permute(0, 3, 1, 2), None, None, w, b, training=True))


def test_batch_norm_tensor_momentum_must_be_a_0d_float():
    x = cn.randn(4, 3)
    rm, rv = cn.zeros(3), cn.ones(3)
    for bad in (cn.tensor([0.1, 0.2]), cn.tensor(1)):
        with pytest.raises(ValueError, match="batch_norm: a Tensor momentum must be a 0-d floating Tensor"):
            cn.batch_norm(x, rm, rv, training=True, momentum=bad)
    assert (rm.numpy() == 0).all() and (rv.numpy() == 1).all()
    cn.batch_norm(x, rm, rv, training=True, momentum=cn.tensor(0.5))
    np.testing.assert_allclose(rm.numpy(), x.numpy().mean(0) * 0.5, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("affine", [False, True])
def test_in_place_change_of_the_output_leaves_the_saved_xhat_alone(affine):
    # NOTE: the first-order backward reads the forward's xhat: the output must not alias it
    x = cn.tensor(np.random.default_rng(4).standard_normal((4, 3, 2)), requires_grad=True)
    w = cn.tensor(np.ones(3), requires_grad=True) if affine else None
    g = cn.tensor(np.random.default_rng(5).standard_normal((4, 3, 2)))
    for fn in (lambda t: cn.batch_norm(t, None, None, w, training=True), lambda t: cn.group_norm(t, 1),
               lambda t: cn.layer_norm(t, (3, 2))):
        y = fn(x)
        ref = cn.autograd.grad(fn(x), x, g)[0].numpy()
        y.detach().array[...] = 7.0
        np.testing.assert_array_equal(cn.autograd.grad(y, x, g)[0].numpy(), ref)

"""The fused ``gelu(linear(x))`` op of transformer feed-forward blocks (ops/linear_gelu.py), against the two ops."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.nn import functional as F
from cupynet.ops.linear_gelu import LinearGelu, linear_gelu


def _leaves(dtype, bias_shape=(6,), seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(2, 3, 5), (6, 5), bias_shape]
    return [cn.tensor(rng.standard_normal(s) * 1.5, dtype=dtype, requires_grad=True) for s in shapes]


def _run(fn, leaves, seed_grad, create_graph=False):
    out = fn(*leaves)
    grads = cn.autograd.grad(out, leaves, cn.tensor(seed_grad, dtype=out.dtype), create_graph=create_graph)
    return out, grads


def _unfused(x, w, b):
    return F.gelu(F.linear(x, w, b))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias_shape", [(6,), ()], ids=["bias", "0d-bias"])
def test_forward_and_first_order_gradients_are_bit_identical_to_linear_then_gelu(dtype, bias_shape):
    seed = np.random.default_rng(1).standard_normal((2, 3, 6))
    fused = _run(linear_gelu, _leaves(getattr(cn, dtype), bias_shape), seed)
    plain = _run(_unfused, _leaves(getattr(cn, dtype), bias_shape), seed)
    assert fused[0].grad_fn.name() == "LinearGeluBackward" and fused[0].dtype == getattr(cn, dtype)
    np.testing.assert_array_equal(fused[0].detach().numpy(), plain[0].detach().numpy())
    for a, b in zip(fused[1], plain[1]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bfloat16_autocast_forward_equal_and_gradients_within_half_precision_rounding():
    # NOTE: forward: the same roundings (linear's output to bf16, gelu's once). Backward: the unfused
    # graph formula rounds each of its ~8 ops to bf16 (2^-9 relative each); the fused one rounds once
    seed = np.random.default_rng(2).standard_normal((2, 3, 6)).astype(np.float32)
    results = []
    for fn in (linear_gelu, _unfused):
        with cn.amp.autocast("cpu", dtype=cn.bfloat16):
            results.append(_run(fn, _leaves(cn.float32), seed))
    (out_f, grads_f), (out_p, grads_p) = results
    assert out_f.dtype == cn.bfloat16 and LinearGelu.amp_policy == "lower"
    np.testing.assert_array_equal(out_f.detach().numpy().astype(np.float32), out_p.detach().numpy().astype(np.float32))
    tol = 8 * 2.0**-8
    for a, b in zip(grads_f, grads_p):
        b = b.numpy().astype(np.float64)
        np.testing.assert_allclose(a.numpy().astype(np.float64), b, rtol=tol, atol=tol * np.abs(b).max())


def test_double_backward_matches_the_unfused_ops_and_gradgradcheck():
    seed = np.random.default_rng(3).standard_normal((2, 3, 6))
    second = []
    for fn in (linear_gelu, _unfused):
        leaves = _leaves(cn.float64)
        _, grads = _run(fn, leaves, seed, create_graph=True)
        total = sum((g * g).sum() for g in grads)
        second.append([g.numpy() for g in cn.autograd.grad(total, leaves)])
    for a, b in zip(*second):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    leaves = _leaves(cn.float64, seed=4)
    assert cn.autograd.gradcheck(linear_gelu, leaves)
    assert cn.autograd.gradgradcheck(linear_gelu, leaves)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    leaves = _leaves(cn.float64)
    out = linear_gelu(*leaves)
    out.sum().backward()
    t_leaves = [torch.tensor(t.detach().numpy(), requires_grad=True) for t in leaves]
    t_out = torch.nn.functional.gelu(torch.nn.functional.linear(*t_leaves))
    t_out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-13, atol=1e-14)
    for a, b in zip(leaves, t_leaves):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13)


def test_bad_shapes_are_the_linear_errors():
    x, w, b = _leaves(cn.float32)
    with pytest.raises(RuntimeError, match=r"linear: input has 5 features \(shape \(2, 3, 5\)\) but weight expects 4"):
        linear_gelu(x, w[:, :4], b)
    with pytest.raises(RuntimeError, match="linear: "):
        linear_gelu(x, w, b[:3])


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_layer_fuses_gelu_only_for_its_own_plain_parts(norm_first):
    cn.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=norm_first)
    x = cn.randn(2, 5, 8)
    calls = []
    fused = layer(x)
    assert fused.grad_fn is not None
    original = LinearGelu.forward

    def spy(ctx, *args, **kw):
        calls.append(1)
        return original(ctx, *args, **kw)
    LinearGelu.forward = staticmethod(spy)
    try:
        layer(x)
        assert calls == [1]
        handle = layer.linear1.register_forward_hook(lambda m, i, o: None)
        hooked = layer(x)
        handle.remove()
        assert calls == [1]  # NOTE: a hook on linear1 must see linear1's output: not fused
        np.testing.assert_array_equal(hooked.detach().numpy(), fused.detach().numpy())
        layer.activation = lambda h: F.gelu(h)
        layer(x)
        assert calls == [1]
    finally:
        LinearGelu.forward = staticmethod(original)

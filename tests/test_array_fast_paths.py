"""The CPU fast paths of session 8 give the values of the paths they skip: relu against zeros, shape-op
backward on arrays, the cached causal bias, cross_entropy's common call."""

import numpy as np
import pytest

import cupynet as cn
from cupynet.ops import attention
from cupynet.ops._util import relu_array

RNG = np.random.default_rng(3)


def test_relu_array_is_maximum_with_zero_nan_included():
    x = np.array([-2.0, -0.0, 0.0, 1.5, np.nan, np.inf, -np.inf], np.float32)
    got = relu_array(x)
    np.testing.assert_array_equal(got, np.maximum(x, 0))
    assert got.dtype == np.float32 and np.isnan(got[4])
    out = x.copy()
    assert relu_array(out, out=out) is out
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_shape_op_gradients_on_arrays_equal_the_graph_path():
    x = cn.tensor(RNG.standard_normal((2, 3, 8)).astype(np.float32), requires_grad=True)
    w = cn.tensor(RNG.standard_normal((2, 2, 3, 2)).astype(np.float32))

    def loss(t):
        q, k = t.split(4, dim=2)
        return ((q.view(2, 3, 2, 2).permute(0, 3, 1, 2) * w).sum() + (k * k).sum())

    (g_arrays,) = cn.autograd.grad(loss(x), [x])
    (g_graph,) = cn.autograd.grad(loss(x), [x], create_graph=True)  # NOTE: the op path (a graph is recorded)
    np.testing.assert_array_equal(g_arrays.numpy(), g_graph.detach().numpy())
    (gg,) = cn.autograd.grad(g_graph.sum(), [x])  # NOTE: still differentiable: d/dx of sum(2k) is 2 on k's half
    np.testing.assert_array_equal(gg.numpy()[..., 4:], np.full((2, 3, 4), 2.0, np.float32))


def test_broadcast_add_gradient_sums_back_to_the_operand():
    a = cn.tensor(RNG.standard_normal((16, 32, 8)).astype(np.float32), requires_grad=True)
    b = cn.tensor(RNG.standard_normal((32, 8)).astype(np.float32), requires_grad=True)
    ((a + b) * 3.0).sum().backward()
    assert b.grad.shape == (32, 8)
    np.testing.assert_allclose(b.grad.numpy(), np.full((32, 8), 48.0, np.float32), rtol=0, atol=0)


def test_the_cached_causal_bias_is_shared_and_read_only():
    first = attention._causal_bias(np, 5, 7, np.float32)
    assert attention._causal_bias(np, 5, 7, np.float32) is first and not first.flags.writeable
    np.testing.assert_array_equal(np.isneginf(first), ~np.tril(np.ones((5, 7), bool)))
    q = cn.tensor(RNG.standard_normal((2, 5, 4)).astype(np.float32))
    k, v = (cn.tensor(RNG.standard_normal((2, 7, 4)).astype(np.float32)) for _ in range(2))
    cn.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_array_equal(attention._causal_bias(np, 5, 7, np.float32), first)  # NOTE: never written


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_common_call_equals_the_general_op(reduction):
    from cupynet.ops.loss.classification import CrossEntropy

    x = cn.tensor(RNG.standard_normal((6, 5)).astype(np.float32), requires_grad=True)
    t = cn.tensor(np.array([0, 4, -100, 2, 1, 3]))
    fast = cn.nn.functional.cross_entropy(x, t, reduction=reduction)
    general = CrossEntropy.apply(x, t, weight=None, ignore_index=-100, reduction=reduction, label_smoothing=0.0)
    # NOTE: the same formula in another order of operations. Each side's row loss lse - x[t] errs by a few
    # roundings of numbers no larger than max|x| + log C (exp and log 1 ulp each, a 5-term sum 4 u):
    # 8 u of that per side, two sides; 'sum' adds five such rows (and rounds 4 times more, the rtol)
    u = np.finfo(np.float32).eps / 2
    bound = 16 * u * (np.abs(x.detach().numpy()).max() + np.log(5)) * (5 if reduction == "sum" else 1)
    np.testing.assert_allclose(fast.detach().numpy(), general.detach().numpy(), rtol=8 * u, atol=bound)


@pytest.mark.parametrize("call, error, match", [
    (lambda x, t: cn.nn.functional.cross_entropy(x, t, reduction="avg"), ValueError, "reduction"),
    (lambda x, t: cn.nn.functional.cross_entropy(x, t[:3]), ValueError, "expected target of shape"),
    (lambda x, t: cn.nn.functional.cross_entropy(x, t, ignore_index=1.5), TypeError, "ignore_index must be an int"),
    (lambda x, t: cn.nn.functional.nll_loss(x, t, ignore_index="1"), TypeError, "ignore_index must be an int"),
    (lambda x, t: cn.nn.functional.cross_entropy(x, t + 9), IndexError, "out of bounds"),
])
def test_cross_entropy_bad_calls_still_get_the_full_checks(call, error, match):
    x, t = cn.randn(4, 5), cn.tensor(np.array([0, 1, 2, 3]))
    with pytest.raises(error, match=match):
        call(x, t)

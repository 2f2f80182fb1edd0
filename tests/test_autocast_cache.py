"""The weight-cast cache and gradients under autocast: counts, no_grad safety, clearing, fp32 grads, backward."""

import threading

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp
from cupynet.autograd.state import STATE


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    params = [cn.tensor(rng.standard_normal(s) * 0.3, dtype=cn.float32, requires_grad=True)
              for s in [(8, 16), (16,), (16, 4), (4,)]]
    x = cn.tensor(rng.standard_normal((5, 8)), dtype=cn.float32)
    return params, x


def _forward(params, x):
    w1, b1, w2, b2 = params
    h = cn.maximum(x @ w1 + b1, cn.zeros(1))
    return h @ w2 + b2


def _linear_mlp(seed=0):
    rng = np.random.default_rng(seed)
    return [cn.tensor(rng.standard_normal(s) * 0.3, dtype=cn.float32, requires_grad=True)
            for s in [(16, 8), (16,), (4, 16), (4,)]]


def _forward_linear(params, x16):
    """Two linear layers (lower: weight AND bias are cast) with a float16 ReLU between: no activation casts."""
    w1, b1, w2, b2 = params
    h = cn.maximum(cn.linear(x16, w1, b1), cn.zeros(1, dtype=cn.float16))
    return cn.linear(h, w2, b2)


def _casts(fn):
    before = STATE.cast_counter
    fn()
    return STATE.cast_counter - before


def test_weight_casts_per_step_equal_params_in_lower_ops():
    params = _linear_mlp()
    x16 = cn.randn(5, 8).half()  # NOTE: already the autocast dtype: not eligible, so never cast
    with amp.autocast("cpu", dtype=cn.float16):
        assert _casts(lambda: _forward_linear(params, x16)) == len(params)
        # a second micro-batch in the same region reuses the cached casts
        assert _casts(lambda: _forward_linear(params, x16)) == 0
        assert len(STATE.cast_cache) == len(params)
    assert len(STATE.cast_cache) == 0


def test_only_lower_op_weights_are_cast():
    params, x = _mlp()
    x16 = x.half()
    # NOTE: w1, w2 feed matmul (lower) and are cast once each; the biases feed add (unlisted) and are
    # never cast; the fp32 hidden activation (fp16 matmul + fp32 bias) is cast for the second matmul.
    with amp.autocast("cpu", dtype=cn.float16):
        assert _casts(lambda: _forward(params, x16)) == 3
        assert len(STATE.cast_cache) == 2
        assert _casts(lambda: _forward(params, x16)) == 1


def test_cache_disabled_doubles_the_casts_for_two_uses():
    params = _linear_mlp()
    x16 = cn.randn(5, 8).half()

    def two_micro_batches():
        _forward_linear(params, x16)
        _forward_linear(params, x16)

    with amp.autocast("cpu", dtype=cn.float16):
        cached = _casts(two_micro_batches)
    with amp.autocast("cpu", dtype=cn.float16, cache_enabled=False):
        uncached = _casts(two_micro_batches)
        assert len(STATE.cast_cache) == 0
    assert (cached, uncached) == (len(params), 2 * len(params))


def test_only_grad_requiring_fp32_leaves_are_cached():
    w = cn.randn(4, 3, requires_grad=True)
    frozen = cn.randn(4, 3)                  # no grad: cast every time, never cached
    non_leaf = w * 1.0                       # not a leaf: cast every time
    x = cn.randn(2, 4).half()
    with amp.autocast("cpu", dtype=cn.float16):
        assert _casts(lambda: (x @ w, x @ w)) == 1
        assert _casts(lambda: (x @ frozen, x @ frozen)) == 2
        assert _casts(lambda: (x @ non_leaf, x @ non_leaf)) == 2
        assert len(STATE.cast_cache) == 1


def test_no_graph_stripping_after_a_no_grad_region():
    # PyTorch #158232: a cast cached under no_grad was reused, graph-less, by a later grad-enabled op.
    params, x = _mlp()
    with amp.autocast("cpu", dtype=cn.float16):
        with cn.no_grad():
            evaluated = _forward(params, x)
        assert evaluated.grad_fn is None
        out = _forward(params, x)
        assert out.grad_fn is not None
        out.float().sum().backward()
    assert all(p.grad is not None for p in params)
    assert all(p.grad.dtype == cn.float32 for p in params)


def test_cache_cleared_at_outermost_exit_only():
    params, x = _mlp()
    with amp.autocast("cpu", dtype=cn.float16):
        with amp.autocast("cpu", dtype=cn.float16):
            _forward(params, x)
        assert len(STATE.cast_cache) == 2, "an inner region's exit must keep the outer region's cache"
        with amp.autocast("cpu", enabled=False):
            pass
        assert len(STATE.cast_cache) == 2
    assert len(STATE.cast_cache) == 0


def _sgd_step(params, lr=0.01):
    with cn.no_grad():
        for p in params:
            p.sub_(p.grad * lr)
            p.grad = None


def test_no_cache_growth_across_100_iterations():
    params, x = _mlp()
    with amp.autocast("cpu", dtype=cn.float16):
        for _ in range(100):
            _forward(params, x).float().mean().backward()
            _sgd_step(params)  # NOTE: in-place update bumps the version: the cached cast is refreshed
            assert len(STATE.cast_cache) <= 2
    for _ in range(100):
        with amp.autocast("cpu", dtype=cn.float16):
            _forward(params, x).float().mean().backward()
        _sgd_step(params)
        assert len(STATE.cast_cache) == 0


def test_cached_cast_refreshes_after_in_place_update():
    w = cn.ones(2, 2, requires_grad=True)
    x = cn.ones(1, 2).half()
    with amp.autocast("cpu", dtype=cn.float16):
        first = (x @ w).float().sum().item()
        with cn.no_grad():
            w.mul_(3.0)
        second = (x @ w).float().sum().item()
    assert (first, second) == (4.0, 12.0)


@pytest.mark.parametrize("dtype", [cn.float16, cn.bfloat16], ids=str)
def test_param_grads_are_fp32_and_match_hand_cast(dtype):
    params, x = _mlp()
    with amp.autocast("cpu", dtype=dtype):
        out = _forward(params, x)
    assert out.dtype == cn.float32  # fp16 matmul + fp32 bias promotes to fp32
    out.sum().backward()
    auto = [p.grad for p in params]
    assert all(g.dtype == cn.float32 for g in auto)
    manual, _ = _mlp()
    w1, b1, w2, b2 = manual
    h = cn.maximum(((x.to(dtype) @ w1.to(dtype)) + b1), cn.zeros(1))
    (((h.to(dtype) @ w2.to(dtype)) + b2).sum()).backward()
    for a, m in zip(auto, manual):
        np.testing.assert_array_equal(a.numpy(), m.grad.numpy())


def _grads_via(run_backward):
    params, x = _mlp()
    seen = []
    with amp.autocast("cpu", dtype=cn.float16):
        hidden = x @ params[0]
        hidden.register_hook(lambda g: seen.append(g.dtype))
        loss = (cn.maximum(hidden + params[1], cn.zeros(1)) @ params[2] + params[3]).sum()
        if run_backward == "inside":
            loss.backward()
    if run_backward == "outside":
        loss.backward()
    if run_backward == "thread":
        worker = threading.Thread(target=loss.backward)
        worker.start()
        worker.join()
    return [p.grad.numpy() for p in params], seen


def test_backward_outside_region_or_in_thread_uses_forward_dtypes():
    inside, seen_inside = _grads_via("inside")
    outside, seen_outside = _grads_via("outside")
    threaded, seen_thread = _grads_via("thread")
    assert seen_inside == seen_outside == seen_thread == [cn.float16]
    for a, b, c in zip(inside, outside, threaded):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_backward_inside_region_does_not_touch_the_cache():
    params, x = _mlp()
    with amp.autocast("cpu", dtype=cn.float16):
        loss = _forward(params, x).sum()
        before = dict(STATE.cast_cache)
        count = _casts(loss.backward)
        assert STATE.cast_cache == before
    assert count == 0, "backward re-decided dtypes (it must run with autocast off)"

"""The one-launch jobs of an AMP step: their references against the plain math they replace, bad inputs, and
(on the emulated CUDA device) the fused paths against the unfused ones and the launch budget of a step.

The kernels themselves are compared with these references bit for bit in ``test_cuda_emulation_kernels.py``.
The device tests run with ``pytest --device cuda-emulated tests/test_launch_fusion.py``.
"""

import json
import os
import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import cupynet as cn
from cupynet.amp import functional as F
from cupynet.amp import kernels as K
from cupynet.ops import kernels as fused

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
EMULATED = os.environ.get("CUPYNET_CUDA") == "emulated"  # NOTE: what `pytest --device cuda-emulated` sets


def grads(rng, dtypes=(F32, F16, BF16, F32)):
    return [(rng.standard_normal(n) * 3).astype(np.float32).astype(d) for n, d in zip((5, 70, 1, 300), dtypes)]


# ----------------------------------------------------------------------------- references vs the math they replace


@pytest.mark.parametrize("max_norm", [0.5, 1e6, 0.0])
def test_clip_by_total_norm_is_the_per_gradient_loop(max_norm):
    rng = np.random.default_rng(0)
    arrays = grads(rng)
    norm = K.multi_tensor_l2norm(arrays)
    # NOTE: clip_grad_norm_'s loop: coef = min(max_norm / (norm + 1e-6), 1) in fp32, g *= coef.astype(g.dtype)
    coef = np.minimum(np.float32(max_norm) / (norm.reshape(()) + np.float32(1e-6)), np.float32(1.0))
    want = [a * coef.astype(a.dtype) for a in arrays]
    K.clip_by_total_norm_(arrays, norm, max_norm)
    for got, expected in zip(arrays, want):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_clip_by_total_norm_with_a_nan_or_inf_norm_follows_pytorch():
    for norm, expected in ((np.float32(np.nan), np.nan), (np.float32(np.inf), 0.0)):
        arrays = [np.ones(3, np.float32), np.ones(2, F16)]
        K.clip_by_total_norm_(arrays, np.array([norm]), 1.0)
        for a in arrays:
            np.testing.assert_array_equal(a.astype(np.float32), np.full(a.shape, expected, np.float32))


def test_clip_by_total_norm_takes_a_device_style_max_norm_array():
    arrays, norm = [np.full(4, 2.0, np.float32)], np.array([4.0], np.float32)
    K.clip_by_total_norm_(arrays, norm, np.array([1.0], np.float32))
    np.testing.assert_array_equal(arrays[0], np.float32(2.0) * (np.float32(1.0) / np.float32(4.0 + 1e-6)))


@pytest.mark.parametrize("scale", [65536.0, 3.0, 0.0, np.inf])
def test_begin_unscale_is_inv_scale_of_a_zero_flag_and_zero_stats(scale):
    s = np.array([scale], np.float32)
    inv, found, stats = np.full(1, 7.0, np.float32), np.full((), 5.0, np.float32), np.ones((3, 2), np.int32)
    K.begin_unscale_(s, inv, found, stats)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(inv, F.inv_scale_of(s))
    assert found == 0.0 and not stats.any()


def test_record_overflow_keeps_the_stats_only_when_the_flag_is_set():
    stats, record, step = np.arange(6, dtype=np.int32).reshape(3, 2), np.zeros((3, 2), np.int32), np.zeros(1, np.int32)
    K.record_overflow_(np.zeros(1, np.float32), stats, record, step, 3)
    assert not record.any() and step[0] == 0
    K.record_overflow_(np.array([np.nan], np.float32), stats, record, step, 4)
    assert record.tolist() == stats.tolist() and step[0] == 4


def test_record_overflow_counts_a_hit_per_nonzero_row_only_when_the_flag_is_set():
    stats = np.array([[0, 0], [2, 0], [0, 1], [0, 0], [-3, 5]], np.int32)
    record, step, hits = np.zeros((5, 2), np.int32), np.zeros(1, np.int32), np.array([0, 7, 0, 1, 0], np.int32)
    for flag in (0.0, -0.0):  # NOTE: -0.0 is not set (is_nonzero_f32): nothing is counted or kept
        K.record_overflow_(np.array([flag], np.float32), stats, record, step, 3, hits)
    assert hits.tolist() == [0, 7, 0, 1, 0] and not record.any() and step[0] == 0
    for flag, number in ((1.0, 4), (np.nan, 5)):  # NOTE: a NaN flag counts as set
        K.record_overflow_(np.array([flag], np.float32), stats, record, step, number, hits)
    assert hits.tolist() == [0, 9, 2, 1, 2] and record.tolist() == stats.tolist() and step[0] == 5
    K.record_overflow_(np.ones(1, np.float32), np.zeros((5, 2), np.int32), record, step, 6, hits)  # rows of zeros
    assert hits.tolist() == [0, 9, 2, 1, 2] and not record.any() and step[0] == 6


def test_record_step_counts_a_skip_and_writes_the_ring():
    skipped, scale = np.zeros((), np.int32), np.array([8.0], np.float32)
    ring = (np.zeros(4, np.float32), np.zeros(4, np.int32))
    K.record_step_(np.array([1.0], np.float32), skipped, scale, *ring, slot=1)
    K.record_step_(np.array([-0.0], np.float32), skipped, scale, *ring, slot=2)
    K.record_step_(None, skipped, scale, slot=3)
    assert skipped == 1 and ring[0].tolist() == [0, 8, 8, 0] and ring[1].tolist() == [0, 1, 0, 0]


def test_softmax_xent_mean_is_the_sum_over_the_divisor_up_to_the_order_of_the_sum():
    rng = np.random.default_rng(3)
    rows = rng.random(1000).astype(np.float32) * 5
    target = rng.integers(0, 7, 1000)
    target[::9] = -100
    weight = (rng.random(7) + 0.5).astype(np.float32)
    for w in (None, weight):
        mean, divisor = fused.softmax_xent_mean(rows, target, 7, -100, w)
        kept = target != -100
        want_divisor = kept.sum() if w is None else w[target[kept]].astype(np.float64).sum()
        want = rows.astype(np.float64).sum() / want_divisor
        # NOTE: an fp32 sum of n terms in any order is within (n - 1) u sum|terms| of the exact sum (u = 2^-24);
        # two such sums and one division: a relative bound of ~2 (n - 1) u + u on non-negative terms
        bound = (2 * (rows.size - 1) + 1) * 2.0**-24
        assert mean.dtype == np.float32 and divisor.dtype == np.float32
        np.testing.assert_allclose(mean, want, rtol=bound)
        np.testing.assert_allclose(divisor, want_divisor, rtol=bound)
    mean, divisor = fused.softmax_xent_mean(np.zeros(2, np.float32), np.array([-100, -100]), 7)
    assert np.isnan(mean) and divisor == 0.0  # NOTE: every row ignored (their losses are 0): 0 / 0, as PyTorch


def test_softmax_xent_backward_divides_by_the_divisor_with_zero_taken_as_one():
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 6, 5)
    _, lse = fused.softmax_xent_forward(x, t)
    g = np.array(0.75, np.float32)
    for divisor, factor in ((np.array(3.0, np.float32), np.float32(0.75) / np.float32(3.0)),
                            (np.array(0.0, np.float32), np.float32(0.75))):
        got = fused.softmax_xent_backward(x, t, lse, g, divisor=divisor)
        np.testing.assert_array_equal(got, fused.softmax_xent_backward(x, t, lse, np.asarray(factor)))


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_bias_add_is_linear_arrays_add_and_one_rounding(dtype):
    rng = np.random.default_rng(5)
    x, b = rng.standard_normal((4, 9)).astype(dtype), rng.standard_normal(9).astype(dtype)
    want = (x.astype(np.float32) + b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(fused.bias_add(x, b).view(np.uint8), want.view(np.uint8))


# ----------------------------------------------------------------------------- bad inputs


def test_bad_inputs_are_refused_with_what_was_expected():
    ok = [np.ones(3, np.float32)]
    norm = np.ones(1, np.float32)
    with pytest.raises(TypeError, match="clip_by_total_norm_: arrays must be a list"):
        K.clip_by_total_norm_(np.ones(3, np.float32), norm, 1.0)
    with pytest.raises(ValueError, match="clip_by_total_norm_: total_norm must be a float32 array"):
        K.clip_by_total_norm_(ok, np.ones(2, np.float32), 1.0)
    with pytest.raises(ValueError, match="clip_by_total_norm_: invalid max_norm -1.0"):
        K.clip_by_total_norm_(ok, norm, -1.0)
    with pytest.raises(ValueError, match="clip_by_total_norm_: max_norm must be a float32 array"):
        K.clip_by_total_norm_(ok, norm, np.ones(1, np.float64))
    with pytest.raises(ValueError, match="begin_unscale_: tensor_stats must be a contiguous int32 array"):
        K.begin_unscale_(norm, np.ones(1, np.float32), np.ones(1, np.float32), np.ones((3, 3), np.int32))
    with pytest.raises(ValueError, match="begin_unscale_: inv_scale is the same memory as scale"):
        K.begin_unscale_(norm, norm, np.ones(1, np.float32))
    stats = np.zeros((2, 2), np.int32)
    with pytest.raises(ValueError, match="record_overflow_: record_stats.0. has shape"):
        K.record_overflow_(norm, stats, np.zeros((3, 2), np.int32), np.zeros(1, np.int32), 1)
    with pytest.raises(ValueError, match=r"record_overflow_: step must be an int in \[0, 2\*\*31\)"):
        K.record_overflow_(norm, stats, np.zeros((2, 2), np.int32), np.zeros(1, np.int32), -1)
    one, rec, rstep = np.ones(1, np.float32), np.zeros((2, 2), np.int32), np.zeros(1, np.int32)
    wrong_hits = [  # record_hits for a tensor_stats of shape (2, 2): (the array, the error, what it says)
        (np.zeros(3, np.int32), ValueError, r"record_hits must be a contiguous int32 array of shape \(2,\) \(one "
                                            r"count per tensor_stats row\), got int32 array of shape \(3,\)"),
        (np.zeros((2, 1), np.int32), ValueError, r"record_hits .*shape \(2,\) .*, got int32 array of shape \(2, 1\)"),
        (np.zeros(2, np.int64), ValueError, r"record_hits .*shape \(2,\) .*, got int64 array of shape \(2,\)"),
        (np.zeros(4, np.int32)[::2], ValueError, r"record_hits must be a contiguous int32 array"),
        ([0, 0], TypeError, "record_hits must be an int32 array, got list"),
        (stats.reshape(-1)[:2], ValueError, "record_hits is the same memory as tensor_stats"),
    ]
    for hits, error, message in wrong_hits:
        with pytest.raises(error, match="record_overflow_: " + message):
            K.record_overflow_(one, stats, rec, rstep, 1, hits)
    with pytest.raises(ValueError, match=r"record_overflow_: with record_hits, tensor_stats must have shape \(n, 2\) "
                                         r"\(one \[inf_count, nan_count\] row per tensor\), got shape \(4,\)"):
        K.record_overflow_(one, np.ones(4, np.int32), np.zeros(4, np.int32), rstep, 1, np.zeros(2, np.int32))
    assert not rec.any() and rstep[0] == 0  # every refused call wrote nothing
    if EMULATED:
        on_device = cn.zeros(2, dtype=cn.int32, device="cuda").array
        with pytest.raises(ValueError, match="record_overflow_: all arrays must be on one device; found_inf is on "
                                             "cpu but record_hits is on cuda:0"):
            K.record_overflow_(one, stats, rec, rstep, 1, on_device)
    with pytest.raises(ValueError, match="record_step_: ring_scales and ring_skipped must be given together"):
        K.record_step_(norm, np.zeros(1, np.int32), norm, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"record_step_: slot must be an int in \[0, 3\)"):
        K.record_step_(norm, np.zeros(1, np.int32), norm, np.zeros(3, np.float32), np.zeros(3, np.int32), slot=3)
    with pytest.raises(TypeError, match="bias_add: bias must have the dtype of x"):
        fused.bias_add(np.ones((2, 3), np.float32), np.ones(3, np.float16))
    with pytest.raises(ValueError, match="softmax_xent_mean: target must have shape"):
        fused.softmax_xent_mean(np.ones(3, np.float32), np.zeros(2, np.int64), 4)
    with pytest.raises(ValueError, match="softmax_xent_backward: divisor must hold one value"):
        x = np.ones((2, 3), np.float32)
        fused.softmax_xent_backward(x, np.zeros(2, np.int64), np.ones(2, np.float32), np.ones((), np.float32),
                                    divisor=np.ones(2, np.float32))


def test_a_refused_call_leaves_the_arrays_untouched():
    arrays = [np.full(3, 2.0, np.float32), np.full(2, 2.0, F16)]
    with pytest.raises(ValueError):
        K.clip_by_total_norm_(arrays, np.ones(2, np.float32), 1.0)
    assert all((a == 2).all() for a in arrays)


# ----------------------------------------------------------------------------- on the emulated CUDA device


@pytest.mark.cuda
@pytest.mark.skipif(not EMULATED, reason="counts launches on the emulated CUDA device (--device cuda-emulated)")
def test_clip_grad_norm_in_one_launch_gives_the_loop_bits(monkeypatch):
    from cupynet.cuda import emulated
    from cupynet.nn import utils

    def clipped(one_launch):
        monkeypatch.setattr(utils, "_clips_in_one_launch", one_launch)
        rng = np.random.default_rng(6)
        params = [cn.tensor(rng.standard_normal(s).astype(np.float32), device="cuda", requires_grad=True)
                  for s in ((5, 3), (7,), (2, 2, 2))]
        for p in params:
            p.grad = cn.tensor((rng.standard_normal(p.shape) * 4).astype(np.float32), device="cuda")
        before = emulated.launches()
        total = utils.clip_grad_norm_(params, max_norm=0.3)
        return [p.grad.cpu().numpy() for p in params], total.cpu().numpy(), emulated.launches() - before

    fused_grads, fused_total, fused_launches = clipped(utils._clips_in_one_launch)
    loop_grads, loop_total, loop_launches = clipped(lambda *a: False)
    assert fused_total.tobytes() == loop_total.tobytes()
    for got, want in zip(fused_grads, loop_grads):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert fused_launches < loop_launches


def test_the_amp_mlp_step_fits_its_launch_budget():
    from cupynet.emulated_cuda import unavailable_reason

    if unavailable_reason() is not None:
        pytest.skip(f"the emulated CUDA device cannot run here: {unavailable_reason()}")
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "CUPYNET_DEVICE"}
    result = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_launches.py"), "--quick"],
                            capture_output=True, text=True, env=dict(env, PYTHONPATH=str(root)), timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {r["mode"]: r for r in (json.loads(line) for line in result.stdout.splitlines() if line.startswith("{"))}
    # NOTE: 89 launches per MLP fp16 AdamW step at 6ce4e4f (benchmarks/results/emulated-launches-*): at most half
    assert rows["fp16+GradScaler"]["launches"][0] <= 44 and rows["fp16+GradScaler"]["host_syncs"] == [0]

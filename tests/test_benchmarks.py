"""The CPU benchmark scripts run end to end with a few pairs and print their ratios as JSON lines."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(script, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUPYNET_DEVICE="cpu")
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")], result.stdout


def test_bench_overhead_prints_paired_ratios():
    pytest.importorskip("torch")
    rows, text = _run("bench_overhead.py", "--repeats", "5")
    assert [r["case"] for r in rows] == ["tiny-op chain, per op (fwd+bwd)", "digits MLP step, batch 64"]
    for r in rows:
        assert r["cupynet_s"] > 0 and r["torch_s"] > 0 and r["ratio_q1"] <= r["ratio"] <= r["ratio_q3"]
    assert "ratio IQR" in text


def test_bench_train_prints_throughput_ratios():
    pytest.importorskip("torch")
    rows, _ = _run("bench_train.py", "--repeats", "3")
    assert len(rows) == 3
    for r in rows:
        low, high = r["throughput_ratio_iqr"]
        assert r["cupynet_samples_s"] > 0 and low <= r["throughput_ratio"] <= high


def test_bench_numpy_floor_compares_with_a_hand_written_step():
    rows, text = _run("bench_numpy_floor.py", "--repeats", "5")
    assert len(rows) == 1 and rows[0]["a_s"] > 0 and rows[0]["b_s"] > 0
    assert "NumPy by hand" in text


def test_paired_times_needs_two_pairs():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _timing import paired_times
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    with pytest.raises(ValueError, match="pairs must be at least 2"):
        paired_times(lambda: None, lambda: None, pairs=1)
    result = paired_times(lambda: sum(range(100)), lambda: sum(range(100)), pairs=3, warmup=0)
    assert set(result) == {"a_s", "b_s", "ratio", "ratio_q1", "ratio_q3"}


def test_bench_cpu_time_measures_the_tree_it_runs_in():
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUPYNET_DEVICE="cpu")
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cpu_time.py"), "--repeats", "20"],
                            capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    (row,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert row["benchmark"] == "cpu_time" and row["repeats"] == 20
    for case in ("tiny-op chain, per op (fwd+bwd)", "digits MLP step, batch 64"):
        assert 0 < row[case]["p10_us"] <= row[case]["median_us"]


def test_bench_launches_counts_a_quick_step_on_the_emulated_device():
    from cupynet.emulated_cuda import unavailable_reason

    if unavailable_reason() is not None:
        pytest.skip(f"the emulated CUDA device cannot run here: {unavailable_reason()}")
    env = {k: v for k, v in os.environ.items() if k != "CUPYNET_DEVICE"}
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_launches.py"), "--quick"],
                            capture_output=True, text=True, env=dict(env, PYTHONPATH=str(ROOT)), timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["mode"] for r in rows] == ["fp32", "fp16+GradScaler"]
    for r in rows:
        assert r["launches"][0] > 0 and r["host_syncs"] == [0]
    assert "# command: " in result.stdout and "# cupynet commit: " in result.stdout


def test_bench_launches_refuses_another_device():
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUPYNET_DEVICE="cpu")
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_launches.py"), "--quick"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode != 0 and "CUPYNET_DEVICE='cpu'" in result.stderr

"""Issue 6 acceptance: a resumed run continues bit for bit (AMP on, new process), also via `cupynet train`."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import cupynet as cn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
pytest.importorskip("sklearn")


def worker(directory, steps, resume=False):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "_resume_worker.py"), str(directory),
                          str(steps), "resume" if resume else "fresh"], capture_output=True, text=True, env=ENV,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def flat(tree, prefix=""):
    """Every leaf of a nested state, as {path: bytes or value}, for exact comparison."""
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in flat(sub, f"{prefix}/{key}").items()}
    if isinstance(tree, (list, tuple)):
        return {k: v for i, sub in enumerate(tree) for k, v in flat(sub, f"{prefix}/{i}").items()}
    if isinstance(tree, cn.Tensor):
        return {prefix: (str(tree.dtype), tree.shape, tree.numpy().tobytes())}
    if isinstance(tree, np.ndarray):
        return {prefix: (str(tree.dtype), tree.shape, tree.tobytes())}
    return {prefix: tree}


def test_resume_in_a_new_process_is_bit_identical(tmp_path):
    n = 30  # crosses an epoch boundary (23 batches per epoch) and several scale changes
    straight = worker(tmp_path / "straight", 2 * n)
    first = worker(tmp_path / "split", n)
    second = worker(tmp_path / "split", 2 * n, resume=True)
    assert first + second == straight  # the loss curve, bit for bit
    a = cn.load(tmp_path / "straight" / f"step-{2 * n:08d}.ckpt")
    b = cn.load(tmp_path / "split" / f"step-{2 * n:08d}.ckpt")
    for part in ("model", "optimizer", "scheduler", "scaler", "loader", "rng"):
        assert flat(a[part]) == flat(b[part]), part
    scaler = a["scaler"]
    assert {"scale", "_growth_tracker", "hysteresis", "_hysteresis_tracker"} <= set(scaler)
    assert scaler["scale"] < 2.0 ** 30  # the scale really moved during the run


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "cupynet.cli", "train", *args], capture_output=True, text=True,
                          env=ENV, timeout=300, cwd=ROOT)


def read_metrics(path):
    """The per-step rows of a metrics file (the per-epoch rows, which carry "split", left out)."""
    return [row for row in map(json.loads, open(path)) if "split" not in row]


def test_cli_resume_after_ctrl_c_continues_exactly(tmp_path):
    common = ["--amp", "--epochs", "10", "--no-progress", "--save-every", "25"]
    straight = run_cli(*common, "--out", str(tmp_path / "a"), "--metrics", str(tmp_path / "a.jsonl"))
    assert straight.returncode == 0, straight.stderr[-2000:]

    metrics_b = tmp_path / "b.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "cupynet.cli", "train", *common, "--out", str(tmp_path / "b"),
                             "--metrics", str(metrics_b)], env=ENV, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if metrics_b.exists() and metrics_b.stat().st_size > 0:
            proc.send_signal(signal.SIGINT)  # Ctrl-C: stop cleanly after the current step
            break
        time.sleep(0.01)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]  # Ctrl-C: saved, and the shell sees the interrupt
    assert "stopped at step" in out, "the run finished before Ctrl-C arrived; the test proved nothing"
    resumed = run_cli(*common, "--out", str(tmp_path / "b"), "--resume", "auto", "--metrics", str(metrics_b))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed from" in resumed.stdout
    a, b = read_metrics(tmp_path / "a.jsonl"), read_metrics(metrics_b)
    key = ("step", "loss", "lr", "scale", "skipped")
    assert [tuple(r[k] for k in key) for r in b] == [tuple(r[k] for k in key) for r in a]
    assert straight.stdout.splitlines()[-1] == resumed.stdout.splitlines()[-1]  # same test accuracy

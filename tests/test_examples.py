"""The examples run end to end with tiny settings (public API only) and print what they promise."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytest.importorskip("sklearn")


def run_example(name, *args):
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args], capture_output=True,
                            text=True, env=env, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def accuracy(stdout):
    line = [s for s in stdout.splitlines() if s.startswith("test accuracy: ")][-1]
    return float(line.split(": ")[1].rstrip("%"))


def test_train_digits_mlp_learns():
    assert accuracy(run_example("train_digits_mlp.py", "--epochs", "3")) > 80.0


def test_train_digits_mlp_with_amp():
    assert accuracy(run_example("train_digits_mlp.py", "--epochs", "3", "--amp")) > 80.0


def test_train_cnn_runs():
    assert accuracy(run_example("train_cnn.py", "--epochs", "3")) > 70.0
    assert accuracy(run_example("train_cnn.py", "--epochs", "1", "--limit", "256", "--amp")) > 0.0  # runs with AMP


def test_amp_underflow_shows_flush_to_zero(tmp_path):
    out = run_example("amp_underflow.py", "--steps", "30", "--plot", str(tmp_path / "p.png"))
    assert "flushed to 0" in out and "subnormal" in out
    rates = re.findall(r"underflow \(flushed to 0 or subnormal\): ([\d.]+)% of the values unscaled, ([\d.]+)% at", out)
    assert len(rates) == 2 and all(float(unscaled) > float(scaled) for unscaled, scaled in rates), out
    assert "skipped steps" in out and "0.weight" in out  # the overflow report names the first layer

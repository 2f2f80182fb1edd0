"""The API reference builds from the docstrings with pdoc, as .ci/run does (skipped where pdoc is not installed)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pdoc_builds_the_api_reference_without_a_warning(tmp_path):
    pytest.importorskip("pdoc")  # the docs extra
    paths = [ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]  # where pdoc may be
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "CUPYNET_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, "-W", "error", "-m", "pdoc", "cupynet", "-o", str(tmp_path)],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    grad_scaler = (tmp_path / "cupynet" / "amp.html").read_text(encoding="utf-8")  # the package re-exports it
    assert "GradScaler" in grad_scaler and "skipped_steps" in grad_scaler  # the docstrings made it
    train = (tmp_path / "cupynet" / "train" / "loop.html").read_text(encoding="utf-8")
    assert "TrainConfig" in train and "val_split" in train

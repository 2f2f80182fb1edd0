"""``cupynet train --nproc N`` and ``mpiexec -n N cupynet train`` (issue 18): rank 0 alone reports."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cupynet.train import distributed as train_dist

ROOT = Path(__file__).resolve().parent.parent


def test_relaunch_drops_nproc_and_limits_threads(monkeypatch):
    calls = []
    monkeypatch.setattr(train_dist.subprocess, "call", lambda cmd, env: calls.append((cmd, env)) or 0)
    monkeypatch.setattr(train_dist, "_mpiexec", lambda: "/x/mpiexec")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for name in train_dist._WORLD_SIZE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert train_dist.relaunch(["train", "--nproc", "2", "--epochs", "1", "--nproc=2"], 2) == 0
    cmd, env = calls[0]
    assert cmd[:3] == ["/x/mpiexec", "-n", "2"] and cmd[-3:] == ["train", "--epochs", "1"]
    assert env["OMP_NUM_THREADS"] == str(max(1, os.cpu_count() // 2))


def test_nproc_inside_mpiexec_is_an_error(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="give the process count once"):
        train_dist.relaunch(["train", "--nproc", "2"], 2)


def test_missing_mpiexec_names_the_extra(monkeypatch):
    monkeypatch.setattr(train_dist.shutil, "which", lambda name: None)
    monkeypatch.setattr(train_dist.sys, "executable", "/nonexistent/python")
    with pytest.raises(ImportError, match=r'pip install -e "\.\[distributed\]"'):
        train_dist._mpiexec()


needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or train_dist.shutil.which("mpiexec") is None
                               and not (Path(sys.executable).parent / "mpiexec").exists(),
                               reason='mpi4py or mpiexec missing (pip install -e ".[distributed]")')


def _cupynet(args, cwd, launcher=()):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", CUPYNET_DEVICE="cpu",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in train_dist._WORLD_SIZE_VARIABLES:
        env.pop(name, None)
    done = subprocess.run([*launcher, sys.executable, "-m", "cupynet.cli", "train", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@needs_mpi
def test_nproc_trains_with_rank_zero_reporting_then_mpiexec_resumes(tmp_path):
    common = ["--epochs", "1", "--batch-size", "32", "--no-progress", "--out", "run", "--save-every", "3"]
    text = _cupynet([*common, "--nproc", "2", "--max-steps", "4", "--metrics", "m.jsonl"], tmp_path)
    assert text.count("test accuracy") == 1, text
    assert len((tmp_path / "m.jsonl").read_text().splitlines()) == 4
    assert sorted(os.listdir(tmp_path / "run" / "checkpoints")) == ["step-00000003.ckpt", "step-00000004.ckpt"]
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    mpiexec = mpiexec if Path(mpiexec).exists() else train_dist.shutil.which("mpiexec")
    text = _cupynet([*common, "--max-steps", "6", "--resume", "auto"], tmp_path,
                    launcher=(mpiexec, "-n", "2", "--oversubscribe", "-x", "OMP_NUM_THREADS=1"))
    assert text.count("resumed from") == 1 and "at step 4" in text and text.count("test accuracy") == 1, text
    assert "step-00000006.ckpt" in os.listdir(tmp_path / "run" / "checkpoints")

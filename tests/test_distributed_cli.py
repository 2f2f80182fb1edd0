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

    class Launched:
        def __init__(self, cmd, env, start_new_session):
            calls.append((cmd, env))
            assert start_new_session  # a terminal's Ctrl-C reaches the launcher, which passes it on

        def wait(self):
            return 0

    monkeypatch.setattr(train_dist.subprocess, "Popen", Launched)
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


@needs_mpi
def test_nproc_reports_one_set_of_numbers_and_starts_as_root(tmp_path):
    """stdout, --metrics and last.ckpt carry the same numbers; as root, no OMPI_ALLOW_RUN_AS_ROOT is needed."""
    import json
    import re

    import cupynet as cn
    env = dict(os.environ, CUPYNET_DEVICE="cpu", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in (*train_dist._WORLD_SIZE_VARIABLES, "OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "cupynet.cli", "train", "--nproc", "2", "--epochs", "2",
                           "--batch-size", "32", "--no-progress", "--out", "run", "--metrics", "m.jsonl"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = done.stdout
    assert "processes: 2 processes (mpiexec" in text and "batch 32 per process, global batch 64" in text, text
    assert ("--allow-run-as-root" in text) == (os.geteuid() == 0), text
    printed = [tuple(float(v) for v in re.findall(r"(?:loss|accuracy) ([\d.]+)", line))
               for line in text.splitlines() if line.startswith("epoch ")]
    rows = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    epochs = [r for r in rows if "split" in r]
    state = cn.load(tmp_path / "run" / "last.ckpt")
    saved = state["metrics"]["epochs"]
    assert len(printed) == len(epochs) == len(saved) == 2
    for shown, row, kept in zip(printed, epochs, saved):
        # the printed line rounds: loss to 4 decimals, accuracy to 1
        assert shown == (round(row["train_loss"], 4), round(row["train_acc"], 1), round(row["val_loss"], 4),
                         round(row["val_acc"], 1))
        assert {k: kept[k] for k in ("train_loss", "train_acc", "val_loss", "val_acc")} == \
               {k: row[k] for k in ("train_loss", "train_acc", "val_loss", "val_acc")}
    steps = [(r["step"], r["loss"]) for r in rows if "split" not in r]
    assert steps == [tuple(pair) for pair in state["metrics"]["history"]]


@needs_mpi
def test_sigterm_to_nproc_stops_every_rank_at_one_step_and_resume_is_bit_identical(tmp_path):
    import signal

    import numpy

    import cupynet as cn
    env = dict(os.environ, CUPYNET_DEVICE="cpu", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in train_dist._WORLD_SIZE_VARIABLES:
        env.pop(name, None)
    common = [sys.executable, "-m", "cupynet.cli", "train", "--nproc", "2", "--epochs", "3", "--batch-size", "16",
              "--no-progress"]
    straight = subprocess.run([*common, "--out", "a"], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
    assert straight.returncode == 0, straight.stderr[-2000:]
    proc = subprocess.Popen([*common, "--out", "b"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("epoch 1/"):
            proc.send_signal(signal.SIGTERM)  # to the command only, as a scheduler would
            break
    rest, err = proc.communicate(timeout=600)
    text = "".join(lines) + rest
    assert proc.returncode == 143, err[-2000:]
    assert "prterun detected" not in err and "Traceback" not in err, err[-2000:]
    stopped = [line for line in text.splitlines() if line.startswith("stopped at step ")]
    assert stopped, "the run finished before the signal arrived\n" + text
    step = int(stopped[0].split()[3])
    assert cn.load(tmp_path / "b" / "last.ckpt")["step"] == step
    resumed = subprocess.run([*common, "--out", "b", "--resume", "auto"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"at step {step} " in resumed.stdout
    a, b = cn.load(tmp_path / "a" / "last.ckpt"), cn.load(tmp_path / "b" / "last.ckpt")
    assert a["step"] == b["step"] == 123
    for key in a["model"]:
        assert numpy.array_equal(a["model"][key].array, b["model"][key].array), key
    assert straight.stdout.splitlines()[-1] == resumed.stdout.splitlines()[-1]

"""`cupynet train` stopped from outside: SIGTERM and Ctrl-C save and resume bit for bit, a second Ctrl-C aborts
without a traceback, a closed stdout ends the run quietly. Each case runs the command in a subprocess."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

import cupynet as cn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
# NOTE: batch 16 is 81 steps per epoch; 6 epochs leave the signal, sent once epoch 1 is reported, time to land
COMMON = ["train", "--batch-size", "16", "--epochs", "6", "--no-progress"]


def start(*args, **popen):
    return subprocess.Popen([sys.executable, "-m", "cupynet.cli", *COMMON, *args], env=ENV, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def run(*args):
    return subprocess.run([sys.executable, "-m", "cupynet.cli", *COMMON, *args], env=ENV, cwd=ROOT, text=True,
                          capture_output=True, timeout=300)


def signal_after_first_epoch(proc, number):
    """Send ``number`` once the run printed its first epoch line; returns the whole stdout and stderr."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("epoch 1/"):
            proc.send_signal(number)
            break
    rest, err = proc.communicate(timeout=300)
    return "".join(lines) + rest, err


def step_rows(path):
    return [row for row in map(json.loads, open(path)) if "split" not in row]


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The uninterrupted run: its metrics rows and final checkpoint."""
    folder = tmp_path_factory.mktemp("straight")
    done = run("--out", str(folder / "out"), "--metrics", str(folder / "m.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    return {"rows": step_rows(folder / "m.jsonl"), "ckpt": cn.load(folder / "out" / "last.ckpt"),
            "last": done.stdout.splitlines()[-1]}


def flat(tree):
    """A nested state as a list of (path, bytes or value) pairs, for exact comparison."""
    if isinstance(tree, dict):
        return [item for key in sorted(tree, key=str) for item in flat_key(key, tree[key])]
    if isinstance(tree, (list, tuple)):
        return [item for i, value in enumerate(tree) for item in flat_key(i, value)]
    array = getattr(tree, "array", None)
    if array is not None:
        return [("", str(array.dtype), array.shape, array.tobytes())]
    return [("", repr(tree))]


def flat_key(key, value):
    return [(f"{key}/{entry[0]}", *entry[1:]) for entry in flat(value)]


@pytest.mark.parametrize("number, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_saves_at_the_step_reached_and_resume_is_bit_identical(number, status, straight, tmp_path):
    out, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    proc = start("--out", str(out), "--metrics", str(metrics))
    stdout, stderr = signal_after_first_epoch(proc, number)
    assert proc.returncode == status, stderr[-2000:]
    assert "Traceback" not in stderr
    stopped = [line for line in stdout.splitlines() if line.startswith("stopped at step ")]
    assert stopped, "the run finished before the signal arrived; the test proved nothing\n" + stdout
    step = int(stopped[0].split()[3])
    assert cn.load(out / "last.ckpt")["step"] == step  # saved where it stopped, not at the last epoch end
    resumed = run("--out", str(out), "--metrics", str(metrics), "--resume", "auto")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"at step {step}" in resumed.stdout
    rows = step_rows(metrics)
    key = ("step", "loss", "lr")
    assert [tuple(r[k] for k in key) for r in rows] == [tuple(r[k] for k in key) for r in straight["rows"]]
    times = [r["time"] for r in rows]
    assert times == sorted(times), "the metrics' time restarted on resume"
    final = cn.load(out / "last.ckpt")
    for part in ("model", "optimizer", "loader", "rng"):
        assert flat(final[part]) == flat(straight["ckpt"][part]), part
    assert resumed.stdout.splitlines()[-1] == straight["last"]


def test_second_ctrl_c_aborts_without_a_traceback(tmp_path):
    proc = start("--epochs", "40", "--out", str(tmp_path / "out"))
    err_lines = []

    def read_stderr():
        for line in proc.stderr:
            err_lines.append(line)
            if "stopping after the current step" in line:
                proc.send_signal(signal.SIGINT)  # the second Ctrl-C, while the first one's stop is under way

    reader = threading.Thread(target=read_stderr)
    reader.start()
    for line in proc.stdout:
        if line.startswith("epoch 1/"):
            proc.send_signal(signal.SIGINT)
            break
    proc.stdout.read()
    proc.wait(timeout=300)
    reader.join(timeout=60)
    stderr = "".join(err_lines)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "aborted" in stderr.splitlines()[-1], stderr


def test_closed_stdout_ends_the_run_quietly(tmp_path):
    proc = start("--epochs", "40", "--out", str(tmp_path / "out"))
    first = proc.stdout.readline()
    assert first.startswith("cupynet train: ")
    proc.stdout.close()  # as `cupynet train | head -1` does
    stderr = proc.stderr.read()
    proc.wait(timeout=300)
    assert proc.returncode == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr, stderr
    saved = cn.load(tmp_path / "out" / "last.ckpt")
    assert saved["step"] < 40 * 81  # it stopped early, and saved where it stopped



def test_sigusr1_asks_for_a_stop_and_never_counts_as_the_second_signal(monkeypatch):
    from cupynet.train import stopping
    monkeypatch.delenv(stopping.LAUNCHED_VARIABLE, raising=False)
    stop = stopping.StopRequest()
    stop(signal.SIGUSR1, None)
    assert stop.requested and stop.status == 138 and not stop.signalled
    stop(signal.SIGINT, None)  # a terminal's own Ctrl-C on top: still the first real signal, no abort
    assert stop.signalled and stop.status == 138
    with pytest.raises(stopping.Aborted) as aborted:
        stop(signal.SIGTERM, None)
    assert aborted.value.status == 143
    monkeypatch.setenv(stopping.LAUNCHED_VARIABLE, "1")
    ranked = stopping.StopRequest()
    ranked(signal.SIGUSR1, None)
    assert ranked.status == 0  # a rank of --nproc: the launcher reports the signal, mpiexec sees no failure

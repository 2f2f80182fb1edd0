"""Issue 12: `cupynet train --resume auto` ends exactly where an uninterrupted run ends, wherever it stopped.

The run: digits (a tenth held out for validation, evaluated after every epoch), batch 512, 3 epochs of
3 batches = 9 steps, AMP float16 with a seed and an initial scale that overflow at steps 2 and 6, the middle
batch of epoch 1 and the last of epoch 2 (so the scaler's scale and skip count move, within an epoch and across
an epoch boundary; the steps follow from the seeded initial weights, which are torch's CPU stream).
Stopping after step k covers every kind of boundary: mid-epoch (k = 1, 2, 4, 5, 7, 8), the last
batch of an epoch (k = 3, 6) and the finished run (k = 9).

Runs go through the command's own code in this process: ``cupynet.cli.main([...])``, or, to stop a run
after step k, the same parser and ``train()`` with ``TrainConfig.max_steps = k`` (the one setting the
command line does not expose). A run stops at step k in one of two ways:

- "checkpoint": a run with ``--save-every 1`` writes ``step-k.ckpt`` from inside the training loop; a
  fresh ``--out`` holding only that file is resumed, everything the run did later discarded (what a
  killed process leaves behind).
- "max-steps": ``max_steps=k`` stops the run after step k the way Ctrl-C does, and the checkpoint is
  the one written when the loop stops (``--save-every`` larger than the run).

Final weights, optimizer, scaler, loader and RNG states are compared bit for bit, and so are the
per-step metrics rows (all but the wall-clock time).
"""

import json
import os
import shutil

import pytest

pytest.importorskip("sklearn")  # the digits data set

from test_resume import flat  # noqa: E402 - every leaf of a nested state, for bit-for-bit comparison

import cupynet as cn
from cupynet.cli import main

# NOTE: steps 3 and 6 overflow in float16 on purpose (that is what makes the scaler skip them)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

EPOCHS, BATCHES = 3, 3  # digits' 1294 training samples (144 more held out) in batches of 512
TOTAL = EPOCHS * BATCHES
COMMON = ["train", "--epochs", str(EPOCHS), "--batch-size", "512", "--no-progress", "--amp", "--amp-dtype",
          "float16", "--init-scale", "2.5e6", "--seed", "1", "--keep", "100"]


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setenv("CUPYNET_DEVICE", "cpu")


def cli(capsys, out_dir, *args, metrics=None, max_steps=None):
    """Run ``cupynet train`` in this process (max_steps: ``--max-steps``); returns (status, stdout, stderr)."""
    argv = [*COMMON, "--out", str(out_dir), *(["--metrics", str(metrics)] if metrics else []), *args,
            *(["--max-steps", str(max_steps)] if max_steps is not None else [])]
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def checkpoints(out_dir):
    folder = os.path.join(out_dir, "checkpoints")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def final_state(out_dir):
    """The newest checkpoint of a run, flattened (it is written when a run ends), without its wall-clock time."""
    state = flat(cn.load(os.path.join(out_dir, "checkpoints", checkpoints(out_dir)[-1])))
    state.pop("/metrics/time")  # seconds trained so far: the one part that differs from run to run
    return state


def rows(path):
    """The metrics rows without the wall-clock time."""
    return [{k: v for k, v in json.loads(line).items() if k != "time"} for line in open(path)]


def snapshot(folder):
    """{relative path: bytes} of every file under ``folder``."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = open(path, "rb").read()
    return found


def epoch_lines(lines):
    return [line.split(":")[0] for line in lines if line.startswith("epoch ")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run, with a checkpoint after every step."""
    folder = tmp_path_factory.mktemp("reference")
    status = main([*COMMON, "--out", str(folder / "out"), "--metrics", str(folder / "m.jsonl"), "--save-every", "1"])
    assert status == 0
    assert checkpoints(folder / "out") == [f"step-{k:08d}.ckpt" for k in range(1, TOTAL + 1)]
    ref = {"dir": folder / "out", "state": final_state(folder / "out"), "rows": rows(folder / "m.jsonl")}
    assert ref["state"]["/step"] == TOTAL and ref["state"]["/epoch"] == EPOCHS
    assert [r["skipped"] for r in ref["rows"] if "split" not in r] == [0, 1, 1, 1, 1, 2, 2, 2, 2]  # it moves
    assert [r["epoch"] for r in ref["rows"] if "split" in r] == [1, 2, 3]  # a validation row per epoch
    return ref


def expected_after_resume(k):
    """Epoch summary lines a run resumed after step k prints: one per epoch it finishes."""
    return [f"epoch {e}/{EPOCHS}" for e in range(k // BATCHES + 1, EPOCHS + 1)]


def check_resumed(k, lines, out_dir, metrics_rows, expected_rows, reference):
    assert any(line.startswith("resumed from ") and f" at step {k} (" in line for line in lines), lines
    assert epoch_lines(lines) == expected_after_resume(k), lines
    assert ("nothing to train" in "\n".join(lines)) == (k == TOTAL), lines
    assert final_state(out_dir) == reference["state"]  # weights, optimizer, scaler, loader, RNG, step, epoch
    assert metrics_rows == expected_rows  # the same losses, learning rates, scales and skip counts
    assert lines[-1].startswith("test accuracy: ")


@pytest.mark.parametrize("k", range(1, TOTAL + 1))
def test_resume_from_a_checkpoint_written_at_step_k_ends_like_the_uninterrupted_run(k, reference, tmp_path, capsys):
    out_dir = tmp_path / "out"
    os.makedirs(out_dir / "checkpoints")
    shutil.copy(reference["dir"] / "checkpoints" / f"step-{k:08d}.ckpt", out_dir / "checkpoints")
    status, lines, err = cli(capsys, out_dir, "--save-every", "1", "--resume", "auto", metrics=tmp_path / "m.jsonl")
    assert status == 0, err
    resumed_rows = rows(tmp_path / "m.jsonl") if (tmp_path / "m.jsonl").exists() else []
    after_k = [r for r in reference["rows"] if r["step"] > k]  # the epoch row of step k was written before it
    check_resumed(k, lines, out_dir, resumed_rows, after_k, reference)


@pytest.mark.parametrize("k", range(1, TOTAL + 1))
def test_run_stopped_by_max_steps_k_resumes_to_the_uninterrupted_end(k, reference, tmp_path, capsys):
    out_dir, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    status, lines, err = cli(capsys, out_dir, "--save-every", "100", metrics=metrics, max_steps=k)
    assert status == 0, err
    assert checkpoints(out_dir) == [f"step-{k:08d}.ckpt"]  # written when the loop stopped
    assert [r["step"] for r in rows(metrics) if "split" not in r] == list(range(1, k + 1))
    stopped = [line for line in lines if line.startswith("stopped at step")]
    if k < TOTAL:
        assert stopped and stopped[0].startswith(f"stopped at step {k} ("), lines
        where = "end of epoch" if k % BATCHES == 0 else f"batch {k % BATCHES} of {BATCHES}"
        assert where in stopped[0]
    else:
        assert not stopped, lines  # the last step of the last epoch: the run is finished, not stopped
    status, lines, err = cli(capsys, out_dir, "--save-every", "100", "--resume", "auto", metrics=metrics)
    assert status == 0, err
    check_resumed(k, lines, out_dir, rows(metrics), reference["rows"], reference)


@pytest.mark.parametrize("save_every", ["1", "3", "4"])  # the last checkpoint written in the loop (1, 3) or after it
def test_resuming_a_finished_run_does_nothing(save_every, tmp_path, capsys):
    out_dir, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    status, first, err = cli(capsys, out_dir, "--save-every", save_every, metrics=metrics)
    assert status == 0, err
    assert epoch_lines(first) == expected_after_resume(0)
    before = snapshot(tmp_path)
    assert os.path.join("out", "checkpoints", f"step-{TOTAL:08d}.ckpt") in before and "m.jsonl" in before
    status, lines, err = cli(capsys, out_dir, "--save-every", save_every, "--resume", "auto", metrics=metrics)
    assert status == 0, err
    assert epoch_lines(lines) == [], lines  # not one more epoch
    assert f"nothing to train: the run already finished its {EPOCHS} epochs (step {TOTAL})" in lines, lines
    assert snapshot(tmp_path) == before  # weights, checkpoints and metrics untouched
    assert lines[-1] == first[-1]  # and it reports the same test accuracy


def test_resuming_at_max_steps_does_nothing(tmp_path, capsys):
    out_dir, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    status, _, err = cli(capsys, out_dir, "--save-every", "100", metrics=metrics, max_steps=4)
    assert status == 0, err
    before = snapshot(tmp_path)
    status, lines, err = cli(capsys, out_dir, "--save-every", "100", "--resume", "auto", metrics=metrics,
                             max_steps=4)
    assert status == 0, err
    assert "nothing to train: step 4 already reaches max_steps 4" in lines, lines
    assert snapshot(tmp_path) == before


def test_checkpoint_of_another_batch_size_is_refused_naming_its_flags(reference, tmp_path, capsys):
    out_dir = tmp_path / "out"
    os.makedirs(out_dir / "checkpoints")
    shutil.copy(reference["dir"] / "checkpoints" / f"step-{BATCHES:08d}.ckpt", out_dir / "checkpoints")
    status = main([*COMMON, "--batch-size", "256", "--out", str(out_dir), "--save-every", "1", "--resume", "auto"])
    err = capsys.readouterr().err
    assert status == 1
    assert "was trained with --model mlp --dataset digits --val-split 0.1 --seed 1 --batch-size 512" in err, err
    assert "this run has --batch-size 256" in err, err
    assert checkpoints(out_dir) == [f"step-{BATCHES:08d}.ckpt"]  # nothing written


def test_checkpoint_without_a_recorded_configuration_is_checked_by_its_loader_position(reference, tmp_path, capsys):
    """A checkpoint written before runs recorded their flags: the step/loader check still refuses it."""
    out_dir = tmp_path / "out"
    os.makedirs(out_dir / "checkpoints")
    state = cn.load(reference["dir"] / "checkpoints" / f"step-{BATCHES:08d}.ckpt")
    del state["extra"]["config"]
    cn.save(state, out_dir / "checkpoints" / f"step-{BATCHES:08d}.ckpt")
    status = main([*COMMON, "--batch-size", "256", "--out", str(out_dir), "--save-every", "1", "--resume", "auto"])
    err = capsys.readouterr().err
    assert status == 1
    assert "at step 3" in err and "1 epoch(s) and 0 batch(es)" in err and "6 batches per epoch" in err, err
    assert "trained on the whole set: --val-split 0" in err, err  # the likely cause for such an old file
    assert checkpoints(out_dir) == [f"step-{BATCHES:08d}.ckpt"]  # nothing written

"""`cupynet train`'s run-shaping flags: --patience, --schedule/--warmup-steps, --clip-grad-norm, --accumulate,
--tensorboard and --test-on, through the command (in this process) and the Trainer."""

import json
import math
import os

import numpy
import pytest
from _train_cli import cpu_device, run  # noqa: F401 - the fixture runs every test on the CPU

import cupynet as cn
from cupynet.train.config import TrainConfig
from cupynet.train.loop import Trainer
from cupynet.train.schedule import PLATEAU_PATIENCE, LearningRate

pytest.importorskip("sklearn")  # the digits data set


def rows(path):
    every = [json.loads(line) for line in open(path)]
    return [r for r in every if "split" not in r], [r for r in every if "split" in r]


# ---- --patience ---------------------------------------------------------------------------------------------
def test_patience_stops_when_the_best_metric_stalls_and_resume_knows(tmp_path, capsys):
    out, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    status, lines, err = run(capsys, "--epochs", "40", "--patience", "1", "--best-metric", "val_loss",
                             "--out", str(out), "--metrics", str(metrics))
    assert status == 0, err
    _, epochs = rows(metrics)
    assert len(epochs) < 40, "never stopped early: the test proves nothing"
    losses = [r["val_loss"] for r in epochs]
    assert losses[-1] >= min(losses[:-1])  # the last epoch did not improve on the best before it
    stopped = [line for line in lines if line.startswith("stopped at step")]
    assert stopped and "early stopping: val_loss has not improved for 1 epochs (--patience 1" in stopped[0], lines
    status, lines, err = run(capsys, "--epochs", "40", "--patience", "1", "--best-metric", "val_loss",
                             "--out", str(out), "--resume", "auto")
    assert status == 0, err
    assert any(line.startswith("nothing to train: early stopping") for line in lines), lines


# ---- --schedule and --warmup-steps ------------------------------------------------------------------------------
def test_schedule_shapes():
    warm = LearningRate(1.0, "constant", warmup_steps=4, total_updates=10)
    assert [warm.at(u) for u in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    cosine = LearningRate(2.0, "cosine", warmup_steps=0, total_updates=100)
    assert cosine.at(0) == 2.0 and cosine.at(50) == pytest.approx(1.0, abs=1e-15) and cosine.at(100) == 0.0
    step = LearningRate(1.0, "step", total_updates=8)
    assert [step.at(u) for u in range(8)] == [1, 1, 1, 1, 0.1, 0.1, pytest.approx(0.01), pytest.approx(0.01)]
    plateau = LearningRate(1.0, "plateau", total_updates=8)
    lowered = [plateau.end_epoch(v) for v in (1.0, 0.9, 0.95, 0.91, 0.8, 0.85, 0.85)]
    assert lowered == [False, False, False, True, False, False, True] and PLATEAU_PATIENCE == 2
    assert plateau.at(0) == pytest.approx(0.01)
    again = LearningRate(1.0, "plateau", total_updates=8)
    again.load_state_dict(plateau.state_dict())
    assert again.at(3) == plateau.at(3) and again.state_dict() == plateau.state_dict()


def test_cosine_with_warmup_sets_each_step_and_logs_it(tmp_path, capsys):
    metrics = tmp_path / "m.jsonl"
    status, lines, err = run(capsys, "--epochs", "3", "--lr", "0.01", "--schedule", "cosine", "--warmup-steps", "4",
                             "--metrics", str(metrics))
    assert status == 0, err
    steps, _ = rows(metrics)
    expected = LearningRate(0.01, "cosine", 4, len(steps))
    assert [r["lr"] for r in steps] == [expected.at(r["step"] - 1) for r in steps]
    assert steps[0]["lr"] == pytest.approx(0.0025) and steps[-1]["lr"] < 0.001
    assert "cosine to 0 over 9 updates, linear warmup over 4 updates" in lines[3]
    assert ", lr " in [line for line in lines if line.startswith("epoch 3/3")][0]


# ---- --clip-grad-norm ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("amp", [False, True])
def test_clip_grad_norm_clips_the_true_gradients(amp):
    clip = 1e-3  # far below the digits MLP's first gradients (norm ~1)
    trainer = Trainer(TrainConfig(batch_size=64, device="cpu", progress=False, amp=amp, clip_grad_norm=clip,
                                  amp_dtype="float16" if amp else None))
    x, y = next(iter(trainer.loader))
    trainer.train_step(x, y)
    grads = [p.grad.array.astype(numpy.float64) for p in trainer.model.parameters()]
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    # NOTE: clipped to clip / (norm + 1e-6) of the unscaled gradients; clipping the scaled ones and unscaling
    # after would leave clip / 65536
    assert norm == pytest.approx(clip, rel=1e-3)
    if amp:
        assert trainer.scaler.skipped_steps() == 0


# ---- --accumulate -------------------------------------------------------------------------------------------
def test_accumulate_two_halves_gives_the_large_batch_gradient():
    big = Trainer(TrainConfig(batch_size=64, device="cpu", progress=False, optimizer="sgd"))
    small = Trainer(TrainConfig(batch_size=32, device="cpu", progress=False, optimizer="sgd", accumulate=2))
    for a, b in zip(big.model.parameters(), small.model.parameters()):
        assert numpy.array_equal(a.array, b.array)  # the same seed, the same initial weights
    x, y = next(iter(big.loader))
    big.train_step(x, y)
    small.train_step(x[:32], y[:32])
    assert all(p.grad is not None for p in small.model.parameters())
    before = [p.array.copy() for p in small.model.parameters()]
    small.step = 1
    small.train_step(x[32:], y[32:])
    assert any(not numpy.array_equal(p.array, q) for p, q in zip(small.model.parameters(), before))  # updated
    for a, b in zip(big.model.parameters(), small.model.parameters()):
        ga, gb = a.grad.array.astype(numpy.float64), b.grad.array.astype(numpy.float64)
        # NOTE: the same 64 per-sample terms summed as 64 rows or as two 32-row partial sums: equal up to the
        # fp32 rounding of a 64-term sum (a few ulps of the largest partial sums), not bit for bit
        scale = float(numpy.abs(ga).max())
        assert numpy.abs(ga - gb).max() <= 64 * numpy.finfo(numpy.float32).eps * scale


def test_accumulate_under_amp_updates_the_scaler_once_per_group(tmp_path, capsys):
    metrics = tmp_path / "m.jsonl"
    status, lines, err = run(capsys, "--epochs", "1", "--amp", "--amp-dtype", "float16", "--init-scale", "1e30",
                             "--accumulate", "2", "--batch-size", "128", "--metrics", str(metrics))
    assert status == 0, err
    steps, _ = rows(metrics)
    assert len(steps) == 11  # 1294 samples in batches of 128
    # every update overflows at this scale: 6 groups (5 of 2 batches, one of 1) skip 6 updates, and the
    # scale halves once per update, not once per batch
    assert steps[-1]["skipped"] == 6
    assert steps[1]["scale"] == pytest.approx(5e29) and steps[3]["scale"] == pytest.approx(2.5e29)


# ---- --tensorboard and --test-on --------------------------------------------------------------------------------
def test_tensorboard_event_file_holds_the_run(tmp_path, capsys):
    from test_utils_tensorboard import _fields, _read_events
    status, lines, err = run(capsys, "--epochs", "2", "--tensorboard", str(tmp_path / "tb"))
    assert status == 0, err
    tags = {}
    for event in _read_events(tmp_path / "tb")[1:]:
        value = _fields(_fields(event[5][0])[1][0])
        tags.setdefault(value[1][0].decode(), []).append(event.get(2, [0])[0])
    assert tags["train/loss"] == list(range(1, 7)) and tags["train/lr"] == list(range(1, 7))
    assert tags["epoch/val_acc"] == [3, 6] and tags["epoch/train_loss"] == [3, 6]


def test_test_on_names_the_weights_it_measured(tmp_path, capsys):
    out = tmp_path / "out"
    status, lines, err = run(capsys, "--epochs", "4", "--out", str(out))
    assert status == 0, err
    assert lines[-2] == "test set:  final weights (step 12); --test-on best for best.ckpt's"
    status, lines, err = run(capsys, "--epochs", "4", "--out", str(out), "--resume", "auto", "--test-on", "best")
    assert status == 0, err
    best = cn.load(out / "best.ckpt")
    assert lines[-2].startswith(f"test set:  best.ckpt's weights (epoch {best['epoch']}, by val_acc")
    trainer = Trainer(TrainConfig(batch_size=512, device="cpu", progress=False))
    trainer.model.load_state_dict(best["model"])
    assert lines[-1] == f"test accuracy: {trainer.evaluate():.1f}%"
    assert os.path.isfile(out / "last.ckpt")


def test_resume_inside_an_accumulation_group_is_refused_and_changes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    status, lines, err = run(capsys, "--epochs", "2", "--max-steps", "1", "--out", str(out))
    assert status == 0, err
    before = (out / "last.ckpt").read_bytes()
    status, lines, err = run(capsys, "--epochs", "2", "--accumulate", "2", "--out", str(out), "--resume", "auto")
    assert status == 1 and lines == []
    assert "is at batch 1 of an epoch, inside a group of --accumulate 2 batches" in err
    assert (out / "last.ckpt").read_bytes() == before

"""Issue 17: `cupynet train` validates every epoch, keeps best.ckpt/last.ckpt and refuses a mismatched resume.

Runs go through the command's own code in this process (``cupynet.cli.main``) on digits, in batches of 512
(3 steps per epoch), so each takes about a second.
"""

import json
import os

import numpy as np
import pytest
from _train_cli import FAST, cpu_device, run  # noqa: F401  (cpu_device: an autouse fixture)

import cupynet as cn
from cupynet.cli import main
from cupynet.train.data_spec import split_validation
from cupynet.train.loop import TrainConfig, Trainer

pytest.importorskip("sklearn")  # the digits data set





def epoch_rows(path):
    return [row for row in map(json.loads, open(path)) if "split" in row]


def test_val_split_is_held_out_of_the_training_set_and_fixed_by_the_seed():
    from cupynet.data.datasets import digits
    train = digits("train")
    rest, val = split_validation(train, 0.1, seed=3)
    again_rest, again_val = split_validation(train, 0.1, seed=3)
    _, other_val = split_validation(train, 0.1, seed=4)
    assert len(val) == round(0.1 * len(train)) and len(rest) + len(val) == len(train)
    assert set(val.indices).isdisjoint(rest.indices)
    assert val.indices == again_val.indices and rest.indices == again_rest.indices  # same seed, same split
    assert val.indices != other_val.indices
    assert split_validation(train, 0.0, seed=3) == (train, None)


@pytest.mark.parametrize("fraction", [-0.1, 1.0, 1.5, True, "0.1"])
def test_bad_val_split_is_refused(fraction):
    from cupynet.data.datasets import digits
    with pytest.raises(ValueError, match=r"--val-split must be a fraction in \[0, 1\)"):
        split_validation(digits("train"), fraction, seed=0)


def test_a_val_split_that_leaves_no_sample_is_refused():
    from cupynet.data.datasets import digits
    with pytest.raises(ValueError, match="leaves 0 for validation"):
        split_validation(digits("train"), 0.0001, seed=0)


@pytest.mark.parametrize("args, message", [
    (("--val-split", "1"), "expected a fraction in [0, 1), got '1'"),
    (("--val-split", "x"), "expected a fraction in [0, 1), got 'x'"),
    (("--best-metric", "test_acc"), "invalid choice: 'test_acc'"),
    (("--threads", "0"), "expected a positive integer, got '0'"),
])
def test_bad_new_flags_exit_with_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*FAST, *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_every_epoch_is_validated_in_the_progress_line_and_the_metrics_file(tmp_path, capsys):
    metrics = tmp_path / "m.jsonl"
    status, lines, err = run(capsys, "--epochs", "3", "--metrics", str(metrics))
    assert status == 0, err
    epochs = [line for line in lines if line.startswith("epoch ")]
    assert len(epochs) == 3 and all("val loss " in line and "val accuracy " in line for line in epochs), epochs
    rows = epoch_rows(metrics)
    assert [(r["epoch"], r["step"], r["split"]) for r in rows] == [(1, 3, "val"), (2, 6, "val"), (3, 9, "val")]
    for row in rows:
        assert {"train_loss", "train_acc", "val_loss", "val_acc", "time"} <= set(row)
        assert 0.0 <= row["val_acc"] <= 100.0 and row["val_loss"] > 0
        assert f"val accuracy {row['val_acc']:.1f}%" in epochs[row["epoch"] - 1]
    steps = [row for row in map(json.loads, open(metrics)) if "split" not in row]
    assert [r["step"] for r in steps] == list(range(1, 10))  # the per-step rows are as before
    assert all(set(r) == {"step", "epoch", "loss", "lr", "time"} for r in steps)
    # the epoch's train loss is the mean of its steps' losses
    assert rows[0]["train_loss"] == pytest.approx(np.mean([r["loss"] for r in steps[:3]]), rel=1e-12)


def test_val_split_zero_trains_on_everything_and_writes_no_best(tmp_path, capsys):
    metrics, out = tmp_path / "m.jsonl", tmp_path / "out"
    status, lines, err = run(capsys, "--epochs", "2", "--val-split", "0", "--metrics", str(metrics), "--out", str(out))
    assert status == 0, err
    assert "1438 train, no validation (--val-split 0)" in "\n".join(lines)
    assert [r["split"] for r in epoch_rows(metrics)] == ["train", "train"]
    assert all("val_loss" not in r for r in epoch_rows(metrics))
    assert (out / "last.ckpt").is_file() and not (out / "best.ckpt").exists()
    assert "  best:      none (no validation set: --val-split 0)" in lines


def reevaluate(path, trainer):
    """(val loss, val accuracy) of the weights in a checkpoint file, on the trainer's validation set."""
    trainer.model.load_state_dict(cn.load(path)["model"])
    return trainer.measure(trainer.val_loader)


@pytest.mark.parametrize("metric", ["val_acc", "val_loss"])
def test_best_ckpt_holds_the_epoch_with_the_best_metric_and_last_ckpt_the_end(metric, tmp_path, capsys):
    metrics, out = tmp_path / "m.jsonl", tmp_path / "out"
    # NOTE: a high learning rate makes validation go up and down, so the best epoch is not simply the last (with
    # seed 3: val_loss is best at epoch 5, val_acc at epoch 4; the assertion below fails if that ever changes)
    status, _, err = run(capsys, "--epochs", "6", "--lr", "0.3", "--seed", "3", "--best-metric", metric, "--metrics",
                         str(metrics), "--out", str(out))
    assert status == 0, err
    rows = epoch_rows(metrics)
    pick = max if metric == "val_acc" else min
    best = pick(rows, key=lambda r: r[metric])
    best = next(r for r in rows if r[metric] == best[metric])  # the first of equals
    assert best["epoch"] < 6, rows  # else best.ckpt and last.ckpt would be one state and prove nothing
    saved = cn.load(out / "best.ckpt")
    assert saved["step"] == best["step"] and saved["metrics"]["best"]["epoch"] == best["epoch"]
    last = cn.load(out / "last.ckpt")
    assert last["step"] == rows[-1]["step"] == 18 and last["epoch"] == 6
    trainer = Trainer(TrainConfig(batch_size=512, seed=3, device="cpu", progress=False))  # the run's split
    val_loss, val_acc = reevaluate(out / "best.ckpt", trainer)  # the file really holds that epoch's weights
    assert val_acc == best["val_acc"] and val_loss == pytest.approx(best["val_loss"], rel=1e-6)
    val_loss, val_acc = reevaluate(out / "last.ckpt", trainer)
    assert val_acc == rows[-1]["val_acc"] and val_loss == pytest.approx(rows[-1]["val_loss"], rel=1e-6)


def test_checkpoints_record_the_run_configuration(tmp_path, capsys):
    out = tmp_path / "out"
    status, _, err = run(capsys, "--epochs", "1", "--amp", "--amp-dtype", "bfloat16", "--seed", "5", "--out", str(out))
    assert status == 0, err
    config = cn.load(out / "last.ckpt")["extra"]["config"]
    assert config == {"model": "mlp", "dataset": "digits", "val_split": 0.1, "seed": 5, "batch_size": 512,
                      "optimizer": "adam", "amp": True, "amp_dtype": "bfloat16", "lr": None, "epochs": 1,
                      "init_scale": 65536.0, "best_metric": "val_acc", "schedule": "constant", "warmup_steps": 0,
                      "accumulate": 1, "clip_grad_norm": None}


@pytest.mark.parametrize("args, flags", [
    (("--model", "cnn"), "this run has --model cnn"),
    (("--val-split", "0.2"), "this run has --val-split 0.2"),
    (("--optimizer", "sgd"), "this run has --optimizer sgd"),
    ((), "this run has (no --amp)"),
])
def test_resume_with_other_flags_names_the_checkpoints_flags(args, flags, tmp_path, capsys):
    out = tmp_path / "out"
    status, _, err = run(capsys, "--epochs", "1", "--amp", "--amp-dtype", "bfloat16", "--out", str(out))
    assert status == 0, err
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    amp = [] if not args else ["--amp", "--amp-dtype", "bfloat16"]
    status, lines, err = run(capsys, "--epochs", "2", *amp, *args, "--out", str(out), "--resume", "auto")
    assert status == 1
    message = err.strip().splitlines()
    assert len(message) == 1, err
    assert "last.ckpt was trained with --model mlp --dataset digits --val-split 0.1 --seed 0 --batch-size 512 " \
           "--optimizer adam --amp --amp-dtype bfloat16; " in message[0], message[0]
    assert flags in message[0] and "Missing" not in message[0] and "missing" not in message[0]
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before  # nothing changed


def test_resume_auto_from_last_ckpt_continues_like_one_run(tmp_path, capsys):
    """Without --save-every the run leaves last.ckpt; --resume auto takes it and ends where one run ends."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert run(capsys, "--epochs", "4", "--out", str(straight), "--metrics", str(tmp_path / "a.jsonl"))[0] == 0
    assert run(capsys, "--epochs", "2", "--out", str(split))[0] == 0
    status, lines, err = run(capsys, "--epochs", "4", "--out", str(split), "--resume", "auto",
                             "--metrics", str(tmp_path / "b.jsonl"))
    assert status == 0, err
    assert any(line.startswith(f"resumed from {split / 'last.ckpt'} at step 6") for line in lines), lines
    a, b = cn.load(straight / "last.ckpt"), cn.load(split / "last.ckpt")
    assert a["metrics"]["epochs"] == b["metrics"]["epochs"]  # the restored rows and the new ones
    assert a["metrics"]["best"] == b["metrics"]["best"]
    for key, value in a["model"].items():
        assert np.array_equal(value.numpy(), b["model"][key].numpy()), key
    drop_time = [{k: v for k, v in r.items() if k != "time"} for r in epoch_rows(tmp_path / "a.jsonl")]
    assert drop_time[2:] == [{k: v for k, v in r.items() if k != "time"} for r in epoch_rows(tmp_path / "b.jsonl")]

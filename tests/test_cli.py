"""`cupynet` end to end in subprocesses: exit codes, output lines, metrics file, clean errors."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(*args, timeout=240):
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    return subprocess.run([sys.executable, "-m", "cupynet.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_info_runs_without_gpu():
    result = run_cli("info", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["default_device"] == "cpu" and report["numpy"]
    assert set(report["kernel_headers"]) == {"cuda_fp16.h", "cuda_bf16.h", "kernels_can_compile", "fix"}


def test_train_defaults_reach_95_percent_and_write_metrics(tmp_path):
    metrics = tmp_path / "m.jsonl"
    result = run_cli("train", "--metrics", str(metrics), "--out", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("test accuracy: ")
    assert float(last.split(": ")[1].rstrip("%")) >= 95.0, result.stdout
    every = [json.loads(line) for line in metrics.read_text().splitlines()]
    rows = [r for r in every if "split" not in r]  # per step; the epoch rows carry "split"
    assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
    assert {"step", "loss", "lr", "time"} <= set(rows[0])
    assert rows[-1]["loss"] < rows[0]["loss"]
    assert "epoch 20/20" in result.stdout
    epochs = [r for r in every if "split" in r]
    assert [r["epoch"] for r in epochs] == list(range(1, 21))
    assert epochs[-1]["val_acc"] >= 90.0 and epochs[-1]["val_loss"] < epochs[0]["val_loss"]
    # the main job's output: header, per-epoch validation, summary, then the accuracy line
    lines = result.stdout.splitlines()
    assert lines[0].startswith("cupynet train: mlp (MLP, ") and lines[0].endswith(" parameters) on cpu")
    assert sum(line.startswith("epoch ") and ", val accuracy " in line for line in lines) == 20
    assert any(line.startswith("summary: ") and " wall time " in line for line in lines)
    assert f"files:     {tmp_path / 'out' / 'last.ckpt'}" in result.stdout


@pytest.mark.parametrize("args, message", [
    (("train", "--bogus"), "unrecognized arguments: --bogus"),
    (("train", "--dataset", "imagenet"), "unknown dataset 'imagenet'"),
    (("train", "--dataset", "mnist:/nonexistent/dir"), "/nonexistent/dir"),
    (("train", "--epochs", "0"), "expected a positive integer"),
    (("train", "--model", "resnet"), "invalid choice: 'resnet'"),
    (("train", "--amp-dtype", "bfloat16"), "--amp-dtype bfloat16 has no effect without --amp"),
])
def test_bad_input_exits_nonzero_with_one_line(args, message):
    result = run_cli(*args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_help_documents_every_flag():
    result = run_cli("train", "--help")
    assert result.returncode == 0
    for flag in ("--model", "--dataset", "--epochs", "--batch-size", "--lr", "--optimizer", "--device", "--seed",
                 "--metrics", "--out", "--amp", "--amp-dtype", "--save-every", "--resume", "--val-split",
                 "--best-metric", "--threads", "--patience", "--schedule", "--warmup-steps", "--clip-grad-norm",
                 "--accumulate", "--tensorboard", "--test-on", "--nproc", "--max-steps"):
        assert flag in result.stdout


def test_amp_overflow_names_the_layers_and_records_scale(tmp_path):
    metrics = tmp_path / "m.jsonl"
    result = run_cli("train", "--amp", "--amp-dtype", "float16", "--init-scale", "1e30", "--epochs", "1",
                     "--no-progress", "--metrics", str(metrics))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "step skipped" in result.stderr and "1.weight" in result.stderr  # the MLP's first Linear
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if '"split"' not in line]
    assert rows[0]["scale"] == pytest.approx(5e29, rel=1e-6)  # 1e30 backed off once, after step 1
    assert rows[0]["skipped"] == 1 and rows[-1]["skipped"] == len(rows)  # every step overflows at this scale


def test_amp_training_reaches_95_percent():
    result = run_cli("train", "--amp", "--no-progress")
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stdout.strip().splitlines()[-1]
    assert float(last.split(": ")[1].rstrip("%")) >= 95.0
    assert "skipped steps 0" in result.stdout


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_bench_prints_samples_per_second(model):
    result = run_cli("bench", "--model", model, "--batch-size", "8", "--steps", "2", "--amp")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "samples/s" in result.stdout and model in result.stdout

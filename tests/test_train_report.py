"""Issue 17: what a `cupynet train` run tells: header, summary, plots, plain lines off a terminal, BLAS threads."""

import io
import os
import subprocess
import sys

import pytest
from _train_cli import cpu_device  # noqa: F401  (an autouse fixture)
from _train_cli import run as run_train

from cupynet.models import build_model
from cupynet.train import plots, progress, threads
from cupynet.train.threads import BlasThreads

pytest.importorskip("sklearn")  # the digits data set
# NOTE: the AMP runs overflow float16 on purpose (an initial scale of 1e8)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PNG = b"\x89PNG\r\n\x1a\n"


def run(capsys, *args):
    return run_train(capsys, "--epochs", "2", *args)




def test_header_names_device_model_data_precision_threads_and_outputs(tmp_path, capsys):
    out, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    status, lines, err = run(capsys, "--out", str(out), "--metrics", str(metrics), "--save-every", "2")
    assert status == 0, err
    parameters = sum(p.numel() for p in build_model("mlp", (1, 8, 8), 10).parameters())
    assert lines[0] == f"cupynet train: mlp (MLP, {parameters:,} parameters) on cpu"
    header = "\n".join(lines[:8])
    assert "digits: 1294 train, 144 val (0.1 of the training set, --seed 0), 359 test; batch 512, 3 steps/epoch, " \
           "2 epochs" in header
    assert "precision: fp32 (no AMP" in header
    assert "optimizer: adam, lr 0.001" in header
    assert "threads:   BLAS " in header
    assert f"output:    {out} (last.ckpt, best.ckpt, curves.png); step checkpoints every 2 steps in " \
           f"{out / 'checkpoints'}" in header
    assert f"metrics:   {metrics}" in header
    assert lines[7] == "  layers:    6 at the top level (name, type, parameters)"  # the MLP's 6 top-level layers
    assert lines.index(next(line for line in lines if line.startswith("epoch 1/2"))) == 14  # header, then epochs


def test_header_names_the_amp_dtype(capsys):
    status, lines, err = run(capsys, "--amp")
    assert status == 0, err
    assert "  precision: AMP: autocast bfloat16 (fp32 master weights) + GradScaler (initial scale 65536)" in lines


def test_summary_gives_best_final_wall_time_and_every_file_and_keeps_test_accuracy_last(tmp_path, capsys):
    out, metrics = tmp_path / "out", tmp_path / "m.jsonl"
    status, lines, err = run(capsys, "--out", str(out), "--metrics", str(metrics), "--save-every", "2",
                             "--keep", "1")
    assert status == 0, err
    start = lines.index(next(line for line in lines if line.startswith("summary: ")))
    summary = lines[start:]
    assert summary[0].startswith("summary: 6 steps, 2 of 2 epochs, wall time ") and summary[0].endswith(" s")
    assert summary[1].startswith("  best:      epoch ") and f"-> {out / 'best.ckpt'}" in summary[1]
    assert summary[2].startswith("  final:     epoch 2: train loss ") and "val accuracy" in summary[2]
    files = summary[3]
    for path in (out / "last.ckpt", out / "best.ckpt", out / "curves.png", metrics):
        assert str(path) in files and path.is_file() and path.stat().st_size > 0
    assert f"{out / 'checkpoints'}/step-*.ckpt (newest 1 kept)" in files
    assert sorted(os.listdir(out / "checkpoints")) == ["step-00000006.ckpt"]
    assert lines[-1].startswith("test accuracy: ") and lines[-1].endswith("%")


def test_plots_are_png_files_and_amp_runs_add_the_loss_scale_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    # NOTE: an initial scale this high overflows float16 gradients, so steps are skipped and layers named
    status, lines, err = run(capsys, "--amp", "--amp-dtype", "float16", "--init-scale", "1e8", "--out", str(out))
    assert status == 0, err
    for name in ("curves.png", "amp.png"):
        data = (out / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, name  # a real picture, not an empty canvas
    assert "step skipped" in err


def test_plots_record_skipped_steps_and_the_layers_that_overflowed(monkeypatch, tmp_path, capsys):
    """What amp.png is drawn from: the scale per step, the skips, and per layer its overflowing steps."""
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    from cupynet.amp.grad_scaler import GradScaler
    seen, per_step = {}, {}
    original, original_update, original_barh = plots._amp, GradScaler.update, Axes.barh

    def spy(plt, trainer, path):
        seen.update(amp=list(trainer.amp_history))
        return original(plt, trainer, path)

    def barh(ax, names, counts, *args, **kwargs):
        seen.update(bars=dict(zip(names, counts)), axes=ax)
        return original_barh(ax, names, counts, *args, **kwargs)

    def update(scaler, *args, **kwargs):
        """The oracle: after every update (test-only host reads), the layers of a step that was just skipped."""
        before = scaler.skipped_steps()
        original_update(scaler, *args, **kwargs)
        if scaler.skipped_steps() > before:
            for name, _, _ in scaler.last_overflow():
                per_step[name] = per_step.get(name, 0) + 1

    monkeypatch.setattr(plots, "_amp", spy)
    monkeypatch.setattr(Axes, "barh", barh)
    monkeypatch.setattr(GradScaler, "update", update)
    status, _, err = run(capsys, "--amp", "--amp-dtype", "float16", "--init-scale", "1e8", "--out", str(tmp_path))
    assert status == 0, err
    steps, scales, skipped = zip(*seen["amp"])
    assert steps == tuple(range(1, 7)) and skipped[0] == 1 and scales[0] == 5e7  # the scale after step 1's update
    for i in range(1, 6):  # a skipped step halves the scale; any other keeps it (growth comes after 2000)
        assert skipped[i] - skipped[i - 1] in (0, 1)
        assert scales[i] == scales[i - 1] / (2 if skipped[i] > skipped[i - 1] else 1)
    top = dict(sorted(per_step.items(), key=lambda item: (-item[1], item[0]))[:8])
    assert seen["bars"] == top and all(name.endswith(("weight", "bias")) for name in top)
    assert seen["axes"].get_xlabel() == "overflowing steps with inf/NaN in the layer"
    # NOTE: the counts are steps, not the overflow lines printed (one per progress refresh that found new skips):
    # with --no-progress a refresh comes once per epoch here, fewer than the skipped steps
    reports = err.count("step skipped (")
    assert max(top.values()) == skipped[-1] > reports


def test_without_matplotlib_the_summary_says_plots_were_skipped(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(plots, "_pyplot", lambda: None)
    status, lines, err = run(capsys, "--out", str(tmp_path / "out"))
    assert status == 0, err
    assert "  plots:     not written: matplotlib is not installed (pip install matplotlib, or the examples extra)" \
           in lines
    assert not (tmp_path / "out" / "curves.png").exists() and (tmp_path / "out" / "last.ckpt").is_file()
    assert lines[-1].startswith("test accuracy: ")


def test_output_through_a_pipe_has_no_carriage_returns():
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, "-m", "cupynet.cli", "train", "--epochs", "2", "--batch-size", "512"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)  # progress on, no TTY
    assert result.returncode == 0, result.stderr[-2000:]
    assert "\r" not in result.stdout and "\r" not in result.stderr
    assert "epoch 2/2: " in result.stdout and result.stdout.splitlines()[-1].startswith("test accuracy: ")


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_is_plain_lines_off_a_terminal_and_a_bar_on_one(monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)
    plain = _Stream(tty=False)
    bar = progress.EpochBar(0, 3, total=10, stream=plain)
    assert bar.bar is None and bar.wants_refresh()
    bar.update_to(4, loss=0.5, acc=75.0, rate=1000.0, scale="65536")
    bar.update_to(10, loss=0.4, acc=80.0, rate=1000.0)  # the epoch's end: its summary line says it
    bar.close()
    assert plain.getvalue() == "epoch 1/3 step 4/10: loss 0.5000, acc 75.0%, 1000 samples/s, scale 65536\n"
    terminal = _Stream(tty=True)
    bar = progress.EpochBar(0, 3, total=10, stream=terminal)
    bar.update_to(4, loss=0.5, acc=75.0, rate=1000.0)
    bar.close()
    assert bar.bar is not None and "\r" in terminal.getvalue()  # tqdm redraws in place on a terminal
    silent = _Stream(tty=False)
    bar = progress.EpochBar(0, 3, total=10, enabled=False, stream=silent)
    bar.update_to(4, loss=0.5, acc=75.0, rate=1000.0)
    assert silent.getvalue() == "" and not bar.wants_refresh()


def test_threads_default_to_one_for_small_models_on_the_cpu(monkeypatch):
    monkeypatch.setattr(threads, "blas_pools", lambda: [{"internal_api": "openblas", "num_threads": 8}])
    small = BlasThreads(None, "cpu", parameters=50_000)
    assert small.threads == 1 and "default for models under 1,000,000 parameters" in small.describe()
    assert BlasThreads(None, "cpu", parameters=5_000_000).threads == 8  # big models keep the library's default
    assert BlasThreads(None, "cuda", parameters=50_000).threads == 8
    assert BlasThreads(3, "cpu", parameters=50_000).describe() == "3 (openblas; --threads)"


def test_threads_flag_limits_the_blas_pool_during_the_run_only():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    pools = threads.blas_pools()
    if not pools:
        pytest.skip("no BLAS pool found by threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        with BlasThreads(1, "cpu", parameters=10):
            assert {p["num_threads"] for p in threads.blas_pools()} == {1}
        assert {p["num_threads"] for p in threads.blas_pools()} == {2}  # restored afterwards


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_bad_thread_counts_are_refused(value):
    with pytest.raises(ValueError, match="--threads must be a positive integer"):
        BlasThreads(value, "cpu", parameters=10)


def test_threads_flag_without_threadpoolctl_names_the_package(monkeypatch):
    monkeypatch.setattr(threads, "blas_pools", lambda: [])
    with pytest.raises(ImportError, match="pip install threadpoolctl"):
        BlasThreads(2, "cpu", parameters=10)
    assert BlasThreads(None, "cpu", parameters=10).describe() == \
        "unknown (BLAS; threadpoolctl not installed; the BLAS library's default)"


def test_oversubscribed_blas_pool_is_warned_about(monkeypatch):
    monkeypatch.setattr(threads, "blas_pools", lambda: [{"internal_api": "openblas", "num_threads": 2}])
    monkeypatch.setattr(threads, "_cpus_available", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 3.0, 3.0))
    assert "looks oversubscribed" in BlasThreads(2, "cpu", parameters=10).oversubscription()
    assert "oversubscribe the CPU; try --threads 2" in BlasThreads(4, "cpu", parameters=10).oversubscription()
    assert BlasThreads(1, "cpu", parameters=10).oversubscription() is None
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    assert BlasThreads(2, "cpu", parameters=10).oversubscription() is None  # an idle machine: fine


def test_cli_prints_the_oversubscription_warning_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(BlasThreads, "oversubscription", lambda self: "warning: test oversubscribed")
    status, lines, err = run(capsys)
    assert status == 0
    assert "warning: test oversubscribed" in err and "warning" not in "\n".join(lines)


def test_threads_benchmark_runs_and_prints_medians():
    pytest.importorskip("threadpoolctl")
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_threads.py"), "--rounds", "2",
                             "--threads", "1", "--load", "1"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("cores ") and "extra busy processes 1" in lines[0]
    assert [line.split(":")[0] for line in lines[1:3]] == ["round 1", "round 2"]
    assert lines[-1].startswith("median 1 thread(s): ") and lines[-1].endswith(")")


@pytest.mark.parametrize("width", [50, 80, 132])
def test_progress_bar_fits_the_terminal_dropping_fields_by_priority(width, monkeypatch):
    monkeypatch.setattr(progress, "_columns", lambda stream: width)
    terminal = _Stream(tty=True)
    bar = progress.EpochBar(11, 20, total=210, stream=terminal)
    bar.update_to(99, loss=0.51234, acc=75.0, rate=12345.0, eta=3725.2, lr="0.001", val_loss="0.1234",
                  val_acc="95.8%", scale="65536", skipped=3)
    frame = [f for f in terminal.getvalue().replace("\x1b[A", "").split("\r") if f.strip()][-1]  # less cursor moves
    assert len(frame) <= width, frame
    assert "loss 0.5123" in frame  # the first field always fits
    assert ("acc 75.0%" in frame) == (width >= 80)
    kept = [name for name, text in (("eta", "ETA 1:02:06"), ("rate", "12345/s"), ("val_acc", "val 95.8%"),
                                    ("lr", "lr 0.001"), ("skipped", "skipped 3")) if text in frame]
    if width >= 132:
        assert kept == ["eta", "rate", "val_acc", "lr", "skipped"], frame
    if width == 80:
        assert kept[:2] == ["eta", "rate"], frame  # the ETA and the speed before validation and AMP numbers


def test_fit_fields_and_durations():
    fields = {"skipped": "3", "loss": "0.5000", "acc": "75.0%", "eta": "0:09"}
    assert progress.fit_fields(fields, 100) == "loss 0.5000 acc 75.0% ETA 0:09 skipped 3"
    assert progress.fit_fields(fields, 25) == "loss 0.5000 acc 75.0%"
    assert progress.fit_fields(fields, 30) == "loss 0.5000 acc 75.0% ETA 0:09"
    assert [progress.format_duration(s) for s in (0, 4.2, 187, 3725.2)] == ["0:00", "0:05", "3:07", "1:02:06"]


def test_plots_carry_a_title_a_visible_best_marker_and_the_learning_rate(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from cupynet.cli import main
    from cupynet.train import plots
    figures = []
    monkeypatch.setattr(plots, "_save", lambda plt, fig, path: figures.append(fig) or path)
    monkeypatch.setenv("CUPYNET_DEVICE", "cpu")
    assert main(["train", "--epochs", "3", "--batch-size", "512", "--no-progress", "--out", str(tmp_path),
                 "--schedule", "cosine", "--best-metric", "val_loss"]) == 0
    (figure,) = figures
    assert figure._suptitle.get_text() == f"mlp on digits, fp32, adam -- {tmp_path}"
    loss_ax, acc_ax, lr_ax = figure.axes
    stars = [line for line in loss_ax.lines if line.get_marker() == "*"]
    assert len(stars) == 1 and not stars[0].get_clip_on()  # drawn even on the axis edge
    epoch = int(stars[0].get_xdata()[0])
    assert loss_ax.get_xlim()[1] > epoch  # room to the right of the last epoch
    rates = lr_ax.lines[0].get_ydata()
    assert rates[0] == pytest.approx(1e-3) and rates[-1] < rates[0]  # cosine from 1e-3 down

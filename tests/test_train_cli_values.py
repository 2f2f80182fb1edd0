"""Every bad `cupynet train` value is refused before the header, in one line, with nothing written; and the
command's small conveniences: --version and "did you mean" for models, datasets, subcommands and flags."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    return subprocess.run([sys.executable, "-m", "cupynet.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def one_line_error(result):
    assert result.returncode not in (0, None), result.stdout
    assert result.stdout == "", "refused after the header:\n" + result.stdout  # nothing printed, nothing run
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def tree(folder):
    return sorted((os.path.relpath(os.path.join(d, f), folder), os.path.getsize(os.path.join(d, f)))
                  for d, _, files in os.walk(folder) for f in files)


@pytest.mark.parametrize("args, message", [
    (("--threads", "99999999999999999999"), "--threads: expected a positive integer, got '99999999999999999999' "
                                            "(at most 1024)"),
    (("--threads", "0"), "--threads: expected a positive integer"),
    (("--lr", "inf"), "--lr: expected a positive finite number, got 'inf'"),
    (("--lr", "nan"), "--lr: expected a positive finite number, got 'nan'"),
    (("--lr", "0"), "--lr: expected a positive finite number, got '0'"),
    (("--lr", "-0.1"), "--lr: expected a positive finite number"),
    (("--amp", "--init-scale", "inf"), "--init-scale: expected a positive finite number"),
    (("--init-scale", "1024"), "--init-scale 1024.0 has no effect without --amp"),
    (("--amp-dtype", "float16"), "--amp-dtype float16 has no effect without --amp"),
    (("--clip-grad-norm", "-1"), "--clip-grad-norm: expected a positive finite number"),
    (("--accumulate", "0"), "--accumulate: expected a positive integer"),
    (("--warmup-steps", "-3"), "--warmup-steps: expected an integer >= 0"),
    (("--patience", "0"), "--patience: expected a positive integer"),
    (("--patience", "3", "--val-split", "0"), "--patience 3 watches the validation set"),
    (("--schedule", "plateau", "--val-split", "0"), "--schedule plateau watches the validation set"),
    (("--test-on", "best"), "--test-on best reads best.ckpt, which needs --out DIR"),
    (("--accumulate", "2", "--max-steps", "3"), "--max-steps 3 is not a multiple of --accumulate 2"),
    (("--out", "/proc/cupynet-test"), "--out /proc/cupynet-test: cannot create anything in /proc"),
    (("--metrics", "/proc/cupynet-test/m.jsonl"), "--metrics /proc/cupynet-test/m.jsonl: directory /proc/cupynet-test "
                                                  "does not exist"),
    (("--tensorboard", "/proc/cupynet-test"), "--tensorboard /proc/cupynet-test: cannot create anything in /proc"),
    (("--seed", "-1"), "--seed: expected an integer from 0 to 2**63 - 1, got '-1'"),
    (("--seed", str(2 ** 63)), "--seed: expected an integer from 0 to 2**63 - 1"),
    (("--model", "mpl"), "invalid choice: 'mpl' (choose from 'mlp', 'cnn', 'transformer'); did you mean 'mlp'?"),
    (("--dataset", "digts"), "unknown dataset 'digts'; expected digits, mnist:DIR, fashion-mnist:DIR or "
                             "cifar10:DIR; did you mean 'digits'?"),
    (("--dataset", "mnst:/data"), "did you mean 'mnist:DIR'?"),
    (("--schedule", "cosin"), "did you mean 'cosine'?"),
    (("--epohcs", "2"), "unrecognized arguments: --epohcs 2; did you mean --epochs?"),
])
def test_bad_value_is_one_line_before_the_header(args, message):
    line = one_line_error(run_cli("train", *args))
    assert message in line, line


def test_output_paths_that_are_the_wrong_kind(tmp_path):
    (tmp_path / "file").write_text("keep me")
    (tmp_path / "folder").mkdir()
    before = tree(tmp_path)
    line = one_line_error(run_cli("train", "--out", str(tmp_path / "file")))
    assert f"--out {tmp_path / 'file'}: is a file, not a directory" in line
    line = one_line_error(run_cli("train", "--metrics", str(tmp_path / "folder")))
    assert f"--metrics {tmp_path / 'folder'}: is a directory; expected a file name" in line
    line = one_line_error(run_cli("train", "--out", str(tmp_path / "file" / "run")))
    assert "is a file, so the directory cannot be made inside it" in line
    assert tree(tmp_path) == before and (tmp_path / "file").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["file", "folder"]  # the probe left nothing behind


def test_bench_out_of_memory_is_one_line():
    line = one_line_error(run_cli("bench", "--batch-size", "100000000000000", "--steps", "1"))
    assert line.startswith("cupynet bench: error: out of memory (") and "try a smaller --batch-size" in line


def test_unknown_subcommand_suggests_the_closest():
    line = one_line_error(run_cli("trian"))
    assert "invalid choice: 'trian'" in line and "did you mean 'train'?" in line


def test_version():
    import cupynet
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"cupynet {cupynet.__version__}"


def test_config_refuses_the_same_values_when_built_by_hand():
    from cupynet.train.config import TrainConfig
    for bad, message in (({"lr": float("inf")}, "--lr must be a finite number > 0"),
                         ({"threads": 10 ** 20}, "--threads must be an integer 1 to 1024"),
                         ({"init_scale": 8.0}, "--init-scale 8.0 has no effect without --amp"),
                         ({"model": "mpl"}, "did you mean 'mlp'?")):
        with pytest.raises(ValueError, match=message.replace("?", r"\?")):
            TrainConfig(**bad).validate()


def test_info_speaks_plain_words_and_reports_kernels_as_what_can_run():
    from cupynet.cli import _plain_info
    result = run_cli("info")
    assert result.returncode == 0, result.stderr
    assert not any(jargon in result.stdout for jargon in ("tuned=", "reason=", "kernels_can_compile"))
    base = {"cupynet": "0.1", "python": "3.11", "numpy": "2.4", "ml_dtypes": "0.6", "cupy": "not usable (X)",
            "default_device": "cpu", "gpu": None, "fp16_supported": True, "bf16_supported": True,
            "kernel_headers": {"kernels_can_compile": True, "fix": None},
            "host_malloc": {"tuned": False, "reason": "not glibc"}}
    words = dict(_plain_info(base))
    assert words["GPU kernels"] == "not used: there is no GPU to run them"  # headers alone run nothing
    assert words["host memory"] == "the C library's default allocation (not glibc)"
    gpu = {**base, "gpu": {"name": "H100", "compute_capability": "9.0", "count": 1}, "default_device": "cuda:0",
           "kernel_headers": {"kernels_can_compile": False, "fix": "pip install cupy-cuda12x[ctk]"}}
    words = dict(_plain_info(gpu))
    assert words["GPU"] == "H100, compute capability 9.0, 1 device(s)"
    assert words["GPU kernels"].startswith("cannot compile") and "pip install cupy-cuda12x[ctk]" in words["GPU kernels"]

"""The `cupynet train` header: soon (digits read without importing scikit-learn), a model summary, the AMP
note on the CPU; and no NumPy warning blocks from an AMP run whose scale overflows on purpose."""

import gzip
import os
import subprocess
import sys

import numpy
import pytest
from _train_cli import cpu_device, run  # noqa: F401 - the fixture runs every test on the CPU

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
digits_module = pytest.importorskip("cupynet.data.datasets.digits")


def test_digits_are_read_without_importing_scikit_learn():
    code = ("import sys; from cupynet.cli import main; main(['train', '--epochs', '1', '--batch-size', '512', "
            "'--no-progress']); print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], env=ENV, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "[]", done.stdout


def test_digits_csv_holds_what_load_digits_returns():
    load_digits = pytest.importorskip("sklearn.datasets").load_digits
    path = digits_module._digits_file()
    assert path is not None and path.endswith(os.path.join("datasets", "data", "digits.csv.gz"))
    images, labels = digits_module._read_digits_csv(path)
    reference = load_digits()
    assert numpy.array_equal(images, reference.images) and numpy.array_equal(labels, reference.target)


@pytest.mark.parametrize("text", ["1,2,3\n", "0," * 64 + "11\n", "17," * 64 + "3\n"])
def test_a_malformed_digits_csv_is_one_clear_error(tmp_path, text):
    path = tmp_path / "digits.csv.gz"
    with gzip.open(path, "wt") as file:
        file.write(text)
    with pytest.raises(ValueError, match="is not the 8x8 digits CSV"):
        digits_module._read_digits_csv(str(path))


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_header_summarizes_the_model_layers(model, capsys):
    pytest.importorskip("sklearn")  # NOTE: the digits file ships inside scikit-learn (read without importing it)
    status, lines, err = run(capsys, "--epochs", "1", "--model", model)
    assert status == 0, err
    total = int(lines[0].split("(")[1].split(",", 1)[1].split(" parameters")[0].replace(",", ""))
    start = next(i for i, line in enumerate(lines) if line.startswith("  layers:    "))
    top = [line.split() for line in lines[start + 1:] if line.startswith("    ") and not line.startswith("      ")]
    assert top and sum(int(fields[-1].replace(",", "")) for fields in top) == total
    assert all(line.startswith("    ") for line in lines[start + 1:start + 1 + len(top)])


def test_amp_on_the_cpu_says_why_it_is_slower(capsys):
    pytest.importorskip("sklearn")  # NOTE: the digits file ships inside scikit-learn (read without importing it)
    status, lines, err = run(capsys, "--epochs", "1", "--amp")
    assert status == 0, err
    assert any(line.startswith("  note:      AMP on the CPU is slower than fp32: NumPy has no fast") for line in lines)


def test_overflowing_amp_run_prints_cupynets_line_and_no_numpy_warnings():
    done = subprocess.run([sys.executable, "-m", "cupynet.cli", "train", "--amp", "--amp-dtype", "float16",
                           "--init-scale", "1e12", "--epochs", "2", "--batch-size", "512", "--no-progress"],
                          env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "step skipped" in done.stderr  # cupynet's own overflow report
    assert "RuntimeWarning" not in done.stderr and "Warning" not in done.stderr, done.stderr

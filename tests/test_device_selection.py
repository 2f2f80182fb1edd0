"""`pytest --device`: the suite is pinned to the CPU unless a run asks for the GPU (tests/conftest.py)."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent

PROBE = '''
import os
import pytest

def test_pinned_device():
    print("CUPYNET_DEVICE=" + os.environ["CUPYNET_DEVICE"])

@pytest.mark.cuda
def test_needs_gpu():
    raise AssertionError("a GPU test ran in a CPU run")
'''


def _pytest(tmp_path, *args, **env):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-rs", "-p", "no:cacheprovider", *args,
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, **env})


def test_default_run_pins_the_cpu_and_skips_gpu_tests(tmp_path):
    result = _pytest(tmp_path, CUPYNET_DEVICE="cuda")  # NOTE: even a caller's cuda setting is overridden
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CUPYNET_DEVICE=cpu" in result.stdout
    assert "1 passed, 1 skipped" in result.stdout and "pytest --device cuda" in result.stdout


def test_device_cuda_without_a_gpu_is_a_usage_error(tmp_path):
    from conftest import _cuda_usable

    if _cuda_usable():
        pytest.skip("this machine has a GPU: `--device cuda` is valid here")
    result = _pytest(tmp_path, "--device", "cuda")
    assert result.returncode == 4, result.stdout + result.stderr  # NOTE: pytest's exit code for a usage error
    assert "no usable CUDA GPU" in result.stderr

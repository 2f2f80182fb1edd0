import os
import sys

import pytest

# NOTE: the test tensors are tiny; a multi-threaded BLAS on a busy 2-core CI machine spends far longer
# spinning up and synchronising threads than multiplying (measured: 10-50x slower steps). Must be set
# before NumPy is imported, which is why it sits at the top of conftest.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(__file__))  # tests import op_harness


# ---- which devices the suite runs on ------------------------------------------------------------------
# NOTE: tensors made without a device stay on the CPU in every run, even on a GPU machine: a GPU run is a
# separate, deliberate run (`pytest --device cuda`, what scripts/gpu_check.sh does) that adds the GPU to the
# device-parametrized tests (op_harness.DEVICES, read from CUPYNET_TEST_DEVICES) and runs the tests marked
# `cuda`; `--device cuda-emulated` does the same on the emulated CUDA device (CUPYNET_CUDA=emulated). So the
# everyday run is the same everywhere, and a GPU run checks the GPU path, not the tests' assumptions.

def pytest_addoption(parser):
    parser.addoption("--device", choices=("cpu", "cuda", "cuda-emulated"), default="cpu",
                     help="cpu (default): every test on NumPy, GPU tests skipped; cuda: device-parametrized tests "
                          "on both devices and GPU tests run (needs a usable CUDA GPU); cuda-emulated: the same "
                          "on the emulated CUDA device (cupynet.emulated_cuda: CuPy's rules on the CPU, needs g++)")


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA device; runs only under `pytest --device cuda` or "
                                       "`--device cuda-emulated`")
    device = config.getoption("--device")
    # NOTE: before any test module imports cupynet; subprocesses inherit them
    os.environ["CUPYNET_DEVICE"] = "cpu"
    os.environ["CUPYNET_TEST_DEVICES"] = "cpu" if device == "cpu" else "cpu,cuda"
    if device == "cuda-emulated":
        os.environ["CUPYNET_CUDA"] = "emulated"
    else:
        os.environ.pop("CUPYNET_CUDA", None)
    if device == "cuda" and not _cuda_usable():
        raise pytest.UsageError("--device cuda: no usable CUDA GPU here (CuPy missing, or "
                                "cupy.cuda.is_available() is False); run without --device for the CPU suite")
    if device == "cuda-emulated":
        from cupynet.emulated_cuda import unavailable_reason  # noqa: PLC0415

        if unavailable_reason() is not None:
            raise pytest.UsageError(f"--device cuda-emulated: {unavailable_reason()}")


def pytest_collection_modifyitems(config, items):
    device = config.getoption("--device")
    if device == "cuda":
        return
    skip = pytest.mark.skip(reason="a GPU test: run it with `pytest --device cuda` on a machine with a CUDA GPU "
                                   "(or `--device cuda-emulated`)")
    for item in items:
        if "cuda" in item.keywords and device != "cuda-emulated":
            item.add_marker(skip)


def _cuda_usable() -> bool:
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:  # NOTE: not installed, or a broken CUDA setup (CuPy 13 can raise here)
        return False

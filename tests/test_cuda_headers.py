"""Finding cuda_fp16.h / cuda_bf16.h at run time, and the compile error that says how to get them."""

import pathlib
import types

import pytest

from cupynet.cuda import compile as kernel_compile
from cupynet.cuda import device, headers


def _toolkit(root, *names):
    include = root / "include"
    include.mkdir(parents=True)
    for name in names:
        (include / name).write_text("// header\n")
    return root


def test_cuda_path_comes_first_and_wheel_folders_are_searched(tmp_path):
    toolkit = _toolkit(tmp_path / "cuda", "cuda_fp16.h")
    wheel = tmp_path / "site"
    (wheel / "nvidia/cu13/include").mkdir(parents=True)
    (wheel / "nvidia/cu13/include/cuda_bf16.h").write_text("//\n")
    dirs = headers.candidate_include_dirs(environ={"CUDA_PATH": str(toolkit), "PATH": ""},
                                          path_entries=[str(wheel)])
    assert dirs[0] == toolkit / "include" and pathlib.Path("/usr/local/cuda/include") in dirs
    found = headers.find_headers([d for d in dirs if tmp_path in d.parents])  # NOTE: this machine's own CUDA aside
    assert found == {"cuda_fp16.h": str(toolkit / "include/cuda_fp16.h"),
                     "cuda_bf16.h": str(wheel / "nvidia/cu13/include/cuda_bf16.h")}


def test_report_says_kernels_cannot_compile_and_how_to_fix(tmp_path):
    # NOTE: CuPy bundles only the fp16 header: a machine with fp16 alone still cannot compile common.cuh
    toolkit = _toolkit(tmp_path / "cuda", "cuda_fp16.h")
    report = headers.headers_report([toolkit / "include", tmp_path / "absent"])
    assert report["cuda_bf16.h"] is None and report["kernels_can_compile"] is False
    assert "[ctk]" in report["fix"] and "CUDA_PATH" in report["fix"]
    complete = headers.headers_report([_toolkit(tmp_path / "full", *headers.HEADERS) / "include"])
    assert complete["kernels_can_compile"] is True and complete["fix"] is None


def test_nvcc_on_path_names_its_toolkit(tmp_path):
    toolkit = _toolkit(tmp_path / "cuda-13.0", *headers.HEADERS)
    (toolkit / "bin").mkdir()
    nvcc = toolkit / "bin/nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    dirs = headers.candidate_include_dirs(environ={"PATH": str(toolkit / "bin")}, path_entries=[])
    assert toolkit.resolve() / "include" in dirs


class _FailingCupy:
    def __init__(self, message):
        self.message = message
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0))

    def RawModule(self, code, options, name_expressions):  # noqa: N802 - CuPy's name
        def get_function(name):
            raise RuntimeError(self.message)
        return types.SimpleNamespace(get_function=get_function)


@pytest.mark.parametrize("message, fixed", [
    ('catastrophic error: cannot open source file "cuda_bf16.h"', True),
    ("error: identifier \"foo\" is undefined", False),
])
def test_a_missing_header_compile_error_says_how_to_fix_it(monkeypatch, tmp_path, message, fixed):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    library = kernel_compile.KernelLibrary(tmp_path, {"k.cu": ("k",)})
    monkeypatch.setattr(device, "cupy", lambda: _FailingCupy(message))
    with pytest.raises(RuntimeError) as caught:
        library.get_kernel("k.cu", "k")
    assert ("[ctk]" in str(caught.value)) is fixed
    assert (caught.value.__cause__ is not None) is fixed  # the original NVRTC log stays attached

"""scripts/gpu_check.sh: the no-GPU path fails fast and writes nothing; the step machinery (headers,
exit codes, summary, time budget) checked with a stand-in interpreter; syntax and shellcheck."""

import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu_check.sh"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def _run(args=(), timeout=120, **env):
    full = {**os.environ, "PYTHON": sys.executable,
            "PATH": os.pathsep.join([str(pathlib.Path(sys.executable).parent), os.environ.get("PATH", "")])}
    full.update(env)
    return subprocess.run([BASH, str(SCRIPT), *args], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=timeout)


def _executable(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _gpu_result_dirs():
    return set((ROOT / "benchmarks" / "results").glob("gpu-*"))


def test_syntax():
    subprocess.run([BASH, "-n", str(SCRIPT)], check=True)


def test_shellcheck():
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    result = subprocess.run([shellcheck, "-S", "warning", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_gpu_fails_fast_and_writes_nothing(tmp_path):
    # CUDA_VISIBLE_DEVICES="" hides any GPU from CuPy, so this is the no-GPU path on a GPU machine too
    before = _gpu_result_dirs()
    out = tmp_path / "out"
    result = _run(OUT=str(out), CUDA_VISIBLE_DEVICES="")
    assert result.returncode == 2, result.stdout + result.stderr
    match = re.search(r"^no usable CUDA GPU: (.+)$", result.stderr, re.M)
    assert match and match.group(1).strip(), result.stderr
    assert not out.exists()  # no summary, no step files, nothing that could read as a result
    assert "RESULT" not in result.stdout + result.stderr
    assert _gpu_result_dirs() == before


def test_failing_nvidia_smi_is_the_reason(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "nvidia-smi", "#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\"'\"'t "
                                        "communicate with the NVIDIA driver.'\nexit 9\n")
    out = tmp_path / "out"
    result = _run(OUT=str(out), PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert result.returncode == 2
    assert "no usable CUDA GPU: nvidia-smi failed: NVIDIA-SMI has failed" in result.stderr
    assert not out.exists()


def test_list_names_existing_files_and_real_flags():
    result = _run(["--list"])
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for name in ("env", "info", "tests", "suite", "bench-gpu", "bench-fused", "bench-unscale"):
        assert re.search(rf"^{name} \(limit \d+s\):$", text, re.M), name
    assert re.search(r"^sanitizer(-memcheck)? \(limit", text, re.M)
    files = set(re.findall(r"(tests/test_\w+\.py|benchmarks/\w+\.py)", text))
    assert {"tests/test_kernels_gpu.py", "tests/test_fused_ops.py", "tests/test_cuda_emulation.py",
            "tests/test_cuda_emulation_kernels.py", "tests/test_optim_amp.py"} <= files
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing
    # every test file that skips or branches without a GPU is in the GPU test set
    for path in (ROOT / "tests").glob("test_*.py"):
        if path.name in (pathlib.Path(__file__).name, "test_device_selection.py"):
            continue  # NOTE: these two only talk about GPU tests (scripts and probes), they are CPU tests
        source = path.read_text()
        if any(mark in source for mark in ("needs CuPy and a usable CUDA GPU", "import DEVICES", "pytest.mark.cuda")):
            assert f"tests/{path.name}" in files, path.name
    assert "-m cupynet.cli info --json" in text
    for script, flags in (("bench_gpu", ("--device", "--repeats", "--out")),
                          ("bench_fused", ("--device", "--repeats", "--out")), ("bench_unscale", ("--repeat",))):
        source = (ROOT / "benchmarks" / f"{script}.py").read_text()
        for flag in flags:
            assert f'"{flag}"' in source, (script, flag)


def test_unknown_step_is_a_usage_error():
    result = _run(["no-such-step"])
    assert result.returncode == 64
    assert "unknown step 'no-such-step'" in result.stderr


@pytest.fixture
def fake_gpu(tmp_path):
    """A PATH with an nvidia-smi that lists a GPU and a stand-in interpreter (the "device check" passes).

    The stand-in fails when its arguments mention FAIL_ON (if set) and otherwise exits 0 at once.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "nvidia-smi", "#!/bin/sh\necho 'GPU 0: Fake GPU (UUID: GPU-0)'\n")
    python = _executable(bin_dir / "fakepython", '#!/bin/sh\ncat >/dev/null\n'
                         'case "$*" in *"${FAIL_ON:-@@none@@}"*) echo "stand-in failure"; exit 3;; esac\n'
                         'echo "stand-in: $*"\n')
    path = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    return {"PATH": path, "PYTHON": str(python)}


def test_steps_record_commands_exit_codes_and_a_summary(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(OUT=str(out), FAIL_ON="bench_fused.py", **fake_gpu)
    assert result.returncode == 1, result.stdout + result.stderr
    summary = (out / "summary.txt").read_text()
    rows = dict(re.findall(r"^([a-z-]+)\s+(\d+) ", summary, re.M))
    assert rows["bench-fused"] == "3"
    for name in ("env", "info", "tests", "suite", "bench-gpu", "bench-unscale"):
        assert rows[name] == "0", name
        log = (out / f"{name}.txt").read_text()
        assert log.startswith(f"# step: {name}\n# command")
        assert "# exit code: 0 (ok" in log
    assert "# exit code: 3 (FAILED" in (out / "bench-fused.txt").read_text()
    assert "RESULT: FAILED" in summary and "all steps exited 0" not in summary
    if shutil.which("compute-sanitizer", path=fake_gpu["PATH"]) is None:
        assert "NOT run" in (out / "sanitizer.txt").read_text()
        assert re.search(r"^sanitizer\s+0\s+SKIPPED: compute-sanitizer is not on PATH", summary, re.M)

    # a second part into the same folder appends its own block
    again = _run(["info", "bench-unscale"], OUT=str(out), **fake_gpu)
    assert again.returncode == 0, again.stdout + again.stderr
    summary = (out / "summary.txt").read_text()
    assert summary.count("# gpu_check.sh run finished") == 2
    assert summary.rstrip().endswith("RESULT: all steps exited 0")

    sanitizer_only = _run(["sanitizer"], OUT=str(tmp_path / "s"), **fake_gpu)
    if shutil.which("compute-sanitizer", path=fake_gpu["PATH"]) is None:
        assert sanitizer_only.returncode == 0
        assert "memcheck, racecheck, synccheck NOT run" in (tmp_path / "s" / "summary.txt").read_text()


def test_steps_that_do_not_fit_the_budget_fail_the_run(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(["info", "tests"], OUT=str(out), GPU_CHECK_BUDGET_S="10", **fake_gpu)
    assert result.returncode == 1
    summary = (out / "summary.txt").read_text()
    assert "NOT RUN: out of the 10s budget" in summary
    assert "next: OUT=" in summary and "gpu_check.sh info tests" in summary
    assert not (out / "info.txt").exists()

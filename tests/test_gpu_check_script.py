"""scripts/gpu_check.sh: the plans (order, limits, the 540 s budget, at most 8 files), the no-device paths
(exit 2, nothing written), bad arguments (exit 64), and the step machinery (headers, exit codes, summary,
budget, SIGINT before the limit, capped files) run end to end with a stand-in interpreter; the emulated
plan end to end on the emulated CUDA device once that exists; syntax and shellcheck."""

import importlib.util
import os
import pathlib
import re
import shlex
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu_check.sh"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

BUDGET_S = 540
MAX_FILES = 8
MAX_BYTES = 16 * 2**20
DEFAULT_STEPS = ["env", "info", "correctness", "bench-gpu", "bench-unscale", "tests"]
DEEP_STEPS = ["sanitizer-memcheck", "sanitizer-racecheck", "sanitizer-synccheck", "bench-fused", "suite"]


def _emulated_device_exists():
    try:
        return importlib.util.find_spec("cupynet.emulated_cuda") is not None
    except ImportError:
        return False


EMULATED = _emulated_device_exists()


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


def _plan(*args, **env):
    """(steps, planned) from ``--list``: steps as [(name, limit, files, command)], planned the last line's N."""
    result = _run(["--list", *args], **env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    match = re.fullmatch(r"planned: (\d+) s", lines[-1])
    assert match, lines[-1]
    steps = [(m.group(1), int(m.group(2)), m.group(3).split(), command.strip())
             for m, command in zip((re.match(r"^(\S+) \(limit (\d+)s[^)]*\):(.*)$", line) for line in lines), lines[1:])
             if m and m.group(1) != "probe"]
    probe = re.search(r"^probe \(limit (\d+)s\)", result.stdout, re.M)
    assert probe, result.stdout
    return steps, int(probe.group(1)), int(match.group(1)), result.stdout


def _summary_rows(summary):
    return {m.group(1): m.group(2) for m in re.finditer(r"^([a-z][a-z-]*)\s+(\S+)\s", summary, re.M)}


def _check_results(out, steps):
    """The summary lists every step with exit 0; at most 8 result files plus summary.txt, each under 16 MiB."""
    summary = (out / "summary.txt").read_text()
    rows = _summary_rows(summary)
    for name in steps:
        assert rows.get(name) == "0", (name, summary)
    files = [f for f in out.iterdir() if f.name != "summary.txt"]
    assert all(f.is_file() for f in files)
    assert len(files) <= MAX_FILES, sorted(f.name for f in files)
    assert all(f.stat().st_size < MAX_BYTES for f in out.iterdir())
    return summary


# ---- the script itself ------------------------------------------------------------------------------------

def test_syntax():
    subprocess.run([BASH, "-n", str(SCRIPT)], check=True)


def test_shellcheck():
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    result = subprocess.run([shellcheck, "-S", "warning", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# ---- the plans ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, names", [((), DEFAULT_STEPS), (("deep",), DEEP_STEPS)])
@pytest.mark.parametrize("emulated", [(), ("--emulated",)])
def test_list_prints_each_limit_and_a_plan_within_540_s(mode, names, emulated):
    steps, probe, planned, _ = _plan(*mode, *emulated)
    assert [name for name, *_ in steps] == names
    assert probe + sum(limit for _, limit, _, _ in steps) == planned <= BUDGET_S
    assert len({f for _, _, files, _ in steps for f in files}) <= MAX_FILES
    assert all(files[0] == f"{name}.txt" for name, _, files, _ in steps)
    assert steps[-1][1] >= 120  # the last step (tests, suite) gets the time left, at least 120 s
    if not mode:
        limits = dict((name, limit) for name, limit, _, _ in steps)
        assert limits["env"] + limits["info"] <= 60


def test_the_last_step_is_planned_with_the_time_left():
    steps, probe, planned, text = _plan()
    fixed = probe + sum(limit for name, limit, _, _ in steps if name != "tests")
    assert steps[-1][1] == BUDGET_S - fixed
    assert f"the time left: budget {BUDGET_S} - {fixed} planned before it, at least 120" in text
    bigger, _, planned, _ = _plan(GPU_CHECK_BUDGET_S="600")
    assert bigger[-1][1] == 600 - fixed and planned == 600
    smaller, _, planned, _ = _plan(GPU_CHECK_BUDGET_S="100")
    assert smaller[-1][1] == 120 and planned == fixed + 120  # the floor: the plan then says it is over the budget


@pytest.mark.parametrize("quick", [(), ("--quick",)])
def test_the_emulated_plan_is_the_same_plan_without_real_hardware(quick):
    for mode in ((), ("deep",)):
        real, _, planned, _ = _plan(*mode, *quick)
        emulated, _, emulated_planned, text = _plan(*mode, *quick, "--emulated")
        assert [(n, limit) for n, limit, _, _ in real] == [(n, limit) for n, limit, _, _ in emulated]
        assert planned == emulated_planned
        assert "nvidia-smi" not in text and "compute-sanitizer --tool" not in text
        assert "emulated CUDA device" in text.splitlines()[0]
        for name, _, files, command in emulated:
            if "pytest" in command:
                assert "--device cuda-emulated" in command and "--device cuda " not in command, name
            if "benchmarks/" in command:
                assert "--emulated" in command and "--device cuda" not in command, name
                assert all("cuda" not in f for f in files), files
            if name.startswith("sanitizer"):
                assert command.startswith("echo 'SKIPPED: compute-sanitizer needs a real GPU"), command


def test_list_names_existing_files_and_real_flags():
    text = _plan()[3] + _plan("deep")[3]
    files = set(re.findall(r"(tests/test_\w+\.py|benchmarks/\w+\.py|scripts/\w+\.py)", text))
    assert {"tests/test_kernels_gpu.py", "tests/test_fused_ops.py", "tests/test_amp_step_gpu.py",
            "tests/test_optim_amp.py", "tests/test_grad_scaler.py", "benchmarks/bench_gpu.py",
            "benchmarks/bench_unscale.py", "benchmarks/bench_fused.py", "scripts/gpu_env.py"} <= files
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing
    # every test file that has GPU tests, or runs its ops on the GPU too under --device cuda, is in the default plan
    for path in (ROOT / "tests").glob("test_*.py"):
        if path.name in (pathlib.Path(__file__).name, "test_device_selection.py"):
            continue  # NOTE: these two only talk about GPU tests (scripts and probes), they are CPU tests
        source = path.read_text()
        marks = ("needs CuPy and a usable CUDA GPU", "op_harness import", "pytest.mark.cuda")
        if any(mark in source for mark in marks):
            assert f"tests/{path.name}" in files, path.name
    assert "-m cupynet.cli info --json" in text
    for script, flags in (("bench_gpu", ("--device", "--repeats", "--warmup", "--tiny", "--emulated", "--out")),
                          ("bench_fused", ("--device", "--repeats", "--tiny", "--emulated", "--out")),
                          ("bench_unscale", ("--repeat", "--total", "--emulated"))):
        source = (ROOT / "benchmarks" / f"{script}.py").read_text()
        for flag in flags:
            assert f'"{flag}"' in source, (script, flag)


def test_the_quick_selections_collect_tests():
    """The quick plan's pytest selections exist: each pytest command of `--quick --list`, collected on the CPU."""
    for mode in ((), ("deep",)):
        steps, *_ = _plan("--quick", *mode)
        for name, _, _, command in steps:
            tokens = shlex.split(command.replace("--device cuda", "").replace(" -- ", " "))
            if "pytest" not in tokens:
                continue  # NOTE: also compute-sanitizer's steps, which run pytest.main through python -c
            args = tokens[tokens.index("pytest") + 1:]
            result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", *args], cwd=ROOT,
                                    capture_output=True, text=True, timeout=300,
                                    env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert result.returncode == 0, (name, result.stdout[-2000:])
            assert re.search(r"^\d+(/\d+)? tests? collected", result.stdout, re.M), (name, result.stdout[-500:])


# ---- bad arguments and absent devices -----------------------------------------------------------------

@pytest.mark.parametrize("args, env, message", [
    (["no-such-step"], {}, "unknown step 'no-such-step' in the default plan (its steps: env info correctness"),
    (["suite"], {}, "unknown step 'suite' in the default plan"),
    (["deep", "tests"], {}, "unknown step 'tests' in the deep plan"),
    (["--frobnicate"], {}, "unknown option '--frobnicate'"),
    (["--list"], {"GPU_CHECK_BUDGET_S": "9m"}, "GPU_CHECK_BUDGET_S must be a positive whole number, got '9m'"),
    (["--list"], {"GPU_CHECK_SHARDS": "0"}, "GPU_CHECK_SHARDS must be a positive whole number, got '0'"),
])
def test_bad_arguments_are_a_usage_error(tmp_path, args, env, message):
    result = _run(args, OUT=str(tmp_path / "out"), **env)
    assert result.returncode == 64, result.stdout + result.stderr
    assert f"gpu_check.sh: {message}" in result.stderr
    assert not (tmp_path / "out").exists()


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


@pytest.mark.skipif(EMULATED, reason="the emulated CUDA device exists here")
def test_emulated_without_the_emulated_device_fails_fast_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = _run(["--emulated", "--quick"], OUT=str(out))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no emulated CUDA device: RuntimeError: cupynet.emulated_cuda is not importable" in result.stderr
    assert not out.exists()


# ---- the step machinery, with a stand-in interpreter -------------------------------------------------------

STAND_IN = r"""#!/bin/sh
# A stand-in interpreter: the device probe answers "Fake GPU", and each run prints its arguments and exits 0,
# except where they mention $FAIL_ON (exit 3), $SLEEP_ON (sleeps until SIGINT, then exits 2 as pytest does),
# $BIG_ON (prints 100 kB) or $FILES_ON (writes 9 files into $RESULTS).
case "$*" in *"gpu_env.py probe"*) printf 'Fake GPU\t14.2.0\n'; exit 0;; esac
echo "stand-in: $*"
case "$*" in *"${FAIL_ON:-@@}"*) echo "stand-in failure"; exit 3;; esac
case "$*" in *"${BIG_ON:-@@}"*) head -c 100000 /dev/zero | tr '\0' 'x'; echo;; esac
case "$*" in *"${FILES_ON:-@@}"*) for i in 1 2 3 4 5 6 7 8 9; do echo "{}" >"$RESULTS/extra-$i.json"; done;; esac
case "$*" in *"${SLEEP_ON:-@@}"*)
    sleep 60 </dev/null >/dev/null 2>&1 &
    trap 'kill $!; echo "stand-in interrupted"; exit 2' INT
    wait; exit 0;;
esac
exit 0
"""


@pytest.fixture
def fake_gpu(tmp_path):
    """A PATH with an nvidia-smi that lists a GPU (and records each call) and the stand-in interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "nvidia-smi", f"#!/bin/sh\necho called >>{tmp_path}/nvidia-smi-calls\n"
                                        "echo 'GPU 0: Fake GPU (UUID: GPU-0)'\n")
    python = _executable(bin_dir / "fakepython", STAND_IN)
    path = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    return {"PATH": path, "PYTHON": str(python)}


def test_steps_record_commands_exit_codes_and_a_summary(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(OUT=str(out), FAIL_ON="bench_unscale.py", **fake_gpu)
    assert result.returncode == 1, result.stdout + result.stderr
    summary = (out / "summary.txt").read_text()
    rows = _summary_rows(summary)
    assert list(rows) == ["probe", *DEFAULT_STEPS]
    assert rows["bench-unscale"] == "3"
    assert re.search(r"^bench-unscale\s+3\s+\d+s\s+40s\s+FAILED\s+bench-unscale.txt$", summary, re.M)
    assert re.search(r"^correctness\s+0\s+\d+s\s+120s\s+ok\s+correctness.txt$", summary, re.M)
    assert "# device: Fake GPU | cupy: 14.2.0" in summary
    assert re.search(r"^# command: cd .+ && OUT=\S+ PYTHON=\S+ bash \S*gpu_check.sh$", summary, re.M)
    for name in DEFAULT_STEPS:
        log = (out / f"{name}.txt").read_text()
        assert log.startswith(f"# step: {name}\n# command")
        if name != "bench-unscale":
            assert rows[name] == "0", name
            assert "# exit code: 0 (ok" in log
    assert "# exit code: 3 (FAILED" in (out / "bench-unscale.txt").read_text()
    assert "CUPYNET_DEVICE=cuda bash -c" in (out / "tests.txt").read_text()
    assert "--device cuda " in (out / "tests.txt").read_text()
    assert "RESULT: FAILED" in summary and "all steps exited 0" not in summary
    assert len(list(out.iterdir())) <= MAX_FILES + 1

    # a second part into the same folder appends its own block
    again = _run(["info", "bench"], OUT=str(out), **fake_gpu)
    assert again.returncode == 0, again.stdout + again.stderr
    summary = (out / "summary.txt").read_text()
    assert summary.count("# gpu_check.sh: the default plan") == 2
    assert list(_summary_rows(summary.split("# gpu_check.sh:")[-1])) == ["probe", "info", "bench-gpu", "bench-unscale"]
    assert summary.rstrip().endswith("RESULT: all steps exited 0")


def test_the_tests_step_runs_in_shards_and_gets_all_of_them(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(["tests"], OUT=str(out), GPU_CHECK_SHARDS="3", **fake_gpu)
    assert result.returncode == 0, result.stdout + result.stderr
    log = (out / "tests.txt").read_text()
    listed = set(re.findall(r"tests/test_\w+\.py", log.split("\n\n")[0]))  # the header's command
    sharded = [set(re.findall(r"tests/test_\w+\.py", line)) for line in log.splitlines() if line.startswith("shard ")]
    assert len(sharded) == 3 and set.union(*sharded) == listed and sum(map(len, sharded)) == len(listed)
    for k in (1, 2, 3):
        assert f"## shard-{k}\nstand-in: -m pytest" in log


def test_deep_plan_without_compute_sanitizer_says_so(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(["deep"], OUT=str(out), **fake_gpu)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = _check_results(out, DEEP_STEPS)
    for tool in ("memcheck", "racecheck", "synccheck"):
        assert re.search(rf"^sanitizer-{tool}\s+0 .*SKIPPED \(see sanitizer-{tool}.txt\)", summary, re.M)
        assert f"{tool} NOT run" in (out / f"sanitizer-{tool}.txt").read_text()
    assert "RESULT: all steps exited 0 (some SKIPPED: see their files)" in summary


def test_emulated_plan_runs_without_nvidia_smi_on_the_emulated_device(tmp_path, fake_gpu):
    default, deep = tmp_path / "default", tmp_path / "deep"
    for out, mode in ((default, ()), (deep, ("deep",))):
        result = _run(["--emulated", "--quick", *mode], OUT=str(out), **fake_gpu)
        assert result.returncode == 0, result.stdout + result.stderr
    assert not (tmp_path / "nvidia-smi-calls").exists()
    summary = _check_results(default, DEFAULT_STEPS)
    _check_results(deep, DEEP_STEPS)
    assert "the default plan (quick) on the emulated CUDA device (CUPYNET_DEVICE=cuda-emulated" in summary
    for log in (default / "correctness.txt", default / "tests.txt", deep / "suite.txt"):
        text = log.read_text()
        assert "CUPYNET_DEVICE=cuda-emulated bash -c" in text and "--device cuda-emulated" in text
    assert "bench_gpu.py --emulated --tiny" in (default / "bench-gpu.txt").read_text()
    assert "SKIPPED: compute-sanitizer needs a real GPU" in (deep / "sanitizer-memcheck.txt").read_text()


def test_steps_that_do_not_fit_the_budget_fail_the_run(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(["info", "tests"], OUT=str(out), GPU_CHECK_BUDGET_S="10", **fake_gpu)
    assert result.returncode == 1
    summary = (out / "summary.txt").read_text()
    assert "NOT RUN: out of the 10s budget" in summary
    assert "next: OUT=" in summary and "gpu_check.sh info tests" in summary
    assert not (out / "info.txt").exists()


def test_a_step_past_its_limit_gets_sigint_first_and_keeps_its_output(tmp_path, fake_gpu):
    out = tmp_path / "out"
    # a 22 s budget gives the tests step 20 s: SIGINT at 10 s, SIGKILL at 20 s
    result = _run(["tests"], OUT=str(out), GPU_CHECK_BUDGET_S="22", GPU_CHECK_SHARDS="2", SLEEP_ON="pytest",
                  **fake_gpu)
    assert result.returncode == 1
    summary = (out / "summary.txt").read_text()
    match = re.search(r"^tests\s+124\s+(\d+)s\s+(\d+)s\s+TIMED OUT \(SIGINT at (\d+)s\)", summary, re.M)
    assert match, summary
    wall, limit, sigint = map(int, match.groups())
    assert 18 <= limit <= 20 and sigint == limit - 10 and sigint <= wall < limit, summary
    log = (out / "tests.txt").read_text()
    assert log.count("stand-in interrupted") == 2  # each shard had its SIGINT (pytest prints its summary then)
    assert "# exit code: 124 (TIMED OUT" in log


def test_a_file_over_the_cap_is_cut_in_the_middle(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(["info"], OUT=str(out), GPU_CHECK_MAX_FILE_BYTES="4096", BIG_ON="cupynet.cli", **fake_gpu)
    assert result.returncode == 0, result.stdout + result.stderr
    log = (out / "info.txt").read_text()
    assert len(log.encode()) <= 4096
    assert log.startswith("# step: info\n") and log.rstrip().endswith("s)")  # the head and the exit code kept
    assert re.search(r"CUT HERE: this file had \d+ bytes, over the cap of 4096", log)


def test_more_than_eight_result_files_fail_the_run(tmp_path, fake_gpu):
    out = tmp_path / "out"
    result = _run(["bench-gpu"], OUT=str(out), FILES_ON="bench_gpu.py", **fake_gpu)
    assert result.returncode == 1
    summary = (out / "summary.txt").read_text()
    assert "FAILED: this run wrote 10 result files, more than 8" in summary


# ---- the emulated plan end to end --------------------------------------------------------------------------

@pytest.mark.skipif(not EMULATED, reason="needs the emulated CUDA device (cupynet.emulated_cuda)")
@pytest.mark.skipif(os.environ.get("CUPYNET_TEST_DEVICES", "cpu") != "cpu",
                    reason="CI's check of the plumbing: minutes of CPU work, done in the CPU run (a GPU run has no "
                    "time for it; an emulated run would repeat it)")
@pytest.mark.parametrize("mode, steps", [((), DEFAULT_STEPS), (("deep",), DEEP_STEPS)])
def test_the_quick_plan_passes_end_to_end_on_the_emulated_device(tmp_path, mode, steps):
    out = tmp_path / "out"
    result = _run(["--emulated", "--quick", *mode], OUT=str(out), timeout=900)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    summary = _check_results(out, steps)
    assert "RESULT: all steps exited 0" in summary
    planned, *_ = _plan("--emulated", "--quick", *mode)
    for name, _, files, _ in planned:
        assert all((out / f).is_file() for f in files), (name, files)  # e.g. the benchmarks' JSON

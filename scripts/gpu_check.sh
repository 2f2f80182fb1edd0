#!/usr/bin/env bash
# One command for the first GPU (issue 14 §3): check that a CUDA device is usable, then record the
# environment, `cupynet info`, the GPU test set, compute-sanitizer runs on the kernel tests, the
# whole suite on the device (triage) and the three GPU benchmarks, each step's output in its own
# file headed by the exact command, and a summary with every step's exit code.
#
# Usage (from the repository root; nothing is installed, the tree is run with PYTHONPATH=.):
#
#     bash scripts/gpu_check.sh                    # every step, in order
#     bash scripts/gpu_check.sh tests sanitizer    # only these steps (same names as --list)
#     bash scripts/gpu_check.sh --list             # print the steps and their commands, run nothing
#
# Results go to $OUT when it is set, else to benchmarks/results/gpu-<UTC date>/. Running several
# parts into the same folder appends a block to summary.txt per run.
#
# Environment:
#   PYTHON             the interpreter (default: python, else python3)
#   GPU_CHECK_BUDGET_S wall-clock budget of one run in seconds (default 560, to fit a 10-minute
#                      command); a step gets min(its own limit, what is left); a step that no
#                      longer fits is recorded as "not run" and makes the run fail
#
# Exit status: 0 when every step run exited 0; 2 when no usable CUDA GPU is present (nothing is
# written); 1 when any step failed, timed out or did not fit in the budget; 64 for a bad argument.

set -u -o pipefail

CALLER_DIR=$(pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd)

if [[ -n "${PYTHON:-}" ]]; then
    PY=$PYTHON
elif command -v python >/dev/null 2>&1; then
    PY=python
else
    PY=python3
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export CUPYNET_DEVICE=cuda

BUDGET_S=${GPU_CHECK_BUDGET_S:-560}
START_S=$SECONDS

# ---- the steps: name, time limit (s), command (run with bash -c from the repository root) -----------
# The GPU test set: every test file that skips or takes a CPU-only branch without a GPU
# ("needs CuPy and a usable CUDA GPU", op_harness.DEVICES, cuda.is_available()), the kernel
# compile/emulation tests, and the tests that count host syncs (optimizers, GradScaler, AMP, clipping).
GPU_TESTS="tests/test_kernels_gpu.py tests/test_fused_ops.py tests/test_cuda_emulation.py \
tests/test_cuda_emulation_kernels.py tests/test_kernels_compile.py tests/test_fused_compile.py \
tests/test_ops_activation.py tests/test_ops_attention.py tests/test_ops_conv.py tests/test_ops_core.py \
tests/test_ops_indexing.py tests/test_ops_linalg.py tests/test_ops_loss.py tests/test_ops_norm.py \
tests/test_ops_pool.py tests/test_ops_reduce.py tests/test_ops_unary.py tests/test_autograd.py \
tests/test_autocast.py tests/test_serialization.py tests/test_tensor_backend.py \
tests/test_optim_amp.py tests/test_grad_scaler.py tests/test_amp_netcl.py tests/test_amp_prototype.py \
tests/test_amp_functional.py tests/test_nn_utils.py tests/test_multiprocessing.py"
KERNEL_TESTS="tests/test_kernels_gpu.py tests/test_fused_ops.py"
# Under compute-sanitizer CuPy's memory pool is switched off, so each array is its own allocation
# and memcheck sees an out-of-bounds access instead of a read inside a pooled block.
SANITIZED="$PY -c 'import sys, cupy, pytest; cupy.cuda.set_allocator(None); \
cupy.cuda.set_pinned_memory_allocator(None); sys.exit(pytest.main([\"-q\", \"-p\", \"no:cacheprovider\", \
\"-x\", \"--device\", \"cuda\", *sys.argv[1:]]))' $KERNEL_TESTS"
SANITIZER_OPTS="--target-processes all --error-exitcode 1 --print-limit 50"

STEP_NAMES=()
STEP_LIMITS=()
STEP_CMDS=()
add_step() { STEP_NAMES+=("$1"); STEP_LIMITS+=("$2"); STEP_CMDS+=("$3"); }

add_step env 60 "nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
--format=csv; $PY -c 'import platform, cupy, numpy, ml_dtypes; r = cupy.cuda.runtime; \
print(\"device:\", r.getDeviceProperties(0)[\"name\"].decode(), \"| count:\", r.getDeviceCount()); \
print(\"driver (CUDA API):\", r.driverGetVersion(), \"| CUDA runtime:\", r.runtimeGetVersion()); \
print(\"python:\", platform.python_version(), \"| cupy:\", cupy.__version__, \"| numpy:\", \
numpy.__version__, \"| ml_dtypes:\", ml_dtypes.__version__)'; \
$PY -c 'import torch; print(\"torch:\", torch.__version__, \"| torch CUDA:\", torch.version.cuda, \
\"| cuda available:\", torch.cuda.is_available())'; $PY -c 'import cupy; cupy.show_config()'; \
command -v nvcc >/dev/null && nvcc --version || echo 'nvcc: not on PATH'; \
command -v g++ >/dev/null && g++ --version | head -1 || echo 'g++: not on PATH'"
add_step info 60 "$PY -m cupynet.cli info --json"
add_step tests 240 "$PY -m pytest -q -p no:cacheprovider --device cuda -rfEs $GPU_TESTS"
if command -v compute-sanitizer >/dev/null 2>&1; then
    add_step sanitizer-memcheck 150 "compute-sanitizer --tool memcheck $SANITIZER_OPTS $SANITIZED"
    add_step sanitizer-racecheck 150 "compute-sanitizer --tool racecheck --racecheck-report all \
$SANITIZER_OPTS $SANITIZED"
    add_step sanitizer-synccheck 150 "compute-sanitizer --tool synccheck $SANITIZER_OPTS $SANITIZED"
else
    add_step sanitizer 10 "echo 'compute-sanitizer is not on PATH: memcheck, racecheck and synccheck \
were NOT run (it ships with the CUDA toolkit: add its bin/ to PATH)'"
fi
add_step suite 480 "$PY -m pytest -q -p no:cacheprovider --device cuda --maxfail=200 -rfE --durations=25 \
--junitxml=\"\$RESULTS/suite-junit.xml\" tests/"
add_step bench-gpu 240 "$PY benchmarks/bench_gpu.py --device cuda --repeats 50 --out \"\$RESULTS\""
add_step bench-fused 150 "$PY benchmarks/bench_fused.py --device cuda --repeats 50 --out \"\$RESULTS\""
add_step bench-unscale 150 "$PY benchmarks/bench_unscale.py --repeat 5"

# Aliases for choosing steps on the command line: "sanitizer" and "bench" select all of their kind.
matches() {  # matches STEP WANTED...
    local step=$1 want
    shift
    for want in "$@"; do
        [[ $step == "$want" || $step == "$want"-* ]] && return 0
    done
    return 1
}

if [[ ${1:-} == --list ]]; then
    for i in "${!STEP_NAMES[@]}"; do
        printf '%s (limit %ss):\n    %s\n' "${STEP_NAMES[$i]}" "${STEP_LIMITS[$i]}" "${STEP_CMDS[$i]}"
    done
    exit 0
fi
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
fi
SELECTED=("$@")
for want in "${SELECTED[@]}"; do
    found=0
    for name in "${STEP_NAMES[@]}"; do
        matches "$name" "$want" && found=1
    done
    # the sanitizer steps have other names when compute-sanitizer is absent
    [[ $want == sanitizer* ]] && found=1
    if ((found == 0)); then
        echo "gpu_check.sh: unknown step '$want' (see --list)" >&2
        exit 64
    fi
done

# ---- 1. a usable CUDA device, or stop here (and write nothing) ------------------------------------------
no_gpu() {
    echo "no usable CUDA GPU: $1" >&2
    exit 2
}
if command -v nvidia-smi >/dev/null 2>&1; then
    if ! smi=$(timeout 60 nvidia-smi -L 2>&1); then
        no_gpu "nvidia-smi failed: $(echo "$smi" | head -3 | tr '\n' ' ')"
    fi
    [[ -n $smi ]] || no_gpu "nvidia-smi lists no GPU"
else
    echo "note: nvidia-smi is not on PATH; checking the device through CuPy only"
fi
if ! reason=$(timeout 120 "$PY" - 2>&1 <<'EOF'
try:
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    if count < 1:
        raise RuntimeError("cupy.cuda.runtime.getDeviceCount() is 0")
    if int((cupy.arange(4) + 1).sum()) != 10:  # a real kernel: NVRTC, launch, copy back
        raise RuntimeError("a trivial CuPy kernel returned a wrong result")
except Exception as error:
    print(f"{type(error).__name__}: {error}".strip().splitlines()[0])
    raise SystemExit(1)
EOF
); then
    no_gpu "${reason:-the CuPy device check timed out or crashed}"
fi

# ---- 2. the steps ---------------------------------------------------------------------------------------
RESULTS=${OUT:-$ROOT/benchmarks/results/gpu-$(date -u +%Y%m%d)}
[[ $RESULTS == /* ]] || RESULTS=$CALLER_DIR/$RESULTS  # a relative $OUT is relative to where it was run
mkdir -p "$RESULTS" || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
export RESULTS
SUMMARY=$RESULTS/summary.txt
echo "results: $RESULTS"

declare -a SUMMARY_LINES=()
declare -a NOT_RUN=()
failed=0
sanitizer_absent=
for i in "${!STEP_NAMES[@]}"; do
    name=${STEP_NAMES[$i]}
    if ((${#SELECTED[@]} > 0)) && ! matches "$name" "${SELECTED[@]}"; then
        continue
    fi
    limit=${STEP_LIMITS[$i]}
    cmd=${STEP_CMDS[$i]}
    log=$RESULTS/$name.txt
    left=$((BUDGET_S - (SECONDS - START_S) - 5))
    if ((left < 20)); then
        echo "== $name: not run (the ${BUDGET_S}s budget is spent)"
        SUMMARY_LINES+=("$(printf '%-22s %-6s %s' "$name" "-" "NOT RUN: out of the ${BUDGET_S}s budget")")
        NOT_RUN+=("$name")
        failed=1
        continue
    fi
    ((limit > left)) && limit=$left
    echo "== $name (limit ${limit}s) -> $log"
    {
        echo "# step: $name"
        echo "# command (run with bash -c from $ROOT, RESULTS=$RESULTS):"
        echo "#   PYTHONPATH=$PYTHONPATH CUPYNET_DEVICE=$CUPYNET_DEVICE timeout ${limit}s bash -c \"$cmd\""
        echo "# started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo
    } >"$log"
    t0=$SECONDS
    timeout --kill-after=10 "$limit" bash -c "$cmd" >>"$log" 2>&1 </dev/null
    rc=$?
    took=$((SECONDS - t0))
    note=ok
    if ((rc == 124 || rc == 137)); then
        note="TIMED OUT after ${limit}s"
    elif ((rc != 0)); then
        note=FAILED
    fi
    ((rc != 0)) && failed=1
    if [[ $name == sanitizer && $rc == 0 ]]; then  # the stand-in step of an absent compute-sanitizer
        note="SKIPPED: compute-sanitizer is not on PATH"
        sanitizer_absent=1
    fi
    printf '\n# exit code: %s (%s, %ss)\n' "$rc" "$note" "$took" >>"$log"
    echo "   exit $rc ($note, ${took}s)"
    SUMMARY_LINES+=("$(printf '%-22s %-6s %s, %ss, %s' "$name" "$rc" "$note" "$took" "$name.txt")")
done

{
    echo "# gpu_check.sh run finished $(date -u +%Y-%m-%dT%H:%M:%SZ) on ${HOSTNAME:-unknown host}"
    echo "# steps: ${SELECTED[*]:-all}"
    echo "# step                 exit   status"
    printf '%s\n' "${SUMMARY_LINES[@]}"
    if ((failed)); then
        echo "RESULT: FAILED (at least one step failed, timed out or was not run)"
        ((${#NOT_RUN[@]} > 0)) && echo "next: OUT=$RESULTS bash scripts/gpu_check.sh ${NOT_RUN[*]}"
    else
        echo "RESULT: all steps exited 0${sanitizer_absent:+ (compute-sanitizer absent: memcheck, racecheck, synccheck NOT run)}"
    fi
    echo
} >>"$SUMMARY"
cat "$SUMMARY"
exit "$failed"

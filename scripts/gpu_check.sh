#!/usr/bin/env bash
# The first GPU run, planned to fit its loan (a 10-minute command, 15 minutes of device time in all):
# check that a CUDA device is usable, then run the steps in order of value, each under a time limit
# and into its own file headed by the exact command, and write summary.txt.
#
# Usage (the tree is run with PYTHONPATH=<repository>, which the script sets; nothing is installed):
#
#     bash scripts/gpu_check.sh                 # the default plan: env, info, correctness, benchmarks, tests
#     bash scripts/gpu_check.sh deep            # the optional second command: compute-sanitizer, whole suite
#     bash scripts/gpu_check.sh --list [deep]   # each step's limit, files and command; last `planned: N s`
#     bash scripts/gpu_check.sh [deep] STEP...  # only these steps (names as in --list; "bench", "sanitizer")
#
# Options:
#   --emulated  the same plan on cupynet's emulated CUDA device (on the CPU, for CI): CUPYNET_DEVICE=
#               cuda-emulated and pytest --device cuda-emulated; what needs real hardware is replaced
#               (env: no nvidia-smi / cupy.show_config; benchmarks: tiny, PyTorch on the CPU, labelled
#               as no GPU figures; sanitizer steps: SKIPPED)
#   --quick     the same steps with the smallest workloads (a few tests, tiny benchmarks, one repeat)
#   --list      print the plan and run nothing;  -h, --help: this text
#
# Results go to $OUT when set, else benchmarks/results/gpu-<UTC date>[-emulated]/: at most 8 files,
# each cut in the middle with a marker when over GPU_CHECK_MAX_FILE_BYTES (15 MiB), plus summary.txt:
# each step's exit code, wall time and limit, the device, CuPy's version and the exact command line.
#
# The plan keeps to GPU_CHECK_BUDGET_S (default 540 s: one 10-minute command with room for the
# machine's start and one rerun). Every step but the last has a fixed limit; the last one (tests;
# suite in deep) is planned with what the others leave, budget - probe - sum(fixed limits), at least
# 120 s, and at run time gets all that is left, budget - elapsed. A step with limit L gets SIGINT at
# L - 10 s (pytest prints its summary then) and SIGKILL at L; a step that would get under 20 s is
# NOT RUN, and the summary prints the command that runs the rest into the same folder.
#
# Environment: PYTHON (default python, else python3), OUT, GPU_CHECK_BUDGET_S, GPU_CHECK_MAX_FILE_BYTES,
# GPU_CHECK_SHARDS (pytest processes of the tests and suite steps; default: 4, or fewer CPUs).
#
# Exit status: 0 when every step run exited 0; 1 when a step failed, timed out or was not run, or
# the run wrote more than 8 files; 2 when the device is absent (no usable CUDA GPU; with --emulated,
# no emulated device), and then nothing is written; 64 for a bad argument.

# shellcheck disable=SC2317  # plan_default / plan_deep and run_shards are called indirectly
set -u -o pipefail

CALLER_DIR=$(pwd)
COMMAND_LINE="cd $(printf '%q' "$CALLER_DIR") &&"
for var in OUT PYTHON GPU_CHECK_BUDGET_S GPU_CHECK_MAX_FILE_BYTES GPU_CHECK_SHARDS; do
    [[ -n ${!var:-} ]] && COMMAND_LINE+=" $var=$(printf '%q' "${!var}")"
done
COMMAND_LINE+=" bash$(printf ' %q' "$0" "$@")"
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd)

usage_error() {
    echo "gpu_check.sh: $1 (see --help)" >&2
    exit 64
}

# ---- arguments ----------------------------------------------------------------------------------------
MODE=default
EMULATED=0
QUICK=0
LIST=0
SELECTED=()
for arg in "$@"; do
    case $arg in
        --list) LIST=1 ;;
        --emulated) EMULATED=1 ;;
        --quick) QUICK=1 ;;
        -h | --help)
            awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        deep) MODE=deep ;;
        -*) usage_error "unknown option '$arg'" ;;
        *) SELECTED+=("$arg") ;;
    esac
done
positive_int() {  # positive_int NAME VALUE
    [[ $2 =~ ^[1-9][0-9]*$ ]] || usage_error "$1 must be a positive whole number, got '$2'"
}
BUDGET_S=${GPU_CHECK_BUDGET_S:-540}
MAX_FILE_BYTES=${GPU_CHECK_MAX_FILE_BYTES:-$((15 * 1024 * 1024))}
CPUS=$(nproc 2>/dev/null || echo 4)
SHARDS=${GPU_CHECK_SHARDS:-$((CPUS < 4 ? CPUS : 4))}
positive_int GPU_CHECK_BUDGET_S "$BUDGET_S"
positive_int GPU_CHECK_MAX_FILE_BYTES "$MAX_FILE_BYTES"
positive_int GPU_CHECK_SHARDS "$SHARDS"

if [[ -n ${PYTHON:-} ]]; then
    PY=$PYTHON
elif command -v python >/dev/null 2>&1; then
    PY=python
else
    PY=python3
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
if ((EMULATED)); then
    export CUPYNET_DEVICE=cuda-emulated
    DEVICE_WORDS="the emulated CUDA device (CUPYNET_DEVICE=cuda-emulated, on the CPU)"
    EMU=" --emulated"
else
    export CUPYNET_DEVICE=cuda
    DEVICE_WORDS="a real GPU (CUPYNET_DEVICE=cuda)"
    EMU=""
fi

# ---- the plan: name, limit (s, or "rest"), result files besides NAME.txt, command ---------------------
PROBE_S=30    # the device check before any step (nvidia-smi -L up to 10 s, then CuPy up to 20 s)
GRACE_S=10    # SIGINT this long before a step's limit, SIGKILL at the limit
MIN_STEP_S=20 # a step that would get less is not run
REST_FLOOR_S=120
MAX_FILES=8
PYTEST="$PY -m pytest -q -p no:cacheprovider --device $CUPYNET_DEVICE"
# The correctness set: every CUDA kernel bit for bit against its NumPy twin, each fused op's kernel
# against its reference, and AMP training steps of the three models on the GPU against the CPU.
CORRECTNESS_TESTS="tests/test_kernels_gpu.py tests/test_fused_ops.py tests/test_amp_step_gpu.py"
QUICK_CORRECTNESS="-x -k 'unscale_bit_for_bit or fused_adam or softmax_xent_kernels or amp_steps_on_the_gpu'"
# The GPU test set: the tests that count host syncs or take a device branch (AMP, optimizers,
# GradScaler, serialization, autograd) and every op test of the shared harness (op_harness.DEVICES:
# each op on both devices under --device cuda); the correctness files ran already.
GPU_TESTS="tests/test_optim_amp.py tests/test_grad_scaler.py tests/test_grad_scaler_extras.py \
tests/test_grad_scaler_scenarios.py tests/test_amp_functional.py tests/test_amp_netcl.py \
tests/test_amp_prototype.py tests/test_autocast.py tests/test_autograd.py tests/test_serialization.py \
tests/test_tensor_backend.py tests/test_nn_utils.py tests/test_multiprocessing.py tests/test_launch_fusion.py \
$(grep -l -E '(from|import) (tests\.)?op_harness' tests/test_*.py | tr '\n' ' ')"
# NOTE: a file named above may also use op_harness: each file once, or two shards would run it
GPU_TESTS=$(printf '%s\n' $GPU_TESTS | sort -u | tr '\n' ' ')
QUICK_TESTS="tests/test_grad_scaler.py tests/test_tensor_backend.py"
# Under compute-sanitizer CuPy's memory pool is off, so each array is its own allocation and memcheck
# sees an access out of bounds instead of a read inside a pooled block.
SANITIZED="$PY -c 'import sys, cupy, pytest; cupy.cuda.set_allocator(None); \
cupy.cuda.set_pinned_memory_allocator(None); sys.exit(pytest.main([\"-q\", \"-p\", \"no:cacheprovider\", \
\"-x\", \"-m\", \"cuda\", \"--device\", \"cuda\", *sys.argv[1:]]))' tests/test_kernels_gpu.py tests/test_fused_ops.py"
SANITIZER_OPTS="--target-processes all --error-exitcode 1 --print-limit 50"
SANITIZER=$(command -v compute-sanitizer)

STEP_NAMES=()
STEP_LIMITS=()
STEP_FILES=()
STEP_CMDS=()
add_step() {  # add_step NAME LIMIT EXTRA_FILES COMMAND
    STEP_NAMES+=("$1")
    STEP_LIMITS+=("$2")
    STEP_FILES+=("$1.txt${3:+ $3}")
    STEP_CMDS+=("$4")
}
pick() {  # pick REAL QUICK [EMULATED EMULATED_QUICK]: the variant of a step's arguments for this run
    local variants=("$@")
    (($# == 2)) && variants+=("$1" "$2")
    echo "${variants[EMULATED * 2 + QUICK]}"
}
tool_versions="for tool in nvcc g++ ${SANITIZER:-compute-sanitizer}; do echo \"== \$tool --version\"; \
\$tool --version 2>&1 | head -4; done"

plan_default() {
    if ((EMULATED)); then
        add_step env 40 "" "$tool_versions; $PY scripts/gpu_env.py report --emulated"
    else
        add_step env 40 "" "nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
--format=csv; $tool_versions; $PY scripts/gpu_env.py report"
    fi
    add_step info 20 "" "$PY -m cupynet.cli info --json"
    add_step correctness 120 "" "$PYTEST -rfEs -m cuda $(pick "" "$QUICK_CORRECTNESS") $CORRECTNESS_TESTS"
    add_step bench-gpu 150 "$(pick bench_gpu_cuda.json bench_gpu_cuda_tiny.json \
        bench_gpu_emulated_tiny.json bench_gpu_emulated_tiny.json)" \
        "$PY benchmarks/bench_gpu.py $(pick "--device cuda --repeats 20" "--device cuda --tiny --repeats 3" \
            "--emulated --tiny --repeats 3" "--emulated --tiny --repeats 1 --warmup 0") --out \"\$RESULTS\""
    add_step bench-unscale 40 "" "$PY benchmarks/bench_unscale.py$EMU $(pick "--repeat 5" \
        "--total 1000000 --repeat 2" "--repeat 3" "--total 10000 --repeat 1")"
    add_step tests rest "" "run_shards $SHARDS $PYTEST -rfE --durations=15 -- $(pick "$GPU_TESTS" "$QUICK_TESTS")"
}

plan_deep() {
    local tool
    for tool in memcheck racecheck synccheck; do
        local limit=60 extra=""
        [[ $tool == memcheck ]] && limit=120
        [[ $tool == racecheck ]] && limit=90 extra="--racecheck-report all "
        if ((EMULATED)); then
            add_step "sanitizer-$tool" "$limit" "" "echo 'SKIPPED: compute-sanitizer needs a real GPU; the \
emulated device has none ($tool NOT run)'"
        elif [[ -n $SANITIZER ]]; then
            add_step "sanitizer-$tool" "$limit" "" "$SANITIZER --tool $tool $extra$SANITIZER_OPTS $SANITIZED"
        else
            add_step "sanitizer-$tool" "$limit" "" "echo 'SKIPPED: compute-sanitizer is not on PATH (it ships \
with the CUDA toolkit: add its bin/ to PATH); $tool NOT run'"
        fi
    done
    add_step bench-fused 40 "$(pick bench_fused_cuda.json bench_fused_cuda_tiny.json \
        bench_fused_emulated_tiny.json bench_fused_emulated_tiny.json)" \
        "$PY benchmarks/bench_fused.py $(pick "--device cuda --repeats 20" "--device cuda --tiny --repeats 3" \
            "--emulated --tiny --repeats 3" "--emulated --tiny --repeats 1") --out \"\$RESULTS\""
    add_step suite rest "" "run_shards $SHARDS $PYTEST --maxfail=200 -rfE --durations=25 -- \
$(pick tests/ "$QUICK_TESTS")"
}

"plan_$MODE"
fixed_s=$PROBE_S
for limit in "${STEP_LIMITS[@]}"; do
    [[ $limit == rest ]] || fixed_s=$((fixed_s + limit))
done
REST_S=$((BUDGET_S - fixed_s))
((REST_S < REST_FLOOR_S)) && REST_S=$REST_FLOOR_S
PLANNED_S=$((fixed_s + REST_S))

# ---- step selection (by name; "bench" and "sanitizer" select all steps of their kind) -----------------
matches() {  # matches STEP WANTED...
    local step=$1 want
    shift
    for want in "$@"; do
        [[ $step == "$want" || $step == "$want"-* ]] && return 0
    done
    return 1
}
for want in "${SELECTED[@]}"; do
    found=0
    for name in "${STEP_NAMES[@]}"; do
        matches "$name" "$want" && found=1
    done
    ((found)) || usage_error "unknown step '$want' in the $MODE plan (its steps: ${STEP_NAMES[*]})"
done
selected() { ((${#SELECTED[@]} == 0)) || matches "$1" "${SELECTED[@]}"; }

if ((LIST)); then
    echo "plan: $MODE$( ((QUICK)) && echo ", quick"), on $DEVICE_WORDS, budget ${BUDGET_S} s"
    echo "probe (limit ${PROBE_S}s): a usable device first, or exit 2 and write nothing"
    for i in "${!STEP_NAMES[@]}"; do
        limit=${STEP_LIMITS[$i]} note=""
        if [[ $limit == rest ]]; then
            limit=$REST_S
            note=", the time left: budget ${BUDGET_S} - ${fixed_s} planned before it, at least ${REST_FLOOR_S}"
        fi
        printf '%s (limit %ss%s): %s\n    %s\n' "${STEP_NAMES[$i]}" "$limit" "$note" "${STEP_FILES[$i]}" \
            "${STEP_CMDS[$i]}"
    done
    echo "planned: ${PLANNED_S} s"
    exit 0
fi

# ---- the probe: a usable device, or stop here and write nothing ----------------------------------------
no_device() {
    if ((EMULATED)); then
        echo "no emulated CUDA device: $1" >&2
    else
        echo "no usable CUDA GPU: $1" >&2
    fi
    exit 2
}
START_S=$SECONDS
if ((EMULATED == 0)); then
    if command -v nvidia-smi >/dev/null 2>&1; then
        if ! smi=$(timeout -k 2 8 nvidia-smi -L 2>&1 </dev/null); then
            no_device "nvidia-smi failed: $(echo "$smi" | head -3 | tr '\n' ' ')"
        fi
        [[ -n $smi ]] || no_device "nvidia-smi lists no GPU"
    else
        echo "note: nvidia-smi is not on PATH; checking the device through CuPy only"
    fi
fi
if ! probe=$(timeout -k 2 $((PROBE_S - 12)) "$PY" scripts/gpu_env.py probe ${EMU:+--emulated} 2>&1 </dev/null); then
    no_device "$(echo "${probe:-the device check timed out or crashed}" | tail -1)"
fi
probe=$(echo "$probe" | tail -1)
DEVICE_NAME=${probe%%$'\t'*}
CUPY_VERSION=unknown
[[ $probe == *$'\t'* ]] && CUPY_VERSION=${probe#*$'\t'}
PROBE_TOOK=$((SECONDS - START_S))

# ---- the steps ---------------------------------------------------------------------------------------
RESULTS=${OUT:-$ROOT/benchmarks/results/gpu-$(date -u +%Y%m%d)$( ((EMULATED)) && echo -emulated)}
[[ $RESULTS == /* ]] || RESULTS=$CALLER_DIR/$RESULTS  # a relative $OUT is relative to where it was run
mkdir -p "$RESULTS" || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
export RESULTS
SUMMARY=$RESULTS/summary.txt
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT
files_here() { find "$RESULTS" -maxdepth 1 -type f ! -name summary.txt -printf '%f %T@ %s\n' | sort; }
files_here >"$WORK/before"
echo "device: $DEVICE_NAME | cupy: $CUPY_VERSION"
echo "results: $RESULTS"

# run_shards N COMMAND... -- FILE...: COMMAND on the files split into N groups (largest files first, each
# into the group with the fewest bytes so far), the groups at once, each into $SHARD_DIR/shard-K.log
# (the step's file gets them afterwards, even when the step is killed); exits with the largest status.
run_shards() {
    local n=$1 cmd=() groups=() bytes=() pids=() k best file rc=0 status stopping=""
    shift
    while (($# > 0)) && [[ $1 != -- ]]; do
        cmd+=("$1")
        shift
    done
    shift
    for ((k = 0; k < n; k++)); do
        groups[k]="" bytes[k]=0
    done
    while read -r size file; do
        [[ $file == total && ! -e total ]] && continue
        best=0
        for ((k = 1; k < n; k++)); do
            ((bytes[k] < bytes[best])) && best=$k
        done
        groups[best]+=" $file" bytes[best]=$((bytes[best] + size))
    done < <(find "$@" -maxdepth 1 -name 'test_*.py' -type f -exec wc -c {} + | sort -rn)
    trap '[[ -n $stopping ]] || echo "run_shards: stopping; each group prints its summary"; stopping=1' INT TERM
    for ((k = 0; k < n; k++)); do
        [[ -n ${groups[k]} ]] || continue
        echo "shard $((k + 1))/$n:${groups[k]}"
        # NOTE: a background command of a script starts with SIGINT ignored, and Python then never raises
        # KeyboardInterrupt: `trap - INT` gives pytest its SIGINT back, so that it prints its summary.
        # shellcheck disable=SC2086  # the group is a list of file names without spaces
        (trap - INT && exec "${cmd[@]}" ${groups[k]}) >"$SHARD_DIR/shard-$((k + 1)).log" 2>&1 </dev/null &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do
        wait "${pids[k]}"
        status=$?
        while kill -0 "${pids[k]}" 2>/dev/null; do  # a trapped signal ended the wait, not the group
            wait "${pids[k]}"
            status=$?
        done
        ((status > rc)) && rc=$status
    done
    return "$rc"
}
export -f run_shards

# cap_file FILE: a file over MAX_FILE_BYTES keeps its first quarter and its end, with a marker between
cap_file() {
    local file=$1 size marker head_bytes tail_bytes
    size=$(wc -c <"$file")
    ((size > MAX_FILE_BYTES)) || return 0
    head_bytes=$((MAX_FILE_BYTES / 4))
    printf -v marker '\n\n[gpu_check.sh: CUT HERE: this file had %s bytes, over the cap of %s; its middle is left out]\n\n' \
        "$size" "$MAX_FILE_BYTES"
    tail_bytes=$((MAX_FILE_BYTES - head_bytes - ${#marker}))
    { head -c "$head_bytes" "$file" && printf '%s' "$marker" && tail -c "$tail_bytes" "$file"; } >"$WORK/cut" &&
        cat "$WORK/cut" >"$file"
    echo "   $(basename "$file"): ${size} bytes, cut to $(wc -c <"$file")"
}

declare -a ROWS=() NOT_RUN=()
row() {  # row NAME EXIT WALL LIMIT STATUS FILES
    ROWS+=("$(printf '%-20s %-5s %-6s %-6s %-40s %s' "$1" "$2" "$3" "$4" "$5" "$6")")
}
row probe 0 "${PROBE_TOOK}s" "${PROBE_S}s" ok -
failed=0
skipped_note=""
for i in "${!STEP_NAMES[@]}"; do
    name=${STEP_NAMES[$i]}
    selected "$name" || continue
    step_cmd=${STEP_CMDS[$i]}
    log=$RESULTS/$name.txt
    left=$((BUDGET_S - (SECONDS - START_S) - 2))
    limit=${STEP_LIMITS[$i]}
    [[ $limit == rest ]] && limit=$left
    ((limit > left)) && limit=$left
    if ((limit < MIN_STEP_S)); then
        echo "== $name: NOT RUN (the ${BUDGET_S}s budget is spent)"
        row "$name" - - - "NOT RUN: out of the ${BUDGET_S}s budget" -
        NOT_RUN+=("$name")
        failed=1
        continue
    fi
    echo "== $name (limit ${limit}s) -> $log"
    {
        echo "# step: $name"
        echo "# command (run with bash -c from $ROOT, RESULTS=$RESULTS, SIGINT at $((limit - GRACE_S))s, SIGKILL at ${limit}s):"
        echo "#   PYTHONPATH=$PYTHONPATH CUPYNET_DEVICE=$CUPYNET_DEVICE bash -c \"$step_cmd\""
        echo "# started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo
    } >"$log"
    SHARD_DIR=$WORK/$name
    mkdir -p "$SHARD_DIR"
    export SHARD_DIR
    t0=$SECONDS
    timeout -s INT -k "$GRACE_S" "$((limit - GRACE_S))" bash -c "$step_cmd" >>"$log" 2>&1 </dev/null
    rc=$?
    took=$((SECONDS - t0))
    for shard in "$SHARD_DIR"/shard-*.log; do
        [[ -e $shard ]] || continue
        printf '\n## %s\n' "$(basename "$shard" .log)" >>"$log"
        cat "$shard" >>"$log"
    done
    status=ok
    if ((rc == 124)); then
        status="TIMED OUT (SIGINT at $((limit - GRACE_S))s)"
    elif ((rc == 137)); then
        status="TIMED OUT (SIGKILL at ${limit}s)"
    elif ((rc != 0)); then
        status=FAILED
    elif grep -q '^SKIPPED: ' "$log"; then
        status="SKIPPED (see $name.txt)"
        skipped_note=" (some SKIPPED: see their files)"
    fi
    ((rc != 0)) && failed=1
    printf '\n# exit code: %s (%s, %ss)\n' "$rc" "$status" "$took" >>"$log"
    echo "   exit $rc ($status, ${took}s)"
    files=""
    for file in ${STEP_FILES[$i]}; do
        [[ -e $RESULTS/$file ]] && files+="${files:+ }$file"
    done
    row "$name" "$rc" "${took}s" "${limit}s" "$status" "${files:--}"
done

# the files this run wrote or changed (a folder may hold earlier parts' files too)
files_here | comm -13 "$WORK/before" - | cut -d' ' -f1 >"$WORK/written"
while read -r file; do
    cap_file "$RESULTS/$file"
done <"$WORK/written"
written=$(wc -l <"$WORK/written")
{
    echo "# gpu_check.sh: the $MODE plan$( ((QUICK)) && echo " (quick)") on $DEVICE_WORDS"
    echo "# command: $COMMAND_LINE"
    echo "# device: $DEVICE_NAME | cupy: $CUPY_VERSION | host: ${HOSTNAME:-unknown}"
    echo "# finished $(date -u +%Y-%m-%dT%H:%M:%SZ): wall $((SECONDS - START_S)) s of a ${BUDGET_S} s budget" \
        "(planned ${PLANNED_S} s); ${written} result files + summary.txt"
    printf '%-20s %-5s %-6s %-6s %-40s %s\n' "# step" exit wall limit status files
    printf '%s\n' "${ROWS[@]}"
    if ((written > MAX_FILES)); then
        echo "FAILED: this run wrote ${written} result files, more than ${MAX_FILES}"
        failed=1
    fi
    if ((failed)); then
        echo "RESULT: FAILED (a step failed, timed out or was not run)"
        if ((${#NOT_RUN[@]} > 0)); then
            echo "next: OUT=$RESULTS bash scripts/gpu_check.sh$EMU$( ((QUICK)) && echo " --quick")$(
                [[ $MODE == deep ]] && echo " deep") ${NOT_RUN[*]}"
        fi
    else
        echo "RESULT: all steps exited 0$skipped_note"
    fi
    echo
} >>"$SUMMARY"
cap_file "$SUMMARY"
cat "$SUMMARY"
exit "$failed"

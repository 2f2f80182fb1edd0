"""CPU time per op / per step of cupynet alone, for comparing two trees on a busy machine.

Run, from the root of the tree to measure (the cases come from that tree's benchmarks):
    PYTHONPATH=. python /path/to/bench_cpu_time.py [--repeats 3000]
Prints one JSON line: for the tiny-op chain (per op, fwd+bwd) and the digits-MLP training step
(batch 64), the median and the 10th percentile of the thread's CPU time in microseconds.

NOTE: ``time.thread_time`` counts only the time this thread ran, so other processes
on the machine change it far less than wall-clock time (their cache and frequency
effects remain). No PyTorch here: compare the same case between two trees, run
alternately (A B A B ...), not with another framework; for the ratio to PyTorch use
bench_overhead.py / bench_train.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NOTE: before NumPy is imported, as the other benchmarks
os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))  # NOTE: the measured tree's cases, not this file's

import bench_overhead  # noqa: E402
import bench_train  # noqa: E402

WARMUP = 50


def cpu_times(step, repeats):
    """Sorted CPU seconds of ``repeats`` calls of ``step`` after a warm-up.

    Args:
        step: a function of no arguments.
        repeats: how many timed calls.
    """
    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        step()
        times.append(time.thread_time() - start)
    return sorted(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3000, help="timed calls per case")
    args = parser.parse_args()
    cases = {"tiny-op chain, per op (fwd+bwd)": (bench_overhead.chain_cupynet(), bench_overhead.CHAIN + 1),
             "digits MLP step, batch 64": (bench_train.cupynet_step("mlp", (1, 8, 8), 64,
                                                                    bench_train.cn.default_device()), 1)}
    out = {}
    for name, (step, per_call) in cases.items():
        times = cpu_times(step, args.repeats)
        out[name] = {"median_us": statistics.median(times) / per_call * 1e6,
                     "p10_us": times[len(times) // 10] / per_call * 1e6}
    print(json.dumps({"benchmark": "cpu_time", "repeats": args.repeats, **out}))


if __name__ == "__main__":
    main()

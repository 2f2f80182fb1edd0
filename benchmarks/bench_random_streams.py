"""The CPU random stream's speed next to torch's, same run, same numbers (cupynet draws torch's stream).

Run: PYTHONPATH=. python benchmarks/bench_random_streams.py [--repeats 5]
Prints, for each call, the best time of ``--repeats`` calls for cupynet and for torch (docs/random.md).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import torch  # noqa: E402

import cupynet as cn  # noqa: E402

_N = 1 << 20
CASES = (
    ("rand(2**20) float32", lambda: cn.rand(_N), lambda: torch.rand(_N)),
    ("randn(2**20) float32", lambda: cn.randn(_N), lambda: torch.randn(_N)),
    ("randn(2**20) float64", lambda: cn.randn(_N, dtype=cn.float64), lambda: torch.randn(_N, dtype=torch.float64)),
    ("randint(0, 10, (2**20,))", lambda: cn.randint(0, 10, (_N,)), lambda: torch.randint(0, 10, (_N,))),
    ("randperm(10**5)", lambda: cn.randperm(10**5), lambda: torch.randperm(10**5)),
    ("F.dropout(ones(2**20), 0.1)", lambda: cn.nn.functional.dropout(cn.ones(_N), 0.1),
     lambda: torch.nn.functional.dropout(torch.ones(_N), 0.1)),
    ("nn.Linear(1024, 1024)", lambda: cn.nn.Linear(1024, 1024), lambda: torch.nn.Linear(1024, 1024)),
)


def best_seconds(call, repeats: int) -> float:
    """The fastest of ``repeats`` timed calls.

    Args:
        call: a function of no arguments.
        repeats: how many calls to time.
    """
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    """Time every case and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cn.manual_seed(0)
    torch.manual_seed(0)
    cn.rand(1)  # NOTE: the stream's module loads with the first draw; keep that out of the timings
    print(f"{'call':30s} {'cupynet ms':>11s} {'torch ms':>9s}")
    for name, ours, theirs in CASES:
        ours_ms, theirs_ms = best_seconds(ours, args.repeats) * 1e3, best_seconds(theirs, args.repeats) * 1e3
        print(f"{name:30s} {ours_ms:11.1f} {theirs_ms:9.1f}")


if __name__ == "__main__":
    main()

"""Checkpoint save/load throughput for a large state (default 100M float32 parameters), MB/s,
against numpy.savez / numpy.load in the same run.

Run: PYTHONPATH=. python benchmarks/bench_checkpoint.py [--params 100000000] [--dir /tmp]
cupynet.save adds what savez does not: an fsync of the file and its directory (durability), a CRC-32 per
array checked on load, and the atomic rename; the table shows what that costs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from _timing import environment, print_json

import cupynet as cn


def make_state(n_params, tensors=100):
    """A model-like state dict: ``tensors`` float32 arrays totalling ``n_params`` elements."""
    rng = np.random.default_rng(0)
    size = n_params // tensors
    return {f"layer{i}.weight": cn.from_numpy(rng.standard_normal(size, dtype=np.float32)) for i in range(tensors)}


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=100_000_000)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    state = make_state(args.params)
    megabytes = sum(t.array.nbytes for t in state.values()) / 1e6
    directory = args.dir or tempfile.mkdtemp()
    ours, theirs = os.path.join(directory, "state.ckpt"), os.path.join(directory, "state.npz")
    arrays = {k: t.array for k, t in state.items()}

    save_ours = best_of(lambda: cn.save(state, ours), args.repeats)
    load_ours = best_of(lambda: cn.load(ours), args.repeats)
    save_np = best_of(lambda: np.savez(theirs, **arrays), args.repeats)
    load_np = best_of(lambda: dict(np.load(theirs)), args.repeats)
    print(f"state: {args.params:,} float32 parameters in 100 tensors = {megabytes:.0f} MB, dir {directory}")
    print(f"{'':<16}{'cupynet.save/load':>20}{'numpy.savez/load':>20}{'ratio':>8}")
    for name, a, b in (("save MB/s", save_ours, save_np), ("load MB/s", load_ours, load_np)):
        print(f"{name:<16}{megabytes / a:>20.0f}{megabytes / b:>20.0f}{b / a:>8.2f}")
    print_json("checkpoint", {"megabytes": megabytes, "save_mb_s": megabytes / save_ours,
                              "load_mb_s": megabytes / load_ours, "savez_mb_s": megabytes / save_np,
                              "npload_mb_s": megabytes / load_np, "env": environment()})
    for path in (ours, theirs):
        os.unlink(path)


if __name__ == "__main__":
    main()

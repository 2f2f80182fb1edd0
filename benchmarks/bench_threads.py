"""BLAS threads and the digits MLP: training samples/s with 1 thread vs all cores, idle and under load (issue 17).

Times the training step of ``cupynet train``'s default run (MLP on digits, batch 64, Adam, fp32) with
threadpoolctl limiting the BLAS pool, the thread counts alternating round by round so that a change in
the machine's load hits both alike. ``--load N`` starts N busy-looping processes for the duration (what
other jobs on a shared machine do). Prints each round's samples/s and the medians.

    PYTHONPATH=. python benchmarks/bench_threads.py --load 2 --rounds 7
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time

import cupynet as cn
from cupynet import nn, optim
from cupynet.data import DataLoader
from cupynet.data.datasets import digits
from cupynet.models import build_model


def _spin(stop):
    while not stop.is_set():
        pass


def _epoch_rate(model, opt, loader) -> float:
    seen, start = 0, time.perf_counter()
    for x, y in loader:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        seen += int(y.shape[0])
    loss.item()
    return seen / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes to run meanwhile")
    parser.add_argument("--rounds", type=int, default=7, help="epochs timed per thread count")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    args = parser.parse_args()
    from threadpoolctl import threadpool_info, threadpool_limits
    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} before, extra busy processes {args.load}, "
          f"BLAS {[(p['internal_api'], p['num_threads']) for p in blas]}")
    cn.manual_seed(0)
    model = build_model("mlp", (1, 8, 8), 10)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(digits("train"), batch_size=64, shuffle=True, seed=0, device="cpu")
    stop = multiprocessing.Event()
    workers = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for w in workers:
        w.start()
    rates = {n: [] for n in args.threads}
    try:
        _epoch_rate(model, opt, loader)  # warm-up
        for r in range(args.rounds):
            for n in args.threads:
                with threadpool_limits(limits=n, user_api="blas"):
                    rates[n].append(_epoch_rate(model, opt, loader))
            print(f"round {r + 1}: " + ", ".join(f"{n} thread(s) {rates[n][-1]:,.0f}" for n in args.threads),
                  flush=True)
    finally:
        stop.set()
        for w in workers:
            w.join()
    print(f"load average {os.getloadavg()[0]:.1f} after")
    for n in args.threads:
        print(f"median {n} thread(s): {statistics.median(rates[n]):,.0f} samples/s "
              f"(min {min(rates[n]):,.0f}, max {max(rates[n]):,.0f})")


if __name__ == "__main__":
    main()

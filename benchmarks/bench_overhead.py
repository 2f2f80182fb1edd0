"""Per-op overhead and one MLP training step on the CPU: cupynet vs PyTorch eager, same run.

Run: PYTHONPATH=. python benchmarks/bench_overhead.py [--repeats 2000]
Prints a table and JSON lines with the times and the ratio cupynet / PyTorch. The two sides run
alternately, one call each per pair; the ratio is the median of the per-pair ratios (see
``_timing.paired_times``), with its interquartile range.
Targets (issue 2): per-op overhead within 2x of PyTorch; the MLP step no slower.
"""

from __future__ import annotations

import os

# NOTE: both frameworks get the same number of BLAS threads (default 1, override with
# OPENBLAS_NUM_THREADS=N): must be set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse

os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import numpy as np  # noqa: E402
from _timing import environment, median_time, paired_times, print_json  # noqa: E402

import cupynet as cn  # noqa: E402

CHAIN = 20  # ops in the tiny-op chain


def cupynet_chain(x):
    y = x
    for _ in range(CHAIN // 2):
        y = (y * 1.0001) + 0.5
    return y.sum()


def chain_cupynet():
    x = cn.tensor(np.ones(8, dtype=np.float32), requires_grad=True)

    def run():
        x.grad = None
        cupynet_chain(x).backward()
    return run


def chain_torch(torch):
    x = torch.ones(8, requires_grad=True)

    def run():
        x.grad = None
        y = x
        for _ in range(CHAIN // 2):
            y = (y * 1.0001) + 0.5
        y.sum().backward()
    return run


def mlp_cupynet(batch, sizes):
    from cupynet import nn, optim
    cn.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = cn.randn(batch, sizes[0])
    y = cn.randint(0, sizes[-1], (batch,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def mlp_torch(batch, sizes, torch):
    torch.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        layers += [torch.nn.Linear(sizes[i], sizes[i + 1]), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, sizes[0])
    y = torch.randint(0, sizes[-1], (batch,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def measure(ours, theirs, repeats, per_call=1):
    """Median seconds per op (or step) of each side and the median per-pair ratio (None without torch)."""
    if theirs is None:
        return {"cupynet_s": median_time(ours, repeats=repeats) / per_call, "torch_s": None, "ratio": None}
    result = paired_times(ours, theirs, pairs=repeats)
    return {"cupynet_s": result["a_s"] / per_call, "torch_s": result["b_s"] / per_call, "ratio": result["ratio"],
            "ratio_q1": result["ratio_q1"], "ratio_q3": result["ratio_q3"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000, help="timed pairs (one call of each side per pair)")
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    except ImportError:
        torch = None
    env = environment()
    digits_mlp = (64, 256, 128, 10)
    rows = [("tiny-op chain, per op (fwd+bwd)",
             measure(chain_cupynet(), chain_torch(torch) if torch else None, args.repeats, per_call=CHAIN + 1)),
            ("digits MLP step, batch 64",
             measure(mlp_cupynet(64, digits_mlp), mlp_torch(64, digits_mlp, torch) if torch else None, args.repeats))]
    print(f"device: cpu, numpy {env['numpy']}, torch {env['torch']}, {os.cpu_count()} cores, "
          f"{os.environ['OPENBLAS_NUM_THREADS']} BLAS thread(s), {args.repeats} pairs")
    print(f"{'case':<36} {'cupynet':>12} {'pytorch':>12} {'ratio':>8} {'ratio IQR':>13}")
    for name, r in rows:
        theirs = r["torch_s"] * 1e6 if r["torch_s"] else float("nan")
        iqr = f"{r['ratio_q1']:.2f}-{r['ratio_q3']:.2f}" if r["ratio"] else "n/a"
        print(f"{name:<36} {r['cupynet_s'] * 1e6:>10.1f}us {theirs:>10.1f}us {r['ratio'] or float('nan'):>8.2f} "
              f"{iqr:>13}")
        print_json("overhead", {"case": name, **r, "env": env})
    if torch is None:
        print("PyTorch is not installed: no reference column (pip install torch==2.13.0)")


if __name__ == "__main__":
    main()

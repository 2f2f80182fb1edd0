"""Per-op overhead and one MLP training step on the CPU: cupynet vs PyTorch eager, same run.

Run: PYTHONPATH=. python benchmarks/bench_overhead.py [--repeats 200]
Prints a table and JSON lines with the times and the ratio cupynet / PyTorch.
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
from _timing import environment, median_time, print_json  # noqa: E402

import cupynet as cn  # noqa: E402

CHAIN = 20  # ops in the tiny-op chain


def cupynet_chain(x):
    y = x
    for _ in range(CHAIN // 2):
        y = (y * 1.0001) + 0.5
    return y.sum()


def time_chain_cupynet(repeats):
    x = cn.tensor(np.ones(8, dtype=np.float32), requires_grad=True)

    def run():
        x.grad = None
        cupynet_chain(x).backward()
    return median_time(run, repeats=repeats) / (CHAIN + 1)


def time_chain_torch(repeats, torch):
    x = torch.ones(8, requires_grad=True)

    def run():
        x.grad = None
        y = x
        for _ in range(CHAIN // 2):
            y = (y * 1.0001) + 0.5
        y.sum().backward()
    return median_time(run, repeats=repeats) / (CHAIN + 1)


def time_mlp_cupynet(repeats, batch, sizes):
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
    return median_time(step, repeats=repeats)


def time_mlp_torch(repeats, batch, sizes, torch):
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
    return median_time(step, repeats=repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    except ImportError:
        torch = None
    env = environment()
    rows = [("tiny-op chain, per op (fwd+bwd)", time_chain_cupynet(args.repeats),
             time_chain_torch(args.repeats, torch) if torch else None)]
    digits_mlp = (64, 256, 128, 10)
    rows.append(("digits MLP step, batch 64", time_mlp_cupynet(args.repeats, 64, digits_mlp),
                 time_mlp_torch(args.repeats, 64, digits_mlp, torch) if torch else None))
    print(f"device: cpu, numpy {env['numpy']}, torch {env['torch']}, {os.cpu_count()} cores")
    print(f"{'case':<36} {'cupynet':>12} {'pytorch':>12} {'ratio':>8}")
    for name, ours, theirs in rows:
        ratio = ours / theirs if theirs else None
        print(f"{name:<36} {ours * 1e6:>10.1f}us {theirs * 1e6 if theirs else float('nan'):>10.1f}us "
              f"{ratio if ratio else float('nan'):>8.2f}")
        print_json("overhead", {"case": name, "cupynet_s": ours, "torch_s": theirs, "ratio": ratio, "env": env})
    if torch is None:
        print("PyTorch is not installed: no reference column (pip install torch==2.13.0)")


if __name__ == "__main__":
    main()

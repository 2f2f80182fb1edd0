"""Training-step throughput (samples/s) of the MLP and the CNN: cupynet vs PyTorch, same run, fp32.

Run: PYTHONPATH=. python benchmarks/bench_train.py [--device cpu|cuda] [--repeats 300]
The two frameworks step alternately, one step each per pair; the throughput ratio is the median
over the pairs (see ``_timing.paired_times``), with its interquartile range.
Target (issue 3): on the CPU, cupynet's digits-MLP step is no slower than PyTorch's.
"""

from __future__ import annotations

import os

# NOTE: both frameworks get the same number of BLAS threads (default 1, override with
# OPENBLAS_NUM_THREADS=N): must be set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse

import numpy as np
from _timing import environment, median_time, paired_times, print_json

import cupynet as cn

CASES = {
    # name: (model, input shape, batch)
    "digits MLP (64-256-128-10), batch 64": ("mlp", (1, 8, 8), 64),
    "digits MLP, batch 512": ("mlp", (1, 8, 8), 512),
    "LeNet CNN 1x28x28, batch 64": ("cnn", (1, 28, 28), 64),
}


def cupynet_step(model_name, shape, batch, device):
    from cupynet import nn, optim
    from cupynet.models import build_model
    cn.manual_seed(0)
    model = build_model(model_name, shape, 10).to(device)
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = cn.tensor(rng.standard_normal((batch, *shape)).astype(np.float32), device=device)
    y = cn.tensor(rng.integers(0, 10, batch), device=device)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def torch_step(model_name, shape, batch, device, torch):
    """The same architecture in PyTorch, with the weights copied from cupynet's model."""
    from cupynet.models import build_model
    cn.manual_seed(0)
    ours = build_model(model_name, shape, 10)
    theirs = _torch_twin(ours, torch).to(device)
    opt = torch.optim.SGD(theirs.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((batch, *shape)).astype(np.float32), device=device)
    y = torch.tensor(rng.integers(0, 10, batch), device=device)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(x), y).backward()
        opt.step()
    return step


def _torch_twin(model, torch):
    from _torch_twin import twin
    return twin(model, torch)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeats", type=int, default=300, help="timed pairs (one step of each side per pair)")
    args = parser.parse_args()
    device = cn.device(args.device) if args.device else cn.default_device()
    try:
        import torch
        torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    except ImportError:
        torch = None
    print(f"device: {device}, env: {environment()}")
    print(f"{'case':<40} {'cupynet samples/s':>18} {'pytorch samples/s':>18} {'ratio (ours/theirs)':>20} "
          f"{'ratio IQR':>12}")
    for name, (model_name, shape, batch) in CASES.items():
        ours_step = cupynet_step(model_name, shape, batch, device)
        if torch is None:
            ours, theirs, spread = median_time(ours_step, repeats=args.repeats, device_type=device.type), None, None
        else:
            torch_device = "cuda" if device.type == "cuda" else "cpu"
            paired = paired_times(ours_step, torch_step(model_name, shape, batch, torch_device, torch),
                                  pairs=args.repeats, device_type=device.type, torch_sync_b=device.type == "cuda")
            ours, theirs = paired["a_s"], paired["b_s"]
            # NOTE: throughput ratio = their time / our time, per pair; its quartiles come from the time ratio's
            spread = (1 / paired["ratio"], 1 / paired["ratio_q3"], 1 / paired["ratio_q1"])
        ours_rate, theirs_rate = batch / ours, (batch / theirs if theirs else None)
        ratio = spread[0] if spread else None
        iqr = f"{spread[1]:.2f}-{spread[2]:.2f}" if spread else "n/a"
        print(f"{name:<40} {ours_rate:>18.0f} {theirs_rate or float('nan'):>18.0f} {ratio or float('nan'):>20.2f} "
              f"{iqr:>12}")
        print_json("train_step", {"case": name, "device": str(device), "cupynet_samples_s": ours_rate,
                                  "torch_samples_s": theirs_rate, "throughput_ratio": ratio,
                                  "throughput_ratio_iqr": spread[1:] if spread else None})

if __name__ == "__main__":
    main()

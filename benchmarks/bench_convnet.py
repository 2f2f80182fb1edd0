"""Conv-net training steps on the CPU: cupynet vs PyTorch, stepped alternately in one process (issue 15).

Run: PYTHONPATH=. python benchmarks/bench_convnet.py [--pairs 200] [--bf16]
Cases: LeNet-style CNN (``build_model("cnn")``, 1x28x28, batch 64) and a 3-conv BatchNorm net
(3x32x32, batch 32), SGD with momentum, fp32 (and bf16 autocast with ``--bf16``). Both frameworks
get one BLAS thread (``OPENBLAS_NUM_THREADS``, ``torch.set_num_threads``) and the same weights and
data; each pair times one step of each, and the ratio reported is the median of the per-pair time
ratios (cupynet / torch; lower is better) with its interquartile range (``_timing.paired_times``).
Target (issue 15): step time <= 1.25x torch's.
"""

from __future__ import annotations

import os

# NOTE: the same number of BLAS threads for both (default 1): set before NumPy is imported
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import contextlib

import numpy as np
from _timing import environment, paired_times, print_json

import cupynet as cn
from cupynet import amp, nn, optim
from cupynet.models import build_model


def bn_net():
    """Three conv-BatchNorm-ReLU-maxpool blocks (3 -> 16 -> 32 -> 64 channels) and a linear classifier."""
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]
    return nn.Sequential(*block(3, 16), *block(16, 32), *block(32, 64), nn.Flatten(), nn.Linear(64 * 4 * 4, 10))


def _torch_bn_net(torch):
    tnn = torch.nn

    def block(cin, cout):
        return [tnn.Conv2d(cin, cout, 3, padding=1), tnn.BatchNorm2d(cout), tnn.ReLU(), tnn.MaxPool2d(2)]
    return tnn.Sequential(*block(3, 16), *block(16, 32), *block(32, 64), tnn.Flatten(), tnn.Linear(64 * 4 * 4, 10))


CASES = {
    # name: (builder of the cupynet model, builder of the torch twin, input shape, batch)
    "LeNet CNN 1x28x28, batch 64": (lambda: build_model("cnn", (1, 28, 28), 10), None, (1, 28, 28), 64),
    "3-conv BatchNorm net 3x32x32, batch 32": (bn_net, _torch_bn_net, (3, 32, 32), 32),
}


def _data(shape, batch):
    rng = np.random.default_rng(0)
    return rng.standard_normal((batch, *shape)).astype(np.float32), rng.integers(0, 10, batch)


def _stepper(opt, loss_fn, region):
    """A training step: zero the gradients, loss (inside ``region``), backward, optimizer step."""
    def step():
        opt.zero_grad()
        with region():
            loss = loss_fn()
        loss.backward()
        opt.step()
    return step


def cupynet_step(build, shape, batch, bf16):
    """One SGD-momentum training step of the cupynet model, as a closure.

    Args:
        build: returns the cupynet model.
        shape: input shape (C, H, W).
        batch: batch size.
        bf16: run forward and loss under bfloat16 autocast.
    """
    cn.manual_seed(0)
    model = build()
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    xs, ys = _data(shape, batch)
    x, y = cn.tensor(xs), cn.tensor(ys)
    region = (lambda: amp.autocast("cpu", dtype=cn.bfloat16)) if bf16 else contextlib.nullcontext
    return _stepper(opt, lambda: nn.functional.cross_entropy(model(x), y), region), model


def torch_step(model, torch_build, shape, batch, bf16, torch):
    """The same step in PyTorch, on a twin of ``model`` (same architecture, weights and buffers).

    Args:
        model: the cupynet model to copy.
        torch_build: builds the torch architecture (None: mirror it with ``_torch_twin``).
        shape: input shape (C, H, W).
        batch: batch size.
        bf16: run forward and loss under bfloat16 autocast.
        torch: the torch module.
    """
    if torch_build is None:
        from _torch_twin import twin
        theirs = twin(model, torch)
    else:
        theirs = torch_build(torch)
        state = {k: torch.tensor(cn.backend.to_numpy(v.array)) for k, v in model.state_dict().items()}
        theirs.load_state_dict(state)
    opt = torch.optim.SGD(theirs.parameters(), lr=0.01, momentum=0.9)
    xs, ys = _data(shape, batch)
    x, y = torch.tensor(xs), torch.tensor(ys)
    region = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
    return _stepper(opt, lambda: torch.nn.functional.cross_entropy(theirs(x), y), region)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200, help="timed pairs (one step of each side per pair)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed pairs first")
    parser.add_argument("--bf16", action="store_true", help="also time both under bfloat16 autocast")
    args = parser.parse_args()
    import torch
    torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    print(f"env: {environment()}, torch threads: {torch.get_num_threads()}")
    print(f"{'case':<44} {'precision':<9} {'cupynet ms':>10} {'torch ms':>9} {'ratio (ours/torch)':>19} "
          f"{'ratio IQR':>12}")
    for name, (build, torch_build, shape, batch) in CASES.items():
        for bf16 in (False, True) if args.bf16 else (False,):
            ours, model = cupynet_step(build, shape, batch, bf16)
            theirs = torch_step(model, torch_build, shape, batch, bf16, torch)
            r = paired_times(ours, theirs, pairs=args.pairs, warmup=args.warmup)
            precision = "bf16 amp" if bf16 else "fp32"
            print(f"{name:<44} {precision:<9} {r['a_s'] * 1e3:>10.2f} {r['b_s'] * 1e3:>9.2f} {r['ratio']:>19.2f} "
                  f"{r['ratio_q1']:>5.2f}-{r['ratio_q3']:<5.2f}")
            print_json("convnet_step", {"case": name, "precision": precision, "cupynet_s": r["a_s"],
                                        "torch_s": r["b_s"], "ratio": r["ratio"], "ratio_q1": r["ratio_q1"],
                                        "ratio_q3": r["ratio_q3"], "pairs": args.pairs})


if __name__ == "__main__":
    main()

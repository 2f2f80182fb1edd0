"""``cupynet bench``: time training steps of a built-in model on random data (samples/s).

For comparisons with PyTorch use the scripts in ``benchmarks/``; this command
answers "how fast is a step here" with nothing but cupynet installed.
"""

from __future__ import annotations

import statistics
import time

import numpy

import cupynet as cn
from cupynet import backend

__all__ = ["run_bench", "INPUT_SHAPES"]

INPUT_SHAPES = {"mlp": (1, 28, 28), "cnn": (3, 32, 32), "transformer": (1, 28, 28)}


def _sync(device):
    if device.type == "cuda":
        cn.cuda.synchronize()


def run_bench(args) -> int:
    """Time ``args.steps`` training steps after warm-up and print step time and samples/s.

    Args:
        args: the parsed ``cupynet bench`` arguments (model, batch_size, steps, device, amp).
    """
    from cupynet import nn, optim
    from cupynet.amp import GradScaler, autocast
    from cupynet.models import build_model
    device = backend.device(args.device) if args.device else backend.default_device()
    cn.manual_seed(0)
    shape = INPUT_SHAPES[args.model]
    model = build_model(args.model, shape, 10).to(device)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler(device.type, enabled=args.amp)
    rng = numpy.random.default_rng(0)
    x = cn.tensor(rng.standard_normal((args.batch_size, *shape)).astype(numpy.float32), device=device)
    y = cn.tensor(rng.integers(0, 10, args.batch_size), device=device)

    def step():
        opt.zero_grad()
        with autocast(device.type, enabled=args.amp):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(3):
        step()
    times = []
    for _ in range(args.steps):
        _sync(device)
        start = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    mode = "AMP (autocast + GradScaler)" if args.amp else "fp32"
    print(f"{args.model} on {device}, batch {args.batch_size}, {mode}: median step {median * 1e3:.2f} ms over "
          f"{args.steps} steps, {args.batch_size / median:.0f} samples/s")
    return 0

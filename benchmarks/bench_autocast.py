"""Autocast overhead: per-op dispatch cost with autocast on vs off (CPU), and an MLP step fp32 vs AMP (GPU).

Usage: PYTHONPATH=. python benchmarks/bench_autocast.py [--repeat 15] [--calls 200]

CPU part: tiny tensors, so the time is dispatch, not math. For each op the median over ``--repeat`` samples
of the mean time of ``--calls`` calls, autocast off and on, cupynet and (when installed) PyTorch in the same
run; the ratio on/off is the cost of autocast's casts and bookkeeping. GPU part (only when a CUDA device is
usable): one training step of a 3-layer MLP, fp32 vs autocast float16, cupynet vs PyTorch. Runs in < 60 s.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import numpy as np

import cupynet as cn
from cupynet import amp

try:
    import torch
except ImportError:
    torch = None


def _median_call_us(fn, repeat, calls):
    """Median over ``repeat`` samples of the mean microseconds per call of ``fn``."""
    fn()  # warm up (first-call imports, caches)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def _cupynet_cases():
    rng = np.random.default_rng(0)
    x = cn.tensor(rng.standard_normal((8, 8)), dtype=cn.float32)
    w = cn.tensor(rng.standard_normal((8, 8)), dtype=cn.float32, requires_grad=True)
    return {
        "add (unlisted)": lambda: x + x,
        "exp (fp32)": lambda: x.exp(),
        "matmul (lower, cached weight)": lambda: x @ w,
        "linear (lower)": lambda: cn.linear(x, w),
        "sum (fp32)": lambda: x.sum(),
    }


def _torch_cases():
    x = torch.randn(8, 8)
    w = torch.randn(8, 8, requires_grad=True)
    return {
        "add (unlisted)": lambda: x + x,
        "exp (fp32)": lambda: x.exp(),
        "matmul (lower, cached weight)": lambda: x @ w,
        "linear (lower)": lambda: torch.nn.functional.linear(x, w),
        "sum (fp32)": lambda: x.sum(),
    }


def _timed_pair(cases, region, repeat, calls):
    out = {}
    for name, fn in cases.items():
        off = _median_call_us(fn, repeat, calls)
        with region():
            on = _median_call_us(fn, repeat, calls)
        out[name] = (off, on)
    return out


def cpu_dispatch(repeat, calls):
    """Print per-op dispatch time with autocast off/on for cupynet and PyTorch.

    Args:
        repeat: samples per measurement (the median is reported).
        calls: calls per sample.
    """
    mine = _timed_pair(_cupynet_cases(), lambda: amp.autocast("cpu", dtype=cn.bfloat16), repeat, calls)
    theirs = {}
    if torch is not None:
        theirs = _timed_pair(_torch_cases(), lambda: torch.autocast("cpu", dtype=torch.bfloat16), repeat, calls)
    print("CPU dispatch, 8x8 float32 inputs, autocast bfloat16 (median us per call)")
    header = f"{'op':<31}{'cupynet off':>12}{'on':>9}{'on/off':>8}"
    if theirs:
        header += f"{'torch off':>11}{'on':>9}{'on/off':>8}{'cupynet/torch (on)':>20}"
    print(header)
    for name, (off, on) in mine.items():
        line = f"{name:<31}{off:>12.1f}{on:>9.1f}{on / off:>8.2f}"
        if theirs:
            t_off, t_on = theirs[name]
            line += f"{t_off:>11.1f}{t_on:>9.1f}{t_on / t_off:>8.2f}{on / t_on:>20.2f}"
        print(line)
    if torch is None:
        print("(PyTorch not installed: no comparison)")


def _mlp_step_cupynet(dtype, steps, batch=512, width=1024):
    rng = np.random.default_rng(0)
    sizes = [(width, 784), (width,), (width, width), (width,), (10, width), (10,)]
    params = [cn.tensor(rng.standard_normal(s) * 0.02, dtype=cn.float32, device="cuda", requires_grad=True)
              for s in sizes]
    x = cn.tensor(rng.standard_normal((batch, 784)), dtype=cn.float32, device="cuda")
    y = cn.tensor(rng.integers(0, 10, batch), device="cuda")
    region = (lambda: amp.autocast("cuda", dtype=dtype)) if dtype is not None else contextlib.nullcontext

    def step():
        with region():
            h = cn.ops.relu(cn.linear(x, params[0], params[1]))
            h = cn.ops.relu(cn.linear(h, params[2], params[3]))
            loss = cn.ops.cross_entropy(cn.linear(h, params[4], params[5]), y)
        loss.backward()
        with cn.no_grad():
            for p in params:
                p.sub_(p.grad * 0.01)
                p.grad = None
    return _gpu_time(step, steps, cn.cuda.synchronize)


def _mlp_step_torch(dtype, steps, batch=512, width=1024):
    model = torch.nn.Sequential(torch.nn.Linear(784, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, 784, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    region = (lambda: torch.autocast("cuda", dtype=dtype)) if dtype is not None else contextlib.nullcontext

    def step():
        with region():
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return _gpu_time(step, steps, torch.cuda.synchronize)


def _gpu_time(step, steps, sync):
    for _ in range(3):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - start) / steps * 1e3


def gpu_mlp(steps):
    """Print MLP step time fp32 vs autocast float16 for cupynet and PyTorch (GPU only).

    Args:
        steps: timed steps per configuration.
    """
    if not cn.cuda.is_available():
        print("\nGPU MLP step: skipped (no usable CUDA device)")
        return
    print("\nGPU MLP step (784-1024-1024-10, batch 512), ms per step")
    mine = (_mlp_step_cupynet(None, steps), _mlp_step_cupynet(cn.float16, steps))
    print(f"cupynet  fp32 {mine[0]:8.3f}  autocast fp16 {mine[1]:8.3f}  speedup {mine[0] / mine[1]:5.2f}x")
    if torch is not None and torch.cuda.is_available():
        theirs = (_mlp_step_torch(None, steps), _mlp_step_torch(torch.float16, steps))
        print(f"torch    fp32 {theirs[0]:8.3f}  autocast fp16 {theirs[1]:8.3f}  speedup "
              f"{theirs[0] / theirs[1]:5.2f}x")
        print(f"cupynet/torch: fp32 {mine[0] / theirs[0]:5.2f}  autocast {mine[1] / theirs[1]:5.2f}")
    else:
        print("(PyTorch with CUDA not available: no comparison)")


def main(argv=None):
    """Run the CPU dispatch benchmark, then the GPU MLP benchmark when a GPU is usable.

    Args:
        argv: command-line arguments (default: sys.argv[1:]).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="samples per measurement (median reported)")
    parser.add_argument("--calls", type=int, default=200, help="calls per sample")
    parser.add_argument("--steps", type=int, default=20, help="timed GPU steps per configuration")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.calls < 1 or args.steps < 1:
        parser.error(f"--repeat, --calls and --steps must be >= 1, got {args.repeat}, {args.calls}, {args.steps}")
    cpu_dispatch(args.repeat, args.calls)
    gpu_mlp(args.steps)


if __name__ == "__main__":
    main()

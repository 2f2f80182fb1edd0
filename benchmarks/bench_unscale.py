"""GB/s of the fused non-finite check + unscale, vs PyTorch's kernel and vs a per-tensor loop.

Run:  python benchmarks/bench_unscale.py [--total 10000000 100000000] [--repeat 5]

Bytes moved per call: every gradient is read once and written once (2 x its size).
With a GPU (CuPy): cupynet's fused RawKernel, ``torch._amp_foreach_non_finite_check_and_unscale_``
on CUDA (if torch with CUDA is installed) and a per-tensor CuPy loop, over 10 / 100 / 1000 tensors
totalling 10M and 100M fp32 elements. Without a GPU: the NumPy reference path at 1M elements (vs torch's CPU kernel),
and a note that the GPU figures await a device. ``--emulated`` (with ``CUPYNET_DEVICE=cuda-emulated``)
runs the kernel path on the emulated CUDA device at 100k elements, PyTorch on the CPU: it checks the
plumbing and is labelled as no GPU figure.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import cupynet.cuda
from cupynet import backend
from cupynet.amp import kernels


def _split(total, n, xp, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    cuts = np.sort(rng.choice(np.arange(1, total), size=n - 1, replace=False)) if n > 1 else np.array([], int)
    sizes = np.diff(np.concatenate([[0], cuts, [total]]))
    return [xp.ones(int(s), dtype=xp.float32) for s in sizes]


def _timeit(fn, sync, repeat):
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def _candidates(arrays, xp, torch, torch_device):
    found, inv = xp.zeros(1, xp.float32), xp.full(1, 0.5, xp.float32)
    yield "cupynet fused", lambda: kernels.non_finite_check_and_unscale_(arrays, found, inv)

    def loop():
        for a in arrays:
            found[...] = xp.maximum(found, (~xp.isfinite(a)).any())
            a *= inv[0]
    yield "per-tensor loop", loop
    if torch is not None:  # NOTE: its own tensors of the same sizes (all ones, as ours), not views of ours
        grads = [torch.ones(int(a.size), dtype=torch.float32, device=torch_device) for a in arrays]
        t_found, t_inv = torch.zeros((), device=torch_device), torch.full((), 0.5, device=torch_device)
        yield "torch foreach", lambda: torch._amp_foreach_non_finite_check_and_unscale_(grads, t_found, t_inv)


def _torch_for(on_gpu):
    """torch and the device to compare on (CUDA next to a GPU, else the CPU), or (None, None)."""
    try:
        import torch
    except ImportError:
        return None, None
    if not on_gpu:
        return torch, "cpu"
    return (torch, "cuda") if torch.cuda.is_available() else (None, None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, nargs="+", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--emulated", action="store_true",
                        help="the emulated CUDA device (CUPYNET_DEVICE=cuda-emulated): 100k elements, PyTorch on the "
                             "CPU; labelled: not GPU figures")
    args = parser.parse_args(argv)
    gpu = backend.cuda_available() and not args.emulated
    xp = backend.default_device().xp if gpu or args.emulated else np
    totals = args.total or ([10_000_000, 100_000_000] if gpu else [100_000] if args.emulated else [1_000_000])
    sync = cupynet.cuda.synchronize if gpu or args.emulated else (lambda: None)
    torch, torch_device = _torch_for(gpu)
    if args.emulated:
        print("device: EMULATED CUDA device on the CPU, PyTorch on the CPU: NOT GPU figures")
    else:
        print(f"device: {'cuda' if gpu else 'cpu (NumPy reference)'}")
    print(f"{'elements':>11} {'tensors':>8} {'method':>16} {'ms':>9} {'GB/s':>8}")
    # NOTE: the emulated device runs a CUDA block as 256 CPU threads: 1000 tensors would take minutes
    counts = (10, 100) if args.emulated else (10, 100, 1000)
    for total in totals:
        for n in counts:
            arrays = _split(total, n, xp)
            for name, fn in _candidates(arrays, xp, torch, torch_device):
                seconds = _timeit(fn, sync, args.repeat)
                print(f"{total:>11} {n:>8} {name:>16} {seconds * 1e3:>9.3f} {2 * 4 * total / seconds / 1e9:>8.2f}")
    if not gpu and not args.emulated:
        print("no GPU here: the GPU figures (10M/100M elements, vs torch and a CuPy loop) await a device")


if __name__ == "__main__":
    main()

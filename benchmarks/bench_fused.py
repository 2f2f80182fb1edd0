"""Micro-benchmark of each fused hot op: the fused function vs cupynet's unfused op path vs PyTorch.

Run: PYTHONPATH=. python benchmarks/bench_fused.py [--device cuda|cpu] [--repeats 50] [--out DIR]

Each case runs forward + first-order backward on arrays of a transformer/CNN-sized shape. On a GPU
the fused column is the CUDA kernel (``cupynet.ops.kernels``); ``CUPYNET_FUSED_KERNELS=0`` makes it
the reference on the GPU too. On the CPU every column is NumPy/torch-CPU (a smoke run, no claim).
``--emulated`` (with ``CUPYNET_DEVICE=cuda-emulated``) runs the kernels on the emulated CUDA device and
labels the table and ``bench_fused_emulated*.json`` as no GPU figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import environment, median_time  # noqa: E402

import cupynet as cn  # noqa: E402
from cupynet.ops import kernels as fused  # noqa: E402


def cases(tiny):
    n, c, d = (8, 10, 16) if tiny else (8192, 32000, 512)
    rows = 64 if tiny else 32 * 256
    conv, bmm = ((2, 4, 8), (4, 8, 8)) if tiny else ((256, 16, 32), (32 * 8, 256, 64))
    return {"softmax_xent": (n, c), "layer_norm": (rows, d), "bias_gelu": (rows, 4 * d), "im2col": conv,
            "batched_matmul_half": bmm}


def fused_fn(name, shape, xp, dtype):
    """A closure running the fused forward + backward on device arrays of ``shape``."""
    rng = np.random.default_rng(0)
    put = lambda a: xp.asarray(a)  # noqa: E731
    if name == "softmax_xent":
        x, t = put(rng.standard_normal(shape).astype(dtype)), put(rng.integers(0, shape[1], shape[0]))
        g = put(np.float32(1.0 / shape[0]))
        return lambda: fused.softmax_xent_backward(x, t, fused.softmax_xent_forward(x, t)[1], g)
    if name == "layer_norm":
        x, w, b = put(rng.standard_normal(shape).astype(dtype)), put(np.ones(shape[1], np.float32)), None
        return lambda: fused.layer_norm_backward(x, x, *fused.layer_norm_forward(x, w, b)[1:], w)
    if name == "bias_gelu":
        x, b = put(rng.standard_normal(shape).astype(dtype)), put(np.zeros(shape[1], np.float32))
        return lambda: (fused.bias_gelu_forward(x, b), fused.bias_gelu_backward(x, x, b))
    if name == "im2col":
        from cupynet.ops._im2col import Geometry  # noqa: PLC0415
        n, ch, side = shape
        x, geoms = put(rng.standard_normal((n, ch, side, side)).astype(dtype)), (Geometry(3, 1, 1, 1, side, side),) * 2
        return lambda: fused.im2col(x, geoms)
    a = put(rng.standard_normal(shape).astype(np.float16))
    b = put(rng.standard_normal((shape[0], shape[2], shape[1])).astype(np.float16))
    return lambda: fused.batched_matmul_half(a, b)


def unfused_fn(name, shape, device, dtype):
    """The same work through cupynet's existing ops (Tensors, autograd), or None where there is none."""
    from cupynet.nn import functional as F  # noqa: PLC0415
    rng = np.random.default_rng(0)
    if name == "softmax_xent":
        x = cn.tensor(rng.standard_normal(shape).astype(dtype), device=device, requires_grad=True)
        t = cn.tensor(rng.integers(0, shape[1], shape[0]), device=device)
        return lambda: F.cross_entropy(x, t).backward()
    if name == "layer_norm":
        x = cn.tensor(rng.standard_normal(shape).astype(dtype), device=device, requires_grad=True)
        w = cn.ones(shape[1], device=device, requires_grad=True)
        return lambda: F.layer_norm(x, (shape[1],), w).sum().backward()
    if name == "bias_gelu":
        x = cn.tensor(rng.standard_normal(shape).astype(dtype), device=device, requires_grad=True)
        b = cn.zeros(shape[1], device=device, requires_grad=True)
        return lambda: F.gelu(x + b).sum().backward()
    if name == "batched_matmul_half":
        a = cn.tensor(rng.standard_normal(shape).astype(np.float16), device=device)
        b = cn.tensor(rng.standard_normal((shape[0], shape[2], shape[1])).astype(np.float16), device=device)
        return lambda: a @ b
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--dtype", default="float16", choices=["float16", "float32"])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    parser.add_argument("--emulated", action="store_true",
                        help="on the emulated CUDA device (CUPYNET_DEVICE=cuda-emulated); labelled: not GPU figures")
    args = parser.parse_args(argv)
    device = cn.device(args.device) if args.device else cn.default_device()
    xp = device.xp
    dtype = np.dtype(args.dtype)
    rows = []
    if args.emulated:
        print("EMULATED CUDA device on the CPU: NOT GPU figures\n")
    print("| op | shape | fused ms | unfused cupynet ms | speed-up |\n|---|---|---|---|---|")
    for name, shape in cases(args.tiny).items():
        fused_s = median_time(fused_fn(name, shape, xp, dtype), repeats=args.repeats, device_type=device.type)
        unfused = unfused_fn(name, shape, device, dtype)
        unfused_s = median_time(unfused, repeats=args.repeats, device_type=device.type) if unfused else None
        speedup = unfused_s / fused_s if unfused_s else None
        rows.append({"op": name, "shape": list(shape), "fused_ms": fused_s * 1e3,
                     "unfused_ms": None if unfused_s is None else unfused_s * 1e3, "speedup": speedup})
        print(f"| {name} | {shape} | {fused_s * 1e3:.3f} | "
              f"{'n/a' if unfused_s is None else f'{unfused_s * 1e3:.3f}'} | "
              f"{'n/a' if speedup is None else f'{speedup:.2f}'} |")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench_fused_{'emulated' if args.emulated else device.type}{'_tiny' if args.tiny else ''}.json"
    path.write_text(json.dumps({"benchmark": "bench_fused", "emulated": args.emulated, "environment": environment(),
                                "dtype": str(dtype),
                                "fused_kernels": os.environ.get("CUPYNET_FUSED_KERNELS", "1") != "0",
                                "results": rows}, indent=2))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

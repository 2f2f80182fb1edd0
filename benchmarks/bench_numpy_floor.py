"""How far cupynet's digits-MLP step is from the same step written by hand in NumPy (the CPU floor).

Run: PYTHONPATH=. python benchmarks/bench_numpy_floor.py [--repeats 2000]
Both run alternately, one step each per pair (see ``_timing.paired_times``). The hand-written step
does only the work itself: three GEMMs and bias adds, two relus, a softmax cross-entropy, the five
backward GEMMs, the masks, and SGD with momentum in place. Whatever cupynet spends beyond it is
framework cost: op dispatch, graph nodes, argument checks, optimizer bookkeeping.
"""

from __future__ import annotations

import os

# NOTE: one BLAS thread, as in the other CPU benchmarks: must be set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from _timing import environment, paired_times, print_json  # noqa: E402
from bench_overhead import mlp_cupynet  # noqa: E402

SIZES, BATCH = (64, 256, 128, 10), 64


def numpy_step():
    """A closure running one hand-written training step on fixed data."""
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params += [rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                   rng.uniform(-bound, bound, fan_out).astype(np.float32)]
    buffers = [np.zeros_like(p) for p in params]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    rows = np.arange(BATCH)
    w1, b1, w2, b2, w3, b3 = params

    def step():
        a1 = np.maximum(x @ w1.T + b1, 0)
        a2 = np.maximum(a1 @ w2.T + b2, 0)
        z = a2 @ w3.T + b3
        e = np.exp(z - z.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        g = prob / BATCH
        g[rows, y] -= 1 / BATCH
        grads = [None] * 6
        grads[4], grads[5], g = g.T @ a2, g.sum(axis=0), (g @ w3) * (a2 > 0)
        grads[2], grads[3], g = g.T @ a1, g.sum(axis=0), (g @ w2) * (a1 > 0)
        grads[0], grads[1] = g.T @ x, g.sum(axis=0)
        for p, buf, grad in zip(params, buffers, grads):
            buf *= np.float32(0.9)
            buf += grad
            p += np.float32(-0.01) * buf
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000, help="timed pairs")
    args = parser.parse_args()
    result = paired_times(mlp_cupynet(BATCH, SIZES), numpy_step(), pairs=args.repeats)
    print(f"digits MLP step, batch {BATCH}: cupynet {result['a_s'] * 1e6:.1f} us, NumPy by hand "
          f"{result['b_s'] * 1e6:.1f} us, ratio {result['ratio']:.2f} (IQR {result['ratio_q1']:.2f}-"
          f"{result['ratio_q3']:.2f}), {args.repeats} pairs")
    print_json("numpy_floor", {**result, "env": environment()})


if __name__ == "__main__":
    main()

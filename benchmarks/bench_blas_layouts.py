"""The GEMMs of a Linear layer, NumPy's BLAS against PyTorch's, at the shapes of the benchmarked small nets.

Run: PYTHONPATH=. python benchmarks/bench_blas_layouts.py [--pairs 2000]

A Linear layer runs three products per training step, each with its own operand layout:
forward ``x @ W.T`` (the second operand transposed: "NT"), the input gradient ``g @ W`` ("NN") and the
weight gradient ``g.T @ x`` ("TN"). cupynet calls NumPy's ``matmul`` (OpenBLAS in NumPy's wheels);
PyTorch calls its own BLAS (MKL in its x86 wheels). This prints, per shape and layout, the median of the
paired time ratios NumPy/torch (``_timing.paired_times``, one thread each): where a ratio is above 1, that
product costs cupynet more than PyTorch whatever cupynet's own code does around it.

Shapes: the digits MLP of ``bench_overhead.py`` (batch 64: 64-256-128-10) and the GPT of
``bench_gpt_primitives.py`` (512 rows: 64 -> 192, 64 -> 256, 256 -> 64).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from _timing import environment, paired_times, print_json  # noqa: E402

# (rows, in_features, out_features)
SHAPES = [(64, 64, 256), (64, 256, 128), (64, 128, 10), (512, 64, 192), (512, 64, 256), (512, 256, 64)]


def _products(xp_mm, x, w, g):
    """The three products of a Linear layer as closures: forward NT, input gradient NN, weight gradient TN."""
    return {"forward x@W.T (NT)": lambda: xp_mm(x, w.T),
            "grad input g@W (NN)": lambda: xp_mm(g, w),
            "grad weight g.T@x (TN)": lambda: xp_mm(g.T, x)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="timed pairs per product")
    args = parser.parse_args()
    import torch  # noqa: PLC0415
    torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    print(f"env: {environment()}, torch BLAS: {'mkl' if torch.backends.mkl.is_available() else 'other'}, "
          f"{args.pairs} pairs")
    print(f"{'rows, in, out':<16} {'product':<24} {'numpy us':>9} {'torch us':>9} {'ratio':>6} {'ratio IQR':>11}")
    rng = np.random.default_rng(0)
    for rows, n_in, n_out in SHAPES:
        x, w, g = (rng.standard_normal(s).astype(np.float32) for s in ((rows, n_in), (n_out, n_in), (rows, n_out)))
        ours = _products(np.matmul, x, w, g)
        theirs = _products(torch.mm, *(torch.tensor(a) for a in (x, w, g)))
        for name in ours:
            r = paired_times(ours[name], theirs[name], pairs=args.pairs, warmup=50)
            print(f"{str((rows, n_in, n_out)):<16} {name:<24} {r['a_s'] * 1e6:>9.1f} {r['b_s'] * 1e6:>9.1f} "
                  f"{r['ratio']:>6.2f} {r['ratio_q1']:>5.2f}-{r['ratio_q3']:<5.2f}")
            print_json("blas_layouts", {"shape": [rows, n_in, n_out], "product": name, "numpy_s": r["a_s"],
                                        "torch_s": r["b_s"], "ratio": r["ratio"], "ratio_q1": r["ratio_q1"],
                                        "ratio_q3": r["ratio_q3"]})


if __name__ == "__main__":
    main()

"""Training step of a small pre-norm transformer block stack: cupynet vs PyTorch, same run, fp32 and bf16 autocast.

Run: PYTHONPATH=. python benchmarks/bench_transformer.py [--repeats 300] [--cases fp32,bf16]
The model is ``cupynet.models.TransformerClassifier`` (d_model 64, 4 heads, 2 pre-norm GELU layers,
feed-forward 256, no dropout; 32 tokens of 8 features, batch 16) and its PyTorch twin with the same
weights; both train with AdamW. The two frameworks step alternately, one step each per pair, one BLAS
thread each; the ratio is the median of the per-pair time ratios (cupynet / torch), with its
interquartile range (see ``_timing.paired_times``).
Targets (issue 15): fp32 step <= 1.25x torch; bf16 autocast step < 1.0x torch.
"""

from __future__ import annotations

import os

# NOTE: both frameworks get the same number of BLAS threads (default 1, override with
# OPENBLAS_NUM_THREADS=N): must be set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse

import numpy as np
from _timing import environment, paired_times, print_json

import cupynet as cn

SEQ, TOKEN, BATCH, CLASSES = 32, 8, 16, 10
MODEL = {"d_model": 64, "nhead": 4, "num_layers": 2, "dim_feedforward": 256, "dropout": 0.0}


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((BATCH, SEQ * TOKEN)).astype(np.float32), rng.integers(0, CLASSES, BATCH)


def _model():
    from cupynet.models import TransformerClassifier  # noqa: PLC0415
    cn.manual_seed(0)
    return TransformerClassifier((SEQ * TOKEN,), CLASSES, token_size=TOKEN, **MODEL)


def cupynet_step(amp):
    """One AdamW step of the cupynet model (bf16 autocast when ``amp``).

    Args:
        amp: run the forward pass under bf16 autocast.
    """
    model = _model()
    opt = cn.optim.AdamW(model.parameters(), lr=1e-3)
    xs, ys = _data()
    x, y = cn.tensor(xs), cn.tensor(ys)

    def step():
        opt.zero_grad()
        with cn.amp.autocast("cpu", dtype=cn.bfloat16, enabled=amp):
            loss = cn.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def torch_step(amp, torch):
    """The same step in PyTorch, weights copied from cupynet's model.

    Args:
        amp: run the forward pass under bf16 autocast.
        torch: the torch module.
    """
    from _torch_twin_transformer import transformer_twin  # noqa: PLC0415
    model = transformer_twin(_model(), torch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    xs, ys = _data()
    x, y = torch.tensor(xs), torch.tensor(ys)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300, help="timed pairs (one step of each side per pair)")
    parser.add_argument("--cases", default="fp32,bf16", help="comma-separated: fp32, bf16")
    args = parser.parse_args()
    cases = args.cases.split(",")
    if not set(cases) <= {"fp32", "bf16"}:
        parser.error(f"--cases: expected a comma-separated subset of fp32,bf16, got {args.cases!r}")
    import torch  # noqa: PLC0415
    torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    print(f"env: {environment()}, {args.repeats} pairs, model {MODEL}, seq {SEQ}, batch {BATCH}")
    print(f"{'case':<34} {'cupynet':>10} {'pytorch':>10} {'ratio':>8} {'ratio IQR':>12}")
    for case in cases:
        amp = case == "bf16"
        paired = paired_times(cupynet_step(amp), torch_step(amp, torch), pairs=args.repeats)
        name = f"transformer step, {case}{' autocast' if amp else ''}"
        print(f"{name:<34} {paired['a_s'] * 1e3:>8.2f}ms {paired['b_s'] * 1e3:>8.2f}ms {paired['ratio']:>8.2f} "
              f"{paired['ratio_q1']:>5.2f}-{paired['ratio_q3']:.2f}")
        print_json("transformer_step", {"case": name, "cupynet_s": paired["a_s"], "torch_s": paired["b_s"],
                                        "ratio": paired["ratio"], "ratio_q1": paired["ratio_q1"],
                                        "ratio_q3": paired["ratio_q3"]})


if __name__ == "__main__":
    main()

"""A tiny GPT written from primitives, nanoGPT's way: cupynet vs PyTorch training steps, stepped alternately.

Run: PYTHONPATH=. python benchmarks/bench_gpt_primitives.py [--pairs 300] [--warmup 20]

The model (``make_gpt``) is one source for both frameworks, the way nanoGPT writes it: token and position
``Embedding``, pre-norm blocks of ``LayerNorm`` -> one ``Linear`` for q, k, v -> ``split`` -> ``view`` ->
``transpose`` -> ``scaled_dot_product_attention(is_causal=True)`` -> ``transpose`` -> ``contiguous`` ->
``view`` -> ``Linear``, and ``LayerNorm`` -> ``Linear`` -> ``GELU`` -> ``Linear``, residual adds, a final
``LayerNorm``, an LM head tied to the token embedding, cross-entropy over every token, AdamW. Sizes: 2
blocks, width 64, 4 heads, sequence 32, batch 16, vocabulary 64, fp32, no dropout. Tensors are tiny, so
the step time is mostly per-op host cost (dispatch, graph, backward engine), which is what this measures.

Both sides get the same weights and data and one thread (``OPENBLAS_NUM_THREADS``, default 1;
``torch.set_num_threads``); each pair times one step of each; the ratio printed is the median of the
per-pair time ratios (cupynet / torch; lower is better) with its interquartile range
(``_timing.paired_times``). Target (issue 28): <= 1.25x torch in fp32.
"""

from __future__ import annotations

import os

# NOTE: the same number of BLAS threads for both (default 1): set before NumPy is imported
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402
from _timing import environment, paired_times, print_json  # noqa: E402

import cupynet as cn  # noqa: E402

CONFIG = {"n_layer": 2, "n_embd": 64, "n_head": 4, "block_size": 32, "vocab_size": 64}
BATCH = 16


def make_gpt(tt, n_layer, n_embd, n_head, block_size, vocab_size):
    """nanoGPT's model, written once against a torch-like module ``tt`` (``torch`` or ``cupynet``).

    Args:
        tt: the framework module (has ``nn``, ``nn.functional`` and ``arange``).
        n_layer: transformer blocks.
        n_embd: width.
        n_head: attention heads.
        block_size: the longest sequence.
        vocab_size: tokens.
    """
    nn, F = tt.nn, tt.nn.functional  # noqa: N806 - nanoGPT's names

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.size()  # noqa: N806
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.wte.weight = self.lm_head.weight  # NOTE: weight tying, as nanoGPT

        def forward(self, idx, targets):
            b, t = idx.size()
            pos = tt.arange(0, t, dtype=tt.long)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def _data():
    rng = np.random.default_rng(0)
    shape = (BATCH, CONFIG["block_size"])
    return rng.integers(0, CONFIG["vocab_size"], shape), rng.integers(0, CONFIG["vocab_size"], shape)


def _init(model):
    """nanoGPT's initialisation (normal(0, 0.02), zero biases, scaled residual projections), from one seed."""
    rng = np.random.default_rng(1)
    for name, p in model.named_parameters():
        std = 0.02 / math.sqrt(2 * CONFIG["n_layer"]) if name.endswith("c_proj.weight") else 0.02
        if name.endswith("bias"):
            values = np.zeros(p.shape, np.float32)
        elif "ln_" in name:
            values = np.ones(p.shape, np.float32)
        else:
            values = (rng.standard_normal(p.shape) * std).astype(np.float32)
        p.data = cn.tensor(values)


def _stepper(model, opt, idx, targets):
    def step():
        opt.zero_grad()
        model(idx, targets).backward()
        opt.step()
    step.first_loss = float(model(idx, targets).item())  # NOTE: a check that both sides compute the same model
    return step


def cupynet_step():
    """A training step of the cupynet GPT (AdamW), as a closure, and the model."""
    model = make_gpt(cn, **CONFIG)
    _init(model)
    opt = cn.optim.AdamW(model.parameters(), lr=1e-3)
    idx, targets = _data()
    return _stepper(model, opt, cn.tensor(idx), cn.tensor(targets)), model


def torch_step(ours, torch):
    """The same step in PyTorch, the weights copied from ``ours``.

    Args:
        ours: the cupynet model.
        torch: the torch module.
    """
    model = make_gpt(torch, **CONFIG)
    state = {k: torch.tensor(cn.backend.to_numpy(v.array)) for k, v in ours.state_dict().items()}
    model.load_state_dict(state)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx, targets = _data()
    return _stepper(model, opt, torch.tensor(idx), torch.tensor(targets))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300, help="timed pairs (one step of each side per pair)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed pairs first")
    args = parser.parse_args()
    import torch  # noqa: PLC0415
    torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
    print(f"env: {environment()}, torch threads: {torch.get_num_threads()}, {args.pairs} pairs, "
          f"model {CONFIG}, batch {BATCH}")
    ours, model = cupynet_step()
    theirs = torch_step(model, torch)
    print(f"loss before training: cupynet {ours.first_loss:.6f}, torch {theirs.first_loss:.6f}")
    r = paired_times(ours, theirs, pairs=args.pairs, warmup=args.warmup)
    name = "primitives GPT step, fp32"
    print(f"{'case':<30} {'cupynet ms':>10} {'torch ms':>9} {'ratio (ours/torch)':>19} {'ratio IQR':>12}")
    print(f"{name:<30} {r['a_s'] * 1e3:>10.2f} {r['b_s'] * 1e3:>9.2f} {r['ratio']:>19.2f} "
          f"{r['ratio_q1']:>5.2f}-{r['ratio_q3']:<5.2f}")
    print_json("gpt_primitives_step", {"case": name, "cupynet_s": r["a_s"], "torch_s": r["b_s"],
                                       "ratio": r["ratio"], "ratio_q1": r["ratio_q1"], "ratio_q3": r["ratio_q3"],
                                       "pairs": args.pairs, "config": CONFIG, "batch": BATCH})


if __name__ == "__main__":
    main()

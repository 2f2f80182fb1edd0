"""Kernel launches and host syncs per training step, counted on the emulated CUDA device.

Run: PYTHONPATH=. python benchmarks/bench_launches.py [--quick] [--warmup 2] [--steps 3]

What the numbers mean. A launch is one kernel the step puts on the GPU (elementwise, reduction,
matmul, copy, fill, RawKernel; a host-to-device upload counts as one), as counted by
``cupynet.emulated_cuda.launches()``. On a real GPU each launch costs the host several microseconds
(CuPy's Python dispatch plus the CUDA launch, ~5-20 us), whatever the kernel's size: launches x that
cost is the floor of a small net's step time, reached when the GPU is faster than the host can feed
it. A host sync is a read of device memory by the host (``cupynet.emulated_cuda.host_syncs()``);
each one waits for every queued kernel, so a step that syncs cannot overlap the host with the GPU.
AMP's steps should make none.

Nets (small: the counts depend on the layers, not their widths): an MLP (Linear-ReLU-Linear), a CNN
(Conv2d-BatchNorm2d-ReLU-MaxPool2d-Linear) and a one-block GPT (embeddings, pre-norm causal
MultiheadAttention and MLP, tied head, next-token cross_entropy). Modes: fp32; fp16 autocast with a
GradScaler (scale, unscale_, step, update); bf16 autocast without a scaler. Every step clips the
gradient norm (``clip_grad_norm_``). Each row is the median over ``--steps`` steps after
``--warmup`` steps (min-max when they differ: a multi-tensor kernel's chunk table is cached by the
gradients' pointers, so it is uploaded again when the allocator hands out new addresses).

The emulated device is selected here (``CUPYNET_DEVICE=cuda-emulated``, set before cupynet is
imported); the script refuses to run under any other ``CUPYNET_DEVICE``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import statistics
import subprocess
import sys

EMULATED = "cuda-emulated"

if os.environ.setdefault("CUPYNET_DEVICE", EMULATED) != EMULATED:
    sys.exit(f"bench_launches.py counts launches on the emulated CUDA device, but CUPYNET_DEVICE="
             f"{os.environ['CUPYNET_DEVICE']!r}; unset it or set it to {EMULATED!r}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import environment, print_json  # noqa: E402

import cupynet as cn  # noqa: E402
from cupynet import nn, optim  # noqa: E402
from cupynet.amp import GradScaler, autocast  # noqa: E402
from cupynet.cuda import emulated  # noqa: E402

F = nn.functional
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODES = {"fp32": None, "fp16+GradScaler": cn.float16, "bf16": cn.bfloat16}

OPTIMIZERS = {
    "AdamW": lambda params: optim.AdamW(params, lr=1e-3),
    "AdamW(fused=False)": lambda params: optim.AdamW(params, lr=1e-3, fused=False),
    "SGD(momentum=0.9)": lambda params: optim.SGD(params, lr=1e-2, momentum=0.9),
}
"""The optimizers, by the name printed. ``fused=None`` (the default) runs the fused kernels on CUDA fp32."""


class GPTBlock(nn.Module):
    """A one-block GPT: token + position embeddings, pre-norm causal self-attention and MLP, tied LM head.

    Args:
        vocab: vocabulary size.
        width: model width.
        heads: attention heads.
        context: the sequence length.
    """

    def __init__(self, vocab=16, width=16, heads=2, context=8):
        super().__init__()
        self.vocab = vocab
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.ln_attn, self.ln_mlp, self.ln_out = (nn.LayerNorm(width, bias=False) for _ in range(3))
        self.attn = nn.MultiheadAttention(width, heads, bias=False, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width, bias=False), nn.GELU(),
                                 nn.Linear(2 * width, width, bias=False))
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(context))

    def forward(self, idx):
        """Next-token logits (N, T, vocab) for token ids ``idx`` (N, T)."""
        x = self.tokens(idx) + self.positions(cn.arange(idx.shape[1], device=idx.device))
        h = self.ln_attn(x)
        x = x + self.attn(h, h, h, need_weights=False, attn_mask=self.causal, is_causal=True)[0]
        x = x + self.mlp(self.ln_mlp(x))
        return self.head(self.ln_out(x))


def _mlp():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    return model, cn.randn(8, 16), cn.randint(0, 8, (8,)), F.cross_entropy


def _cnn():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 8))
    return model, cn.randn(4, 3, 8, 8), cn.randint(0, 8, (4,)), F.cross_entropy


def _gpt():
    model = GPTBlock()
    text = cn.randint(0, model.vocab, (4, 9))

    def next_token_loss(logits, targets):
        return F.cross_entropy(logits.reshape(-1, model.vocab), targets.reshape(-1))

    return model, text[:, :-1], text[:, 1:], next_token_loss


NETS = {"MLP": _mlp, "CNN": _cnn, "GPT block": _gpt}


def training_step(net, mode, optimizer):
    """A function running one training step of ``net`` in ``mode`` with ``optimizer``, all on "cuda".

    Args:
        net: a key of ``NETS``.
        mode: a key of ``MODES``.
        optimizer: a key of ``OPTIMIZERS``.
    """
    cn.manual_seed(0)
    model, x, y, loss_fn = NETS[net]()
    model, x, y = model.to("cuda"), x.to("cuda"), y.to("cuda")
    opt = OPTIMIZERS[optimizer](model.parameters())
    dtype = MODES[mode]
    scaler = GradScaler("cuda", enabled=dtype == cn.float16)

    def step():
        opt.zero_grad()
        with autocast("cuda", dtype=dtype or cn.float16, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(opt)
        scaler.update()

    return step


def count(step, warmup, steps):
    """Launches and host syncs of each of ``steps`` calls of ``step`` after ``warmup`` calls.

    Args:
        step: a function of no arguments.
        warmup: uncounted calls first (optimizer state, scaler state, chunk tables are created there).
        steps: counted calls.
    """
    for _ in range(warmup):
        step()
    launches, syncs = [], []
    for _ in range(steps):
        launches_before, syncs_before = emulated.launches(), emulated.host_syncs()
        step()
        launches.append(emulated.launches() - launches_before)
        syncs.append(emulated.host_syncs() - syncs_before)
    return launches, syncs


def _spread(values) -> str:
    median = statistics.median(values)
    text = f"{median:g}"
    return text if min(values) == max(values) else f"{text} ({min(values)}-{max(values)})"


def _commit() -> str:
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "HEAD") or "unknown (not a git checkout)"
    return commit + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def _command() -> str:
    path = os.environ.get("PYTHONPATH")
    return ("" if path is None else f"PYTHONPATH={shlex.quote(path)} ") + "python " + shlex.join(sys.argv)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=2, help="uncounted steps per case")
    parser.add_argument("--steps", type=int, default=3, help="counted steps per case")
    parser.add_argument("--quick", action="store_true", help="a smoke run: the MLP, fp32 and fp16, AdamW, 1+1 steps")
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.steps < 1:
        parser.error(f"--warmup must be >= 0 and --steps >= 1, got {args.warmup} and {args.steps}")
    reason = emulated.unavailable_reason()
    if reason is not None:
        sys.exit(f"bench_launches.py: the emulated CUDA device cannot run here: {reason}")
    nets, modes, optimizers = list(NETS), list(MODES), list(OPTIMIZERS)
    if args.quick:
        nets, modes, optimizers, args.warmup, args.steps = ["MLP"], ["fp32", "fp16+GradScaler"], ["AdamW"], 1, 1
    print(f"# command: {_command()}")
    print(f"# cupynet commit: {_commit()}")
    print(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
    print(f"# env: {environment()}")
    print(f"# device: the emulated CUDA device (cupynet.emulated_cuda, CUPYNET_DEVICE={EMULATED}): counts, not times")
    print(f"# per step, after {args.warmup} warm-up steps; median of {args.steps} steps (min-max when they differ)")
    print(f"{'net':<10} {'mode':<16} {'optimizer':<19} {'launches/step':>14} {'host syncs/step':>16}")
    for net in nets:
        for mode in modes:
            for optimizer in optimizers:
                launches, syncs = count(training_step(net, mode, optimizer), args.warmup, args.steps)
                print(f"{net:<10} {mode:<16} {optimizer:<19} {_spread(launches):>14} {_spread(syncs):>16}",
                      flush=True)
                print_json("launches", {"net": net, "mode": mode, "optimizer": optimizer, "launches": launches,
                                        "host_syncs": syncs})


if __name__ == "__main__":
    main()

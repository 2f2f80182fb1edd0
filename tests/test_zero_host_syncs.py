"""AMP training steps read nothing back to the host: zero host syncs per step on the emulated CUDA device.

Each case trains a small net on ``cupynet.emulated_cuda`` (CuPy's rules on the CPU, every device-to-host
read counted) with the full AMP recipe: ``autocast``, ``GradScaler.scale(loss).backward()``,
``unscale_``, ``clip_grad_norm_``, ``GradScaler.step`` and ``update``. After a couple of warm-up steps,
``host_syncs()`` must not move. A failure names what read the host (``sync_log()`` of that step).

Run with ``pytest --device cuda-emulated tests/test_zero_host_syncs.py``.
"""

import os

import numpy as np
import pytest

if os.environ.get("CUPYNET_CUDA") != "emulated":  # NOTE: what `pytest --device cuda-emulated` sets
    pytest.skip("counts host syncs on the emulated CUDA device; run with `pytest --device cuda-emulated`",
                allow_module_level=True)

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler, autocast
from cupynet.cuda import emulated

F = nn.functional

WARMUP = 2
"""Steps before counting: the first steps create optimizer state, scaler state and chunk tables."""

STEPS = 2
"""Counted steps per case, each with zero host syncs."""

AUTOCAST = {"float16": cn.float16, "bfloat16": cn.bfloat16}

OPTIMIZERS = [("SGD", {"momentum": 0.9}), ("Adam", {}), ("AdamW", {"weight_decay": 0.01})]


class GPTBlock(nn.Module):
    """A one-block GPT: token + position embeddings, pre-norm causal self-attention and MLP, tied LM head.

    NOTE: no biases and a head tied to the token embedding, as in GPT-2 style models with bias=False;
    it also keeps the parameter count small, and each emulated multi-tensor launch runs a CPU thread
    per CUDA thread of a block per tensor.

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


def _mlp(rng):
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    return model, rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 8, 8), F.cross_entropy


def _cnn(rng):
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 8))
    return model, rng.standard_normal((4, 3, 8, 8)).astype(np.float32), rng.integers(0, 8, 4), F.cross_entropy


def _gpt(rng):
    model = GPTBlock()
    text = rng.integers(0, model.vocab, (4, 9))

    def next_token_loss(logits, targets):
        return F.cross_entropy(logits.reshape(-1, model.vocab), targets.reshape(-1))

    return model, text[:, :-1], text[:, 1:], next_token_loss


NETS = {"mlp": _mlp, "cnn": _cnn, "gpt": _gpt}


class Run:
    """One net, optimizer and GradScaler on the emulated device, and its AMP training step.

    Args:
        net: a key of ``NETS``.
        dtype: the autocast dtype's name (a key of ``AUTOCAST``).
        optimizer: an optimizer class name in ``cupynet.optim``.
        options: its keyword arguments (besides ``lr``).
    """

    def __init__(self, net, dtype, optimizer, **options):
        cn.manual_seed(0)
        model, self.x, self.y, self.loss_fn = NETS[net](np.random.default_rng(0))
        self.model = model.to("cuda")
        self.optimizer = getattr(optim, optimizer)(self.model.parameters(), lr=1e-2, **options)
        self.scaler = GradScaler("cuda")
        self.dtype = AUTOCAST[dtype]

    def step(self, after_backward=None):
        """One AMP training step; the batch comes from the host, as a DataLoader's does (an upload, no sync).

        Args:
            after_backward: called between backward and ``unscale_`` (to tamper with the gradients).
        """
        x, y = cn.tensor(self.x, device="cuda"), cn.tensor(self.y, device="cuda")
        self.optimizer.zero_grad()
        with autocast("cuda", dtype=self.dtype):
            loss = self.loss_fn(self.model(x), y)
        self.scaler.scale(loss).backward()
        if after_backward is not None:
            after_backward()
        self.scaler.unscale_(self.optimizer)
        nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def host_params(self):
        """The parameters as NumPy arrays (host syncs: call it outside a counted step)."""
        return [p.array.get() for p in self.model.parameters()]


def _assert_no_host_sync(step, what):
    """Run ``step()`` and fail, naming every read, if it synced with the host.

    Args:
        step: a function of no arguments.
        what: the case, for the message.
    """
    before = emulated.host_syncs()
    with emulated.recording_syncs() as log:
        step()
    syncs = emulated.host_syncs() - before
    assert syncs == 0, f"{what}: {syncs} host sync(s) in one step after warm-up; they read: {list(log)}"


def _train(run, what):
    for _ in range(WARMUP):
        run.step()
    for _ in range(STEPS):
        _assert_no_host_sync(run.step, what)


def test_the_counter_sees_a_host_read():
    # NOTE: guards every test below against passing vacuously: a read the host makes is counted and logged
    before = emulated.host_syncs()
    with emulated.recording_syncs() as log:
        cn.ones(3, device="cuda").sum().item()
    assert emulated.host_syncs() - before == 1 and len(log) == 1


@pytest.mark.parametrize("dtype", sorted(AUTOCAST))
@pytest.mark.parametrize("net", sorted(NETS))
def test_amp_step_makes_no_host_sync(net, dtype):
    _train(Run(net, dtype, "AdamW"), f"{net}, {dtype} autocast, AdamW")


@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
@pytest.mark.parametrize(("optimizer", "options"), OPTIMIZERS, ids=[name for name, _ in OPTIMIZERS])
def test_optimizer_steps_and_skips_an_overflow_with_no_host_sync(optimizer, options, fused):
    run = Run("mlp", "float16", optimizer, fused=fused, **options)
    what = f"mlp, float16 autocast, {optimizer}(fused={fused})"
    _train(run, what)
    before, scale = run.host_params(), run.scaler.get_scale()

    def overflow():
        grad = next(iter(run.model.parameters())).grad
        grad[(0,) * grad.ndim] = float("inf")  # NOTE: what a scaled fp16 gradient that overflowed looks like

    _assert_no_host_sync(lambda: run.step(after_backward=overflow), f"{what}, an inf in a gradient")
    for old, new in zip(before, run.host_params()):
        np.testing.assert_array_equal(new, old, err_msg=f"{what}: the overflowed step changed a parameter")
    assert run.scaler.get_scale() == scale * 0.5
    _assert_no_host_sync(run.step, f"{what}, the step after the skip")
    assert any(not np.array_equal(new, old) for old, new in zip(before, run.host_params()))

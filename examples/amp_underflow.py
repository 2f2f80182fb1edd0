"""Why fp16 gradients need loss scaling: count the gradient values that flush to zero, then watch a GradScaler.

Run:  python examples/amp_underflow.py [--steps 200] [--plot scale.png]

Part 1 computes the fp32 gradients of a small MLP and stores them in float16 the way
a half-precision backward pass would: unscaled, and multiplied by a loss scale. It
prints how many non-zero values became 0 (underflow) or inf (overflow).
Part 2 trains the MLP under fp16 autocast with a GradScaler that starts far too high
and prints (and plots, when matplotlib is installed) the scale and the skipped steps.
"""

from __future__ import annotations

import argparse

import numpy as np

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler, autocast
from cupynet.amp.diagnostics import format_overflow


def make_model():
    """A 4-layer MLP whose gradients span many orders of magnitude."""
    return nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 128),
                         nn.Tanh(), nn.Linear(128, 10))


def make_data(n=512, seed=0):
    """Synthetic 10-class data: a random linear teacher on Gaussian inputs."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 64)).astype(np.float32)
    y = (x @ rng.standard_normal((64, 10)).astype(np.float32)).argmax(1)
    return cn.tensor(x), cn.tensor(y)


def fp32_gradients(model, x, y):
    """All parameter gradients of the mean cross-entropy, in fp32, as one flat NumPy array."""
    model.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    return np.concatenate([p.grad.numpy().ravel() for p in model.parameters()])


def count_in_fp16(grads, scale):
    """How many non-zero fp32 gradient values become 0, subnormal or inf when stored as ``fp16(g * scale)``."""
    with np.errstate(over="ignore"):
        half = (grads.astype(np.float64) * scale).astype(np.float16)
    nonzero = grads != 0
    tiny = np.finfo(np.float16).tiny  # NOTE: 6.1e-5, the smallest normal fp16; below it precision is lost
    return {"zero": int((nonzero & (half == 0)).sum()), "subnormal": int((nonzero & (half != 0)
            & (np.abs(half) < tiny)).sum()), "inf": int(np.isinf(half).sum()), "total": int(nonzero.sum())}


def part1(model, x, y, title):
    grads = fp32_gradients(model, x, y)
    print(f"\n== {title} ==")
    print(f"{grads.size} gradient values; |g| from {np.abs(grads[grads != 0]).min():.2e} "
          f"to {np.abs(grads).max():.2e}")
    print(f"{'loss scale':>12} {'flushed to 0':>14} {'subnormal':>10} {'inf':>6}")
    lost = {}
    for scale in (1.0, 2.0 ** 8, 2.0 ** 16, 2.0 ** 24, 2.0 ** 32):
        c = count_in_fp16(grads, scale)
        print(f"{scale:>12.0f} {c['zero']:>8} ({100 * c['zero'] / c['total']:4.1f}%) {c['subnormal']:>10} "
              f"{c['inf']:>6}")
        lost[scale] = 100 * (c["zero"] + c["subnormal"]) / c["total"]
    # NOTE: a subnormal fp16 keeps fewer than 10 significant bits (and a GPU kernel compiled with -ftz
    # flushes it to 0 outright): underflow is the zeros and the subnormals together
    print(f"underflow (flushed to 0 or subnormal): {lost[1.0]:.1f}% of the values unscaled, "
          f"{lost[2.0 ** 16]:.1f}% at the default loss scale 65536")


def part2(model, x, y, steps, plot):
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = GradScaler("cpu", init_scale=2.0 ** 40, growth_interval=50, history_size=steps)
    scaler.register_model(model)
    for step in range(steps):
        opt.zero_grad()
        with autocast("cpu", dtype="float16"), np.errstate(over="ignore", invalid="ignore"):
            loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step == 0:
            first = format_overflow(scaler.last_overflow())
    print("\n== training under fp16 autocast with GradScaler(init_scale=2**40) ==")
    history = scaler.history()  # NOTE: one transfer for the whole run
    print(f"after {steps} steps: loss {loss.item():.4f}, scale {scaler.get_scale():g}, "
          f"skipped steps {scaler.skipped_steps()} (the first ones, while the scale came down from 2**40)")
    print("step 1:", first[:200] + ("..." if len(first) > 200 else ""))
    if plot:
        _plot(history, plot)


def _plot(history, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    steps = [h[0] for h in history]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.semilogy(steps, [h[1] for h in history], label="loss scale")
    skipped = [h[0] for h in history if h[2]]
    ax.scatter(skipped, [history[s - steps[0]][1] for s in skipped], color="red", s=12, label="skipped step")
    ax.set_xlabel("step")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot written to {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--plot", default="amp_underflow.png", help="output image ('' for none)")
    args = parser.parse_args(argv)
    cn.manual_seed(0)
    model = make_model()
    x, y = make_data()
    part1(model, x, y, "gradients at initialisation, stored in fp16")
    part2(model, x, y, args.steps, args.plot)
    part1(model, x, y, "gradients after training (small loss, small gradients), stored in fp16")


if __name__ == "__main__":
    main()

"""On a GPU: AMP training steps (autocast float16, GradScaler, Adam) against the same steps on the CPU.

Each model starts from the same fp32 weights on both devices and trains two steps on the same
batch, so the second step runs on optimizer state the GPU made. The GPU side runs cupynet's CUDA
path end to end: cuBLAS GemmEx in fp16 with fp32 compute, the fused kernels (softmax cross-entropy,
layer norm, bias + GELU, im2col), the fused unscale and the fused Adam. The CPU side computes in fp32
and rounds each ``lower`` op's result to float16, which is what tensor cores give up to the order of
the fp32 sums (DESIGN.md, "AMP numerics").

NOTE: the bounds are relative L2 distances over whole tensors, not per element, and are not yet
calibrated on a GPU. A summation order that differs between cuBLAS and NumPy may move a float16
result by one ulp (~5e-4 relative), which can change a max pool's pick or the sign of a near-zero
gradient: local moves, far below the bounds. A wrong kernel, a missed unscale or a cast in the wrong
place moves whole tensors past them; ``test_the_comparison_catches_a_wrong_step`` checks that a 50 %
error in Adam's lr and another batch both fail. (For scale: the same steps with autocast off, fp32
throughout, differ from the fp16 ones by 0.07 (gradients) and 0.17 (updates) in the CNN's first step,
where float16 makes max-pool ties, and by under 5e-3 in the MLP and the transformer.)
"""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn, optim
from cupynet.models import build_model

MODELS = {  # model: (sample shape, batch, build_model kwargs); tiny, so the CPU side takes well under a second
    "mlp": ((32,), 16, {"hidden": (64, 64)}),
    "cnn": ((3, 8, 8), 8, {"channels": (4, 8), "hidden": 16}),
    "transformer": ((8 * 4,), 4, {"d_model": 32, "nhead": 2, "num_layers": 2, "dim_feedforward": 64,
                                  "dropout": 0.0, "token_size": 4}),
}
NUM_CLASSES = 10
LR = 1e-3
EPS = 1e-4  # NOTE: not 1e-8: Adam's first steps move each element by about lr * sign(grad), so a gradient that is
# zero in exact arithmetic (an attention key bias) but rounding noise in practice would move by a random full lr
BOUNDS = {"loss": 1e-2, "grads": 5e-2, "updates": 5e-2}  # relative L2 distance, per quantity and step


def host(array):
    """A float64 NumPy copy of a NumPy or device array."""
    return np.asarray(cn.backend.to_numpy(array), dtype=np.float64)


def amp_steps(name, device, steps=2, lr=LR, seed=0):
    """Train ``steps`` AMP steps of model ``name`` on ``device``; what each step did, on the host.

    Args:
        name: a key of ``MODELS``.
        device: "cpu" or "cuda".
        steps: how many steps.
        lr: Adam's learning rate.
        seed: the batch's seed.

    Returns:
        A list with one dict per step: ``loss`` (float), ``grads`` and ``updates`` (lists of float64
        arrays, the unscaled gradients and the parameter changes), ``found_inf`` and ``scale``.
    """
    shape, batch, kw = MODELS[name]
    device = cn.device(device)
    cn.manual_seed(0)
    with cn.device("cpu"):  # NOTE: the same initial weights on both devices: made on the CPU, then moved
        model = build_model(name, shape, NUM_CLASSES, **kw)
    model.to(device)
    rng = np.random.default_rng(seed)
    x = cn.tensor(rng.standard_normal((batch, *shape)).astype(np.float32), device=device)
    y = cn.tensor(rng.integers(0, NUM_CLASSES, batch), device=device)
    params = list(model.parameters())
    opt = optim.Adam(params, lr=lr, eps=EPS)
    scaler = cn.amp.GradScaler(device.type, init_scale=1024.0)  # NOTE: small enough that no step overflows
    record = []
    for _ in range(steps):
        before = [host(p.array) for p in params]
        opt.zero_grad()
        with cn.amp.autocast(device.type, dtype=cn.float16):
            loss = nn.functional.cross_entropy(model(x), y)
        assert loss.dtype == cn.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grads = [host(p.grad.array) for p in params]
        _, found_inf = scaler.step(opt, return_found_inf=True)
        scaler.update()
        record.append({"loss": float(host(loss.array)), "grads": grads, "found_inf": float(host(found_inf.array)),
                       "updates": [host(p.array) - b for p, b in zip(params, before)], "scale": scaler.get_scale()})
    return record


def relative_l2(got, want):
    """||got - want|| / ||want|| over a list of arrays (or a scalar)."""
    flat = lambda x: np.concatenate([np.ravel(a) for a in x]) if isinstance(x, list) else np.atleast_1d(x)  # noqa: E731
    got, want = flat(got), flat(want)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), np.finfo(np.float64).tiny))


def compare(got, want):
    """Every step of ``got`` within ``BOUNDS`` of ``want``; the AssertionError names the first step and quantity
    that is not."""
    assert len(got) == len(want)
    for step, (g, w) in enumerate(zip(got, want)):
        assert g["found_inf"] == w["found_inf"] == 0.0, f"step {step}: found_inf {g['found_inf']} vs {w['found_inf']}"
        assert g["scale"] == w["scale"], f"step {step}: loss scale {g['scale']} vs {w['scale']}"
        for key, bound in BOUNDS.items():
            distance = relative_l2(g[key], w[key])
            assert distance <= bound, f"step {step}: {key} differ by {distance:.3g} (relative L2), bound {bound}"


@pytest.mark.cuda  # needs CuPy and a usable CUDA GPU: runs under `pytest --device cuda` (conftest)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_amp_steps_on_the_gpu_match_the_cpu(name):
    compare(amp_steps(name, "cuda"), amp_steps(name, "cpu"))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_comparison_catches_a_wrong_step(name):
    """The bounds are not vacuous: the CPU steps against themselves pass; with Adam's lr 50 % off, or on another
    batch, they fail."""
    want = amp_steps(name, "cpu")
    compare(amp_steps(name, "cpu"), want)
    with pytest.raises(AssertionError, match="updates differ"):
        compare(amp_steps(name, "cpu", lr=LR * 1.5), want)
    with pytest.raises(AssertionError, match="loss differ|grads differ"):
        compare(amp_steps(name, "cpu", seed=1), want)

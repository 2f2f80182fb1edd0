"""Training parity with PyTorch: same initial weights and batches, 100 steps, every loss within the oracle's spread.

NOTE: the tolerance is the oracle's own sensitivity, not a number tuned on one
CPU: a twin of the torch model starts from weights nudged by one ulp (random
direction per element) and trains on the same batches. How far its loss drifts
from the plain torch run is how far rounding alone moves this training run
(summation order in GEMMs differs between BLAS builds and CPUs). cupynet's loss
may differ from torch's by ``SPREAD_FACTOR`` times that drift so far, and never
by less than ``SPREAD_FACTOR`` ulps of the loss.

Also: optimizer and scheduler state_dict round trips give identical continuations.
"""

import copy
import os
import tempfile

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn, optim

torch = pytest.importorskip("torch")

STEPS = 100
SPREAD_FACTOR = 64


def _batches(shape, n_classes, seed=0, batch=32):
    rng = np.random.default_rng(seed)
    for _ in range(STEPS):
        yield rng.standard_normal((batch, *shape)).astype(np.float32), rng.integers(0, n_classes, batch)


def _mlp_pair():
    cn.manual_seed(0)
    ours = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 5))
    theirs = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16),
                                 torch.nn.ReLU(), torch.nn.Linear(16, 5))
    return ours, theirs, (20,), 5


def _cnn_pair():
    cn.manual_seed(0)
    ours = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 8, 3),
                         nn.ReLU(), nn.Flatten(), nn.Linear(8 * 2 * 2, 5))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                 torch.nn.Conv2d(4, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                 torch.nn.Linear(8 * 2 * 2, 5))
    return ours, theirs, (1, 8, 8), 5


def _copy_weights(ours, theirs):
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})


def _nudged_twin(theirs, seed=9):
    """A copy of the torch model with every weight moved one ulp up or down at random."""
    twin = copy.deepcopy(theirs)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in twin.parameters():
            a = p.numpy()
            up, down = np.nextafter(a, np.float32(np.inf)), np.nextafter(a, np.float32(-np.inf))
            p.copy_(torch.tensor(np.where(rng.random(a.shape) < 0.5, up, down)))
    return twin


def _torch_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    opt.step()
    return loss.item()


OPTIMIZERS = {
    "sgd_momentum": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4)),
    "adamw": (lambda p: optim.AdamW(p, lr=3e-3, weight_decay=0.01),
              lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.01)),
}


@pytest.mark.parametrize("make_pair", [_mlp_pair, _cnn_pair], ids=["mlp", "cnn"])
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_100_steps_match_pytorch(make_pair, opt_name):
    ours, theirs, shape, classes = make_pair()
    _copy_weights(ours, theirs)
    twin = _nudged_twin(theirs)
    make_ours, make_theirs = OPTIMIZERS[opt_name]
    opt_a, opt_b, opt_twin = make_ours(ours.parameters()), make_theirs(theirs.parameters()), make_theirs(
        twin.parameters())
    drift = 0.0
    for step, (x, y) in enumerate(_batches(shape, classes)):
        opt_a.zero_grad()
        loss_a = nn.functional.cross_entropy(ours(cn.tensor(x)), cn.tensor(y))
        loss_a.backward()
        opt_a.step()
        loss_b, loss_twin = _torch_step(theirs, opt_b, x, y), _torch_step(twin, opt_twin, x, y)
        drift = max(drift, abs(loss_twin - loss_b), float(np.spacing(np.float32(loss_b))))
        assert abs(loss_a.item() - loss_b) <= SPREAD_FACTOR * drift, (step, loss_a.item(), loss_b, drift)


def _run(model, opt, sched, batches):
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(cn.tensor(x)), cn.tensor(y))
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_state_dict_round_trip_continues_identically(opt_name):
    batches = list(_batches((20,), 5, seed=3))
    first, second = batches[:50], batches[50:]
    model, _, _, _ = _mlp_pair()
    opt = OPTIMIZERS[opt_name][0](model.parameters())
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    _run(model, opt, sched, first)
    path = os.path.join(tempfile.mkdtemp(), "state.ckpt")
    cn.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()}, path)
    straight = _run(model, opt, sched, second)

    restored, _, _, _ = _mlp_pair()
    opt2 = OPTIMIZERS[opt_name][0](restored.parameters())
    sched2 = optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=100)
    state = cn.load(path)
    restored.load_state_dict(state["model"])
    opt2.load_state_dict(state["opt"])
    sched2.load_state_dict(state["sched"])
    resumed = _run(restored, opt2, sched2, second)
    assert resumed == straight  # bit for bit

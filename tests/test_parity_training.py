"""Training parity with PyTorch: same initial weights and batches, 100 steps, every loss within 1e-4 relative.

Also: optimizer and scheduler state_dict round trips give identical continuations.
"""

import os
import tempfile

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn, optim

torch = pytest.importorskip("torch")

STEPS = 100


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
    make_ours, make_theirs = OPTIMIZERS[opt_name]
    opt_a, opt_b = make_ours(ours.parameters()), make_theirs(theirs.parameters())
    for x, y in _batches(shape, classes):
        opt_a.zero_grad()
        loss_a = nn.functional.cross_entropy(ours(cn.tensor(x)), cn.tensor(y))
        loss_a.backward()
        opt_a.step()
        opt_b.zero_grad()
        loss_b = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        loss_b.backward()
        opt_b.step()
        np.testing.assert_allclose(loss_a.item(), loss_b.item(), rtol=1e-4)


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

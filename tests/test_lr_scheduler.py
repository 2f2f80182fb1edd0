"""Learning-rate schedulers against torch.optim.lr_scheduler (30 steps) and their state_dict round trips."""

import numpy as np
import pytest

from cupynet import optim
from cupynet.optim import lr_scheduler as ours
from cupynet.tensor import Tensor

torch = pytest.importorskip("torch")
theirs = torch.optim.lr_scheduler

CASES = {
    "step": lambda o, m: m.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda o, m: m.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3),
    "exponential": lambda o, m: m.ExponentialLR(o, 0.9),
    "cosine": lambda o, m: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "linear": lambda o, m: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
    "lambda": lambda o, m: m.LambdaLR(o, lambda e: 0.95 ** e),
    "onecycle": lambda o, m: m.OneCycleLR(o, max_lr=1.0, total_steps=31),
    "onecycle3": lambda o, m: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=31, three_phase=True,
                                           anneal_strategy="linear"),
    "sequential": lambda o, m: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=4),
                                                  m.CosineAnnealingLR(o, T_max=10), m.ExponentialLR(o, 0.9)],
                                              milestones=[5, 15]),
}


def _optimizers(cls_name="SGD"):
    kw = dict(lr=0.1, momentum=0.9) if cls_name == "SGD" else dict(lr=0.1)
    mine = getattr(optim, cls_name)([{"params": [Tensor(np.zeros(2, np.float32))]},
                                     {"params": [Tensor(np.zeros(1, np.float32))], "lr": 0.05}], **kw)
    ref = getattr(torch.optim, cls_name)([{"params": [torch.zeros(2)]}, {"params": [torch.zeros(1)], "lr": 0.05}],
                                         **kw)
    return mine, ref


def _trace(opt, sched, steps, key="momentum"):
    lrs, momenta = [sched.get_last_lr()], [[g.get(key) for g in opt.param_groups]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        momenta.append([g.get(key) for g in opt.param_groups])
    return lrs, momenta


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_lr_sequence_matches_torch(name):
    mine, ref = _optimizers()
    got = _trace(mine, CASES[name](mine, ours), 30)
    want = _trace(ref, CASES[name](ref, theirs), 30)
    assert got == want  # NOTE: the same double-precision formulas in the same order: exactly equal


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_onecycle_cycles_adam_beta1_like_torch():
    mine, ref = _optimizers("Adam")
    got = _trace(mine, ours.OneCycleLR(mine, max_lr=0.5, total_steps=30), 29, key="betas")
    want = _trace(ref, theirs.OneCycleLR(ref, max_lr=0.5, total_steps=30), 29, key="betas")
    assert got == want


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_round_trip_continues_identically(name):
    opt_a, _ = _optimizers()
    sched_a = CASES[name](opt_a, ours)
    for _ in range(8):
        opt_a.step()
        sched_a.step()
    saved_opt, saved_sched = opt_a.state_dict(), sched_a.state_dict()
    assert "optimizer" not in saved_sched
    if name == "lambda":
        assert saved_sched["lr_lambdas"] == [None, None]  # functions are not saved, as in PyTorch
    opt_b, _ = _optimizers()
    sched_b = CASES[name](opt_b, ours)
    opt_b.load_state_dict(saved_opt)
    sched_b.load_state_dict(saved_sched)
    for _ in range(12):
        for opt, sched in ((opt_a, sched_a), (opt_b, sched_b)):
            opt.step()
            sched.step()
        assert sched_a.get_last_lr() == sched_b.get_last_lr()
        assert [g["lr"] for g in opt_a.param_groups] == [g["lr"] for g in opt_b.param_groups]


def test_closed_form_matches_recursive_form():
    opt, _ = _optimizers()
    sched = ours.StepLR(opt, step_size=4, gamma=0.5)
    for _ in range(9):
        sched.step()
    recursive = sched.get_last_lr()
    sched.step(9)
    assert sched.get_last_lr() == pytest.approx(recursive)


def test_bad_arguments():
    opt, _ = _optimizers()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        ours.StepLR(object(), step_size=2)
    with pytest.raises(ValueError, match="step_size must be a positive integer"):
        ours.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        ours.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        ours.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        ours.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        ours.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="square")
    with pytest.raises(ValueError, match="number of milestones"):
        ours.SequentialLR(opt, [ours.ExponentialLR(opt, 0.9)], milestones=[3])
    fresh, _ = _optimizers()
    with pytest.raises(KeyError, match="initial_lr"):
        ours.StepLR(fresh, step_size=2, last_epoch=3)
    one = ours.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    one.step()
    one.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        one.step()
    with pytest.raises(ValueError, match="expected the dict from state_dict"):
        one.load_state_dict({})

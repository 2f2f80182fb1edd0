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
    "multiplicative": lambda o, m: m.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.97),
    "constant": lambda o, m: m.ConstantLR(o, factor=0.3, total_iters=4),
    "polynomial": lambda o, m: m.PolynomialLR(o, total_iters=12, power=2.0),
    "chained": lambda o, m: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=3),
                                                m.ExponentialLR(o, 0.9), m.PolynomialLR(o, total_iters=20)]),
    "cyclic": lambda o, m: m.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4, step_size_down=3),
    "cyclic2": lambda o, m: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    "cyclic_exp": lambda o, m: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                                          gamma=0.97, base_momentum=0.7, max_momentum=0.95),
    "warm_restarts": lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
    "warm_restarts1": lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=4),
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


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_warm_restarts_fractional_epochs_match_torch():
    """``step(epoch + i / iters)`` once per batch, as SGDR is used: the same T_cur/T_i and lrs as torch."""
    for t_mult in (1, 2, 3):
        (mine, ref) = _optimizers()
        got_s = ours.CosineAnnealingWarmRestarts(mine, T_0=2, T_mult=t_mult, eta_min=0.01)
        want_s = theirs.CosineAnnealingWarmRestarts(ref, T_0=2, T_mult=t_mult, eta_min=0.01)
        for epoch in range(9):
            for i in range(5):
                got_s.step(epoch + i / 5)
                want_s.step(epoch + i / 5)
                assert got_s.get_last_lr() == want_s.get_last_lr()
                assert (got_s.T_cur, got_s.T_i, got_s.last_epoch) == (want_s.T_cur, want_s.T_i, want_s.last_epoch)
    with pytest.raises(ValueError, match="Expected non-negative epoch"):
        got_s.step(-1)


PLATEAU = {
    "min_rel": dict(mode="min", factor=0.5, patience=2, threshold=0.01),
    "min_abs_cooldown": dict(mode="min", factor=0.3, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2,
                             min_lr=[0.02, 0.001]),
    "max_rel": dict(mode="max", factor=0.1, patience=0, min_lr=0.005, eps=1e-3),
    "max_abs": dict(mode="max", patience=3, threshold=0.1, threshold_mode="abs"),
}
METRICS = [1.0, 0.9, 0.95, 0.95, 0.94, 0.9, 0.9, 0.91, 0.5, 0.6, 0.7, 0.7, 0.69, 0.2, 0.2, 0.3, 0.25, 0.8, 0.81,
           0.82, 0.9, 0.95, 0.94, 0.93, 1.1, 0.1, 0.1, 0.1, 0.1, 0.1]


@pytest.mark.parametrize("name", sorted(PLATEAU))
def test_reduce_lr_on_plateau_matches_torch(name):
    mine, ref = _optimizers()
    got_s, want_s = ours.ReduceLROnPlateau(mine, **PLATEAU[name]), theirs.ReduceLROnPlateau(ref, **PLATEAU[name])
    for k, metric in enumerate(METRICS):
        got_s.step(Tensor(np.float32(metric)) if k % 2 else metric)  # NOTE: a 0-d Tensor metric, as a loss is
        want_s.step(torch.tensor(np.float32(metric)) if k % 2 else metric)
        assert [g["lr"] for g in mine.param_groups] == [g["lr"] for g in ref.param_groups], k
        assert (got_s.best, got_s.num_bad_epochs, got_s.cooldown_counter) == \
            (want_s.best, want_s.num_bad_epochs, want_s.cooldown_counter)
        assert got_s.get_last_lr() == want_s.get_last_lr()
        if k == 10:
            saved, saved_opt = got_s.state_dict(), mine.state_dict()
            assert set(saved) == set(want_s.state_dict())
    again_opt, _ = _optimizers()
    again_opt.load_state_dict(saved_opt)
    again = ours.ReduceLROnPlateau(again_opt)
    again.load_state_dict(saved)
    for k, metric in enumerate(METRICS[11:], start=11):
        again.step(Tensor(np.float32(metric)) if k % 2 else metric)
    assert got_s.get_last_lr() == again.get_last_lr() and got_s.best == again.best


def test_new_scheduler_bad_arguments():
    opt, _ = _optimizers()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        ours.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode 'up' is unknown"):
        ours.ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(ValueError, match="threshold mode 'pct' is unknown"):
        ours.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 2 values for min_lr, got 3"):
        ours.ReduceLROnPlateau(opt, min_lr=[0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        ours.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        ours.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        ours.CyclicLR(opt, 0.01, 0.1, mode="sine")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        ours.CyclicLR(optim.Adagrad([Tensor(np.zeros(1, np.float32))]), 0.01, 0.1)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1"):
        ours.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="total_iters must be a positive integer"):
        ours.PolynomialLR(opt, total_iters=0)
    with pytest.raises(TypeError, match="lr_lambda must be callable"):
        ours.MultiplicativeLR(opt, 0.9)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        ours.ChainedScheduler([ours.ReduceLROnPlateau(opt)])
    other, _ = _optimizers()
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        ours.ChainedScheduler([ours.ExponentialLR(opt, 0.9), ours.ExponentialLR(other, 0.9)])


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

"""Bad hyper-parameters, closures and metrics are refused with a message naming the optimizer or scheduler
(they used to pass construction and fail at the first step with a bare NumPy/float() error)."""

import pytest

import cupynet as cn
from cupynet import nn, optim
from cupynet.optim import lr_scheduler as L


def _params():
    return [nn.Parameter(cn.ones(2))]


@pytest.mark.parametrize("make,error,match", [
    (lambda p: optim.ASGD(p, t0="x"), ValueError, r"ASGD: Invalid t0 value: 'x' \(expected a real number\)"),
    (lambda p: optim.ASGD(p, lambd=-1.0), ValueError, r"ASGD: Invalid lambd value: -1.0"),
    (lambda p: optim.ASGD(p, alpha=float("nan")), ValueError, r"ASGD: Invalid alpha value: nan"),
    (lambda p: L.OneCycleLR(optim.SGD(p, lr=0.1), max_lr="a", total_steps=10), ValueError,
     r"OneCycleLR: Invalid max_lr: 'a' \(expected a real number\)"),
    (lambda p: L.CyclicLR(optim.SGD(p, lr=0.1), "a", 1.0), ValueError, r"CyclicLR: Invalid base_lr: 'a'"),
    (lambda p: optim.LBFGS(p, history_size=0), ValueError, "LBFGS: history_size must be a positive integer, got 0"),
])
def test_bad_hyper_parameters_are_refused_when_built(make, error, match):
    with pytest.raises(error, match=match):
        make(_params())


@pytest.mark.parametrize("loss", [None, "x", cn.ones(2)])
def test_lbfgs_closure_must_return_one_loss(loss):
    p = _params()
    opt = optim.LBFGS(p)
    with pytest.raises(TypeError, match="LBFGS.step: the closure's loss must be a number or a one-element Tensor"):
        opt.step(lambda: loss)
    assert p[0].detach().numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("metrics", [None, "abc", cn.tensor([1.0, 2.0])])
def test_plateau_metrics_must_be_one_number(metrics):
    sched = L.ReduceLROnPlateau(optim.SGD(_params(), lr=0.1))
    with pytest.raises(TypeError, match="ReduceLROnPlateau.step: metrics must be a number or a one-element Tensor"):
        sched.step(metrics)
    assert sched.last_epoch == 0


def test_distributed_sampler_names_itself_for_a_bad_rank_and_epoch():
    from cupynet.data import DistributedSampler
    with pytest.raises(ValueError,
                       match=r"DistributedSampler: Invalid rank 5, rank should be in the interval \[0, 1\]"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=5)
    sampler = DistributedSampler(list(range(4)), num_replicas=2, rank=0)
    with pytest.raises(ValueError, match="DistributedSampler.set_epoch: epoch must be an int, got 'a'"):
        sampler.set_epoch("a")
    assert sampler.epoch == 0

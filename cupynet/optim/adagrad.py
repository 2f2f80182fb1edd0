"""Adagrad and Adadelta (``torch.optim.Adagrad`` / ``torch.optim.Adadelta``): per-element step sizes.

Adagrad, per parameter (fp32 math; ``t`` = the step count after this step)::

    g = -g if maximize;  g = g + weight_decay * p
    sum = sum + g * g
    p = p - (lr / (1 + (t - 1) * lr_decay)) * g / (sqrt(sum) + eps)

Adadelta::

    g = -g if maximize;  g = g + weight_decay * p
    sq = rho * sq + (1 - rho) * g * g
    delta = sqrt(acc + eps) / sqrt(sq + eps) * g
    acc = rho * acc + (1 - rho) * delta * delta
    p = p - lr * delta

NOTE: PyTorch reads Adagrad's step count on the host to form ``lr / (1 + (t - 1)
* lr_decay)``; here it is formed on the device in float64 from the float32
``step`` Tensor and rounded once to fp32 (the value PyTorch passes), so no
step synchronises.
"""

from __future__ import annotations

import numpy

from cupynet.optim import _common
from cupynet.optim._common import commit, scalar
from cupynet.optim.optimizer import Optimizer

__all__ = ["Adagrad", "Adadelta"]


class Adagrad(Optimizer):
    """Adagrad, as ``torch.optim.Adagrad`` (single-tensor math), plus a device-side AMP skip.

    Like PyTorch, the state (``step`` and ``sum``) is created by the constructor.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: learning rate.
        lr_decay: learning-rate decay: the step size is ``lr / (1 + (t - 1) * lr_decay)``.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: the starting value of the sum of squared gradients.
        eps: added to the denominator for stability.
        foreach: accepted as PyTorch's implementation switch (same math here).
        maximize: ascend instead of descend.
        differentiable: must be False (steps never record a graph).
        fused: accepted as PyTorch's implementation switch (same math here; no fused Adagrad kernel).
    """

    _step_supports_amp_scaling = True
    _checks = (("lr", "learning rate", {}), ("lr_decay", "lr_decay value", {}),
               ("weight_decay", "weight_decay value", {}),
               ("initial_accumulator_value", "initial_accumulator_value value", {}), ("eps", "epsilon value", {}))

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize,
                        **_common.torch_flags("Adagrad", foreach=foreach, differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)
        for group in self.param_groups:
            self._ensure_state(group["params"], group)

    def _state_names(self, group) -> dict:
        return {"sum": group["initial_accumulator_value"]}

    def _step_terms(self, group, new_step, dt, xp):
        t = new_step.astype(numpy.float64)
        return xp.asarray(-group["lr"] / (1.0 + (t - 1.0) * group["lr_decay"])).astype(dt)

    def _update_one(self, p, group, found, terms) -> None:
        xp, dt, st, g, value = self._prepared(p, group)
        total = st["sum"].array + g * g
        std = xp.sqrt(total) + scalar(group["eps"], dt)
        commit(st["sum"].array, total, found, xp)
        commit(p.array, value + terms * (g / std), found, xp)


class Adadelta(Optimizer):
    """Adadelta, as ``torch.optim.Adadelta`` (single-tensor math), plus a device-side AMP skip.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: scales the step (default 1.0, as PyTorch).
        rho: decay of the running averages, in [0, 1].
        eps: added inside both square roots.
        weight_decay: L2 penalty added to the gradient.
        foreach: accepted as PyTorch's implementation switch (same math here).
        capturable: accepted (the step counter already lives on the device).
        maximize: ascend instead of descend.
        differentiable: must be False (steps never record a graph).
    """

    _step_supports_amp_scaling = True
    _checks = (("lr", "learning rate", {}), ("rho", "rho value", {"high": 1.0, "high_inclusive": True}),
               ("eps", "epsilon value", {}), ("weight_decay", "weight_decay value", {}))

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        **_common.torch_flags("Adadelta", capturable=capturable, foreach=foreach,
                                              differentiable=differentiable))
        super().__init__(params, defaults)

    def _state_names(self, group) -> dict:
        return {"square_avg": 0.0, "acc_delta": 0.0}

    def _update_one(self, p, group, found, terms) -> None:
        xp, dt, st, g, value = self._prepared(p, group)
        rho, eps = scalar(group["rho"], dt), scalar(group["eps"], dt)
        one_minus_rho = scalar(1.0 - group["rho"], dt)
        sq = st["square_avg"].array * rho + (one_minus_rho * g) * g
        delta = xp.sqrt(st["acc_delta"].array + eps) / xp.sqrt(sq + eps) * g
        acc = st["acc_delta"].array * rho + (one_minus_rho * delta) * delta
        commit(st["square_avg"].array, sq, found, xp)
        commit(st["acc_delta"].array, acc, found, xp)
        commit(p.array, value + scalar(-group["lr"], dt) * delta, found, xp)

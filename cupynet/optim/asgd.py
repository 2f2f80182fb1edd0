"""ASGD (``torch.optim.ASGD``): SGD whose step size decays, plus a running average of the iterates.

Per parameter (fp32 math; ``t`` = the step count after this step; ``eta`` and
``mu`` are 0-d float32 state, starting at ``lr`` and 1)::

    g = -g if maximize;  g = g + weight_decay * p
    p = p * (1 - lambd * eta);  p = p - eta * g
    ax = ax + (p - ax) * mu   if mu != 1   else   p
    eta = lr / (1 + lambd * lr * t)**alpha;   mu = 1 / max(1, t - t0)

NOTE: PyTorch reads ``eta`` and ``mu`` on the host (``.item()``); here the
factors are formed on the device in float64 from the float32 state and
rounded once to fp32, as PyTorch rounds the Python doubles it passes, and the
``mu != 1`` choice is a device-side ``where``: no step synchronises.
"""

from __future__ import annotations

import numpy

from cupynet.optim import _common
from cupynet.optim._common import commit
from cupynet.optim.optimizer import Optimizer

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD, as ``torch.optim.ASGD`` (single-tensor math), plus a device-side AMP skip.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: learning rate.
        lambd: decay term.
        alpha: power of the step-size decay.
        t0: the step from which averaging starts.
        weight_decay: L2 penalty added to the gradient.
        foreach: accepted as PyTorch's implementation switch (same math here).
        maximize: ascend instead of descend.
        differentiable: must be False (steps never record a graph).
        capturable: accepted (the state already lives on the device).
    """

    _step_supports_amp_scaling = True
    _scalar_state_keys = ("step", "eta", "mu")
    # NOTE: torch checks none of lambd, alpha, t0 (a string t0 failed at the first step, a negative lambd made the
    # step grow); cupynet refuses them when the optimizer is built
    _checks = (("lr", "learning rate", {}), ("weight_decay", "weight_decay value", {}),
               ("lambd", "lambd value", {}), ("alpha", "alpha value", {}), ("t0", "t0 value", {"low": None}))

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, maximize=maximize,
                        **_common.torch_flags("ASGD", foreach=foreach, differentiable=differentiable,
                                              capturable=capturable))
        super().__init__(params, defaults)

    def _state_names(self, group) -> dict:
        return {"ax": 0.0}

    def _scalar_names(self, group) -> dict:
        return {"eta": group["lr"], "mu": 1.0}

    def _step_terms(self, group, new_step, dt, xp):
        """The next ``(eta, mu)`` as 0-d float32 device arrays."""
        t = new_step.astype(numpy.float64)
        lr, lambd = group["lr"], group["lambd"]
        eta = lr / (1.0 + lambd * lr * t) ** group["alpha"]
        mu = 1.0 / xp.maximum(1.0, t - group["t0"])
        return xp.asarray(eta).astype(numpy.float32), xp.asarray(mu).astype(numpy.float32)

    def _update_one(self, p, group, found, terms) -> None:
        xp, dt, st, g, value = self._prepared(p, group)
        eta = st["eta"].array.astype(numpy.float64)
        value = value * (1.0 - group["lambd"] * eta).astype(dt)
        value = value + (-eta).astype(dt) * g
        mu = st["mu"].array
        ax = xp.where(mu != 1, st["ax"].array + (value - st["ax"].array) * mu.astype(dt), value)
        commit(st["ax"].array, ax, found, xp)
        commit(st["eta"].array, terms[0], found, xp)
        commit(st["mu"].array, terms[1], found, xp)
        commit(p.array, value, found, xp)

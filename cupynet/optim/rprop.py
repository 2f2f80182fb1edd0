"""Rprop (``torch.optim.Rprop``): per-element step sizes driven by the sign of the gradient alone.

Per parameter (fp32 math; ``prev`` starts at 0, ``step_size`` at ``lr``)::

    g = -g if maximize
    s = sign(g * prev)
    factor = etaplus where s > 0, etaminus where s < 0, 1 where s == 0
    step_size = clamp(step_size * factor, step_size_min, step_size_max)
    g = 0 where s < 0             (after a sign change, skip this element's step)
    p = p - sign(g) * step_size;   prev = g
"""

from __future__ import annotations

from cupynet.checks import check_pair
from cupynet.optim import _common
from cupynet.optim._common import commit, scalar
from cupynet.optim.optimizer import Optimizer

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation, as ``torch.optim.Rprop`` (single-tensor math), plus a device-side AMP skip.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: the initial step size of every element.
        etas: ``(etaminus, etaplus)``, with ``0 < etaminus < 1 < etaplus``.
        step_sizes: ``(min, max)`` allowed step sizes.
        capturable: accepted (the state already lives on the device).
        foreach: accepted as PyTorch's implementation switch (same math here).
        maximize: ascend instead of descend.
        differentiable: must be False (steps never record a graph).
    """

    _step_supports_amp_scaling = True
    _checks = (("lr", "learning rate", {}),)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, maximize=maximize,
                        **_common.torch_flags("Rprop", foreach=foreach, differentiable=differentiable,
                                              capturable=capturable))
        super().__init__(params, defaults)

    def _validate_group(self, group) -> None:
        super()._validate_group(group)
        etas = check_pair("Rprop", "etas", group["etas"], "eta value", low=None)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Rprop: Invalid eta values: {etas[0]}, {etas[1]} (expected 0 < etaminus < 1 < etaplus)")
        check_pair("Rprop", "step_sizes", group["step_sizes"], "step size", low=None)

    def _state_names(self, group) -> dict:
        return {"prev": 0.0, "step_size": group["lr"]}

    def _update_one(self, p, group, found, terms) -> None:
        xp, dt, st, g, value = self._prepared(p, group)
        etaminus, etaplus = group["etas"]
        s = xp.sign(g * st["prev"].array)
        factor = xp.where(s > 0, scalar(etaplus, dt), xp.where(s < 0, scalar(etaminus, dt), scalar(1.0, dt)))
        low, high = group["step_sizes"]
        step_size = xp.clip(st["step_size"].array * factor, scalar(low, dt), scalar(high, dt))
        g = xp.where(s < 0, scalar(0.0, dt), g)
        commit(st["step_size"].array, step_size, found, xp)
        commit(st["prev"].array, g, found, xp)
        commit(p.array, value + (scalar(-1.0, dt) * xp.sign(g)) * step_size, found, xp)

"""RMSprop (``torch.optim.RMSprop``): divide the gradient by a running RMS of its recent magnitudes.

The update, per parameter (fp32 math)::

    g = -g if maximize;  g = g + weight_decay * p
    sq = alpha * sq + (1 - alpha) * g * g
    centered:  ga = lerp(ga, g, 1 - alpha);  avg = sqrt(sq - ga * ga) + eps
    else:      avg = sqrt(sq) + eps
    momentum > 0:  buf = momentum * buf + g / avg;  p = p - lr * buf
    else:          p = p - lr * g / avg
"""

from __future__ import annotations

from cupynet.optim import _common
from cupynet.optim._common import commit, scalar
from cupynet.optim.optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, exactly as ``torch.optim.RMSprop`` (single-tensor math), plus a device-side AMP skip.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: learning rate.
        alpha: smoothing constant of the squared-gradient average.
        eps: added to the denominator for stability.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalise by the estimated variance (subtract the squared mean gradient).
        maximize: ascend instead of descend.
    """

    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, *,
                 maximize=False):
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                        centered=centered, maximize=maximize)
        super().__init__(params, defaults)

    _checks = (("lr", "learning rate", {}), ("eps", "epsilon value", {}), ("momentum", "momentum value", {}),
               ("weight_decay", "weight_decay value", {}), ("alpha", "alpha value", {}))

    def _state_names(self, group) -> dict:
        names = {"square_avg": 0.0}
        if group["momentum"] > 0:
            names["momentum_buffer"] = 0.0
        if group["centered"]:
            names["grad_avg"] = 0.0
        return names

    def _update_one(self, p, group, found, terms) -> None:
        xp, dt, st, g, value = self._prepared(p, group)
        alpha = group["alpha"]
        sq = st["square_avg"].array * scalar(alpha, dt) + (scalar(1.0 - alpha, dt) * g) * g
        if group["centered"]:
            ga = _common.lerp_like_torch(st["grad_avg"].array, g, scalar(1.0 - alpha, dt))
            avg = xp.sqrt(sq + (scalar(-1.0, dt) * ga) * ga)
            commit(st["grad_avg"].array, ga, found, xp)
        else:
            avg = xp.sqrt(sq)
        avg = avg + scalar(group["eps"], dt)
        if group["momentum"] > 0:
            buf = st["momentum_buffer"].array * scalar(group["momentum"], dt) + g / avg
            new_param = value + scalar(-group["lr"], dt) * buf
            commit(st["momentum_buffer"].array, buf, found, xp)
        else:
            new_param = value + (scalar(-group["lr"], dt) * g) / avg
        commit(st["square_avg"].array, sq, found, xp)
        commit(p.array, new_param, found, xp)

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

import numpy

from cupynet import backend, dtypes
from cupynet.optim import _common
from cupynet.optim._common import commit, scalar
from cupynet.optim.optimizer import Optimizer
from cupynet.tensor import Tensor

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

    def _validate_group(self, group) -> None:
        _common.check_number("RMSprop", "lr", group["lr"], label="learning rate")
        _common.check_number("RMSprop", "eps", group["eps"], label="epsilon value")
        _common.check_number("RMSprop", "momentum", group["momentum"], label="momentum value")
        _common.check_number("RMSprop", "weight_decay", group["weight_decay"], label="weight_decay value")
        _common.check_number("RMSprop", "alpha", group["alpha"], label="alpha value")

    def _update_group(self, group, params, found):
        self._init_state(group, params)
        self._unshare(params, "step")
        for step, _ in self._group_by_shared(params, "step"):
            xp = backend.get_array_module(step.array)
            commit(step.array, step.array + numpy.float32(1.0), found, xp)
        with numpy.errstate(all="ignore"):
            for p in params:
                self._update_one(p, group, found)
                p._bump_version()

    def _init_state(self, group, params) -> None:
        steps = {}
        for p in params:
            st = self.state[p]
            xp = backend.get_array_module(p.array)
            if not st:
                device = str(backend.device_of_array(p.array))
                st["step"] = steps.setdefault(device, Tensor(xp.zeros((), dtype=dtypes.float32)))
                st["square_avg"] = _common.new_state_tensor(p, xp)
            if group["momentum"] > 0 and "momentum_buffer" not in st:
                st["momentum_buffer"] = _common.new_state_tensor(p, xp)
            if group["centered"] and "grad_avg" not in st:
                st["grad_avg"] = _common.new_state_tensor(p, xp)

    def _update_one(self, p, group, found) -> None:
        xp = backend.get_array_module(p.array)
        dt = _common.compute_dtype_of(p)
        st = self.state[p]
        alpha = group["alpha"]
        g = _common.read_grad(p, dt, group["maximize"])
        value = p.array.astype(dt) if p.array.dtype != dt else p.array
        if group["weight_decay"] != 0:
            g = g + scalar(group["weight_decay"], dt) * value
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

"""Adam and AdamW (``torch.optim.Adam`` / ``torch.optim.AdamW``), with the step counter on the device.

The update, per parameter (fp32 math; ``t`` = the step count after this step)::

    g = -g if maximize
    Adam:  g = g + weight_decay * p          AdamW:  p = p * (1 - lr * weight_decay)
    m = lerp(m, g, 1 - beta1);   v = beta2 * v + (1 - beta2) * g * g
    v_hat = max(v_max, v) if amsgrad else v
    p = p - (lr / (1 - beta1**t)) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

NOTE: PyTorch reads the step count on the host (``step.item()``); here the
bias corrections are computed on the device from the float32 ``step`` Tensor,
in float64 (as Python does on the host) and then rounded to fp32, so the
result is PyTorch's and no step ever synchronises.

Fused (``fused=True``, or CUDA fp32 parameters with ``fused=None``), one step of the
whole group is one multi-tensor kernel per grad dtype: ``optim/kernels/adam.cu``
(``cupynet.optim.kernels.fused_adam_``; its NumPy reference gives the same bits).

NOTE (two statements of the rule, on purpose): the unfused path below is
PyTorch's single-tensor Adam and is kept apart from the kernel's reference
(``optim/kernels/reference.py``), because they round differently in two
places: the bias corrections here use ``xp.power`` (PyTorch's ``beta ** step``
on the host), the kernel multiplies by repeated squaring (a device pow's last
bit differs between libraries); and AMSGrad's maximum here is ``xp.maximum``
(``torch.maximum``), the kernel's an explicit NaN-propagating select whose
``max(-0, +0)`` is fixed. Calling the reference would move those last bits.
"""

from __future__ import annotations

import numpy

from cupynet.optim import _common, kernels
from cupynet.optim._common import commit, scalar
from cupynet.optim.optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, exactly as ``torch.optim.Adam`` (single-tensor math), plus a device-side AMP skip.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator for stability.
        weight_decay: L2 penalty added to the gradient (AdamW: decoupled decay of the weights).
        amsgrad: use the running maximum of the second moment (AMSGrad).
        maximize: ascend instead of descend.
        fused: None (fused kernels when every param is CUDA fp32), True (always; NumPy reference on the
            CPU), False (per-parameter path).
    """

    _step_supports_amp_scaling = True
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 maximize=False, fused=None):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, fused=fused)
        super().__init__(params, defaults)

    _checks = (("lr", "learning rate", {}), ("eps", "epsilon value", {}), ("weight_decay", "weight_decay value", {}))

    def _validate_group(self, group) -> None:
        super()._validate_group(group)
        _common.validate_fused(type(self).__name__, group)

    def _state_names(self, group) -> dict:
        return dict(exp_avg=0.0, exp_avg_sq=0.0, **({"max_exp_avg_sq": 0.0} if group["amsgrad"] else {}))

    def _update_group(self, group, params, found):
        self._fused = _common.use_fused(group, params)
        super()._update_group(group, params, found)

    def _update_members(self, group, members, step, found) -> None:
        if self._fused:
            self._fused_update(group, members, step, found)
        else:
            super()._update_members(group, members, step, found)

    def _step_terms(self, group, new_step, dt, xp):
        """``(-lr / bias_correction1, sqrt(bias_correction2))`` as 0-d device arrays of dtype ``dt``."""
        beta1, beta2 = group["betas"]
        t = new_step.astype(numpy.float64)
        bias_correction1 = 1.0 - xp.power(numpy.float64(beta1), t)
        bias_correction2 = 1.0 - xp.power(numpy.float64(beta2), t)
        step_size = group["lr"] / bias_correction1
        return xp.asarray(-step_size).astype(dt), xp.asarray(xp.power(bias_correction2, 0.5)).astype(dt)

    def _update_one(self, p, group, found, terms) -> None:
        neg_step_size, bias_correction2_sqrt = terms
        xp, dt, st, g, value = self._prepared(p, group, decoupled=self._decoupled)
        beta1, beta2 = group["betas"]
        m = _common.lerp_like_torch(st["exp_avg"].array, g, scalar(1.0 - beta1, dt))
        v = st["exp_avg_sq"].array * scalar(beta2, dt) + (scalar(1.0 - beta2, dt) * g) * g
        v_hat = v
        if group["amsgrad"]:
            v_hat = xp.maximum(st["max_exp_avg_sq"].array, v)
            commit(st["max_exp_avg_sq"].array, v_hat, found, xp)
        denom = xp.sqrt(v_hat) / bias_correction2_sqrt + scalar(group["eps"], dt)
        new_param = value + (neg_step_size * m) / denom
        commit(st["exp_avg"].array, m, found, xp)
        commit(st["exp_avg_sq"].array, v, found, xp)
        commit(p.array, new_param, found, xp)

    def _fused_update(self, group, members, step, found) -> None:
        beta1, beta2 = group["betas"]
        states = [self.state[p] for p in members]
        maxes = [st["max_exp_avg_sq"].array for st in states] if group["amsgrad"] else None
        kernels.fused_adam_(
            [p.array for p in members], _common.kernel_grads(members), [st["exp_avg"].array for st in states],
            [st["exp_avg_sq"].array for st in states], maxes, step.array, lr=group["lr"], beta1=beta1, beta2=beta2,
            eps=group["eps"], weight_decay=group["weight_decay"], decoupled=self._decoupled,
            amsgrad=group["amsgrad"], maximize=group["maximize"], found_inf=found)


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay, exactly as ``torch.optim.AdamW``.

    Args:
        params, lr, betas, eps, amsgrad, maximize, fused: as for ``Adam``.
        weight_decay: decoupled decay: ``p *= 1 - lr * weight_decay`` each step (default 1e-2).
    """

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         maximize=maximize, fused=fused)

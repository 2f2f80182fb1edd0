"""Adamax, NAdam and RAdam (``torch.optim.Adamax`` / ``NAdam`` / ``RAdam``): Adam's moments, other steps.

Per parameter (fp32 math; ``t`` = the step count after this step; ``m`` is
always ``lerp(m, g, 1 - beta1)`` and, for NAdam/RAdam, ``v = beta2 * v + (1 - beta2) * g * g``)::

    g = -g if maximize;  g = g + weight_decay * p   (decoupled: p = p * (1 - lr * weight_decay))
    Adamax:  u = max(beta2 * u, |g| + eps);  p = p - (lr / (1 - beta1**t)) * m / u
    NAdam:   mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay));  prod = prod * mu_t
             denom = sqrt(v / (1 - beta2**t)) + eps
             p = p - lr * (1 - mu_t) / (1 - prod) * g / denom
                   - lr * mu_{t+1} / (1 - prod * mu_{t+1}) * m / denom
    RAdam:   rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
             m_hat = m / (1 - beta1**t)
             rho_t > 5:  p = p - m_hat * lr * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r_t,
                         r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
             else:       p = p - m_hat * lr

NOTE: PyTorch forms the step-dependent scalars on the host in float64 from
``step.item()``; here they are formed on the device in float64 from the
float32 ``step`` Tensor and rounded once to the compute dtype where PyTorch
hands them to a tensor op, so no step synchronises. RAdam's ``rho_t > 5``
branch is a device-side ``where``. NAdam's ``mu_product`` is a 0-d float32
state per parameter, rounded where PyTorch rounds it (``mu_product *= mu``).
"""

from __future__ import annotations

import numpy

from cupynet.optim import _common
from cupynet.optim._common import commit, scalar
from cupynet.optim.optimizer import Optimizer

__all__ = ["Adamax", "NAdam", "RAdam"]

_ADAM_CHECKS = (("lr", "learning rate", {}), ("eps", "epsilon value", {}), ("weight_decay", "weight_decay value", {}))


class _Moments(Optimizer):
    """Adam's two moment estimates, updated in PyTorch's order (shared by NAdam and RAdam)."""

    _step_supports_amp_scaling = True
    _checks = _ADAM_CHECKS

    def _state_names(self, group) -> dict:
        return {"exp_avg": 0.0, "exp_avg_sq": 0.0}

    def _moments(self, p, group, found):
        """``(xp, dt, value, g, m, v)`` with the new moments committed (decoupled decay as the group says)."""
        xp, dt, st, g, value = self._prepared(p, group, decoupled=group["decoupled_weight_decay"])
        beta1, beta2 = group["betas"]
        m = _common.lerp_like_torch(st["exp_avg"].array, g, scalar(1.0 - beta1, dt))
        v = st["exp_avg_sq"].array * scalar(beta2, dt) + (scalar(1.0 - beta2, dt) * g) * g
        commit(st["exp_avg"].array, m, found, xp)
        commit(st["exp_avg_sq"].array, v, found, xp)
        return xp, dt, value, g, m, v


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``, plus a device-side AMP skip.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: learning rate (default 2e-3).
        betas: decay rates of the first moment and of the infinity norm.
        eps: added to ``|g|`` before the maximum.
        weight_decay: L2 penalty added to the gradient.
        foreach: accepted as PyTorch's implementation switch (same math here).
        maximize: ascend instead of descend.
        differentiable: must be False (steps never record a graph).
        capturable: accepted (the step counter already lives on the device).
    """

    _step_supports_amp_scaling = True
    _checks = _ADAM_CHECKS

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        **_common.torch_flags("Adamax", foreach=foreach, differentiable=differentiable,
                                              capturable=capturable))
        super().__init__(params, defaults)

    def _state_names(self, group) -> dict:
        return {"exp_avg": 0.0, "exp_inf": 0.0}

    def _step_terms(self, group, new_step, dt, xp):
        t = new_step.astype(numpy.float64)
        return xp.asarray(-group["lr"] / (1.0 - xp.power(numpy.float64(group["betas"][0]), t))).astype(dt)

    def _update_one(self, p, group, found, terms) -> None:
        xp, dt, st, g, value = self._prepared(p, group)
        beta1, beta2 = group["betas"]
        m = _common.lerp_like_torch(st["exp_avg"].array, g, scalar(1.0 - beta1, dt))
        u = xp.maximum(st["exp_inf"].array * scalar(beta2, dt), xp.abs(g) + scalar(group["eps"], dt))
        commit(st["exp_avg"].array, m, found, xp)
        commit(st["exp_inf"].array, u, found, xp)
        commit(p.array, value + terms * (m / u), found, xp)


class NAdam(_Moments):
    """NAdam (Adam with Nesterov momentum), as ``torch.optim.NAdam``, plus a device-side AMP skip.

    Args:
        params, betas, eps: as for ``Adam``.
        lr: learning rate (default 2e-3).
        weight_decay: weight decay (L2 on the gradient, or decoupled, see below).
        momentum_decay: how fast the momentum schedule ``mu_t`` approaches ``beta1`` (default 4e-3).
        decoupled_weight_decay: decay the weights as AdamW does (NAdamW) instead of an L2 gradient term.
        foreach: accepted as PyTorch's implementation switch (same math here).
        maximize: ascend instead of descend.
        capturable: accepted (the step counter already lives on the device).
        differentiable: must be False (steps never record a graph).
    """

    _scalar_state_keys = ("step", "mu_product")
    _checks = _ADAM_CHECKS + (("momentum_decay", "momentum_decay value", {}),)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=bool(decoupled_weight_decay), maximize=maximize,
                        **_common.torch_flags("NAdam", foreach=foreach, capturable=capturable,
                                              differentiable=differentiable))
        super().__init__(params, defaults)

    def _scalar_names(self, group) -> dict:
        return {"mu_product": 1.0}

    def _step_terms(self, group, new_step, dt, xp):
        """``(mu_t, mu_{t+1}, 1 - beta2**t)`` as 0-d float64 device arrays."""
        beta1, beta2 = group["betas"]
        t = new_step.astype(numpy.float64)
        decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * xp.power(0.96, t * decay))
        mu_next = beta1 * (1.0 - 0.5 * xp.power(0.96, (t + 1.0) * decay))
        return mu, mu_next, 1.0 - xp.power(numpy.float64(beta2), t)

    def _update_one(self, p, group, found, terms) -> None:
        mu, mu_next, bias_correction2 = terms
        st = self.state[p]
        xp, dt, value, g, m, v = self._moments(p, group, found)
        product = st["mu_product"].array * mu.astype(numpy.float32)
        product64 = product.astype(numpy.float64)
        denom = xp.sqrt(v / bias_correction2.astype(dt)) + scalar(group["eps"], dt)
        coef_g = xp.asarray(-group["lr"] * (1.0 - mu) / (1.0 - product64)).astype(dt)
        coef_m = xp.asarray(-group["lr"] * mu_next / (1.0 - product64 * mu_next)).astype(dt)
        commit(st["mu_product"].array, product, found, xp)
        commit(p.array, (value + coef_g * (g / denom)) + coef_m * (m / denom), found, xp)


class RAdam(_Moments):
    """RAdam (rectified Adam), as ``torch.optim.RAdam``, plus a device-side AMP skip.

    Args:
        params, lr, betas, eps: as for ``Adam``.
        weight_decay: weight decay (L2 on the gradient, or decoupled, see below).
        decoupled_weight_decay: decay the weights as AdamW does instead of an L2 gradient term.
        foreach: accepted as PyTorch's implementation switch (same math here).
        maximize: ascend instead of descend.
        capturable: accepted (the step counter already lives on the device).
        differentiable: must be False (steps never record a graph).
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        decoupled_weight_decay=bool(decoupled_weight_decay),
                        **_common.torch_flags("RAdam", foreach=foreach, capturable=capturable,
                                              differentiable=differentiable))
        super().__init__(params, defaults)

    def _step_terms(self, group, new_step, dt, xp):
        """``(1 - beta1**t, sqrt(1 - beta2**t), r_t, rho_t > 5)`` as 0-d device arrays (dtype ``dt``)."""
        beta1, beta2 = group["betas"]
        t = new_step.astype(numpy.float64)
        bias_correction1 = 1.0 - xp.power(numpy.float64(beta1), t)
        bias_correction2 = 1.0 - xp.power(numpy.float64(beta2), t)
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * t * xp.power(numpy.float64(beta2), t) / bias_correction2
        rect = xp.sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
        return (bias_correction1.astype(dt), xp.sqrt(bias_correction2).astype(dt), xp.asarray(rect).astype(dt),
                rho_t > 5.0)

    def _update_one(self, p, group, found, terms) -> None:
        bias_correction1, bias_correction2_sqrt, rect, rectify = terms
        xp, dt, value, g, m, v = self._moments(p, group, found)
        step = (m / bias_correction1) * scalar(group["lr"], dt)
        adaptive = bias_correction2_sqrt / (xp.sqrt(v) + scalar(group["eps"], dt))
        step = xp.where(rectify, (step * adaptive) * rect, step)
        commit(p.array, value - step, found, xp)

"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (``torch.optim.SGD``).

The update, per parameter p with gradient g (all in fp32, whatever g's dtype)::

    g = -g if maximize;  g = g + weight_decay * p
    buf = g                                         (first step)
    buf = momentum * buf + (1 - dampening) * g      (later steps)
    g = g + momentum * buf if nesterov else buf
    p = p - lr * g

Fused (``fused=True``, or CUDA fp32 parameters with ``fused=None``), one step of the
whole group is one multi-tensor kernel per grad dtype: ``optim/kernels/sgd.cu``
(``cupynet.optim.kernels.fused_sgd_``; its NumPy reference gives the same bits).
Unfused, each parameter goes through that reference's rule,
``cupynet.optim.kernels.reference.sgd_update_``: the one Python statement of it.
"""

from __future__ import annotations

from cupynet import backend, dtypes
from cupynet.checks import check_number
from cupynet.optim import _common, kernels
from cupynet.optim._common import commit
from cupynet.optim.kernels import reference
from cupynet.optim.optimizer import Optimizer
from cupynet.tensor import Tensor

__all__ = ["SGD"]

_FLAG = "momentum_buffer_unset"


class SGD(Optimizer):
    """SGD, exactly as ``torch.optim.SGD`` (single-tensor math), plus a device-side AMP skip.

    NOTE: when a step with ``found_inf`` creates a momentum buffer, the buffer
    may stay unwritten (skipped step), so the state also holds
    ``momentum_buffer_unset`` (int32, 1 until a step is taken): the next step
    then uses ``buf = g`` as PyTorch's first step does. Plain steps never add it.

    Args:
        params: Tensors or param-group dicts to optimize.
        lr: learning rate (default 1e-3, as PyTorch 2).
        momentum: momentum factor.
        dampening: dampening of the momentum.
        weight_decay: L2 penalty added to the gradient.
        nesterov: use Nesterov momentum (needs momentum > 0 and dampening 0).
        maximize: ascend instead of descend.
        fused: None (fused kernels when every param is CUDA fp32), True (always; NumPy reference on the
            CPU), False (per-parameter path).
    """

    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False, fused=None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, fused=fused)
        super().__init__(params, defaults)

    def _validate_group(self, group) -> None:
        check_number("SGD", "lr", group["lr"], label="learning rate")
        check_number("SGD", "momentum", group["momentum"], label="momentum value")
        check_number("SGD", "dampening", group["dampening"], low=None, label="dampening value")
        check_number("SGD", "weight_decay", group["weight_decay"], label="weight_decay value")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: Nesterov momentum requires a momentum and zero dampening (got momentum="
                             f"{group['momentum']}, dampening={group['dampening']})")
        _common.validate_fused("SGD", group)

    def _update_group(self, group, params, found):
        first = self._prepare_buffers(params, found) if group["momentum"] != 0 else set()
        if _common.use_fused(group, params):
            self._fused_update(group, params, found, first)
        else:
            coefficients = {}
            for p in params:
                self._update_one(p, group, found, id(p) in first, coefficients)
            if any(_FLAG in self.state[p] for p in params):
                self._clear_flags(params, found)
        for p in params:
            p._bump_version()

    def _prepare_buffers(self, params, found) -> set:
        """Create missing momentum buffers; return the ids of params whose first step is known on the host."""
        new = [p for p in params if self.state[p].get("momentum_buffer") is None]
        flags = {}
        for p in new:
            xp = backend.get_array_module(p.array)
            self.state[p]["momentum_buffer"] = _common.new_state_tensor(p, xp)
            if found is not None:
                device = str(backend.device_of_array(p.array))
                self.state[p][_FLAG] = flags.setdefault(device, Tensor(xp.ones((), dtype=dtypes.int32)))
        self._unshare(params, _FLAG)
        return {id(p) for p in new} if found is None else set()

    def _update_one(self, p, group, found, first: bool, coefficients) -> None:
        """One parameter's step: ``kernels.reference.sgd_update_`` in its compute dtype, with the AMP skip.

        NOTE: the same constants and the same operations, in the same order, as the
        fused kernel and its reference (for fp32), so the unfused step gives their
        numbers; only the store differs (NaNs are not made canonical). With no skip
        to decide and the param in its compute dtype, the rule updates it in place;
        otherwise it updates copies, and ``commit`` keeps the old values on a skip.

        Args:
            p: the parameter.
            group: its param group.
            found: 0-d found_inf array, or None.
            first: whether this step creates the momentum buffer (``buf = g``), known on the host.
            coefficients: per-dtype ``SgdCoefficients``, rounded once and shared by the group's parameters.
        """
        xp = backend.get_array_module(p.array)
        dt = _common.compute_dtype_of(p)
        c = coefficients.get(dt)
        if c is None:
            c = coefficients[dt] = kernels.sgd_coefficients(
                group["lr"], group["momentum"], group["dampening"], group["weight_decay"], group["nesterov"],
                group["maximize"], dtype=dt)
        g = _common.read_grad(p, dt, group["maximize"])
        st = self.state[p]
        buf = st["momentum_buffer"].array if c.use_momentum else None
        flag = st.get(_FLAG)
        # NOTE: a step after a skipped first step knows only on the device whether buf is set
        first_step = True if first else (False if flag is None else flag.array)
        if found is None and p.array.dtype == dt:
            reference.sgd_update_(p.array, g, buf, c, first_step)
            return
        value, new_buf = p.array.astype(dt), None if buf is None else buf.copy()
        reference.sgd_update_(value, g, new_buf, c, first_step)
        if new_buf is not None:
            commit(buf, new_buf, found, xp)
        commit(p.array, value, found, xp)

    def _clear_flags(self, params, found) -> None:
        for flag, _ in self._group_by_shared(params, _FLAG):
            if flag is not None:
                xp = backend.get_array_module(flag.array)
                commit(flag.array, xp.zeros((), dtype=dtypes.int32), found, xp)

    def _fused_update(self, group, params, found, first) -> None:
        hyper = dict(lr=group["lr"], momentum=group["momentum"], dampening=group["dampening"],
                     nesterov=group["nesterov"], weight_decay=group["weight_decay"], maximize=group["maximize"])
        if group["momentum"] == 0:
            kernels.fused_sgd_([p.array for p in params], _common.kernel_grads(params), None, first_step=False,
                               found_inf=found, **hyper)
            return
        for flag, members in self._group_by_shared(params, _FLAG):
            for is_first in (True, False):
                batch = [p for p in members if (id(p) in first) == is_first]
                if not batch:
                    continue
                first_step = True if is_first else (flag.array if flag is not None else False)
                bufs = [self.state[p]["momentum_buffer"].array for p in batch]
                kernels.fused_sgd_([p.array for p in batch], _common.kernel_grads(batch), bufs,
                                   first_step=first_step, found_inf=found, **hyper)


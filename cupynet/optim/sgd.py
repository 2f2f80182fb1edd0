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
"""

from __future__ import annotations

from cupynet import backend, dtypes
from cupynet.optim import _common, kernels
from cupynet.optim._common import commit, scalar
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
        _common.check_number("SGD", "lr", group["lr"], label="learning rate")
        _common.check_number("SGD", "momentum", group["momentum"], label="momentum value")
        _common.check_number("SGD", "dampening", group["dampening"], low=None, label="dampening value")
        _common.check_number("SGD", "weight_decay", group["weight_decay"], label="weight_decay value")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: Nesterov momentum requires a momentum and zero dampening (got momentum="
                             f"{group['momentum']}, dampening={group['dampening']})")
        _common.validate_fused("SGD", group)

    def _update_group(self, group, params, found):
        first = self._prepare_buffers(params, found) if group["momentum"] != 0 else set()
        if _common.use_fused(group, params):
            self._fused_update(group, params, found, first)
        else:
            constants = {}
            for p in params:
                st = self.state[p]
                if found is None and _FLAG not in st and p.array.dtype == dtypes.compute_dtype(p.array.dtype):
                    self._update_in_place(p, group, id(p) in first, st, constants)
                else:
                    self._update_one(p, group, found, id(p) in first)
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

    def _update_one(self, p, group, found, first: bool) -> None:
        xp = backend.get_array_module(p.array)
        dt = _common.compute_dtype_of(p)
        g = _common.read_grad(p, dt, group["maximize"])
        value = p.array.astype(dt) if p.array.dtype != dt else p.array
        if group["weight_decay"] != 0:
            g = g + scalar(group["weight_decay"], dt) * value
        momentum = group["momentum"]
        if momentum != 0:
            st = self.state[p]
            buf = st["momentum_buffer"].array
            if first:
                new_buf = g
            else:
                new_buf = buf * scalar(momentum, dt) + scalar(1.0 - group["dampening"], dt) * g
                if st.get(_FLAG) is not None:
                    new_buf = xp.where(st[_FLAG].array != 0, g, new_buf)
            g = g + scalar(momentum, dt) * new_buf if group["nesterov"] else new_buf
            new_param = value + scalar(-group["lr"], dt) * g
            commit(buf, new_buf, found, xp)
        else:
            new_param = value + scalar(-group["lr"], dt) * g
        commit(p.array, new_param, found, xp)

    def _update_in_place(self, p, group, first: bool, st, constants) -> None:
        """The same update as ``_update_one`` when there is no skip to decide and the param is in its compute dtype.

        NOTE: every product and sum rounds exactly where the out-of-place formulas
        do (``buf * m``, then ``+ (1 - d) * g``; ``-lr * g``, then ``p +``), so the
        results are bit-identical; only temporaries and copies are saved.
        Multiplying by ``1 - 0`` is exact, so dampening 0 skips that product.

        Args:
            p: the parameter (its data in its compute dtype).
            group: its param group.
            first: whether this step creates the momentum buffer (``buf = g``).
            st: ``self.state[p]``.
            constants: per-dtype hyper-parameters rounded once, shared by the group's parameters.
        """
        dt = p.array.dtype
        c = constants.get(dt)
        if c is None:
            c = constants[dt] = _rounded_constants(group, dt)
        g = _common.read_grad(p, dt, group["maximize"])
        if c["weight_decay"] is not None:
            g = g + c["weight_decay"] * p.array
        if c["momentum"] is not None:
            buf = st["momentum_buffer"].array
            if first:
                buf[...] = g
            else:
                buf *= c["momentum"]
                buf += g if c["one_minus_dampening"] is None else c["one_minus_dampening"] * g
            g = g + c["momentum"] * buf if group["nesterov"] else buf
        p.array += c["minus_lr"] * g

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


def _rounded_constants(group, dt) -> dict:
    """The group's hyper-parameters as ``dt`` scalars (None where the term drops out: 0 decay, no momentum)."""
    return {
        "weight_decay": scalar(group["weight_decay"], dt) if group["weight_decay"] != 0 else None,
        "momentum": scalar(group["momentum"], dt) if group["momentum"] != 0 else None,
        "one_minus_dampening": scalar(1.0 - group["dampening"], dt) if group["dampening"] != 0 else None,
        "minus_lr": scalar(-group["lr"], dt),
    }

"""``Optimizer``: param groups, per-parameter state, ``zero_grad`` and a PyTorch-layout ``state_dict``.

The element-wise optimizers (Adam, RMSprop, Adagrad, ...) write only their state
names (``_state_names``), the step-dependent scalars (``_step_terms``) and one
parameter's update (``_update_one``); SGD and LBFGS write their own
``_update_group`` / ``step``. The base class does the bookkeeping, the argument
checks (the ``_checks`` table) and the AMP contract:
``step(closure=None, found_inf=None)`` skips the update *on the device* when
``found_inf`` is set, so ``GradScaler`` needs no host sync per step.

NOTE (shared scalar state): parameters first stepped together share one
``step`` Tensor (and SGD's ``momentum_buffer_unset`` flag), so one device
scalar serves them all and the fused kernels take a whole group in one launch.
Before a step, a shared scalar is copied for every parameter that is *not*
being stepped (copy on write), so counts never leak between parameters.
"""

from __future__ import annotations

from collections import defaultdict

import numpy

from cupynet import backend, dtypes
from cupynet.autograd import enable_grad, no_grad
from cupynet.checks import check_number, check_pair
from cupynet.optim import _common
from cupynet.optim._state_io import load_optimizer_state, pack_state_dict
from cupynet.tensor import Tensor

__all__ = ["Optimizer", "required"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()
"""Marks a hyper-parameter every param group must give (like ``torch.optim.optimizer.required``)."""


class Optimizer:
    """Base class of all optimizers: holds param groups and per-parameter state.

    Args:
        params: an iterable of Tensors, or of dicts (param groups) with a ``"params"`` entry.
        defaults: default hyper-parameters for groups that do not set them.
    """

    _step_supports_amp_scaling = False
    _scalar_state_keys = ("step", "momentum_buffer_unset")
    """0-d state entries: copied by ``state_dict()``, loaded as 0-d float32/int32 Tensors."""
    _shared_state_keys = ("step", "momentum_buffer_unset")
    """0-d state entries that parameters stepped together share (merged again on load)."""
    _free_shape_state_keys = ()
    """State arrays of any shape (LBFGS's flat vectors): loaded without the parameter-shape check."""
    _checks = ()
    """``(key, PyTorch's label, check_number bounds)`` rows that ``_validate_group`` applies to a group."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = defaultdict(dict)
        self.param_groups = []
        for group in _as_group_list(type(self).__name__, params):
            self.add_param_group(group)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])

    # ---- groups --------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group of parameters (with its own hyper-parameters) to optimize.

        Args:
            param_group: a dict with ``"params"`` (a Tensor or iterable of Tensors) and optional overrides.
        """
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}.add_param_group: param_group must be a dict, got {type(param_group).__name__}")
        group = dict(param_group)
        params = group.get("params")
        group["params"] = [params] if isinstance(params, Tensor) else _tensor_list(name, params)
        for key, default in self.defaults.items():
            if default is required and key not in group:
                raise ValueError(f"{name}: parameter group didn't specify a value of required optimization "
                                 f"parameter {key}")
            group.setdefault(key, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in group["params"]}) != len(group["params"]) or seen & {id(p) for p in group["params"]}:
            raise ValueError(f"{name}: some parameters appear in more than one parameter group (or twice in one)")
        self._validate_group(group)
        self.param_groups.append(group)

    def _validate_group(self, group) -> None:
        """Check a group's hyper-parameters against ``_checks`` (and ``betas``, when the group has them).

        Args:
            group: the param group dict, defaults filled in.
        """
        name = type(self).__name__
        for key, label, bounds in self._checks:
            check_number(name, key, group[key], label=label, **bounds)
        if "betas" in group:
            check_pair(name, "betas", group["betas"], "beta parameter", high=1.0)

    # ---- gradients -----------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True):
        """Reset the gradients of every parameter.

        Args:
            set_to_none: set ``.grad = None`` (default, like PyTorch) instead of filling it with zeros.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach() if p.grad.grad_fn is not None else p.grad
                    p.grad.array[...] = 0
                    p.grad._bump_version()

    # ---- step ------------------------------------------------------------------------------
    def step(self, closure=None, found_inf=None):
        """Update every parameter that has a gradient; with ``found_inf`` set (on the device), change nothing.

        Args:
            closure: optional callable that re-evaluates the model and returns the loss (run with grad enabled).
            found_inf: optional float32 array of shape (1,) on the parameters' device; 1.0 means the gradients
                had inf/NaN and the update (parameters, state and step counters) is skipped, decided on the
                device with no host sync.
        """
        if type(self)._update_one is Optimizer._update_one and type(self)._update_group is Optimizer._update_group:
            raise NotImplementedError(f"{type(self).__name__} must implement step() or _update_group()")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        name = type(self).__name__
        stepping = [_common.params_with_grads(g) for g in self.param_groups]
        everything = [p for ps in stepping for p in ps]
        found = _common.check_found_inf(name, found_inf, everything)
        _common.check_grads(name, everything)
        with no_grad():
            for group, params in zip(self.param_groups, stepping):
                if params:
                    self._update_group(group, params, found)
        return loss

    def _update_group(self, group, params, found):
        """Update the parameters of one group, element-wise: lazy state, one step counter, ``_update_one`` each.

        Args:
            group: the param group dict.
            params: its parameters that have a gradient.
            found: 0-d float32 found_inf array, or None.
        """
        self._ensure_state(params, group)
        self._unshare(params, "step")
        for step, members in self._group_by_shared(params, "step"):
            self._update_members(group, members, step, found)
        for p in params:
            p._bump_version()

    def _update_members(self, group, members, step, found) -> None:
        """Advance a shared step counter (on the device) and update the parameters that share it.

        Args:
            group: the param group dict.
            members: parameters sharing ``step``.
            step: their 0-d float32 step Tensor.
            found: 0-d found_inf array, or None.
        """
        xp = backend.get_array_module(step.array)
        new_step = _common.blend(found, step.array, step.array + numpy.float32(1.0), xp)
        terms = {}
        with numpy.errstate(all="ignore"):  # NOTE: a skipped step may hold inf/NaN; ``where`` discards them
            for p in members:
                dt = _common.compute_dtype_of(p)
                if dt not in terms:
                    terms[dt] = self._step_terms(group, new_step, dt, xp)
                self._update_one(p, group, found, terms[dt])
        step.array[...] = new_step

    def _state_names(self, group) -> dict:
        """``{state name: initial fill}`` of the per-element state a parameter gets at its first step.

        Args:
            group: the param group dict.
        """
        return {}

    def _scalar_names(self, group) -> dict:
        """``{state name: initial value}`` of each parameter's own 0-d float32 state (NAdam's ``mu_product``).

        Args:
            group: the param group dict.
        """
        return {}

    def _step_terms(self, group, new_step, dt, xp):
        """Scalars that depend on the step count, computed once per shared step and dtype (device arrays).

        Args:
            group: the param group dict.
            new_step: the 0-d float32 step count after this step (a skipped step keeps the old count).
            dt: the compute dtype.
            xp: the array module.
        """
        return None

    def _update_one(self, p, group, found, terms) -> None:
        """Update one parameter and its state (element-wise optimizers implement it).

        Args:
            p: the parameter.
            group: its param group.
            found: 0-d found_inf array, or None.
            terms: what ``_step_terms`` returned.
        """
        raise NotImplementedError

    def _ensure_state(self, params, group) -> None:
        """Create missing state: one step counter per device shared by new parameters, buffers and 0-d scalars.

        Args:
            params: the parameters about to be stepped.
            group: their param group (``_state_names`` and ``_scalar_names`` of it say what to create).
        """
        names, scalars = self._state_names(group), self._scalar_names(group)
        steps = {}
        for p in params:
            st = self.state[p]
            xp = backend.get_array_module(p.array)
            if "step" not in st:
                device = str(backend.device_of_array(p.array))
                st["step"] = steps.setdefault(device, Tensor(xp.zeros((), dtype=dtypes.float32)))
            for key, fill in names.items():
                if key not in st:
                    st[key] = _common.new_state_tensor(p, xp, fill=fill)
            for key, value in scalars.items():
                if key not in st:
                    st[key] = Tensor(xp.asarray(value, dtype=dtypes.float32))

    def _prepared(self, p, group, decoupled=False):
        """``(xp, dt, state, g, value)`` for one parameter: fp32 gradient (negated to maximize), weight decay applied.

        L2 decay adds ``weight_decay * p`` to the gradient; decoupled decay
        scales the value by ``1 - lr * weight_decay`` (AdamW, NAdam/RAdam's
        ``decoupled_weight_decay``).

        Args:
            p: the parameter.
            group: its param group.
            decoupled: whether weight decay is decoupled.
        """
        xp = backend.get_array_module(p.array)
        dt = _common.compute_dtype_of(p)
        g = _common.read_grad(p, dt, group.get("maximize", False))
        value = p.array.astype(dt) if p.array.dtype != dt else p.array
        wd = group.get("weight_decay", 0)
        if wd != 0 and decoupled:
            value = value * _common.scalar(1.0 - group["lr"] * wd, dt)
        elif wd != 0:
            g = g + _common.scalar(wd, dt) * value
        return xp, dt, self.state[p], g, value

    # ---- shared scalar state ---------------------------------------------------------------
    def _unshare(self, stepping, key) -> None:
        """Give a private copy of ``state[q][key]`` to every parameter q that shares it but is not stepping.

        Args:
            stepping: the parameters about to be stepped.
            key: the state key of a shared scalar ("step", ...).
        """
        used = {id(self.state[p][key]) for p in stepping if key in self.state.get(p, {})}
        if not used:  # NOTE: the common case (nothing shared under this key): no walk over all the state
            return
        stepping_ids = {id(p) for p in stepping}
        copies = {}
        for q, st in self.state.items():
            shared = st.get(key)
            if id(q) not in stepping_ids and shared is not None and id(shared) in used:
                copies.setdefault(id(shared), _common.copy_tensor(shared))
                st[key] = copies[id(shared)]

    def _group_by_shared(self, params, key) -> list:
        """``[(shared Tensor or None, [params])]``: parameters grouped by the identity of ``state[p][key]``.

        Args:
            params: the parameters to group.
            key: the state key.
        """
        groups: dict = {}
        for p in params:
            shared = self.state[p].get(key)
            groups.setdefault(id(shared), (shared, []))[1].append(p)
        return list(groups.values())

    # ---- state dict ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The state as ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        State values are cupynet Tensors: the big buffers are the live ones (as PyTorch); scalar state
        (``step``) is copied, since parameters may share it.
        """
        return pack_state_dict(self)

    def load_state_dict(self, state_dict) -> None:
        """Load a state saved by ``state_dict()``; everything is validated before anything changes.

        Args:
            state_dict: the dict from ``state_dict()`` (state values: Tensors or arrays, moved to each
                parameter's device and cast to its compute dtype; ``step`` stays float32).
        """
        state, groups = load_optimizer_state(self, state_dict)
        for group in groups:
            self._validate_group(group)
        self.state = state
        self.param_groups = groups


def _tensor_list(owner, params) -> list:
    if params is None or isinstance(params, (str, bytes, dict)) or not hasattr(params, "__iter__"):
        raise TypeError(f"{owner}: params argument given to the optimizer should be an iterable of Tensors or "
                        f"dicts, but got {type(params).__name__}")
    params = list(params)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{owner}: optimizer can only optimize Tensors, but one of the params is "
                            f"{type(p).__name__}")
        if p.grad_fn is not None:
            raise ValueError(f"{owner}: can't optimize a non-leaf Tensor (made by {p.grad_fn.name()})")
        if not _is_float(p):
            raise TypeError(f"{owner}: can only optimize floating point Tensors, got one of dtype {p.dtype}")
    return params


def _is_float(p) -> bool:
    return dtypes.is_floating(p.dtype)


def _as_group_list(owner, params) -> list:
    if isinstance(params, Tensor):
        raise TypeError(f"{owner}: params argument given to the optimizer should be an iterable of Tensors or "
                        f"dicts, but got a Tensor of shape {params.shape}")
    if params is None or isinstance(params, (str, bytes, dict)) or not hasattr(params, "__iter__"):
        raise TypeError(f"{owner}: params argument given to the optimizer should be an iterable of Tensors or "
                        f"dicts, but got {type(params).__name__}")
    items = list(params)
    if not items:
        raise ValueError(f"{owner}: optimizer got an empty parameter list")
    if all(isinstance(g, dict) for g in items):
        return items
    if any(isinstance(g, dict) for g in items):
        raise TypeError(f"{owner}: params must be all Tensors or all dicts (param groups), not a mix")
    return [{"params": _tensor_list(owner, items)}]

"""``Optimizer``: param groups, per-parameter state, ``zero_grad`` and a PyTorch-layout ``state_dict``.

The subclasses (SGD, Adam, AdamW, RMSprop) only write ``_update_group``; the
base class does the bookkeeping, the argument checks and the AMP contract:
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

from cupynet import dtypes
from cupynet.autograd import enable_grad, no_grad
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
        """Check a group's hyper-parameters (subclasses raise a clear ValueError).

        Args:
            group: the param group dict, defaults filled in.
        """

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
        if type(self)._update_group is Optimizer._update_group:
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
        """Update the parameters of one group (implemented by each optimizer).

        Args:
            group: the param group dict.
            params: its parameters that have a gradient.
            found: 0-d float32 found_inf array, or None.
        """
        raise NotImplementedError

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

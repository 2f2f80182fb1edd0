"""Packing an optimizer's state into PyTorch's ``state_dict`` layout, and loading it back, validated first.

Layout (the same as ``torch.optim.Optimizer.state_dict``)::

    {"state": {0: {"step": Tensor, "exp_avg": Tensor, ...}, 1: {...}},
     "param_groups": [{"lr": 0.001, ..., "params": [0, 1]}, ...]}

Parameters are numbered in group order. Loading checks the group count, the
group sizes, the indices and every tensor's shape before it changes anything,
so a mismatched checkpoint raises and leaves the optimizer as it was.
"""

from __future__ import annotations

import numbers
from collections import defaultdict

import numpy

from cupynet import backend, dtypes
from cupynet.optim import _common
from cupynet.tensor import Tensor

__all__ = ["pack_state_dict", "load_optimizer_state"]


def pack_state_dict(opt) -> dict:
    """Build ``{"state": ..., "param_groups": ...}`` for an optimizer (see the module docstring).

    Args:
        opt: the optimizer.
    """
    mapping, groups = {}, []
    for group in opt.param_groups:
        packed = {k: v for k, v in group.items() if k != "params"}
        for p in group["params"]:
            mapping.setdefault(id(p), len(mapping))
        packed["params"] = [mapping[id(p)] for p in group["params"]]
        groups.append(packed)
    state = {}
    for p, st in opt.state.items():
        if id(p) in mapping:
            state[mapping[id(p)]] = {
                k: _common.copy_tensor(v) if k in opt._scalar_state_keys and isinstance(v, Tensor) else v
                for k, v in st.items()
            }
    return {"state": state, "param_groups": groups}


def _fail(where, message):
    raise ValueError(f"{where}: {message}")


def _check_layout(where, state_dict, groups) -> list:
    if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
        _fail(where, "expected a dict with keys 'state' and 'param_groups' (from Optimizer.state_dict()), got "
              f"{type(state_dict).__name__}" + (f" with keys {sorted(state_dict)}" if isinstance(state_dict, dict)
                                               else ""))
    saved = state_dict["param_groups"]
    if not isinstance(saved, (list, tuple)) or len(saved) != len(groups):
        count = len(saved) if isinstance(saved, (list, tuple)) else type(saved).__name__
        _fail(where, f"loaded state dict has a different number of parameter groups ({count}) than the "
              f"optimizer ({len(groups)})")
    for i, (sg, g) in enumerate(zip(saved, groups)):
        if not isinstance(sg, dict) or not isinstance(sg.get("params"), (list, tuple)):
            _fail(where, f"param_groups[{i}] must be a dict with a 'params' list of indices")
        if len(sg["params"]) != len(g["params"]):
            _fail(where, "loaded state dict contains a parameter group that doesn't match the size of "
                  f"optimizer's group: group {i} has {len(sg['params'])} saved parameters, the optimizer's has "
                  f"{len(g['params'])}")
    if not isinstance(state_dict["state"], dict):
        _fail(where, f"'state' must be a dict of {{index: dict}}, got {type(state_dict['state']).__name__}")
    return list(saved)


def _index(where, key) -> int:
    if isinstance(key, str) and key.isdigit():
        return int(key)
    if isinstance(key, bool) or not isinstance(key, numbers.Integral):
        _fail(where, f"state key {key!r} is not a parameter index")
    return int(key)


def _as_array(value):
    if isinstance(value, Tensor):
        return value.array
    if isinstance(value, numpy.ndarray) or backend.is_device_array(value):
        return value
    return None


def _place_like(array, param):
    """A copy of ``array`` on ``param``'s device."""
    target = backend.device_of_array(param.array)
    if target.type == "cpu":
        return numpy.array(backend.to_numpy(array), copy=True)
    cupy = target.xp
    with cupy.cuda.Device(target.index):
        return cupy.array(array, copy=True)


def _cast_value(where, index, key, value, param, opt):
    array = _as_array(value)
    if array is None:
        return value  # NOTE: None and plain numbers (PyTorch keeps some) are kept as they are
    label = f"state[{index}][{key!r}]"
    if key in opt._scalar_state_keys:
        if array.size != 1:
            _fail(where, f"{label} must hold one value, got shape {tuple(array.shape)}")
        dtype = dtypes.float32 if dtypes.is_floating(array.dtype) else dtypes.int32
        return Tensor(_place_like(array.reshape(()).astype(dtype), param))
    if key not in opt._free_shape_state_keys and tuple(array.shape) != tuple(param.shape):
        _fail(where, f"{label} has shape {tuple(array.shape)} but parameter {index} has shape "
              f"{tuple(param.shape)}; the checkpoint does not match this model")
    if dtypes.is_floating(array.dtype):
        array = array.astype(_common.compute_dtype_of(param), copy=False)
    return Tensor(_place_like(array, param))


def _merge_shared_scalars(state, groups, scalar_keys) -> None:
    """Let parameters of one group whose scalar state is equal share one Tensor again (for the fused path).

    NOTE: this reads the loaded scalars on the host once, at load time (a sync
    on the GPU); steps themselves never do.
    """
    for group in groups:
        for key in scalar_keys:
            shared = {}
            for p in group["params"]:
                value = state.get(p, {}).get(key)
                if isinstance(value, Tensor):
                    host = backend.to_numpy(value.array)
                    token = (str(value.device), str(host.dtype), host.tobytes())
                    state[p][key] = shared.setdefault(token, value)


def load_optimizer_state(opt, state_dict):
    """Validate a state dict against ``opt`` and return ``(new_state, new_groups)``; nothing is changed.

    Args:
        opt: the optimizer.
        state_dict: the dict from ``state_dict()``.
    """
    where = f"{type(opt).__name__}.load_state_dict"
    saved_groups = _check_layout(where, state_dict, opt.param_groups)
    by_index = {}
    for sg, g in zip(saved_groups, opt.param_groups):
        for key, p in zip(sg["params"], g["params"]):
            by_index[_index(where, key)] = p
    state = defaultdict(dict)
    for key, values in state_dict["state"].items():
        index = _index(where, key)
        if index not in by_index:
            _fail(where, f"state entry {key!r} names no parameter (the param groups use {sorted(by_index)})")
        if not isinstance(values, dict):
            _fail(where, f"state[{key!r}] must be a dict, got {type(values).__name__}")
        param = by_index[index]
        state[param] = {k: _cast_value(where, index, k, v, param, opt) for k, v in values.items()}
    _merge_shared_scalars(state, opt.param_groups, opt._shared_state_keys)
    groups = []
    for sg, g in zip(saved_groups, opt.param_groups):
        new = {k: (tuple(v) if k == "betas" and isinstance(v, list) else v) for k, v in sg.items() if k != "params"}
        for k, v in g.items():
            new.setdefault(k, v)
        new["params"] = g["params"]
        groups.append(new)
    return state, groups

"""``state_dict`` / ``load_state_dict`` / ``repr`` for ``Module`` (kept apart to keep module.py short).

Loading is all-or-nothing: every key, type and shape is checked first, and only
when all is well are values copied (cast to the destination's dtype and moved to
its device). PyTorch copies what fits before raising; cupynet changes nothing.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from .. import backend

__all__ = ["IncompatibleKeys", "state_dict", "load_state_dict", "module_repr", "copy_into"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def state_dict(module, destination=None, prefix="", keep_vars=False):
    """Fill ``destination`` with ``prefix + name -> tensor`` for every parameter and persistent buffer.

    Args:
        module: the Module.
        destination: a dict, or None for a new OrderedDict.
        prefix: prepended to every key.
        keep_vars: store the Parameters/buffers themselves instead of detached views.
    """
    destination = OrderedDict() if destination is None else destination
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    for name, child in module._modules.items():
        if child is not None:
            state_dict(child, destination, prefix + name + ".", keep_vars)
    return destination


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _read_value(key, value):
    from .parameter import as_array  # noqa: PLC0415 - parameter imports tensor only; keep import order flat
    try:
        return as_array(value, f"load_state_dict: value of key '{key}'"), None
    except TypeError as error:
        return None, str(error)


def _check_entries(own, state):
    """Collect (missing, unexpected, errors, arrays) without changing anything."""
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    errors, arrays = [], {}
    for key, target in own.items():
        if key not in state:
            continue
        array, error = _read_value(key, state[key])
        if error is not None:
            errors.append(error)
        elif tuple(array.shape) != tuple(target.shape):
            errors.append(f"size mismatch for {key}: copying a param with shape {_shape_text(array.shape)} from "
                          f"checkpoint, the shape in current model is {_shape_text(target.shape)}.")
        elif array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
            errors.append(f"load_state_dict: key '{key}' holds values of dtype {array.dtype}; expected numbers")
        else:
            arrays[key] = array
    return missing, unexpected, errors, arrays


def copy_into(target, array):
    """Copy ``array`` into ``target`` in place, moving it to target's device and casting to its dtype.

    Args:
        target: the Tensor to overwrite.
        array: a NumPy/CuPy array of the same shape.
    """
    if backend.device_of_array(array) != target.device:
        array = backend.to_numpy(array)
        if target.is_cuda:
            cupy = target.device.xp
            with cupy.cuda.Device(target.device.index):
                array = cupy.asarray(array)
    xp = backend.get_array_module(target.data)
    xp.copyto(target.data, array.astype(target.dtype, copy=False), casting="unsafe")
    target._bump_version()


def load_state_dict(module, state, strict=True):
    """Validate ``state`` against ``module``'s own keys, then copy every value in place.

    Args:
        module: the Module to load into.
        state: a mapping of key -> Tensor / array.
        strict: missing or unexpected keys raise (listed all at once).
    """
    name = type(module).__name__
    if not isinstance(state, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state).__name__}.")
    own = state_dict(module, keep_vars=True)
    missing, unexpected, errors, arrays = _check_entries(own, state)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {name}:\n\t" + "\n\t".join(errors))
    for key, array in arrays.items():
        copy_into(own[key], array)
    return IncompatibleKeys(missing, unexpected)


def _add_indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def module_repr(module) -> str:
    """PyTorch's module repr: ``Name(extra)`` or ``Name(\\n  (child): ...\\n)``.

    Args:
        module: the Module.
    """
    extra = module.extra_repr()
    extra_lines = extra.split("\n") if extra else []
    child_lines = [f"({key}): " + _add_indent(repr(child), 2) for key, child in module._modules.items()]
    lines = extra_lines + child_lines
    text = type(module).__name__ + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        else:
            text += "\n  " + "\n  ".join(lines) + "\n"
    return text + ")"

"""Array-level helpers shared by the optimizers: gradient checks, fp32 gradients, device-side skipping.
The hyper-parameter checks (``check_number``, ``check_pair``, ``positive_int``) are cupynet's shared
argument checks, in ``cupynet/checks.py``.

Everything here works on the raw xp arrays (``tensor.array``) and never reads a
device value on the host: the AMP skip decision (``found_inf``) stays on the
GPU, so an optimizer step costs no synchronisation.
"""

from __future__ import annotations

import numpy

from cupynet import backend, dtypes
from cupynet.tensor import Tensor

__all__ = [
    "check_found_inf", "check_grads", "params_with_grads", "compute_dtype_of", "scalar",
    "read_grad", "commit", "blend", "lerp_like_torch", "new_state_tensor", "copy_tensor", "validate_fused",
    "use_fused", "kernel_grads", "torch_flags",
]


def host_value(owner, what, value) -> float:
    """A loss or metric read on the host as a float; a clear error naming ``owner`` when it is not one number.

    Args:
        owner: the caller, for the message (``"LBFGS.step"``).
        what: what the value is (``"the closure's loss"``).
        value: a number or a one-element Tensor.
    """
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{owner}: {what} must be a number or a one-element Tensor, got {value!r:.80}") from None


def _place(array) -> str:
    return str(backend.device_of_array(array))


def check_found_inf(owner: str, found_inf, params):
    """Validate ``found_inf`` (metadata only, no sync) and return it as a 0-d float32 xp array, or None.

    Args:
        owner: the optimizer's class name, for the message.
        found_inf: None, or a float32 array / Tensor with one element (1.0 = grads had inf/NaN).
        params: the parameters about to be stepped (their device must match).
    """
    if found_inf is None:
        return None
    array = found_inf.array if isinstance(found_inf, Tensor) else found_inf
    if not hasattr(array, "dtype") or not hasattr(array, "shape"):
        raise TypeError(f"{owner}.step: found_inf must be a float32 array of shape (1,), got {type(found_inf)}")
    if array.dtype != dtypes.float32 or array.size != 1 or array.ndim > 1:
        raise ValueError(f"{owner}.step: found_inf must be a float32 array of shape (1,), "
                         f"got {array.dtype} of shape {tuple(array.shape)}")
    for p in params:
        if _place(p.array) != _place(array):
            raise ValueError(f"{owner}.step: found_inf is on {_place(array)} but a parameter is on "
                             f"{_place(p.array)}; expected both on one device (no host copy is made)")
    return array.reshape(())


def params_with_grads(group) -> list:
    """The parameters of a group whose ``.grad`` is set (the others are skipped, as in PyTorch).

    Args:
        group: a param group dict.
    """
    return [p for p in group["params"] if p.grad is not None]


def check_grads(owner: str, params) -> None:
    """Check that each gradient matches its parameter's shape and device and is floating point.

    Args:
        owner: the optimizer's class name, for the message.
        params: parameters whose ``.grad`` is not None.
    """
    for i, p in enumerate(params):
        g = p.grad.array
        if tuple(g.shape) != tuple(p.array.shape):
            raise ValueError(f"{owner}.step: parameter {i} has shape {tuple(p.array.shape)} but its grad has shape "
                             f"{tuple(g.shape)}; expected equal shapes")
        if not dtypes.is_floating(g.dtype):
            raise TypeError(f"{owner}.step: parameter {i} has a grad of dtype {g.dtype}; expected a floating dtype")
        if type(g) is numpy.ndarray and type(p.array) is numpy.ndarray:
            continue  # NOTE: both on the CPU: no device names to build and compare
        if _place(g) != _place(p.array):
            raise ValueError(f"{owner}.step: parameter {i} is on {_place(p.array)} but its grad is on {_place(g)}")


def compute_dtype_of(param):
    """The dtype optimizer math and state use for a parameter: fp32 for fp32/fp16/bf16, fp64 for fp64.

    Args:
        param: a parameter Tensor.
    """
    return dtypes.compute_dtype(param.array.dtype)


def scalar(value, dtype):
    """A host scalar rounded once to ``dtype`` (how PyTorch turns a Python double into the tensor's opmath).

    Args:
        value: a Python number.
        dtype: the compute dtype.
    """
    return numpy.dtype(dtype).type(value)


def read_grad(param, dtype, maximize: bool):
    """The gradient upcast to the compute dtype (fp16/bf16 grads are widened exactly), negated if maximizing.

    Args:
        param: a parameter with ``.grad`` set.
        dtype: the compute dtype.
        maximize: ascend instead of descend.
    """
    g = param.grad.array
    g = g.astype(dtype) if g.dtype != dtype else g
    return -g if maximize else g


def blend(found, old, new, xp):
    """``new`` where found is 0, ``old`` where it is set; decided on the device.

    NOTE: never ``old * f + new * (1 - f)``: a skipped step usually has inf/NaN
    in ``new``, and NaN * 0 is NaN. ``where`` selects, bit for bit.

    Args:
        found: 0-d found_inf array, or None (then ``new`` is returned).
        old: the current values.
        new: the updated values.
        xp: the array module.
    """
    return new if found is None else xp.where(found != 0, old, new)


def commit(target, new, found, xp) -> None:
    """Write ``new`` into the array ``target`` in place (kept as is where found_inf is set).

    Args:
        target: the array to update (a parameter's or a state tensor's data).
        new: the new values (compute dtype; rounded to the target dtype on store).
        found: 0-d found_inf array, or None.
        xp: the array module.
    """
    target[...] = blend(found, target, new, xp)


def lerp_like_torch(start, end, weight):
    """``torch.lerp(start, end, weight)`` for a host scalar weight, with PyTorch's two branches.

    NOTE: PyTorch computes ``start + w * (end - start)`` when ``|w| < 0.5`` and
    ``end - (end - start) * (1 - w)`` otherwise, which is exact at ``w == 1``.

    Args:
        start: the array moved from.
        end: the array moved towards.
        weight: the weight, already rounded to the compute dtype.
    """
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (weight.dtype.type(1) - weight)


def new_state_tensor(param, xp=None, dtype=None, fill=0.0):
    """A state Tensor shaped like ``param`` (C-contiguous, compute dtype, same device), filled with ``fill``.

    Args:
        param: the parameter.
        xp: the array module (default: the parameter's).
        dtype: the dtype (default: the parameter's compute dtype).
        fill: the initial value (rounded once to the dtype).
    """
    xp = xp or backend.get_array_module(param.array)
    dtype = dtype or compute_dtype_of(param)
    if fill == 0:
        return Tensor(xp.zeros(param.array.shape, dtype=dtype))
    return Tensor(xp.full(param.array.shape, scalar(fill, dtype), dtype=dtype))


def copy_tensor(t) -> Tensor:
    """A Tensor holding a copy of ``t``'s data on the same device (a device copy, no sync).

    Args:
        t: a Tensor.
    """
    return Tensor(t.array.copy())


def validate_fused(owner: str, group) -> None:
    """Check a group's ``fused`` flag: None, False, or True with contiguous fp32 params.

    Args:
        owner: the optimizer's class name, for the message.
        group: the param group dict.
    """
    fused = group.get("fused")
    if fused is None or fused is False:
        return
    if fused is not True:
        raise ValueError(f"{owner}: fused must be None, True or False, got {fused!r}")
    for i, p in enumerate(group["params"]):
        if p.array.dtype != dtypes.float32 or not p.array.flags.c_contiguous:
            raise ValueError(f"{owner}: fused=True requires contiguous float32 parameters (fp32 master weights), "
                             f"but parameter {i} is {p.array.dtype} of shape {tuple(p.array.shape)}"
                             + ("" if p.array.flags.c_contiguous else " and not contiguous"))


def use_fused(group, params) -> bool:
    """Whether this step of a group runs the fused multi-tensor kernels (``cupynet.optim.kernels``).

    ``fused=None`` picks them when every parameter is a contiguous CUDA fp32
    array; ``fused=True`` always (on the CPU through their NumPy reference).

    Args:
        group: the param group dict.
        params: its parameters that have a gradient.
    """
    fused = group.get("fused")
    if fused is False:
        return False
    if fused is True:
        return True
    return all(not isinstance(p.array, numpy.ndarray) and p.array.dtype == dtypes.float32
               and p.array.flags.c_contiguous for p in params)


def kernel_grads(params) -> list:
    """The gradients as the kernels want them: contiguous, fp32/fp16/bf16 (others cast to fp32; no sync).

    Args:
        params: parameters with ``.grad`` set.
    """
    out = []
    for p in params:
        g = p.grad.array
        xp = backend.get_array_module(g)
        g = g if g.dtype in dtypes.FLOATING[:3] else g.astype(dtypes.float32)
        out.append(xp.ascontiguousarray(g))
    return out


def torch_flags(owner: str, **flags) -> dict:
    """PyTorch's implementation switches (``foreach``, ``capturable``, ``differentiable``), checked, for ``defaults``.

    NOTE: cupynet's per-parameter math is PyTorch's single-tensor order, its
    step counters already live on the device (what ``capturable`` asks for),
    and ``foreach`` only picks PyTorch's loop; so these are accepted and kept
    in the param groups as PyTorch keeps them. ``differentiable=True`` (a step
    that records a graph) is refused: steps run under ``no_grad``.

    Args:
        owner: the optimizer's class name, for the message.
        **flags: the flags given, by name.
    """
    for name, value in flags.items():
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{owner}: {name} must be None, True or False, got {value!r}")
    if flags.get("differentiable"):
        raise ValueError(f"{owner}: differentiable=True is not supported (cupynet steps never record a graph)")
    return flags

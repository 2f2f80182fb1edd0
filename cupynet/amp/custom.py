"""``custom_fwd`` / ``custom_bwd``: autocast for user-written ``cupynet.autograd.Function`` subclasses.

A custom Function has no ``amp_policy`` of its own (autocast leaves its inputs
alone), so these decorators let its author say what should happen:

* ``@custom_fwd(cast_inputs=cupynet.float32)`` on ``forward``: when autocast is
  on for the device, the forward runs with autocast *off*, on its floating
  inputs cast to ``cast_inputs`` (the way to say "this op must run in fp32");
* ``@custom_fwd`` without ``cast_inputs``: the forward runs under the current
  autocast state (ops it calls are autocast as usual);
* ``@custom_bwd`` on ``backward``: the backward runs under the autocast state
  the forward ran under (``ctx.autocast_snapshot``), not the state in force
  when ``backward()`` is called, which usually is outside any region.
"""

from __future__ import annotations

import functools

from .. import dtypes
from ..autograd.state import STATE
from ..tensor import Tensor
from .autocast import autocast, check_device_type, pop_region, push_region

__all__ = ["custom_fwd", "custom_bwd"]


def _cast_inputs(value, device_type: str, dtype):
    """Cast floating tensors on ``device_type`` (not float64) in nested lists/tuples/dicts to ``dtype``."""
    if isinstance(value, Tensor):
        eligible = (value.dtype in dtypes.FLOATING and value.dtype != dtypes.float64
                    and value.device.type == device_type)
        return value.to(dtype) if eligible and value.dtype != dtype else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_inputs(v, device_type, dtype) for k, v in value.items()}
    return value


def _check_cast_inputs(cast_inputs):
    if cast_inputs is None:
        return None
    try:
        d = dtypes.as_dtype(cast_inputs)
    except TypeError as error:
        raise ValueError(f"custom_fwd: cast_inputs must be a floating dtype, got {cast_inputs!r} ({error})") from None
    if d not in dtypes.FLOATING:
        raise ValueError(f"custom_fwd: cast_inputs must be a floating dtype (float16, bfloat16, float32, float64), "
                         f"got {d}")
    return d


def _check_callable(func, caller):
    if not callable(func):
        raise TypeError(f"{caller}: expected the static forward/backward function to decorate, got "
                        f"{type(func).__name__} {func!r}")


def custom_fwd(fwd=None, *, device_type=None, cast_inputs=None):
    """Decorator for a custom Function's ``forward`` (use below ``@staticmethod``).

    Args:
        fwd: the forward function (given when used as ``@custom_fwd`` without parentheses).
        device_type: the device whose autocast state matters (default: the default device's type).
        cast_inputs: None to run under the current autocast state; a floating dtype to run with autocast off
            on floating inputs cast to it, when autocast is on for ``device_type``.
    """
    if device_type is not None:
        check_device_type(device_type, "custom_fwd")
    target = _check_cast_inputs(cast_inputs)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=target)
    _check_callable(fwd, "custom_fwd")

    @functools.wraps(fwd)
    def decorate_fwd(ctx, *args, **kwargs):
        device = check_device_type(device_type, "custom_fwd")
        if target is None or device not in STATE.autocast:
            return fwd(ctx, *args, **kwargs)
        args, kwargs = _cast_inputs(args, device, target), _cast_inputs(kwargs, device, target)
        with autocast(device, enabled=False, cache_enabled=None):
            if getattr(ctx, "autocast_snapshot", None) is not None:
                # NOTE: backward must see what forward saw: autocast off for this device
                ctx.autocast_snapshot = (dict(STATE.autocast), STATE.autocast_cache_enabled)
            return fwd(ctx, *args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type=None):
    """Decorator for a custom Function's ``backward``: run it under the forward's autocast state.

    Args:
        bwd: the backward function (given when used as ``@custom_bwd`` without parentheses).
        device_type: accepted for PyTorch compatibility and validated; the whole autocast state the forward
            recorded (every device) is restored.
    """
    if device_type is not None:
        check_device_type(device_type, "custom_bwd")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    _check_callable(bwd, "custom_bwd")

    @functools.wraps(bwd)
    def decorate_bwd(ctx, *grads):
        snapshot = getattr(ctx, "autocast_snapshot", None)
        region, cache = snapshot if snapshot is not None else ({}, STATE.autocast_cache_enabled)
        saved = push_region(dict(region), cache)
        try:
            return bwd(ctx, *grads)
        finally:
            pop_region(saved)
    return decorate_bwd

"""The one mechanism that applies an op's AMP cast policy (called by ``Function.apply``).

Every op class names its policy in ``amp_policy``; nothing here knows any op.
For each positional Tensor argument (and each Tensor in a list argument):

* *eligible* means: floating, on a device whose autocast region is on, not
  float64, and not already the target dtype (AMP_REFERENCE.md, "Cast rules");
* ``lower`` casts eligible inputs to the region's dtype (fp16 / bf16);
* ``fp32`` casts them to float32;
* ``promote`` casts them to the widest floating dtype among the inputs;
* ``None`` leaves them alone (normal type promotion happens in the op);
* ``banned`` raises the op's ``banned_message``.

A cast of an fp32 leaf that requires grad to the lower dtype is cached for the
outermost region, keyed also by grad mode, so a cast made under ``no_grad``
(which has no graph) is never handed to a later grad-enabled op (the PyTorch
bug #158232 we do not reproduce).
"""

from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from .state import STATE


def _device_type(t: Tensor) -> str:
    return "cpu" if type(t.data).__module__ == "numpy" else "cuda"


def _target_dtype(policy, args, region):
    """The dtype eligible inputs go to, or None when this op leaves them alone."""
    if policy == "lower":
        return region
    if policy == "fp32":
        return dtypes.float32
    if policy == "promote":
        floats = [t.dtype for t in _tensors(args) if t.dtype in dtypes.FLOATING and t.dtype != dtypes.float64]
        return dtypes.result_type(*floats) if floats else None
    return None


def _tensors(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))


def _region_dtype(args):
    """The autocast dtype for the device of the first tensor argument (None if that region is off)."""
    for t in _tensors(args):
        return STATE.autocast.get(_device_type(t))
    return None


def apply_cast_policy(cls, args):
    """Cast ``args`` as ``cls.amp_policy`` asks under the current autocast state; record traces.

    Args:
        cls: the Function subclass being applied.
        args: its positional arguments.
    """
    region = _region_dtype(args) if STATE.autocast else None
    policy = cls.amp_policy
    if region is not None and policy == "banned":
        raise RuntimeError(cls.banned_message or f"{cls.name()} is unsafe to autocast")
    target = _target_dtype(policy, args, region) if region is not None else None
    new_args = args if target is None else tuple(_cast_arg(a, target) for a in args)
    if STATE.tracers:
        _record(cls, args, new_args, region, target)
    return new_args


def _cast_arg(a, target):
    if isinstance(a, Tensor):
        return _cast_tensor(a, target)
    if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
        return type(a)(_cast_tensor(x, target) if isinstance(x, Tensor) else x for x in a)
    return a


def _eligible(t: Tensor, target) -> bool:
    return (t.dtype in dtypes.FLOATING and t.dtype != dtypes.float64 and t.dtype != target
            and _device_type(t) in STATE.autocast)


def _cast_tensor(t: Tensor, target):
    if not _eligible(t, target):
        return t
    from .function import Cast  # noqa: PLC0415 - function.py imports this module lazily too
    cacheable = (STATE.autocast_cache_enabled and target in dtypes.LOW_PRECISION and t.dtype == dtypes.float32
                 and t.requires_grad and t.grad_fn is None)
    if not cacheable:
        STATE.cast_counter += 1
        return _untraced_cast(Cast, t, target)
    key = (id(t), target, STATE.grad_enabled)
    hit = STATE.cast_cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._version:
        return hit[2]
    STATE.cast_counter += 1
    cast = _untraced_cast(Cast, t, target)
    # NOTE: holding t keeps id(t) from being reused; the version makes an in-place
    # update of the weight (an optimizer step inside the region) refresh the cast.
    STATE.cast_cache[key] = (t, t._version, cast)
    return cast


def _untraced_cast(cast_cls, t, target):
    # NOTE: the casts autocast makes are part of the op being traced (its row
    # says "lower policy -> float16"); they get no rows of their own.
    tracers, STATE.tracers = STATE.tracers, []
    try:
        return cast_cls.apply(t, dtype=target)
    finally:
        STATE.tracers = tracers


def _record(cls, args, new_args, region, target):
    in_dtypes = tuple(str(t.dtype) for t in _tensors(args))
    out = [t.dtype for t in _tensors(new_args) if t.dtype in dtypes.FLOATING]
    run_dtype = str(dtypes.result_type(*out)) if out else (in_dtypes[0] if in_dtypes else "-")
    if region is None:
        reason = "autocast off"
    elif cls.amp_policy is None:
        reason = "unlisted: input dtypes with type promotion"
    elif target is None:
        reason = f"{cls.amp_policy}: no floating input"
    elif all(not _eligible(t, target) for t in _tensors(args)):
        reason = f"{cls.amp_policy}: inputs not eligible (float64, integer or already {target})"
    else:
        reason = f"{cls.amp_policy} policy -> {target}"
    for tracer in STATE.tracers:
        tracer.record(cls.name(), in_dtypes, run_dtype, reason)

"""The early ``torch.amp`` prototype's API (PyTorch 2019, before ``GradScaler``), on cupynet's functional core.

Loss scaling there is functional: the scale ``S`` lives in your script, every call takes
the current ``S`` and *returns* a recommended next one, and the unscale/step methods are
patched onto each optimizer instance::

    S = add_amp_attributes(optimizer)          # adds unscale, check_inf, step_after_unscale, unscale_and_step
    for input, target in data:
        optimizer.zero_grad()
        with enable_autocasting():
            loss = loss_fn(model(input), target)
        scale_outputs(loss, S).backward()
        _, found_inf, S = optimizer.unscale_and_step(current_scale=S)

Each function here is a thin adapter: the math (fused check + unscale, the scale rule,
the skipped step) is :mod:`cupynet.amp.functional`'s. As there, nothing reads the
device: ``S`` and ``found_inf`` are 0-d device Tensors, and a built-in optimizer skips
an overflowing step on the device. Reading them (``found_inf.item()``, ``min(S0, S1)``)
is a host sync you write yourself.

The prototype's rule recommends ``S * 1.001`` after a clean step and ``S * 0.5`` after an
overflow; ``scale_growth_factor``/``scale_backoff_factor``/``scale_scheduler`` change it.
Differences from the prototype: the recommended scale never grows to inf (the kernel of
``GradScaler``), S is a 0-d Tensor (not shape ``(1,)``), and ``enable_autocasting`` runs on
the default device. See docs/amp.md, "The same loop in three APIs".
"""

import types as _types

from cupynet import backend as _backend
from cupynet import dtypes as _dtypes
from cupynet.amp import functional as _F
from cupynet.amp.autocast import autocast as _autocast
from cupynet.tensor import Tensor as _Tensor

__all__ = ["add_amp_attributes", "enable_autocasting", "scale_outputs", "unscale", "check_inf",
           "step_after_unscale", "unscale_and_step", "DEFAULT_INIT_SCALE", "DEFAULT_GROWTH_FACTOR",
           "DEFAULT_BACKOFF_FACTOR", "METHOD_NAMES"]

DEFAULT_INIT_SCALE = 2.0**24
DEFAULT_GROWTH_FACTOR = 1.001
DEFAULT_BACKOFF_FACTOR = 0.5
METHOD_NAMES = ("unscale", "check_inf", "step_after_unscale", "unscale_and_step")


def _params(optimizer) -> list:
    return [p for group in optimizer.param_groups for p in group["params"]]


def _device(optimizer):
    """The device of the optimizer's first parameter (the default device when it has none)."""
    params = _params(optimizer)
    return params[0].device if params else _backend.default_device()


def _scale_on(optimizer, current_scale, fn: str):
    """``current_scale`` as given when it is a device scalar; a Python number goes to the parameters' device."""
    if current_scale is None:
        raise ValueError(f"{fn}: current_scale is required when scaling is enabled (the S from "
                         "add_amp_attributes, or the one the previous call recommended)")
    if isinstance(current_scale, (int, float)) and not isinstance(current_scale, bool):
        return _Tensor(_F.device_array(float(current_scale), _dtypes.float32, _device(optimizer)))
    return current_scale


def scale_outputs(outputs, current_scale, scaling_enabled=True):
    """Multiply the output(s) by ``current_scale`` before ``backward()`` (``functional.scale_outputs``).

    Args:
        outputs: a Tensor or an iterable of Tensors.
        current_scale: the scale S (a device scalar or a Python number).
        scaling_enabled: False returns ``outputs`` unchanged.
    """
    return _F.scale_outputs(outputs, current_scale, scaling_enabled)


def unscale(self, current_scale, scale_growth_factor=DEFAULT_GROWTH_FACTOR,
            scale_backoff_factor=DEFAULT_BACKOFF_FACTOR, scale_scheduler=None, scaling_enabled=True):
    """``optimizer.unscale(S)``: divide this optimizer's gradients by S; return ``(found_inf, recommended_S)``.

    Fused check + unscale (``functional.unscale``, fp16 gradients refused), then
    ``functional.recommend_scale``: a new scale, ``current_scale`` is not modified. No host sync.

    Args:
        self: the optimizer (bound by :func:`add_amp_attributes`).
        current_scale: the S the gradients were produced with.
        scale_growth_factor: recommendation after a clean step is ``S * scale_growth_factor``.
        scale_backoff_factor: recommendation after an overflow is ``S * scale_backoff_factor``.
        scale_scheduler: ``scale_scheduler(S, found_inf) -> next S`` replacing that rule.
        scaling_enabled: False does nothing and returns ``(None, None)``.
    """
    if not scaling_enabled:
        return None, None
    scale = _scale_on(self, current_scale, "unscale")
    found_inf = _F.unscale(_params(self), scale, allow_fp16=False)
    return found_inf, _F.recommend_scale(scale, found_inf, scale_growth_factor, scale_backoff_factor,
                                         scale_scheduler)


def check_inf(self, scaling_enabled=True):
    """``optimizer.check_inf()``: found_inf of this optimizer's gradients, without changing them (fp16 allowed).

    Args:
        self: the optimizer (bound by :func:`add_amp_attributes`).
        scaling_enabled: False returns None.
    """
    if not scaling_enabled:
        return None
    return _F.check_inf(_params(self), device=_device(self))


def step_after_unscale(self, closure=None, found_inf=None, skip_if_inf=True, scaling_enabled=True):
    """``optimizer.step_after_unscale(found_inf=...)``: step unless found_inf says the gradients overflowed.

    ``functional.step_after_unscale``: a built-in optimizer skips on the device (no host sync).

    Args:
        self: the optimizer (bound by :func:`add_amp_attributes`).
        closure: refused with an explanation when scaling is enabled.
        found_inf: the flag returned by ``optimizer.unscale()``.
        skip_if_inf: False steps without looking at found_inf (batch replay, when known clean).
        scaling_enabled: False is a plain ``self.step(closure)``.
    """
    if not scaling_enabled:
        return self.step() if closure is None else self.step(closure)
    if closure is not None:
        raise ValueError(_F._CLOSURE_REFUSED)
    if skip_if_inf and found_inf is None:
        raise ValueError("step_after_unscale: found_inf is required (the first value optimizer.unscale(S) "
                         "returned), or pass skip_if_inf=False when the gradients are known to be finite")
    return _F.step_after_unscale(self, found_inf, skip_if_inf)


def unscale_and_step(self, closure=None, current_scale=None, scale_growth_factor=DEFAULT_GROWTH_FACTOR,
                     scale_backoff_factor=DEFAULT_BACKOFF_FACTOR, scale_scheduler=None, skip_if_inf=True,
                     found_inf=None, scaling_enabled=True):
    """``optimizer.unscale_and_step(current_scale=S)``: unscale, step unless overflowed; ``(result, found_inf, S')``.

    Calls the optimizer's own ``unscale`` and ``step_after_unscale`` (yours, if your optimizer class
    defines them), so customising those customises this. ``current_scale`` is not modified.

    Args:
        self: the optimizer (bound by :func:`add_amp_attributes`).
        closure: refused with an explanation when scaling is enabled.
        current_scale: the S the gradients were produced with.
        scale_growth_factor: see :func:`unscale`.
        scale_backoff_factor: see :func:`unscale`.
        scale_scheduler: see :func:`unscale`.
        skip_if_inf: False steps without looking at found_inf.
        found_inf: a flag you already have (e.g. from ``check_inf``) to decide the skip.
        scaling_enabled: False is a plain ``self.step(closure)`` returning ``(result, None, None)``.
    """
    if not scaling_enabled:
        return (self.step() if closure is None else self.step(closure)), None, None
    if closure is not None:
        raise ValueError(_F._CLOSURE_REFUSED)
    found, recommended = self.unscale(_scale_on(self, current_scale, "unscale_and_step"), scale_growth_factor,
                                      scale_backoff_factor, scale_scheduler)
    flag = found if found_inf is None else found_inf
    return self.step_after_unscale(found_inf=flag, skip_if_inf=skip_if_inf), flag, recommended


_METHODS = {"unscale": unscale, "check_inf": check_inf, "step_after_unscale": step_after_unscale,
            "unscale_and_step": unscale_and_step}


def add_amp_attributes(optimizers):
    """Give each optimizer the methods ``unscale``, ``check_inf``, ``step_after_unscale``, ``unscale_and_step``.

    A method the optimizer already has (e.g. defined by its class to customise scaling) is
    left alone. Returns the recommended initial scale S, ``2**24`` as a 0-d float32 Tensor on
    the first optimizer's device.

    Args:
        optimizers: an optimizer or an iterable of optimizers (anything with ``param_groups`` and ``step``).
    """
    single = hasattr(optimizers, "param_groups") and hasattr(optimizers, "step")
    optimizers = [optimizers] if single else list(optimizers)
    if len(optimizers) == 0:
        raise ValueError("add_amp_attributes received an empty optimizer list.")
    for i, optimizer in enumerate(optimizers):
        if not (hasattr(optimizer, "param_groups") and callable(getattr(optimizer, "step", None))):
            raise TypeError(f"add_amp_attributes: element {i} is a {type(optimizer).__name__}, not an optimizer "
                            "(expected param_groups and a step() method)")
    for optimizer in optimizers:
        for name in METHOD_NAMES:
            if not hasattr(optimizer, name):
                setattr(optimizer, name, _types.MethodType(_METHODS[name], optimizer))
    return _Tensor(_F.device_array(DEFAULT_INIT_SCALE, _dtypes.float32, _device(optimizers[0])))


def enable_autocasting(enabled=True, dtype=None, device_type=None):
    """The prototype's autocast region: ``cupynet.amp.autocast`` in float16 on the default device.

    Args:
        enabled: False opens a region with autocast off (``enable_autocasting(enabled=use_amp)``).
        dtype: float16 (default: the prototype's only precision) or bfloat16.
        device_type: ``"cpu"`` or ``"cuda"`` (default: the default device's type).
    """
    return _autocast(device_type, dtype=_dtypes.float16 if dtype is None else dtype, enabled=enabled)

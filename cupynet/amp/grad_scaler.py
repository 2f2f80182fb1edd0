"""``GradScaler``: dynamic loss scaling, PyTorch's ``torch.amp.GradScaler`` semantics plus more.

One class over :mod:`cupynet.amp.functional` (the math: fused check + unscale, the
update rule, the skipped step). With default options it behaves exactly like
PyTorch: lazy state, per-optimizer stages READY -> UNSCALED -> STEPPED (reset by
``update()``), the same errors, the same five state-dict keys. Read it top-down:

1. the arguments: PyTorch's two constructor forms and the check of every setting;
2. the class: lazy device state, then one iteration (``scale`` -> ``unscale_`` ->
   ``step`` -> ``update``), the host reads, the hyper-parameters, checkpoints;
3. the state-dict format: PyTorch's five keys, cupynet's extra keys, their checks.

What the scaler saw (which tensors overflowed, the scale of each step) is an object
it holds, ``scaler.diagnostics`` (:mod:`cupynet.amp.diagnostics`); ``history``,
``last_overflow``, ``overflow_steps`` and ``register_model`` on the scaler are that object's.

NOTE (host syncs): ``scale``, ``unscale_`` and ``update`` never read the device.
``step`` reads found_inf once (PyTorch's path) unless the optimizer can skip on the
device (every built-in cupynet optimizer: ``_step_supports_amp_scaling = True``),
then it reads nothing. ``get_scale``, ``state_dict``, ``skipped_steps``,
``history``, ``last_overflow`` and ``overflow_steps`` each read in one transfer. See docs/amp.md.
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections import defaultdict
from enum import Enum

import numpy

from cupynet import backend, dtypes
from cupynet.amp import functional as F
from cupynet.amp.diagnostics import ScalerDiagnostics, format_overflow, read_host
from cupynet.autograd import no_grad
from cupynet.tensor import Tensor

__all__ = [
    "GradScaler", "OptState", "format_overflow",
    "check_init_scale", "check_growth_factor", "check_backoff_factor", "check_growth_interval", "check_settings",
    "constructor_arguments", "parse_state_dict", "TORCH_KEYS", "EXTRA_SETTINGS", "EXTRA_COUNTERS", "EXTRA_KEYS",
    "COUNTERS", "DEFAULT_SETTINGS", "ON_MIN_SCALE_CHOICES",
]

_F32, _I32 = dtypes.float32, dtypes.int32
_F32_MAX = float(numpy.finfo(numpy.float32).max)
_I32_MAX = 2**31 - 1
ON_MIN_SCALE_CHOICES = ("ignore", "warn", "raise")
DEFAULT_SETTINGS = {"hysteresis": 1, "min_scale": None, "max_scale": None, "on_min_scale": "ignore",
                    "history_size": 0}
"""The options beyond PyTorch, at the values that make the scaler PyTorch's."""
COUNTERS = ("_hysteresis_tracker", "_min_hit", "_skipped_steps")
"""The device counters beyond PyTorch's scale and growth tracker."""
_MIN_SCALE_ADVICE = (
    "Minimum loss scale reached (min_scale={min_scale}): the gradients still overflow at the smallest allowed "
    "scale, so the loss is probably diverging (inf/NaN in the forward pass or exploding gradients). Try a lower "
    "learning rate, check the data for inf/NaN or wrong labels, clip gradients, or train in bfloat16 (which needs "
    "no loss scaling)."
)


# ---- 1. the arguments: checked before anything changes ------------------------------------------------------
def _real(where: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{where}: {name} must be finite, got {value!r}")
    return value


def _int(where: str, name: str, value, low: int, high: int = _I32_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be an int, got {type(value).__name__} {value!r}")
    if not low <= int(value) <= high:
        raise ValueError(f"{where}: {name} must be an integer in [{low}, {high}], got {value!r}")
    return int(value)


def _torch_amp_form(device=None, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                    enabled=True):
    """``torch.amp.GradScaler(device="cuda", init_scale=..., ...)``: the device first."""
    return device, init_scale, growth_factor, backoff_factor, growth_interval, enabled


def _torch_cuda_amp_form(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                         enabled=True):
    """``torch.cuda.amp.GradScaler(init_scale=..., ...)``: no device argument (cupynet: the default device)."""
    return None, init_scale, growth_factor, backoff_factor, growth_interval, enabled


def constructor_arguments(args: tuple, kwargs: dict) -> tuple:
    """``(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)`` from either signature.

    NOTE: PyTorch has two constructors, ``torch.amp.GradScaler(device, init_scale, ...)`` and the
    older ``torch.cuda.amp.GradScaler(init_scale, ...)``; code written for the second passes the
    scale first (``GradScaler(1024.)``). A number in first position can only mean that form (a
    device is a string, a Device or None), so both are accepted.

    Args:
        args: the positional arguments given to ``GradScaler``.
        kwargs: its keyword arguments other than cupynet's keyword-only options.
    """
    cuda_amp_form = bool(args) and isinstance(args[0], numbers.Real) and not isinstance(args[0], bool)
    form = _torch_cuda_amp_form if cuda_amp_form else _torch_amp_form
    try:
        bound = inspect.signature(form).bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"GradScaler: {error} (the signatures are GradScaler(device=None, init_scale=2.0**16, "
                        "growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True, *, options) "
                        "and, torch.cuda.amp's, GradScaler(init_scale, growth_factor, ...))") from None
    return form(*bound.args, **bound.kwargs)


def _device_type(device) -> str:
    if device is None:
        return backend.default_device().type
    if isinstance(device, backend.Device):
        return device.type
    if isinstance(device, str) and device.partition(":")[0] in ("cpu", "cuda"):
        return device.partition(":")[0]
    raise ValueError(f"GradScaler: device must be 'cpu', 'cuda', 'cuda:N', a Device or None, got {device!r}")


def check_growth_factor(where: str, value) -> float:
    """Validate a growth factor (> 1, finite, as PyTorch's "The growth factor must be > 1.0.").

    Args:
        where: the caller, for the message.
        value: the value given.
    """
    value_f = _real(where, "growth_factor", value)
    if value_f <= 1.0:
        raise ValueError(f"{where}: The growth factor must be > 1.0. Got growth_factor={value!r}.")
    return value


def check_backoff_factor(where: str, value) -> float:
    """Validate a backoff factor (in (0, 1); PyTorch: "The backoff factor must be < 1.0.").

    Args:
        where: the caller, for the message.
        value: the value given.
    """
    value_f = _real(where, "backoff_factor", value)
    if value_f >= 1.0:
        raise ValueError(f"{where}: The backoff factor must be < 1.0. Got backoff_factor={value!r}.")
    if value_f <= 0.0:
        raise ValueError(f"{where}: The backoff factor must be > 0 (a zero or negative scale cannot recover). "
                         f"Got backoff_factor={value!r}.")
    return value


def check_growth_interval(where: str, value) -> int:
    """Validate a growth interval (an int >= 1).

    Args:
        where: the caller, for the message.
        value: the value given.
    """
    return _int(where, "growth_interval", value, 1)


def check_init_scale(where: str, value, name: str = "init_scale"):
    """Validate a scale value: a finite number in (0, float32 max].

    Args:
        where: the caller, for the message.
        value: the value given.
        name: the argument's name.
    """
    value_f = _real(where, name, value)
    if not 0.0 < value_f <= _F32_MAX:
        raise ValueError(f"{where}: {name} must be in (0, {_F32_MAX:.6g}] (a positive float32), got {value!r}")
    return value


def check_settings(where: str, hysteresis, min_scale, max_scale, on_min_scale, history_size) -> dict:
    """Validate the options beyond PyTorch; returns them as a dict.

    Args:
        where: the caller, for the message.
        hysteresis: consecutive overflows before a back-off (int >= 1).
        min_scale: None or a positive number.
        max_scale: None or a positive number >= min_scale.
        on_min_scale: "ignore", "warn" or "raise".
        history_size: ring-buffer length of ``history()`` (int >= 0).
    """
    hysteresis = _int(where, "hysteresis", hysteresis, 1)
    if min_scale is not None:
        min_scale = check_init_scale(where, min_scale, "min_scale")
    if max_scale is not None:
        max_scale = check_init_scale(where, max_scale, "max_scale")
    if min_scale is not None and max_scale is not None and min_scale > max_scale:
        raise ValueError(f"{where}: min_scale={min_scale!r} is larger than max_scale={max_scale!r}; "
                         "expected min_scale <= max_scale")
    if on_min_scale not in ON_MIN_SCALE_CHOICES:
        raise ValueError(f"{where}: on_min_scale must be one of {ON_MIN_SCALE_CHOICES}, got {on_min_scale!r}")
    history_size = _int(where, "history_size", history_size, 0, 10**7)
    return {"hysteresis": hysteresis, "min_scale": min_scale, "max_scale": max_scale, "on_min_scale": on_min_scale,
            "history_size": history_size}


# ---- 2. the class ------------------------------------------------------------------------------------------
class OptState(Enum):
    """Where an optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _ParamSet:
    """Lets ``unscale_grads(params)`` reuse the optimizer code path (one param group)."""

    def __init__(self, params):
        self.param_groups = [{"params": params}]


class GradScaler:
    """Dynamic loss scaling for mixed-precision training (``torch.amp.GradScaler``, plus more).

    Both of PyTorch's signatures are accepted: ``GradScaler(device, init_scale, ...)`` (``torch.amp``) and
    ``GradScaler(init_scale, growth_factor, ...)`` (``torch.cuda.amp``, recognised by a number first; the
    device is then cupynet's default device).

    Args:
        device: device type whose tensors are scaled ("cuda"/"cpu"; None: the default device). As in
            PyTorch, "cuda" without a usable GPU warns and disables the scaler.
        init_scale: the initial scale.
        growth_factor: multiplies the scale after ``growth_interval`` clean steps (> 1).
        backoff_factor: multiplies the scale after an overflow (in (0, 1)).
        growth_interval: clean steps between growths (int >= 1).
        enabled: when False every method is a no-op and ``step`` is a plain ``optimizer.step()``.
        hysteresis: back off only after this many consecutive overflowing steps (1: PyTorch).
        min_scale: never back off below this (None: no bound).
        max_scale: never grow above this (None: no bound).
        on_min_scale: "ignore", "warn" or "raise" when a back-off is clamped at ``min_scale``; checked at
            the next host read the scaler makes anyway (see ``check_min_scale``).
        history_size: keep (step, scale, skipped) of the last N steps on the device (0: off).
        skip_on_device: skip steps of optimizers with ``_step_supports_amp_scaling`` on the device, with no
            host sync (default). False: always PyTorch's path (one sync per step; a skipped
            ``optimizer.step`` is not called).
    """

    def __init__(self, *args, hysteresis=1, min_scale=None, max_scale=None, on_min_scale="ignore", history_size=0,
                 skip_on_device=True, **kwargs):
        where = "GradScaler"
        device, init_scale, growth_factor, backoff_factor, growth_interval, enabled = constructor_arguments(
            args, kwargs)
        if not isinstance(enabled, (bool, numpy.bool_)):
            raise TypeError(f"{where}: enabled must be a bool, got {type(enabled).__name__} {enabled!r}")
        self._device = _device_type(device)
        self._settings = check_settings(where, hysteresis, min_scale, max_scale, on_min_scale, history_size)
        self._init_scale = check_init_scale(where, init_scale)
        self._growth_factor = check_growth_factor(where, growth_factor)
        self._backoff_factor = check_backoff_factor(where, backoff_factor)
        self._growth_interval = check_growth_interval(where, growth_interval)
        self._enabled = bool(enabled)
        if self._enabled and self._device == "cuda" and not backend.cuda_available():
            warnings.warn("GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        self._skip_on_device = bool(skip_on_device)
        # NOTE: the device state is lazy (created by the first scale(), on the loss's device); until then,
        # and after unpickling, these host values stand for it
        self._init_growth_tracker = 0
        self._init_counters = dict.fromkeys(COUNTERS, 0)
        self._scale = None
        self._growth_tracker = None
        self._counters = None
        self._step = 0  # update() calls so far (a host int: it numbers steps in the history and overflow reports)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
        self.diagnostics = ScalerDiagnostics(self._settings["history_size"])

    # ---- lazy device state -----------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = Tensor(F.device_array(self._init_scale, _F32, dev))
        self._growth_tracker = Tensor(F.device_array(self._init_growth_tracker, _I32, dev))
        self._counters = {k: F.device_array(v, _I32, dev) for k, v in self._init_counters.items()}
        self.diagnostics.start(dev)

    # ---- scale -----------------------------------------------------------------------------------------
    def scale(self, outputs):
        """Multiply a Tensor (or every Tensor of an iterable) by the scale; no host sync.

        Args:
            outputs: a Tensor or an iterable of Tensors (lists/tuples keep their type, other iterables
                come back lazily); returned unchanged when the scaler is disabled.
        """
        if not self._enabled:
            return outputs

        def scale_for(output):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(output.device)
            return F.scale_tensor_for(self._scale, output)

        return F.apply_scale(outputs, scale_for)

    scale_loss = scale

    # ---- unscale ---------------------------------------------------------------------------------------
    def _unscale_grads_(self, param_groups, key) -> dict:
        by_device: dict = {}
        index = 0
        for group in param_groups:
            names = group.get("param_names")
            for j, p in enumerate(group["params"]):
                if p.grad is not None:
                    entry = by_device.setdefault(p.grad.device, ([], [], [], []))
                    name = names[j] if isinstance(names, (list, tuple)) and j < len(names) else None
                    for lst, item in zip(entry, (p, p.grad.array, name, index)):
                        lst.append(item)
                index += 1
        for dev, (_, grads, _, _) in by_device.items():
            F.check_grad_arrays("GradScaler.unscale_", grads, dev, allow_fp16=False)
        found_per_device = {}
        for dev, (params, grads, names, indices) in by_device.items():
            stats = self.diagnostics.stats_buffer(key, dev, len(grads), zeroed=False)
            found, inv_scale = F.start_unscale(self._scale.array, dev, stats)  # NOTE: zeroes stats too
            with no_grad():
                F.unscale_arrays(grads, found, inv_scale, stats)
            for p in params:
                p.grad._bump_version()
            self.diagnostics.record_unscale((key, str(dev)), params, names, indices, stats, found, self._step + 1)
            found_per_device[dev] = found
        _agree_across_ranks(found_per_device)
        return found_per_device

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale in place and record found_inf; no host sync.

        Optional: ``step`` calls it when needed. Call it yourself to clip or inspect unscaled gradients.

        Args:
            optimizer: the optimizer owning the gradients.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        state["found_inf_per_device"] = self._unscale_grads_(optimizer.param_groups, id(optimizer))
        state["stage"] = OptState.UNSCALED

    def unscale_grads(self, params):
        """Unscale the ``.grad`` of ``params`` (not tied to an optimizer); returns found_inf; no host sync.

        Its found_inf counts in the next ``update()``. Skipping the step is then up to you
        (e.g. ``optimizer.step(found_inf=found_inf)``); do not also ``step(optimizer)`` these parameters.

        Args:
            params: an iterable of parameters.
        """
        if not self._enabled:
            return None
        self._check_scale_growth_tracker("unscale_grads")
        params = [params] if isinstance(params, Tensor) else list(params)
        key = ("params", tuple(id(p) for p in params))
        state = self._per_optimizer_states[key]
        if state["stage"] is not OptState.READY:
            raise RuntimeError("unscale_grads() has already been called on these parameters since the last update().")
        state["found_inf_per_device"] = self._unscale_grads_(_ParamSet(params).param_groups, key)
        state["stage"] = OptState.UNSCALED
        found = state["found_inf_per_device"]
        return Tensor(self._combine(list(found.values()))) if found else Tensor(F.device_array(
            0.0, _F32, self._scale.device))

    # ---- step ------------------------------------------------------------------------------------------
    def _combine(self, founds):
        """found_inf flags summed onto the scale's device (as PyTorch adds them), 0-d; no sync."""
        dev = self._scale.device
        arrays = [F.to_device(f, dev).reshape(1) for f in founds]
        total = arrays[0]
        for a in arrays[1:]:
            total = total + a
        return total.reshape(())

    def _skips_on_device(self, optimizer, state) -> bool:
        return (self._skip_on_device and bool(getattr(optimizer, "_step_supports_amp_scaling", False))
                and all(dev == self._scale.device for dev in state["found_inf_per_device"]))

    def _maybe_opt_step(self, optimizer, state, found, args, kwargs):
        if self._skips_on_device(optimizer, state):
            return optimizer.step(*args, found_inf=found, **kwargs)
        (host_found,) = self._read(found)  # NOTE: the one sync of PyTorch's path
        if host_found.reshape(-1)[0] != 0:
            return None
        return optimizer.step(*args, **kwargs)

    def step(self, optimizer, *args, return_found_inf=False, **kwargs):
        """Unscale (if not done yet) and step the optimizer unless its gradients have inf/NaN.

        Skipped steps: for built-in optimizers, ``optimizer.step(found_inf=...)`` runs and changes
        nothing, decided on the device (no sync), and its return value (None) is returned; for other
        optimizers found_inf is read once and ``optimizer.step`` is not called (returns None).

        Args:
            optimizer: the optimizer.
            *args: forwarded to ``optimizer.step``.
            return_found_inf: return ``(result, found_inf)``, found_inf a device scalar (for batch replay).
            **kwargs: forwarded to ``optimizer.step`` (``closure`` is not supported when enabled).
        """
        if not self._enabled:
            result = optimizer.step(*args, **kwargs)
            return (result, None) if return_found_inf else result
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        found = self._combine(list(state["found_inf_per_device"].values()))
        result = self._maybe_opt_step(optimizer, state, found, args, kwargs)
        state["stage"] = OptState.STEPPED
        return (result, Tensor(found)) if return_found_inf else result

    # ---- update ----------------------------------------------------------------------------------------
    def _new_scale_value(self, new_scale):
        reason = ("new_scale should be a float or a 1-element cupynet float Tensor on the scaler's device "
                  f"({self._device}) with requires_grad=False.")
        if isinstance(new_scale, Tensor):
            if (new_scale.device.type != self._device or new_scale.array.size != 1 or new_scale.requires_grad
                    or not dtypes.is_floating(new_scale.dtype)):
                raise ValueError(f"GradScaler.update: {reason} Got a {new_scale.dtype} Tensor of shape "
                                 f"{tuple(new_scale.shape)} on {new_scale.device}, requires_grad="
                                 f"{new_scale.requires_grad}.")
            return F.to_device(new_scale.array, self._scale.device).reshape(()).astype(_F32)
        try:
            return numpy.float32(check_init_scale("GradScaler.update", new_scale, "new_scale"))
        except (TypeError, ValueError) as error:
            raise type(error)(f"GradScaler.update: {reason} ({error})") from None

    def _record_step(self, found) -> None:
        """Count the step (and a skip) on the device and give it to the diagnostics; no sync."""
        self._step += 1
        self.diagnostics.record_step(self._step, self._scale.array, found, self._counters["_skipped_steps"])

    def update(self, new_scale=None) -> None:
        """Update the scale from this iteration's found_inf flags (on the device), or set it to ``new_scale``.

        Args:
            new_scale: None (the update rule), a float, or a 1-element Tensor (copied; tracker untouched).
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        founds = [f for s in self._per_optimizer_states.values() for f in s["found_inf_per_device"].values()]
        if new_scale is not None:
            value = self._new_scale_value(new_scale)
            self._record_step(self._combine(founds) if founds else None)
            scale.array[...] = value
        else:
            if not founds:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = self._combine(founds)
            self._record_step(found)
            s = self._settings
            F.update_scale(scale, tracker, found, self._growth_factor, self._backoff_factor, self._growth_interval,
                           hysteresis=s["hysteresis"], hysteresis_tracker=self._counters["_hysteresis_tracker"],
                           min_scale=s["min_scale"], max_scale=s["max_scale"], min_hit=self._counters["_min_hit"])
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ---- reading (each a documented host sync) ---------------------------------------------------------
    def _min_hit_array(self):
        if self._settings["on_min_scale"] == "ignore" or self._counters is None:
            return None
        return self._counters["_min_hit"]

    def _report_min_hit(self, host_hit) -> None:
        if host_hit is None or int(host_hit.reshape(-1)[0]) == 0:
            return
        self._counters["_min_hit"][...] = 0  # NOTE: each hit is reported once
        message = "GradScaler: " + _MIN_SCALE_ADVICE.format(min_scale=self._settings["min_scale"])
        if self._settings["on_min_scale"] == "raise":
            raise FloatingPointError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)

    def _read(self, *arrays) -> list:
        """Host copies of ``arrays``, read in ONE transfer with the min-scale flag, which is reported here.

        NOTE: every read the scaler makes anyway carries the flag along, so ``on_min_scale`` costs no sync.
        """
        *host, hit = read_host(*arrays, self._min_hit_array())
        self._report_min_hit(hit)
        return host

    def check_min_scale(self) -> None:
        """Warn or raise now (per ``on_min_scale``) if a back-off was clamped at min_scale (one host sync)."""
        if self._enabled and self._min_hit_array() is not None:
            self._read()

    def get_scale(self) -> float:
        """The current scale as a Python float (a host sync); the init scale before first use, 1.0 if disabled."""
        if not self._enabled:
            return 1.0
        if self._scale is None:
            return self._init_scale
        (scale,) = self._read(self._scale.array)
        return float(scale.reshape(()))

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(read_host(self._growth_tracker.array)[0].reshape(()))

    def skipped_steps(self) -> int:
        """How many steps were skipped (had inf/NaN gradients) so far; a host sync."""
        if not self._enabled:
            return 0
        if self._counters is None:
            return self._init_counters["_skipped_steps"]
        (skipped,) = self._read(self._counters["_skipped_steps"])
        return int(skipped.reshape(()))

    def history(self) -> list:
        """``[(step, scale, skipped), ...]`` for the last ``history_size`` steps, oldest first (one transfer).

        ``scale`` is the scale the step used; ``step`` counts ``update()`` calls from 1.
        """
        return self.diagnostics.history(self._step, self._read)

    def last_overflow(self, named_parameters=None):
        """The tensors that had inf/NaN at the last overflowing step: ``[(name, inf_count, nan_count)]``.

        A host read (one transfer), made only when called; see ``ScalerDiagnostics.last_overflow``.

        Args:
            named_parameters: optional ``model.named_parameters()`` (or a model) to name the parameters.
        """
        return self.diagnostics.last_overflow(named_parameters)

    def overflow_steps(self, named_parameters=None) -> dict:
        """``{name: steps}``: per tensor, how many overflowing (skipped) steps had inf/NaN in its gradient.

        Counted on the device at each unscale, so no step is missed however rarely you ask; a host read
        (one transfer), made only when called; see ``ScalerDiagnostics.overflow_steps``.

        Args:
            named_parameters: optional ``model.named_parameters()`` (or a model) to name the parameters.
        """
        return self.diagnostics.overflow_steps(named_parameters)

    def register_model(self, model) -> None:
        """Name parameters in ``last_overflow()`` by a model's ``named_parameters()`` (or ``(name, param)`` pairs).

        Args:
            model: a Module, or an iterable of ``(name, parameter)`` pairs.
        """
        self.diagnostics.register_model(model)

    # ---- hyper-parameters ------------------------------------------------------------------------------
    def get_growth_factor(self) -> float:
        """The growth factor."""
        return self._growth_factor

    def set_growth_factor(self, new_factor) -> None:
        """Set the growth factor.

        Args:
            new_factor: a number > 1.
        """
        self._growth_factor = check_growth_factor("GradScaler.set_growth_factor", new_factor)

    def get_backoff_factor(self) -> float:
        """The backoff factor."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor) -> None:
        """Set the backoff factor.

        Args:
            new_factor: a number in (0, 1).
        """
        self._backoff_factor = check_backoff_factor("GradScaler.set_backoff_factor", new_factor)

    def get_growth_interval(self) -> int:
        """The growth interval."""
        return self._growth_interval

    def set_growth_interval(self, new_interval) -> None:
        """Set the growth interval.

        Args:
            new_interval: an int >= 1.
        """
        self._growth_interval = check_growth_interval("GradScaler.set_growth_interval", new_interval)

    def is_enabled(self) -> bool:
        """Whether scaling is enabled."""
        return self._enabled

    # ---- checkpoints -----------------------------------------------------------------------------------
    def _host_state(self) -> dict:
        """Scale, tracker, counters and history on the host, read in one transfer when initialised."""
        if self._scale is None:
            return {"scale": self._init_scale, "_growth_tracker": self._init_growth_tracker,
                    **self._init_counters, "_history": self.diagnostics.start_rows()}
        host = read_host(self._scale.array, self._growth_tracker.array, *(self._counters[k] for k in COUNTERS),
                         *self.diagnostics.ring_arrays())
        state = {"scale": float(host[0].reshape(())), "_growth_tracker": int(host[1].reshape(()))}
        state.update({k: int(v.reshape(())) for k, v in zip(COUNTERS, host[2:5])})
        state["_history"] = self.diagnostics.rows(self._step, host[5], host[6])
        return state

    def state_dict(self) -> dict:
        """PyTorch's five keys (``{}`` when disabled), plus cupynet's extra keys when extra options are set.

        Extra keys: hysteresis, min_scale, max_scale, on_min_scale, history_size, _hysteresis_tracker,
        _min_hit, _skipped_steps, _step, _history. A host read when the scale is on the device.
        """
        if not self._enabled:
            return {}
        host = self._host_state()
        out = {"scale": host["scale"], "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
               "growth_interval": self._growth_interval, "_growth_tracker": host["_growth_tracker"]}
        if self._settings != DEFAULT_SETTINGS:
            out.update(self._settings)
            out.update({k: host[k] for k in COUNTERS})
            out["_step"] = self._step
            out["_history"] = [list(row) for row in host["_history"]]
        return out

    def load_state_dict(self, state_dict) -> None:
        """Load a state from ``state_dict()`` (cupynet's or PyTorch's); validated fully before any change.

        Keys the scaler does not use are ignored, as in PyTorch. Without cupynet's extra keys (e.g. a
        PyTorch state), the extra options keep their current values and their counters restart from 0.

        Args:
            state_dict: the dict.
        """
        if not self._enabled:
            return
        parsed = parse_state_dict(state_dict)
        self._init_scale, self._init_growth_tracker = parsed["scale"], parsed["_growth_tracker"]
        self._growth_factor, self._backoff_factor = parsed["growth_factor"], parsed["backoff_factor"]
        self._growth_interval = parsed["growth_interval"]
        if "hysteresis" in parsed:
            self._settings = {k: parsed[k] for k in EXTRA_SETTINGS}
        self._init_counters = {k: parsed.get(k, 0) for k in COUNTERS}
        self._step = parsed.get("_step", 0)
        device = None
        if self._scale is not None:
            device = self._scale.device
            self._scale.array[...] = numpy.float32(parsed["scale"])
            self._growth_tracker.array[...] = parsed["_growth_tracker"]
            for k in COUNTERS:
                self._counters[k][...] = self._init_counters[k]
        self.diagnostics.restart(self._settings["history_size"], parsed.get("_history", []), device)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        history = self.diagnostics.start_rows()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            host = self._host_state()
            state["_init_scale"], state["_init_growth_tracker"] = host["scale"], host["_growth_tracker"]
            state["_init_counters"] = {k: host[k] for k in COUNTERS}
            history = host["_history"]
            state.update(_scale=None, _growth_tracker=None, _counters=None)
        state["diagnostics"] = self.diagnostics.detached(history)
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)


# ---- 3. the state-dict format ------------------------------------------------------------------------------
TORCH_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
"""PyTorch's state dict: a default scaler's has exactly these, so it loads into ``torch.amp.GradScaler`` and back."""
EXTRA_SETTINGS = ("hysteresis", "min_scale", "max_scale", "on_min_scale", "history_size")
EXTRA_COUNTERS = ("_hysteresis_tracker", "_min_hit", "_skipped_steps", "_step", "_history")
EXTRA_KEYS = EXTRA_SETTINGS + EXTRA_COUNTERS
"""cupynet's keys, all of them present only when an option beyond PyTorch is set."""


def _agree_across_ranks(found_per_device) -> None:
    """Make found_inf the largest over all ranks (in place) when a process group is running.

    NOTE: every rank must take the same skip / grow / backoff decision, or replicas that
    should stay equal drift apart (one steps, one skips) and their scales diverge. DDP's
    averaged gradients already carry one rank's inf to all; this also covers gradients
    that are not averaged. A MAX all-reduce of a device scalar: no host sync with NCCL
    (the MPI backend stages a CuPy scalar through the host).
    """
    from cupynet import distributed  # noqa: PLC0415 - optional package: loads on the first unscale

    if distributed.is_initialized() and distributed.get_world_size() > 1:
        for found in found_per_device.values():
            distributed.collectives.reduce_array_(found, distributed.ReduceOp.MAX)


def _history(where: str, value, history_size: int) -> list:
    if not isinstance(value, (list, tuple)) or len(value) > history_size:
        raise ValueError(f"{where}: _history must be a list of at most history_size={history_size} "
                         f"[step, scale, skipped] entries, got {type(value).__name__}"
                         + (f" of length {len(value)}" if isinstance(value, (list, tuple)) else ""))
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, (list, tuple)) or len(row) != 3:
            raise ValueError(f"{where}: _history[{i}] must be [step, scale, skipped], got {row!r}")
        step = _int(where, f"_history[{i}] step", row[0], 1)
        scale = _real(where, f"_history[{i}] scale", row[1])
        if not isinstance(row[2], (bool, numpy.bool_)) and row[2] not in (0, 1):
            raise ValueError(f"{where}: _history[{i}] skipped must be a bool, got {row[2]!r}")
        rows.append((step, scale, bool(row[2])))
    return rows


def _parse_extras(where: str, state) -> dict:
    settings = check_settings(where, *(state[k] for k in EXTRA_SETTINGS))
    parsed = dict(settings)
    parsed["_hysteresis_tracker"] = _int(where, "_hysteresis_tracker", state["_hysteresis_tracker"], 0)
    parsed["_min_hit"] = _int(where, "_min_hit", state["_min_hit"], 0, 1)
    parsed["_skipped_steps"] = _int(where, "_skipped_steps", state["_skipped_steps"], 0)
    parsed["_step"] = _int(where, "_step", state["_step"], 0)
    parsed["_history"] = _history(where, state["_history"], settings["history_size"])
    return parsed


def parse_state_dict(state) -> dict:
    """Validate the keys of a GradScaler state dict that are used; returns their values, or raises naming the problem.

    As PyTorch: the five keys must be there, and any key the scaler does not use is ignored.

    Args:
        state: the dict from ``state_dict()`` (cupynet's or ``torch.amp.GradScaler``'s).
    """
    where = "GradScaler.load_state_dict"
    if not isinstance(state, dict):
        raise TypeError(f"{where}: expected a dict from GradScaler.state_dict(), got {type(state).__name__}")
    if len(state) == 0:
        raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                           "instance of GradScaler.")
    # NOTE: other keys are ignored, as PyTorch does (a subclass's or a newer version's state still loads)
    missing = [k for k in TORCH_KEYS if k not in state]
    if missing:
        raise KeyError(f"{where}: the state dict has missing keys {missing}; expected {list(TORCH_KEYS)} "
                       f"(plus all of {list(EXTRA_KEYS)} or none of them; other keys are ignored)")
    extras = [k for k in EXTRA_KEYS if k in state]
    if extras and len(extras) != len(EXTRA_KEYS):
        raise KeyError(f"{where}: the state dict has only some of cupynet's extra keys ({extras}); expected all of "
                       f"{list(EXTRA_KEYS)} or none of them")
    parsed = {
        "scale": check_init_scale(where, state["scale"], "scale"),
        "growth_factor": check_growth_factor(where, state["growth_factor"]),
        "backoff_factor": check_backoff_factor(where, state["backoff_factor"]),
        "growth_interval": check_growth_interval(where, state["growth_interval"]),
        "_growth_tracker": _int(where, "_growth_tracker", state["_growth_tracker"], 0),
    }
    if extras:
        parsed.update(_parse_extras(where, state))
    return parsed

"""``GradScaler``: dynamic loss scaling, PyTorch's ``torch.amp.GradScaler`` semantics plus diagnostics.

A thin stateful class over :mod:`cupynet.amp.functional`. With default options it
behaves exactly like PyTorch: lazy state, per-optimizer stages READY -> UNSCALED ->
STEPPED (reset by ``update()``), the same errors, the same five state-dict keys.

NOTE (host syncs): ``scale``, ``unscale_`` and ``update`` never read the device.
``step`` reads found_inf once (PyTorch's path) unless the optimizer can skip on the
device (every built-in cupynet optimizer: ``_step_supports_amp_scaling = True``),
then it reads nothing. ``get_scale``, ``state_dict``, ``skipped_steps``,
``history`` and ``last_overflow`` each read in one transfer. See docs/amp.md.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy

from cupynet import backend, creation, dtypes
from cupynet.amp import _scaler_state as st
from cupynet.amp import functional as F
from cupynet.amp._scaler_state import COUNTERS as _COUNTERS
from cupynet.amp._scaler_state import ScalerStateMixin
from cupynet.amp.diagnostics import OverflowLog, ScalerDiagnosticsMixin, format_overflow, read_host
from cupynet.autograd import no_grad
from cupynet.tensor import Tensor

__all__ = ["GradScaler", "OptState", "format_overflow"]

_F32, _I32 = dtypes.float32, dtypes.int32
_MIN_SCALE_ADVICE = (
    "Minimum loss scale reached (min_scale={min_scale}): the gradients still overflow at the smallest allowed "
    "scale, so the loss is probably diverging (inf/NaN in the forward pass or exploding gradients). Try a lower "
    "learning rate, check the data for inf/NaN or wrong labels, clip gradients, or train in bfloat16 (which needs "
    "no loss scaling)."
)


class OptState(Enum):
    """Where an optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _device_type(device) -> str:
    if device is None:
        return backend.default_device().type
    if isinstance(device, backend.Device):
        return device.type
    if isinstance(device, str) and device.partition(":")[0] in ("cpu", "cuda"):
        return device.partition(":")[0]
    raise ValueError(f"GradScaler: device must be 'cpu', 'cuda', 'cuda:N', a Device or None, got {device!r}")


class _ParamSet:
    """Lets ``unscale_grads(params)`` reuse the optimizer code path (one param group)."""

    def __init__(self, params):
        self.param_groups = [{"params": params}]


class GradScaler(ScalerStateMixin, ScalerDiagnosticsMixin):
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
        device, init_scale, growth_factor, backoff_factor, growth_interval, enabled = st.constructor_arguments(
            args, kwargs)
        if not isinstance(enabled, (bool, numpy.bool_)):
            raise TypeError(f"{where}: enabled must be a bool, got {type(enabled).__name__} {enabled!r}")
        self._device = _device_type(device)
        self._settings = st.check_settings(where, hysteresis, min_scale, max_scale, on_min_scale, history_size)
        self._init_scale = st.check_init_scale(where, init_scale)
        self._growth_factor = st.check_growth_factor(where, growth_factor)
        self._backoff_factor = st.check_backoff_factor(where, backoff_factor)
        self._growth_interval = st.check_growth_interval(where, growth_interval)
        self._enabled = bool(enabled)
        if self._enabled and self._device == "cuda" and not backend.cuda_available():
            warnings.warn("GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        self._skip_on_device = bool(skip_on_device)
        self._init_growth_tracker = 0
        self._init_counters = dict.fromkeys(_COUNTERS, 0)
        self._init_history: list = []
        self._step = 0
        self._scale = None
        self._growth_tracker = None
        self._counters = None
        self._hist = None
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
        self._overflow = OverflowLog()
        self._name_sources: list = []
        self._stats_buffers: dict = {}

    # ---- lazy device state ---------------------------------------------------------------------
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
        self._hist = self._make_ring(dev)

    def _make_ring(self, dev):
        size = self._settings["history_size"]
        if not size:
            return None
        scales, skipped = numpy.zeros(size, _F32), numpy.zeros(size, _I32)
        for step, scale, was_skipped in self._init_history:
            scales[(step - 1) % size], skipped[(step - 1) % size] = scale, was_skipped
        return (creation.tensor(scales, dtype=_F32, device=dev).data,
                creation.tensor(skipped, dtype=_I32, device=dev).data)

    # ---- scale -----------------------------------------------------------------------------------
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

    # ---- unscale -----------------------------------------------------------------------------------
    def _unscale_grads_(self, param_groups, key) -> dict:
        by_device: dict = {}
        index = 0
        for group in param_groups:
            names = group.get("param_names")
            for j, p in enumerate(group["params"]):
                if p.grad is not None:
                    entry = by_device.setdefault(p.grad.device, ([], [], [], []))
                    name = names[j] if isinstance(names, (list, tuple)) and j < len(names) else None
                    for lst, item in zip(entry, (p, p.grad.data, name, index)):
                        lst.append(item)
                index += 1
        for dev, (_, grads, _, _) in by_device.items():
            F.check_grad_arrays("GradScaler.unscale_", grads, dev, allow_fp16=False)
        inv_scale = F.inv_scale_of(self._scale.data)
        found_per_device = {}
        for dev, (params, grads, names, indices) in by_device.items():
            found = F.device_array(0.0, _F32, dev)
            stats = self._stats_buffer(key, dev, len(grads))
            with no_grad():
                F.unscale_arrays(grads, found, F.to_device(inv_scale, dev), stats)
            for p in params:
                p.grad._bump_version()
            self._overflow.record((key, str(dev)), params, names, indices, stats, found, self._step + 1)
            found_per_device[dev] = found
        return found_per_device

    def _stats_buffer(self, key, dev, n: int):
        """A zeroed int32 (n, 2) per-tensor stats array, the same memory every step for the same key.

        NOTE: reusing the buffer keeps its device address fixed, so the kernel launcher's cached
        pointer table (keyed on addresses) is hit every step and no table is uploaded.
        """
        full_key = (key, str(dev), n)
        buffer = self._stats_buffers.get(full_key)
        if buffer is None:
            buffer = self._stats_buffers[full_key] = creation.zeros(n, 2, dtype=_I32, device=dev).data
        else:
            buffer[...] = 0
        return buffer

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
        host_found, host_hit = read_host(found, self._min_hit_array())  # NOTE: the one sync of PyTorch's path
        self._report_min_hit(host_hit)
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

    # ---- update ------------------------------------------------------------------------------------------
    def _new_scale_value(self, new_scale):
        reason = ("new_scale should be a float or a 1-element cupynet float Tensor on the scaler's device "
                  f"({self._device}) with requires_grad=False.")
        if isinstance(new_scale, Tensor):
            if (new_scale.device.type != self._device or new_scale.data.size != 1 or new_scale.requires_grad
                    or not dtypes.is_floating(new_scale.dtype)):
                raise ValueError(f"GradScaler.update: {reason} Got a {new_scale.dtype} Tensor of shape "
                                 f"{tuple(new_scale.shape)} on {new_scale.device}, requires_grad="
                                 f"{new_scale.requires_grad}.")
            return F.to_device(new_scale.data, self._scale.device).reshape(()).astype(_F32)
        try:
            return numpy.float32(st.check_init_scale("GradScaler.update", new_scale, "new_scale"))
        except (TypeError, ValueError) as error:
            raise type(error)(f"GradScaler.update: {reason} ({error})") from None

    def _record_step(self, found) -> None:
        """Count the step (and a skip) on the device and write the history ring; no sync."""
        step = self._step + 1
        hit = None if found is None else (found.reshape(1) != 0).astype(_I32)
        if hit is not None:
            skipped = self._counters["_skipped_steps"].reshape(1)
            skipped += hit
        if self._hist is not None:
            slot = (step - 1) % self._settings["history_size"]
            self._hist[0][slot] = self._scale.data
            self._hist[1][slot] = hit[0] if hit is not None else 0
        self._step = step

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
            scale.data[...] = value
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

    # ---- reading (each a documented host sync) ------------------------------------------------------------
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
        warnings.warn(message, RuntimeWarning, stacklevel=3)

    def check_min_scale(self) -> None:
        """Warn or raise now (per ``on_min_scale``) if a back-off was clamped at min_scale (one host sync).

        Args:
            None.
        """
        if self._enabled and self._min_hit_array() is not None:
            self._report_min_hit(read_host(self._min_hit_array())[0])

    def get_scale(self) -> float:
        """The current scale as a Python float (a host sync); the init scale before first use, 1.0 if disabled.

        Args:
            None.
        """
        if not self._enabled:
            return 1.0
        if self._scale is None:
            return self._init_scale
        scale, hit = read_host(self._scale.data, self._min_hit_array())
        self._report_min_hit(hit)
        return float(scale.reshape(()))

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(read_host(self._growth_tracker.data)[0].reshape(()))

    def skipped_steps(self) -> int:
        """How many steps were skipped (had inf/NaN gradients) so far; a host sync.

        Args:
            None.
        """
        if not self._enabled:
            return 0
        if self._counters is None:
            return self._init_counters["_skipped_steps"]
        skipped, hit = read_host(self._counters["_skipped_steps"], self._min_hit_array())
        self._report_min_hit(hit)
        return int(skipped.reshape(()))

    # ---- hyper-parameters ---------------------------------------------------------------------------------
    def get_growth_factor(self) -> float:
        """The growth factor. Args: None."""
        return self._growth_factor

    def set_growth_factor(self, new_factor) -> None:
        """Set the growth factor.

        Args:
            new_factor: a number > 1.
        """
        self._growth_factor = st.check_growth_factor("GradScaler.set_growth_factor", new_factor)

    def get_backoff_factor(self) -> float:
        """The backoff factor. Args: None."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor) -> None:
        """Set the backoff factor.

        Args:
            new_factor: a number in (0, 1).
        """
        self._backoff_factor = st.check_backoff_factor("GradScaler.set_backoff_factor", new_factor)

    def get_growth_interval(self) -> int:
        """The growth interval. Args: None."""
        return self._growth_interval

    def set_growth_interval(self, new_interval) -> None:
        """Set the growth interval.

        Args:
            new_interval: an int >= 1.
        """
        self._growth_interval = st.check_growth_interval("GradScaler.set_growth_interval", new_interval)

    def is_enabled(self) -> bool:
        """Whether scaling is enabled. Args: None."""
        return self._enabled

"""Argument and state-dict validation for ``GradScaler``: everything is checked before anything changes.

PyTorch's state dict has exactly five keys (``TORCH_KEYS``). cupynet adds the
``EXTRA_KEYS`` only when one of the options beyond PyTorch is set (hysteresis,
min/max scale, on_min_scale, history), so a default scaler's state loads into
``torch.amp.GradScaler`` and back.
"""

from __future__ import annotations

import inspect
import math
import numbers

import numpy

from cupynet.amp.diagnostics import OverflowLog, read_host

__all__ = [
    "constructor_arguments",
    "TORCH_KEYS", "EXTRA_SETTINGS", "EXTRA_COUNTERS", "EXTRA_KEYS", "DEFAULT_SETTINGS", "ON_MIN_SCALE_CHOICES",
    "check_growth_factor", "check_backoff_factor", "check_growth_interval", "check_init_scale", "check_settings",
    "parse_state_dict", "COUNTERS", "ScalerStateMixin",
]

TORCH_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
EXTRA_SETTINGS = ("hysteresis", "min_scale", "max_scale", "on_min_scale", "history_size")
EXTRA_COUNTERS = ("_hysteresis_tracker", "_min_hit", "_skipped_steps", "_step", "_history")
EXTRA_KEYS = EXTRA_SETTINGS + EXTRA_COUNTERS
COUNTERS = ("_hysteresis_tracker", "_min_hit", "_skipped_steps")
"""The device counters beyond PyTorch's scale and growth tracker."""
DEFAULT_SETTINGS = {"hysteresis": 1, "min_scale": None, "max_scale": None, "on_min_scale": "ignore",
                    "history_size": 0}
ON_MIN_SCALE_CHOICES = ("ignore", "warn", "raise")
_F32_MAX = float(numpy.finfo(numpy.float32).max)
_I32_MAX = 2**31 - 1


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


class ScalerStateMixin:
    """``state_dict`` / ``load_state_dict`` / pickling of ``GradScaler`` (needs its attributes)."""

    def _has_extras(self) -> bool:
        return self._settings != DEFAULT_SETTINGS

    def _host_state(self) -> dict:
        """Scale, tracker, counters and history on the host, read in one transfer when initialised."""
        if self._scale is None:
            return {"scale": self._init_scale, "_growth_tracker": self._init_growth_tracker,
                    **self._init_counters, "_history": list(self._init_history)}
        ring = self._hist if self._hist is not None else (None, None)
        host = read_host(self._scale.data, self._growth_tracker.data, *(self._counters[k] for k in COUNTERS), *ring)
        state = {"scale": float(host[0].reshape(())), "_growth_tracker": int(host[1].reshape(()))}
        state.update({k: int(v.reshape(())) for k, v in zip(COUNTERS, host[2:5])})
        size = self._settings["history_size"]
        steps = range(max(1, self._step - size + 1), self._step + 1) if size else ()
        state["_history"] = [(s, float(host[5][(s - 1) % size]), bool(host[6][(s - 1) % size])) for s in steps]
        return state

    def state_dict(self) -> dict:
        """PyTorch's five keys (``{}`` when disabled), plus cupynet's extra keys when extra options are set.

        Extra keys: hysteresis, min_scale, max_scale, on_min_scale, history_size, _hysteresis_tracker,
        _min_hit, _skipped_steps, _step, _history. A host read when the scale is on the device.

        Args:
            None.
        """
        if not self._enabled:
            return {}
        host = self._host_state()
        out = {"scale": host["scale"], "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
               "growth_interval": self._growth_interval, "_growth_tracker": host["_growth_tracker"]}
        if self._has_extras():
            out.update(self._settings)
            out.update({k: host[k] for k in COUNTERS})
            out["_step"] = self._step
            out["_history"] = [list(row) for row in host["_history"]]
        return out

    def load_state_dict(self, state_dict) -> None:
        """Load a state from ``state_dict()`` (cupynet's or PyTorch's); validated fully before any change.

        Without cupynet's extra keys (e.g. a PyTorch state), the extra options keep their current
        values and their counters restart from 0.

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
        self._init_history = parsed.get("_history", [])
        if self._scale is not None:
            self._scale.data[...] = numpy.float32(parsed["scale"])
            self._growth_tracker.data[...] = parsed["_growth_tracker"]
            for k in COUNTERS:
                self._counters[k][...] = self._init_counters[k]
            self._hist = self._make_ring(self._scale.device)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            host = self._host_state()
            state["_init_scale"], state["_init_growth_tracker"] = host["scale"], host["_growth_tracker"]
            state["_init_counters"] = {k: host[k] for k in COUNTERS}
            state["_init_history"] = host["_history"]
            state.update(_scale=None, _growth_tracker=None, _counters=None, _hist=None)
        state["_overflow"] = OverflowLog()  # NOTE: overflow records hold weak references; not pickled
        state["_name_sources"] = []
        state["_stats_buffers"] = {}
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)

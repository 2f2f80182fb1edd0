"""Overflow diagnostics of ``GradScaler``: which tensors overflowed, the scale history, one-transfer reads.

Nothing here reads the device unless asked: the per-tensor ``[inf_count,
nan_count]`` rows come from the fused unscale kernel itself and are kept on
the device (:class:`OverflowLog`); only ``last_overflow()`` / ``history()``
bring them to the host, each in a single transfer (:func:`read_host`).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

from cupynet import backend, dtypes

__all__ = ["read_host", "OverflowLog", "OverflowReport", "format_overflow", "names_from", "ScalerDiagnosticsMixin"]

_I32 = dtypes.int32


def read_host(*arrays) -> list:
    """Copy small device arrays to the host in ONE transfer per device; returns NumPy arrays.

    NOTE: float32 and int32 values are packed bit for bit into one int32 array
    (``view``), concatenated on the device, copied once and unpacked: a single
    host sync however many counters are read.

    Args:
        *arrays: float32 / int32 arrays (any shapes), or None (returned as None).
    """
    present = [(i, a) for i, a in enumerate(arrays) if a is not None]
    out = [None] * len(arrays)
    by_device: dict = {}
    for i, a in present:
        by_device.setdefault(str(backend.device_of_array(a)), []).append((i, a))
    for items in by_device.values():
        xp = backend.get_array_module(items[0][1])
        flat = [a.reshape(-1).view(_I32) if a.dtype != _I32 else a.reshape(-1) for _, a in items]
        host = backend.to_numpy(xp.concatenate(flat)) if len(flat) > 1 else backend.to_numpy(flat[0]).copy()
        offset = 0
        for (i, a), f in zip(items, flat):
            piece = host[offset:offset + f.size]
            out[i] = (piece if a.dtype == _I32 else piece.view(a.dtype)).reshape(a.shape)
            offset += f.size
    return out


class OverflowReport(list):
    """A list of ``(name, inf_count, nan_count)`` for the tensors that overflowed, with ``.step``.

    Args:
        rows: the rows.
        step: the step (1-based count of ``update()`` calls) of the overflow, or None if none happened.
    """

    def __init__(self, rows=(), step=None):
        super().__init__(rows)
        self.step = step


def format_overflow(report) -> str:
    """One human-readable line naming the tensors of an overflow report (for logs and ``cupynet train``).

    Args:
        report: an :class:`OverflowReport` (or any list of ``(name, inf_count, nan_count)``).
    """
    if not report:
        return "no overflow recorded"
    step = getattr(report, "step", None)
    where = f" at step {step}" if step is not None else ""
    parts = [f"{name} ({n_inf} inf, {n_nan} NaN)" for name, n_inf, n_nan in report]
    noun = "tensor" if len(parts) == 1 else "tensors"
    return f"overflow{where} in {len(parts)} {noun}: " + ", ".join(parts)


def names_from(source) -> dict:
    """``{id(param): name}`` from a module (``named_parameters()``) or an iterable of ``(name, param)``.

    Args:
        source: an object with ``named_parameters()``, or an iterable of ``(name, Tensor)`` pairs.
    """
    pairs = source.named_parameters() if hasattr(source, "named_parameters") else source
    try:
        return {id(p): str(name) for name, p in pairs}
    except (TypeError, ValueError) as error:
        raise TypeError("GradScaler: expected a model with named_parameters() or an iterable of (name, parameter) "
                        f"pairs, got {type(source).__name__} ({error})") from None


class _Record:
    """On-device overflow rows of one parameter list: the rows and the step of the last overflow."""

    def __init__(self, params, names, indices, stats_like):
        xp = backend.get_array_module(stats_like)
        self.params = [weakref.ref(p) for p in params]
        self.names = names
        self.indices = indices
        self.stats = xp.zeros_like(stats_like)
        self.step = xp.zeros(1, dtype=_I32)


class OverflowLog:
    """Keeps, per (optimizer, device, parameter list), the per-tensor counts of its last overflowing step.

    ``record`` runs after each unscale and costs two tiny device ``where`` ops, no sync:
    the rows are kept only when found_inf is set, so they survive later clean steps.

    Args:
        capacity: how many parameter lists to remember (oldest forgotten first).
    """

    def __init__(self, capacity: int = 16):
        self.capacity = capacity
        self.records: OrderedDict = OrderedDict()

    def clear(self) -> None:
        """Forget everything (used when pickling: records hold weak references).

        Args:
            None.
        """
        self.records.clear()

    def record(self, key, params, names, indices, stats, found_inf, step: int) -> None:
        """Keep ``stats`` as the last overflow of ``params`` when found_inf is set (decided on the device).

        Args:
            key: identifies the optimizer and device.
            params: the parameters, in the rows' order.
            names: names from the optimizer's ``param_names`` (or None per parameter).
            indices: each parameter's index in the optimizer's parameter list.
            stats: int32 ``(len(params), 2)`` device array of ``[inf_count, nan_count]``.
            found_inf: the float32 device flag of this unscale.
            step: the step number (host int) to stamp.
        """
        full_key = (key, tuple(id(p) for p in params))
        rec = self.records.get(full_key)
        if rec is None:
            rec = self.records[full_key] = _Record(params, names, indices, stats)
        xp = backend.get_array_module(stats)
        hit = found_inf.reshape(1) != 0
        rec.stats[...] = xp.where(hit, stats, rec.stats)
        rec.step[...] = xp.where(hit, xp.asarray([step], dtype=_I32), rec.step)
        self.records.move_to_end(full_key)
        while len(self.records) > self.capacity:
            self.records.popitem(last=False)

    def last(self, extra_names: dict) -> OverflowReport:
        """Read every record (one transfer per device) and report the latest overflowing step.

        Args:
            extra_names: ``{id(param): name}`` used when the optimizer gave no ``param_names``.
        """
        records = list(self.records.values())
        if not records:
            return OverflowReport()
        host = read_host(*[a for rec in records for a in (rec.step, rec.stats)])
        steps = [int(host[2 * i][0]) for i in range(len(records))]
        latest = max(steps)
        if latest == 0:
            return OverflowReport()
        rows = []
        for rec, step, stats in zip(records, steps, host[1::2]):
            if step == latest:
                rows += [(self._name(rec, j, extra_names), int(n_inf), int(n_nan))
                         for j, (n_inf, n_nan) in enumerate(stats) if n_inf or n_nan]
        return OverflowReport(rows, latest)

    @staticmethod
    def _name(rec, j, extra_names) -> str:
        if rec.names[j] is not None:
            return rec.names[j]
        param = rec.params[j]()
        if param is not None and id(param) in extra_names:
            return extra_names[id(param)]
        return f"param[{rec.indices[j]}]"


class ScalerDiagnosticsMixin:
    """``history`` / ``register_model`` / ``last_overflow`` of ``GradScaler`` (needs its attributes)."""

    def history(self) -> list:
        """``[(step, scale, skipped), ...]`` for the last ``history_size`` steps, oldest first (one transfer).

        ``scale`` is the scale the step used; ``step`` counts ``update()`` calls from 1.

        Args:
            None.
        """
        size = self._settings["history_size"]
        if not size:
            raise RuntimeError("GradScaler.history: the history is off; create the scaler with history_size=N to "
                               "keep the last N steps")
        if self._hist is None:
            return list(self._init_history)
        scales, skipped, hit = read_host(self._hist[0], self._hist[1], self._min_hit_array())
        self._report_min_hit(hit)
        steps = range(max(1, self._step - size + 1), self._step + 1)
        return [(s, float(scales[(s - 1) % size]), bool(skipped[(s - 1) % size])) for s in steps]

    def register_model(self, model) -> None:
        """Name parameters in ``last_overflow()`` by a model's ``named_parameters()`` (or ``(name, param)`` pairs).

        Args:
            model: a Module, or an iterable of ``(name, parameter)`` pairs.
        """
        if not hasattr(model, "named_parameters"):
            if isinstance(model, (str, bytes)) or not hasattr(model, "__iter__"):
                raise TypeError("GradScaler.register_model: expected a model with named_parameters() or an iterable "
                                f"of (name, parameter) pairs, got {type(model).__name__}")
            model = list(model)
        names_from(model)
        source = model
        self._name_sources.append(source)

    def last_overflow(self, named_parameters=None) -> OverflowReport:
        """The tensors that had inf/NaN at the last overflowing step: ``[(name, inf_count, nan_count)]``.

        A host read (one transfer), made only when called. Names come from the optimizer's
        ``param_names`` groups, else from ``named_parameters`` / ``register_model``, else ``param[i]``
        (i: the index in the optimizer's parameter list). The report's ``.step`` is the step number.

        Args:
            named_parameters: optional ``model.named_parameters()`` (or a model) to name the parameters.
        """
        names = {}
        for source in self._name_sources + ([] if named_parameters is None else [named_parameters]):
            names.update(names_from(source))
        return self._overflow.last(names)

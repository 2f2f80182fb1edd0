"""What a ``GradScaler`` saw: which tensors overflowed, the scale at each step; one-transfer reads.

Each scaler holds a :class:`ScalerDiagnostics` (``scaler.diagnostics``) and feeds
it as it runs. Nothing here reads the device unless asked: the per-tensor
``[inf_count, nan_count]`` rows come from the fused unscale kernel itself and
are kept on the device (:class:`OverflowLog`), with each tensor's count of
overflowing steps (counted by the same launch), and so is the ring of
``(scale, skipped)`` per step; only ``last_overflow()`` / ``overflow_steps()`` /
``history()`` bring them to the host, each in a single transfer (:func:`read_host`).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import numpy

from cupynet import backend, creation, dtypes
from cupynet.amp import kernels

__all__ = ["read_host", "OverflowLog", "OverflowReport", "format_overflow", "names_from", "ScalerDiagnostics"]

_F32, _I32 = dtypes.float32, dtypes.int32


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
    """On-device overflow state of one parameter list: the rows and step of its last overflow, and per-tensor hits.

    ``hits[i]`` counts the overflowing steps in which tensor ``i`` had inf/NaN (``kernels.record_overflow_``
    adds them on the device).
    """

    def __init__(self, params, names, indices, stats_like):
        xp = backend.get_array_module(stats_like)
        self.params = [weakref.ref(p) for p in params]
        self.names = names
        self.indices = indices
        self.stats = xp.zeros_like(stats_like)
        self.step = xp.zeros(1, dtype=_I32)
        self.hits = xp.zeros_like(stats_like[:, 0], order="C")  # NOTE: (n,) on the stats' device


class OverflowLog:
    """Keeps, per (optimizer, device, parameter list), the per-tensor counts of its last overflowing step.

    ``record`` runs after each unscale and costs one tiny launch (``kernels.record_overflow_``), no sync:
    the rows are kept only when found_inf is set, so they survive later clean steps; the same launch adds 1
    to the hit count of every tensor that had inf/NaN, so :meth:`hits` counts steps, however rarely it is read.
    A forgotten parameter list (beyond ``capacity``) takes its counts with it.

    Args:
        capacity: how many parameter lists to remember (oldest forgotten first).
    """

    def __init__(self, capacity: int = 16):
        self.capacity = capacity
        self.records: OrderedDict = OrderedDict()

    def clear(self) -> None:
        """Forget everything (used when pickling: records hold weak references)."""
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
        # NOTE: one launch, decided on the device: keeps the rows and counts the hits
        kernels.record_overflow_(found_inf, stats, rec.stats, rec.step, step, rec.hits)
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

    def hits(self, extra_names: dict) -> dict:
        """``{name: steps}``: per tensor, how many overflowing steps had inf/NaN in it (one transfer per device).

        Tensors that never overflowed are left out; largest counts first (ties by name). A name found in
        several records gets the sum (a record is per set of gradients: a step where some parameter had no
        gradient, or an optimizer that shares a parameter, starts another).

        Args:
            extra_names: ``{id(param): name}`` used when the optimizer gave no ``param_names``.
        """
        records = list(self.records.values())
        if not records:
            return {}
        counts: dict = {}
        for rec, hits in zip(records, read_host(*[rec.hits for rec in records])):
            for j, n in enumerate(hits):
                if n:
                    name = self._name(rec, j, extra_names)
                    counts[name] = counts.get(name, 0) + int(n)
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    @staticmethod
    def _name(rec, j, extra_names) -> str:
        if rec.names[j] is not None:
            return rec.names[j]
        param = rec.params[j]()
        if param is not None and id(param) in extra_names:
            return extra_names[id(param)]
        return f"param[{rec.indices[j]}]"


class ScalerDiagnostics:
    """What a ``GradScaler`` saw, kept for you to ask: which tensors overflowed, and the scale of each step.

    Each scaler holds one (``scaler.diagnostics``) and feeds it: every unscale fills a per-tensor
    ``[inf_count, nan_count]`` buffer (``stats_buffer``) and keeps it when it overflowed
    (``record_unscale``, which also counts each tensor's overflowing steps); every ``update()`` writes
    the step into the history ring (``record_step``). You ask through the scaler (``scaler.history()``,
    ``scaler.last_overflow()``, ``scaler.overflow_steps()``, ``scaler.register_model(model)``) or here.
    All of it stays on the device until asked.

    Args:
        history_size: how many steps the on-device ring keeps (0: no history).
        history: ``(step, scale, skipped)`` rows to start from (a checkpoint's, or the ring's when pickled).
    """

    def __init__(self, history_size: int = 0, history=()):
        self.history_size = history_size
        self.overflow = OverflowLog()
        self.name_sources: list = []
        self._start_rows = list(history)  # NOTE: the history until the ring exists on a device
        self._ring = None                 # (scales float32 (N,), skipped int32 (N,)), slot (step - 1) % N
        self._stats_buffers: dict = {}

    # ---- fed by the scaler -------------------------------------------------------------------------------
    def start(self, device) -> None:
        """Create the history ring on ``device`` (the scaler's first ``scale()``), holding the start rows.

        Args:
            device: the scaler's device.
        """
        size = self.history_size
        if not size:
            self._ring = None
            return
        scales, skipped = numpy.zeros(size, _F32), numpy.zeros(size, _I32)
        for step, scale, was_skipped in self._start_rows:
            scales[(step - 1) % size], skipped[(step - 1) % size] = scale, was_skipped
        self._ring = (creation.tensor(scales, dtype=_F32, device=device).array,
                      creation.tensor(skipped, dtype=_I32, device=device).array)

    def restart(self, history_size: int, history, device=None) -> None:
        """Start again from ``history`` (``load_state_dict``); on ``device`` when the scaler has its state there.

        Args:
            history_size: the ring's new length.
            history: the ``(step, scale, skipped)`` rows to start from.
            device: the scaler's device, or None before its first ``scale()``.
        """
        self.history_size, self._start_rows, self._ring = history_size, list(history), None
        if device is not None:
            self.start(device)

    def stats_buffer(self, key, device, n: int, zeroed: bool = True):
        """An int32 (n, 2) per-tensor stats array, the same memory every step for the same key, zeroed.

        NOTE: reusing the buffer keeps its device address fixed, so the kernel launcher's cached
        pointer table (keyed on addresses) is hit every step and no table is uploaded.

        Args:
            key: identifies the optimizer (or parameter list) being unscaled.
            device: the gradients' device.
            n: the number of gradients.
            zeroed: False when the caller zeroes it itself (``functional.start_unscale`` does, in its launch).
        """
        full_key = (key, str(device), n)
        buffer = self._stats_buffers.get(full_key)
        if buffer is None:
            buffer = self._stats_buffers[full_key] = creation.zeros(n, 2, dtype=_I32, device=device).array
        elif zeroed:
            buffer[...] = 0
        return buffer

    def record_unscale(self, key, params, names, indices, stats, found_inf, step: int) -> None:
        """Keep an unscale's per-tensor counts as the last overflow of ``params`` when found_inf is set; no sync.

        Args:
            key, params, names, indices, stats, found_inf, step: as in ``OverflowLog.record``, which this hands
                them to; ``stats`` is the ``stats_buffer`` the unscale filled, ``step`` the number the coming
                ``update()`` will give this step.
        """
        self.overflow.record(key, params, names, indices, stats, found_inf, step)

    def record_step(self, step: int, scale, found_inf, skipped) -> None:
        """Count a skipped step and write step ``step``'s scale and skipped flag into the ring; one launch, no sync.

        Args:
            step: the step number (``update()`` calls, from 1).
            scale: the float32 device scale the step used.
            found_inf: float32 one-element device flag, non-zero when the step was skipped; None when nothing
                was checked (not a skip).
            skipped: the scaler's int32 one-element count of skipped steps, incremented when found_inf is set.
        """
        ring_scales, ring_skipped = self._ring if self._ring is not None else (None, None)
        slot = (step - 1) % self.history_size if self._ring is not None else 0
        kernels.record_step_(found_inf, skipped, scale, ring_scales, ring_skipped, slot)

    # ---- the history as data (for state_dict and pickling) --------------------------------------------------
    def ring_arrays(self) -> tuple:
        """The ring's two device arrays (scales, skipped), or ``(None, None)`` when there is none."""
        return self._ring if self._ring is not None else (None, None)

    def start_rows(self) -> list:
        """The rows the history starts from (all of it before the ring exists)."""
        return list(self._start_rows)

    def rows(self, step: int, scales, skipped) -> list:
        """``[(step, scale, skipped)]`` of the last ``history_size`` steps up to ``step``, from the ring's host copy.

        Args:
            step: the last step taken.
            scales: host copy of the ring's scales.
            skipped: host copy of the ring's skipped flags.
        """
        size = self.history_size
        first = max(1, step - size + 1)
        return [(s, float(scales[(s - 1) % size]), bool(skipped[(s - 1) % size])) for s in range(first, step + 1)] \
            if size else []

    def detached(self, history) -> ScalerDiagnostics:
        """A copy with no device state, records or registered models, starting from ``history`` (for pickling).

        NOTE: overflow records hold weak references to parameters, and models are not data: neither is pickled.

        Args:
            history: the rows to start from.
        """
        return ScalerDiagnostics(self.history_size, history)

    # ---- asked by you ------------------------------------------------------------------------------------
    def history(self, step: int, read=read_host) -> list:
        """``[(step, scale, skipped), ...]`` for the last ``history_size`` steps, oldest first (one transfer).

        ``scale`` is the scale the step used; ``step`` counts ``update()`` calls from 1.

        Args:
            step: the last step taken (the scaler's count of ``update()`` calls).
            read: reads device arrays in one transfer (the scaler passes its own, which also checks min_scale).
        """
        if not self.history_size:
            raise RuntimeError("GradScaler.history: the history is off; create the scaler with history_size=N to "
                               "keep the last N steps")
        if self._ring is None:
            return self.start_rows()
        scales, skipped = read(*self._ring)
        return self.rows(step, scales, skipped)

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
        self.name_sources.append(model)

    def last_overflow(self, named_parameters=None) -> OverflowReport:
        """The tensors that had inf/NaN at the last overflowing step: ``[(name, inf_count, nan_count)]``.

        A host read (one transfer), made only when called. Names come from the optimizer's
        ``param_names`` groups, else from ``named_parameters`` / ``register_model``, else ``param[i]``
        (i: the index in the optimizer's parameter list). The report's ``.step`` is the step number.

        Args:
            named_parameters: optional ``model.named_parameters()`` (or a model) to name the parameters.
        """
        return self.overflow.last(self._names(named_parameters))

    def overflow_steps(self, named_parameters=None) -> dict:
        """``{name: steps}``: per tensor, the number of overflowing (skipped) steps that had inf/NaN in it.

        Counted on the device at every unscale (no sync then), so several overflowing steps between two
        reads are all counted; this call is one host read (one transfer). Tensors that never overflowed
        are left out; largest counts first. The counts cover this scaler object's life: they are not in
        ``state_dict`` (a resumed run starts them again at 0). Names as in :meth:`last_overflow`.

        Args:
            named_parameters: optional ``model.named_parameters()`` (or a model) to name the parameters.
        """
        return self.overflow.hits(self._names(named_parameters))

    def _names(self, named_parameters) -> dict:
        """``{id(param): name}`` from the registered models, then ``named_parameters`` (which wins)."""
        names = {}
        for source in self.name_sources + ([] if named_parameters is None else [named_parameters]):
            names.update(names_from(source))
        return names

"""The AMP kernels of cupynet: fused inf/NaN check and unscale, loss-scale update, global L2 norm, step bookkeeping.

Every function works on plain arrays (no Tensor, no autograd) and picks its
backend from them: CuPy arrays launch the CUDA kernels of this package
(``*.cu``, launched by ``launch.py``, compiled on first use and cached), NumPy
arrays run the NumPy reference (``reference.py``), which gives the same results
bit for bit: every value is read as fp32, every operation is one correctly
rounded fp32 operation in the kernel's order, results are rounded to nearest
even into the storage dtype, and every NaN is stored as one canonical quiet NaN.
(The fused SGD / Adam steps the GradScaler skips on the device are the
optimizers' own kernels: ``cupynet.optim.kernels``.)

No function reads a device value on the host (no ``.get()``, ``.item()``,
``float()``, ``bool()``): flags such as ``found_inf`` are read by the kernels
themselves, so nothing here makes the host wait for the GPU. Arguments are
checked on metadata only, before anything is written: a rejected call leaves
every array as it was. See docs/kernels.md for the design, for learners.
"""

from __future__ import annotations

import math

import numpy

from cupynet import dtypes
from cupynet.amp.kernels import launch, reference
from cupynet.cuda import checks as chk
from cupynet.cuda.compile import KERNEL_DTYPES
from cupynet.cuda.multi_tensor import CHUNK_SIZE, group_by_dtype

__all__ = ["non_finite_check_and_unscale_", "update_scale_", "multi_tensor_l2norm", "clip_by_total_norm_",
           "begin_unscale_", "record_overflow_", "record_step_", "CHUNK_SIZE", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = KERNEL_DTYPES
"""Dtypes the kernels accept for the arrays they check, unscale or measure."""

_F32, _I32 = dtypes.float32, dtypes.int32


def non_finite_check_and_unscale_(arrays, found_inf, inv_scale, tensor_stats=None) -> None:
    """Check arrays for inf/NaN and multiply them by ``inv_scale``, in place, without a host sync.

    For every element ``v`` (read as fp32): if ``v`` is inf or NaN, ``found_inf[0] = 1.0``
    (only ever set, never cleared, so several calls can share one flag); then, unless
    ``inv_scale == 1`` (decided on the device; the arrays are then not written at all),
    ``v = fp32(v * inv_scale)`` stored back in the array's dtype (round to nearest even).
    On CUDA: one launch per dtype group, one block per chunk of 65536 elements.

    Args:
        arrays: list/tuple of C-contiguous float32 / float16 / bfloat16 arrays (any size, empty
            included); a non-contiguous array is rejected (make a contiguous copy and copy it back).
        found_inf: float32 array of shape (1,) (or 0-d): the overflow flag.
        inv_scale: float32 array of shape (1,) (or 0-d): the factor, usually ``1 / scale``.
        tensor_stats: optional contiguous int32 array of shape ``(len(arrays), 2)``: row i gets
            ``[inf_count, nan_count]`` of ``arrays[i]`` ADDED to it (zero it first).
    """
    fn = "non_finite_check_and_unscale_"
    arrays = chk.array_list(fn, "arrays", arrays, SUPPORTED_DTYPES)
    chk.scalar_array(fn, "found_inf", found_inf, _F32)
    chk.scalar_array(fn, "inv_scale", inv_scale, _F32)
    if tensor_stats is not None:
        chk.check_stats(fn, tensor_stats, len(arrays))
    place = chk.place_of(fn, [("found_inf", found_inf), ("inv_scale", inv_scale), *chk.named("arrays", arrays),
                              ("tensor_stats", tensor_stats)])
    chk.check_distinct(fn, [*chk.named("arrays", arrays), ("found_inf", found_inf), ("tensor_stats", tensor_stats)])
    if place == "cpu":
        reference.non_finite_check_and_unscale_(arrays, found_inf, inv_scale, tensor_stats)
    else:
        launch.non_finite_check_and_unscale_(group_by_dtype(arrays), arrays, found_inf, inv_scale, tensor_stats)


def _scale_bounds(fn, min_scale, max_scale):
    low = 0.0 if min_scale is None else chk.real_number(fn, "min_scale", min_scale, low=0.0)
    high = math.inf if max_scale is None else chk.real_number(fn, "max_scale", max_scale, low=0.0,
                                                              low_inclusive=False)
    low32, high32 = numpy.float32(low), numpy.float32(high)
    if max_scale is not None and not numpy.isfinite(high32):
        raise ValueError(f"{fn}: max_scale {max_scale!r} overflows float32; expected at most {numpy.finfo('f').max}")
    if not numpy.isfinite(low32) or low32 > high32:
        raise ValueError(f"{fn}: min_scale {min_scale!r} must be a float32 value <= max_scale {max_scale!r}")
    return low32, high32


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval,
                  hysteresis=1, hysteresis_tracker=None, min_scale=None, max_scale=None, min_hit=None) -> None:
    """Update the loss scale on the device after a step (PyTorch's ``_amp_update_scale_``, extended).

    The rule (one thread; ``hyst`` is ``hysteresis_tracker``, ``tracker`` is ``growth_tracker``)::

        if found_inf != 0:
            hyst += 1
            if hyst >= hysteresis:
                scale = fp32(scale * backoff_factor)        # product in double, one rounding
                if scale < min_scale: scale = min_scale; min_hit = 1
                hyst = 0
            tracker = 0
        else:
            hyst = 0
            successful = tracker + 1
            if successful == growth_interval:
                new = fp32(scale * growth_factor)
                if isfinite(new): scale = min(new, max_scale)   # never grows to inf
                tracker = 0
            else:
                tracker = successful

    Hysteresis (DeepSpeed / Megatron style): the scale backs off only after
    ``hysteresis`` CONSECUTIVE overflowing steps; any clean step resets the count to 0,
    and so does a back-off (the next back-off needs ``hysteresis`` new overflows). An
    overflow that does not back off still resets the growth tracker. With
    ``hysteresis=1`` and no bounds this is PyTorch's rule exactly, bit for bit.

    Args:
        scale: float32 array of shape (1,) (or 0-d), updated in place.
        growth_tracker: int32 array of shape (1,): clean steps since the last growth or overflow.
        found_inf: float32 array of shape (1,): non-zero when the step overflowed.
        growth_factor: factor > 1 applied after ``growth_interval`` clean steps.
        backoff_factor: factor in (0, 1) applied on overflow.
        growth_interval: clean steps needed to grow (int >= 1).
        hysteresis: consecutive overflows needed to back off (int >= 1).
        hysteresis_tracker: int32 array of shape (1,): consecutive overflows so far; required
            when ``hysteresis > 1``.
        min_scale: lower bound of the scale after a back-off (None: no bound).
        max_scale: upper bound of the scale after a growth (None: no bound).
        min_hit: optional int32 array of shape (1,), set to 1 when ``min_scale`` clamped a back-off
            (never cleared here: the caller decides what to do, e.g. stop training).
    """
    fn = "update_scale_"
    chk.scalar_array(fn, "scale", scale, _F32)
    chk.scalar_array(fn, "growth_tracker", growth_tracker, _I32)
    chk.scalar_array(fn, "found_inf", found_inf, _F32)
    chk.scalar_array(fn, "hysteresis_tracker", hysteresis_tracker, _I32, optional=True)
    chk.scalar_array(fn, "min_hit", min_hit, _I32, optional=True)
    growth_factor = chk.real_number(fn, "growth_factor", growth_factor, low=1.0, low_inclusive=False)
    backoff_factor = chk.real_number(fn, "backoff_factor", backoff_factor, low=0.0, high=1.0, low_inclusive=False)
    growth_interval = chk.positive_int(fn, "growth_interval", growth_interval)
    hysteresis = chk.positive_int(fn, "hysteresis", hysteresis)
    if hysteresis > 1 and hysteresis_tracker is None:
        raise ValueError(f"{fn}: hysteresis={hysteresis} needs a hysteresis_tracker (int32 array of shape (1,))")
    low, high = _scale_bounds(fn, min_scale, max_scale)
    written = [("scale", scale), ("growth_tracker", growth_tracker), ("hysteresis_tracker", hysteresis_tracker),
               ("min_hit", min_hit)]
    place = chk.place_of(fn, [*written, ("found_inf", found_inf)])
    chk.check_distinct(fn, written)
    impl = reference if place == "cpu" else launch
    impl.update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval,
                       hysteresis, hysteresis_tracker, low, high, min_hit)


def multi_tensor_l2norm(arrays):
    """The L2 norm of all elements of all arrays, ``sqrt(sum(v * v))``, accumulated in fp32.

    Deterministic: no atomics; each chunk of 65536 elements is summed by one block in
    a fixed order, then one block adds the per-chunk partials in a fixed order (the
    NumPy reference replays the same order, so both give the same bits). A NaN
    anywhere gives NaN, an inf (and no NaN) gives inf.

    Args:
        arrays: list/tuple of C-contiguous float32 / float16 / bfloat16 arrays on one device.

    Returns:
        A float32 array of shape (1,) on the arrays' device (NumPy when the list is empty).
    """
    fn = "multi_tensor_l2norm"
    arrays = chk.array_list(fn, "arrays", arrays, SUPPORTED_DTYPES)
    place = chk.place_of(fn, chk.named("arrays", arrays))
    if place == "cpu":
        return reference.multi_tensor_l2norm(arrays)
    return launch.multi_tensor_l2norm(arrays[0].device.id, group_by_dtype(arrays), arrays)


def clip_by_total_norm_(arrays, total_norm, max_norm) -> None:
    """Scale every array in place by ``min(max_norm / (total_norm + 1e-6), 1)``: ``clip_grad_norm_`` in one launch.

    The coefficient is computed in fp32 on the device (NaN propagates: a NaN norm makes every
    value NaN, an inf norm makes them 0, as in PyTorch), rounded to each array's dtype, and each
    value becomes ``fp32(v * coef)`` rounded once into its dtype: what ``v * coef.astype(v.dtype)``
    gives in NumPy. On CUDA: one launch per dtype group, one block per chunk.

    Args:
        arrays: list/tuple of C-contiguous float32 / float16 / bfloat16 arrays.
        total_norm: float32 array of shape (1,) or 0-d (``multi_tensor_l2norm`` of the arrays).
        max_norm: a positive Python number (rounded once to fp32), or a float32 one-element array on the
            arrays' device.
    """
    fn = "clip_by_total_norm_"
    arrays = chk.array_list(fn, "arrays", arrays, SUPPORTED_DTYPES)
    chk.scalar_array(fn, "total_norm", total_norm, _F32)
    if hasattr(max_norm, "dtype") and hasattr(max_norm, "shape"):
        chk.scalar_array(fn, "max_norm", max_norm, _F32)
        named_max = [("max_norm", max_norm)]
    else:
        max_norm = numpy.float32(chk.real_number(fn, "max_norm", max_norm, low=0.0))
        named_max = []
    place = chk.place_of(fn, [("total_norm", total_norm), *named_max, *chk.named("arrays", arrays)])
    chk.check_distinct(fn, [*chk.named("arrays", arrays), ("total_norm", total_norm), *named_max])
    if place == "cpu":
        reference.clip_by_total_norm_(arrays, total_norm, max_norm)
    else:
        launch.clip_by_total_norm_(group_by_dtype(arrays), arrays, total_norm, max_norm)


def begin_unscale_(scale, inv_scale, found_inf, tensor_stats=None) -> None:
    """Start an unscale in one launch: ``inv_scale = 1 / scale``, ``found_inf = 0``, ``tensor_stats = 0``.

    NOTE: the reciprocal is taken in float64 and rounded once to float32 (PyTorch's rule: exact for
    a power-of-two scale), and a NaN is stored canonical, as every kernel here stores it.

    Args:
        scale: float32 array of shape (1,) or 0-d.
        inv_scale: float32 array of shape (1,) or 0-d, written.
        found_inf: float32 array of shape (1,) or 0-d, set to 0.
        tensor_stats: optional contiguous int32 array of shape ``(n, 2)``, set to 0.
    """
    fn = "begin_unscale_"
    for name, a in (("scale", scale), ("inv_scale", inv_scale), ("found_inf", found_inf)):
        chk.scalar_array(fn, name, a, _F32)
    if tensor_stats is not None:
        rows = tensor_stats.shape[0] if getattr(tensor_stats, "ndim", 0) == 2 else 0  # NOTE: any (n, 2)
        chk.check_stats(fn, tensor_stats, rows)
    named = [("scale", scale), ("inv_scale", inv_scale), ("found_inf", found_inf), ("tensor_stats", tensor_stats)]
    place = chk.place_of(fn, named)
    chk.check_distinct(fn, named)
    (reference if place == "cpu" else launch).begin_unscale_(scale, inv_scale, found_inf, tensor_stats)


def record_overflow_(found_inf, tensor_stats, record_stats, record_step, step, record_hits=None) -> None:
    """When ``found_inf`` is set (decided on the device), keep ``tensor_stats`` as a record, stamp ``step``, count hits.

    With ``record_hits``, each tensor's count of overflowing steps grows on the device too: when
    ``found_inf`` is set, ``record_hits[i] += 1`` for every row ``i`` of ``tensor_stats`` that is not
    ``[0, 0]`` (that tensor had inf/NaN); rows of zeros, and calls with found_inf clear, add nothing.
    One launch either way (one block).

    Args:
        found_inf: float32 array of shape (1,) or 0-d.
        tensor_stats: contiguous int32 array (the per-tensor ``[inf_count, nan_count]`` rows of an unscale);
            of shape ``(n, 2)`` when record_hits is given.
        record_stats: contiguous int32 array of tensor_stats' shape, written when found_inf is set.
        record_step: int32 array of shape (1,) or 0-d, written when found_inf is set.
        step: the step number to stamp (a non-negative int below 2**31).
        record_hits: optional contiguous int32 array of shape ``(n,)``, one count per row of tensor_stats,
            incremented as above (start it at 0).
    """
    fn = "record_overflow_"
    chk.scalar_array(fn, "found_inf", found_inf, _F32)
    chk.scalar_array(fn, "record_step", record_step, _I32)
    for name, a in (("tensor_stats", tensor_stats), ("record_stats", record_stats)):
        chk.array_list(fn, name, [a], (_I32,))
    chk.check_same_shapes(fn, "tensor_stats", [tensor_stats], {"record_stats": [record_stats]})
    if record_hits is not None:
        _check_hits(fn, tensor_stats, record_hits)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < 2 ** 31:
        raise ValueError(f"{fn}: step must be an int in [0, 2**31) (it is stored as int32), got {step!r}")
    named = [("found_inf", found_inf), ("tensor_stats", tensor_stats), ("record_stats", record_stats),
             ("record_step", record_step), ("record_hits", record_hits)]
    place = chk.place_of(fn, named)
    chk.check_distinct(fn, named[2:])
    if record_hits is not None:
        chk.check_distinct(fn, [("tensor_stats", tensor_stats), ("record_hits", record_hits)])
    (reference if place == "cpu" else launch).record_overflow_(found_inf, tensor_stats, record_stats, record_step,
                                                                 step, record_hits)


def _check_hits(fn, tensor_stats, record_hits) -> None:
    """record_hits: a contiguous int32 ``(n,)`` array for a tensor_stats of shape ``(n, 2)``."""
    if tensor_stats.ndim != 2 or tensor_stats.shape[1] != 2:
        raise ValueError(f"{fn}: with record_hits, tensor_stats must have shape (n, 2) (one [inf_count, nan_count] "
                         f"row per tensor), got shape {tuple(tensor_stats.shape)}")
    chk.check_counts(fn, "record_hits", record_hits, tensor_stats.shape[0], "one count per tensor_stats row")


def record_step_(found_inf, skipped, scale, ring_scales=None, ring_skipped=None, slot=0) -> None:
    """Count a step on the device: ``skipped += (found_inf != 0)``; with a ring, ``ring[slot] = (scale, hit)``.

    Args:
        found_inf: float32 array of shape (1,) or 0-d, or None (nothing was checked: the step is no skip).
        skipped: int32 array of shape (1,) or 0-d, incremented when found_inf is set.
        scale: float32 array of shape (1,) or 0-d: the scale the step used.
        ring_scales: optional contiguous float32 1-D array (the history ring's scales).
        ring_skipped: int32 1-D array of ring_scales' shape (the ring's skipped flags); with ring_scales only.
        slot: the ring slot to write, in ``[0, len(ring_scales))``.
    """
    fn = "record_step_"
    chk.scalar_array(fn, "found_inf", found_inf, _F32, optional=True)
    chk.scalar_array(fn, "skipped", skipped, _I32)
    chk.scalar_array(fn, "scale", scale, _F32)
    if (ring_scales is None) != (ring_skipped is None):
        raise ValueError(f"{fn}: ring_scales and ring_skipped must be given together (or neither)")
    if ring_scales is not None:
        chk.array_list(fn, "ring_scales", [ring_scales], (_F32,))
        chk.array_list(fn, "ring_skipped", [ring_skipped], (_I32,))
        chk.check_same_shapes(fn, "ring_scales", [ring_scales], {"ring_skipped": [ring_skipped]})
        if ring_scales.ndim != 1 or isinstance(slot, bool) or not isinstance(slot, int) or \
                not 0 <= slot < ring_scales.shape[0]:
            raise ValueError(f"{fn}: slot must be an int in [0, {ring_scales.shape[0]}) of a 1-D ring, got {slot!r} "
                             f"for a ring of shape {tuple(ring_scales.shape)}")
    named = [("found_inf", found_inf), ("skipped", skipped), ("scale", scale), ("ring_scales", ring_scales),
             ("ring_skipped", ring_skipped)]
    place = chk.place_of(fn, named)
    chk.check_distinct(fn, [("skipped", skipped), ("ring_scales", ring_scales), ("ring_skipped", ring_skipped)])
    (reference if place == "cpu" else launch).record_step_(found_inf, skipped, scale, ring_scales, ring_skipped, slot)

"""The AMP kernels of cupynet: fused inf/NaN check and unscale, loss-scale update, global L2 norm.

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

__all__ = ["non_finite_check_and_unscale_", "update_scale_", "multi_tensor_l2norm", "CHUNK_SIZE", "SUPPORTED_DTYPES"]

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

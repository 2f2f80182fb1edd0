"""NumPy references of the AMP kernels (unscale, scale_update, l2norm, step_state ``.cu``), bit for bit.

These run whenever the arrays are NumPy arrays (the CPU backend), and the tests
compare every kernel against them (on the CPU through the CUDA-on-CPU harness,
on a GPU when there is one). They follow the kernels operation by operation:
values are read as fp32, every operation is one correctly rounded fp32 (or
fp64) operation, results are rounded to the storage dtype to nearest even, and
every NaN is stored as one canonical quiet NaN (``cupynet/cuda/reference.py``
has the twins of ``common.cuh``'s helpers that this is built from).

The functions here assume their arguments were checked by the public API in
``cupynet.amp.kernels``; call those, not these.
"""

from __future__ import annotations

import numpy

from cupynet import dtypes
from cupynet.cuda.multi_tensor import CHUNK_SIZE, group_by_dtype
from cupynet.cuda.reference import block_sum, is_set, load_f32, store_f32, strided_thread_sums

__all__ = ["non_finite_check_and_unscale_", "update_scale_", "multi_tensor_l2norm", "clip_coefficient",
           "clip_by_total_norm_", "begin_unscale_", "record_overflow_", "record_step_"]

_CLIP_EPS = numpy.float32(1e-6)
"""Added to the total norm before dividing (``clip_grad_norm_``'s 1e-6, rounded once to fp32)."""


def non_finite_check_and_unscale_(arrays, found_inf, inv_scale, tensor_stats=None) -> None:
    """Reference of ``non_finite_check_and_unscale_`` (see the public function for the contract).

    NOTE (speed): an array whose values are all finite (the common case) has nothing to count
    and its products can hold no NaN to canonicalise, so after one checking pass it is
    rescaled in place (float32: one multiply): the same fp32 products, rounded the same way,
    as the general path, which counts and rescales every array the check cannot clear.

    Args:
        arrays: contiguous float32 / float16 / bfloat16 arrays, unscaled in place.
        found_inf: float32 one-element array, set to 1.0 when any value is inf or NaN.
        inv_scale: float32 one-element array, the factor to multiply by.
        tensor_stats: optional int32 ``(len(arrays), 2)`` array; ``[inf_count, nan_count]`` added per array.
    """
    inv = inv_scale.reshape(-1)[0]
    rescale = int(inv_scale.reshape(-1).view(numpy.uint32)[0]) != 0x3F800000  # NOTE: bits, like is_one_f32
    saw_non_finite = False
    with numpy.errstate(all="ignore"):
        for i, a in enumerate(arrays):
            flat = a.reshape(-1)
            if _surely_finite(flat):
                if rescale:
                    _rescale_finite(flat, inv)
                continue
            values = load_f32(a)
            n_inf, n_nan = int(numpy.isinf(values).sum()), int(numpy.isnan(values).sum())
            saw_non_finite = saw_non_finite or bool(n_inf + n_nan)
            if tensor_stats is not None:
                tensor_stats[i, 0] += n_inf
                tensor_stats[i, 1] += n_nan
            if rescale:
                flat[...] = store_f32(values * inv, a.dtype)
    if saw_non_finite:
        found_inf[...] = 1.0


def _surely_finite(flat) -> bool:
    """True only when every value is finite (False may also mean "could not tell cheaply": take the exact path).

    NOTE: float32: one BLAS pass, the sum of squares, is inf or NaN whenever a value is (squares
    are >= 0: nothing cancels an inf). A finite value above ~1.8e19 also overflows it; that
    array then goes down the exact path, which finds nothing to count. Halves: ``isfinite``.
    """
    if flat.dtype == dtypes.float32:
        return bool(numpy.isfinite(numpy.dot(flat, flat)))
    return bool(numpy.isfinite(flat).all())


def _rescale_finite(flat, inv) -> None:
    """``flat *= inv`` in place for finite values, rounded as ``store_f32(load_f32(flat) * inv)`` would.

    NOTE: float32 times a finite float32 is one correctly rounded fp32 product (inf on overflow,
    never NaN): in place it is the general path's result. A non-finite ``inv`` can make NaN
    (0 * inf), which must be canonical, and half dtypes round through ``store_f32``.
    """
    if flat.dtype == dtypes.float32 and numpy.isfinite(inv):
        numpy.multiply(flat, inv, out=flat)
    else:
        flat[...] = store_f32(load_f32(flat) * inv, flat.dtype)


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval,
                  hysteresis, hysteresis_tracker, min_scale, max_scale, min_hit) -> None:
    """Reference of ``update_scale_`` (the rule is documented on the public function).

    Args:
        scale: float32 one-element array, updated in place.
        growth_tracker: int32 one-element array, updated in place.
        found_inf: float32 one-element array, read.
        growth_factor: Python float > 1.
        backoff_factor: Python float in (0, 1).
        growth_interval: int >= 1.
        hysteresis: int >= 1.
        hysteresis_tracker: int32 one-element array, updated in place, or None (then hysteresis is 1).
        min_scale: numpy.float32 lower bound (0 when none).
        max_scale: numpy.float32 upper bound (inf when none).
        min_hit: int32 one-element array, set to 1 when the lower bound clamps, or None.
    """
    if hysteresis_tracker is None:
        hysteresis_tracker = numpy.zeros(1, numpy.int32)  # NOTE: as the launcher's scratch: always 0 here
    if min_hit is None:
        min_hit = numpy.zeros(1, numpy.int32)
    s, tracker, hyst = scale.reshape(-1), growth_tracker.reshape(-1), hysteresis_tracker.reshape(-1)
    current = float(s[0])
    if is_set(found_inf):
        count = int(hyst[0]) + 1
        if count >= hysteresis:
            backed_off = numpy.float32(current * backoff_factor)  # NOTE: double product, one rounding
            if backed_off < min_scale:
                backed_off = min_scale
                min_hit[...] = 1
            s[...] = store_f32(numpy.array([backed_off], numpy.float32), dtypes.float32)
            count = 0
        hyst[0] = count
        tracker[0] = 0
        return
    hyst[0] = 0
    successful = int(tracker[0]) + 1
    if successful == growth_interval:
        with numpy.errstate(over="ignore"):
            grown = numpy.float32(current * growth_factor)
        if numpy.isfinite(grown):
            s[0] = max_scale if grown >= max_scale else grown
        tracker[0] = 0
    else:
        tracker[0] = successful


def _chunk_partials(a) -> numpy.ndarray:
    """l2norm_partial_kernel's output for one array: one fp32 sum of squares per chunk."""
    values = load_f32(a)
    squares = values * values
    n_chunks = -(-values.size // CHUNK_SIZE)
    if n_chunks == 0:
        return numpy.zeros(0, numpy.float32)
    width = CHUNK_SIZE if n_chunks > 1 else values.size
    padded = numpy.zeros(n_chunks * width, numpy.float32)
    padded[:values.size] = squares
    return block_sum(strided_thread_sums(padded.reshape(n_chunks, width)))


def multi_tensor_l2norm(arrays) -> numpy.ndarray:
    """Reference of ``multi_tensor_l2norm``: replays the kernels' summation order exactly.

    Args:
        arrays: contiguous float32 / float16 / bfloat16 arrays.
    """
    with numpy.errstate(all="ignore"):
        partials = [
            _chunk_partials(arrays[i])
            for _, indices in group_by_dtype(arrays)
            for i in indices
        ]
        partials = numpy.concatenate(partials) if partials else numpy.zeros(0, numpy.float32)
        total = block_sum(strided_thread_sums(partials.reshape(1, -1)))
        return store_f32(numpy.sqrt(total).astype(numpy.float32).reshape(1), dtypes.float32)


def clip_coefficient(total_norm, max_norm) -> numpy.float32:
    """``min(max_norm / (total_norm + 1e-6), 1)`` in fp32: the factor ``clip_grad_norm_`` scales gradients by.

    NaN propagates (a NaN norm makes every gradient NaN, as in PyTorch); an inf norm gives 0.

    Args:
        total_norm: float32 one-element array.
        max_norm: numpy.float32, or a float32 one-element array.
    """
    limit = numpy.float32(numpy.asarray(max_norm).reshape(-1)[0])
    with numpy.errstate(all="ignore"):
        ratio = limit / (numpy.float32(total_norm.reshape(-1)[0]) + _CLIP_EPS)
    return ratio if numpy.isnan(ratio) or ratio < 1 else numpy.float32(1.0)


def clip_by_total_norm_(arrays, total_norm, max_norm) -> None:
    """Reference of ``clip_by_total_norm_``: every array times the clip coefficient rounded to its dtype.

    Args:
        arrays: contiguous float32 / float16 / bfloat16 arrays, scaled in place.
        total_norm: float32 one-element array (``multi_tensor_l2norm`` of the arrays).
        max_norm: numpy.float32, or a float32 one-element array.
    """
    coef = clip_coefficient(total_norm, max_norm)
    with numpy.errstate(all="ignore"):
        for a in arrays:
            factor = load_f32(store_f32(numpy.array([coef], numpy.float32), a.dtype))[0]
            flat = a.reshape(-1)
            flat[...] = store_f32(load_f32(flat) * factor, a.dtype)


def begin_unscale_(scale, inv_scale, found_inf, tensor_stats=None) -> None:
    """Reference of ``begin_unscale_``: ``inv_scale = fp32(1 / float64(scale))``, ``found_inf = 0``, stats zeroed.

    Args:
        scale: float32 one-element array.
        inv_scale: float32 one-element array, written.
        found_inf: float32 one-element array, written.
        tensor_stats: int32 array zeroed, or None.
    """
    with numpy.errstate(all="ignore"):
        inverse = (1.0 / scale.reshape(-1).astype(numpy.float64)).astype(numpy.float32)
    inv_scale[...] = store_f32(inverse, dtypes.float32).reshape(inv_scale.shape)
    found_inf[...] = 0.0
    if tensor_stats is not None:
        tensor_stats[...] = 0


def record_overflow_(found_inf, tensor_stats, record_stats, record_step, step, record_hits=None) -> None:
    """Reference of ``record_overflow_``: when found_inf is set, copy the stats, count the hit rows, stamp the step.

    The rule for ``record_hits`` (stated here only): when found_inf is set, ``record_hits[i]`` grows by 1
    for every row ``i`` of ``tensor_stats`` that is not ``[0, 0]``; otherwise nothing changes.

    NOTE: the add wraps modulo 2**32 (NumPy's int32 add; the kernel adds as unsigned): a count reaches
    2**31 only after 2**31 calls, but even then both sides give the same bits.

    Args:
        found_inf: float32 one-element array.
        tensor_stats: int32 array (``(n, 2)`` when record_hits is given).
        record_stats: int32 array of the same shape, written when found_inf is set.
        record_step: int32 one-element array, written when found_inf is set.
        step: the step number.
        record_hits: int32 ``(n,)`` array, incremented as above, or None.
    """
    if not is_set(found_inf):
        return
    record_stats[...] = tensor_stats
    if record_hits is not None:
        hit_rows = (tensor_stats.reshape(-1, 2) != 0).any(axis=1).astype(numpy.int32)
        numpy.add(record_hits, hit_rows, out=record_hits)
    record_step[...] = step


def record_step_(found_inf, skipped, scale, ring_scales, ring_skipped, slot) -> None:
    """Reference of ``record_step_``: count a skipped step and write the history ring's slot.

    Args:
        found_inf: float32 one-element array, or None (nothing was checked: not a skip).
        skipped: int32 one-element array, incremented when found_inf is set.
        scale: float32 one-element array.
        ring_scales: float32 array, or None (no ring).
        ring_skipped: int32 array, or None.
        slot: the ring slot.
    """
    hit = int(found_inf is not None and is_set(found_inf))
    skipped[...] += hit
    if ring_scales is not None:
        ring_scales[slot] = scale.reshape(-1)[0]
        ring_skipped[slot] = hit

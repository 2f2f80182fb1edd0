"""NumPy references of the AMP kernels: the same results as the CUDA kernels, bit for bit.

These run whenever the arrays are NumPy arrays (the CPU backend), and the GPU
tests compare every kernel against them. They follow the kernels operation by
operation: values are read as fp32, every operation is one correctly rounded
fp32 (or fp64) operation, results are rounded to the storage dtype to nearest
even, and every NaN is stored as one canonical quiet NaN (see ``common.cuh``).

The functions here assume their arguments were checked by the public API in
``cupynet.amp.kernels``; call those, not these.
"""

from __future__ import annotations

import numpy

from cupynet import dtypes
from cupynet.amp.kernels._checks import group_by_dtype
from cupynet.amp.kernels.sources import BLOCK_THREADS, CHUNK_SIZE

__all__ = [
    "load_f32", "store_f32", "is_set", "non_finite_check_and_unscale_", "update_scale_",
    "multi_tensor_l2norm", "CANONICAL_NAN_BITS",
]

CANONICAL_NAN_BITS = {dtypes.float32: 0x7FC00000, dtypes.float16: 0x7E00, dtypes.bfloat16: 0x7FC0}
"""The one NaN bit pattern every kernel stores, per storage dtype."""

_UINT_OF_SIZE = {2: numpy.uint16, 4: numpy.uint32}


def load_f32(a) -> numpy.ndarray:
    """A flat fp32 copy of ``a`` (exact for float32, float16 and bfloat16).

    Args:
        a: a contiguous float32 / float16 / bfloat16 NumPy array.
    """
    flat = a.reshape(-1)
    if a.dtype == dtypes.bfloat16:
        # NOTE: bf16 is the top half of an fp32: widening is a 16-bit shift
        return (flat.view(numpy.uint16).astype(numpy.uint32) << 16).view(numpy.float32)
    return flat.astype(numpy.float32)


def _round_to_bfloat16(values: numpy.ndarray) -> numpy.ndarray:
    bits = values.view(numpy.uint32)
    # NOTE: round to nearest even on the bit pattern, as Element<__nv_bfloat16>::store does
    rounded = (bits + numpy.uint32(0x7FFF) + ((bits >> 16) & numpy.uint32(1))) >> 16
    return rounded.astype(numpy.uint16).view(dtypes.bfloat16)


def store_f32(values: numpy.ndarray, dtype) -> numpy.ndarray:
    """Round fp32 values to ``dtype`` (nearest even) with canonical NaNs: what the kernels store.

    Args:
        values: a flat float32 array.
        dtype: float32, float16 or bfloat16.
    """
    if dtype == dtypes.bfloat16:
        out = _round_to_bfloat16(values)
    else:
        out = values.astype(dtype)  # NOTE: IEEE round to nearest even, as cvt.rn.f16.f32
    nan = numpy.isnan(values)
    if nan.any():
        out.view(_UINT_OF_SIZE[out.dtype.itemsize])[nan] = CANONICAL_NAN_BITS[out.dtype]
    return out


def is_set(flag) -> bool:
    """Whether an fp32 flag such as found_inf is non-zero, judged on its bits as the kernels do.

    Args:
        flag: a one-element float32 array (host memory).
    """
    return (int(flag.reshape(-1).view(numpy.uint32)[0]) & 0x7FFFFFFF) != 0


def non_finite_check_and_unscale_(arrays, found_inf, inv_scale, tensor_stats=None) -> None:
    """Reference of ``non_finite_check_and_unscale_`` (see the public function for the contract).

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
            values = load_f32(a)
            n_inf, n_nan = int(numpy.isinf(values).sum()), int(numpy.isnan(values).sum())
            saw_non_finite = saw_non_finite or bool(n_inf + n_nan)
            if tensor_stats is not None:
                tensor_stats[i, 0] += n_inf
                tensor_stats[i, 1] += n_nan
            if rescale:
                a.reshape(-1)[...] = store_f32(values * inv, a.dtype)
    if saw_non_finite:
        found_inf[...] = 1.0


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


def _warp_tree_sum(lanes: numpy.ndarray) -> numpy.ndarray:
    """Lane 0 of warp_sum_f32 over the last axis (32 lanes): offsets 16, 8, 4, 2, 1."""
    offset = 16
    while offset:
        lanes = lanes[..., :offset] + lanes[..., offset:2 * offset]
        offset //= 2
    return lanes[..., 0]


def _block_sum(per_thread: numpy.ndarray) -> numpy.ndarray:
    """block_sum_f32 over the last axis (BLOCK_THREADS threads), replaying its order."""
    n_warps = per_thread.shape[-1] // 32
    warp_sums = _warp_tree_sum(per_thread.reshape(*per_thread.shape[:-1], n_warps, 32))
    padded = numpy.zeros((*per_thread.shape[:-1], 32), numpy.float32)
    padded[..., :n_warps] = warp_sums
    return _warp_tree_sum(padded)


def _strided_thread_sums(values: numpy.ndarray) -> numpy.ndarray:
    """Per-thread sums of a block's loop ``for i = t; i < n; i += BLOCK_THREADS: acc += values[i]``.

    ``values`` has shape ``(blocks, n)``; the result has shape ``(blocks, BLOCK_THREADS)``.
    NOTE: padding with +0.0 changes nothing (x + 0 == x for the non-negative sums
    here), and cumsum adds strictly in order, like the thread's loop.
    """
    blocks, n = values.shape
    rounds = max(1, -(-n // BLOCK_THREADS))
    padded = numpy.zeros((blocks, rounds * BLOCK_THREADS), numpy.float32)
    padded[:, :n] = values
    return numpy.cumsum(padded.reshape(blocks, rounds, BLOCK_THREADS), axis=1, dtype=numpy.float32)[:, -1, :]


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
    return _block_sum(_strided_thread_sums(padded.reshape(n_chunks, width)))


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
        total = _block_sum(_strided_thread_sums(partials.reshape(1, -1)))
        return store_f32(numpy.sqrt(total).astype(numpy.float32).reshape(1), dtypes.float32)

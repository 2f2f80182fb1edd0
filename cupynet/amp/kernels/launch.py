"""CuPy launchers of the AMP kernels: one launch per dtype group, no host sync.

Only ``cupynet.amp.kernels`` calls these, after checking the arguments; every
argument that is an array here is a CuPy array on one device. Nothing here
reads a device value on the host (no ``.get()``, ``.item()``, ``float()`` or
``bool()`` of a device array), so no launcher ever waits for the GPU.
"""

from __future__ import annotations

import pathlib

import numpy

from cupynet.cuda import device
from cupynet.cuda.args import c_double, c_float, c_int
from cupynet.cuda.compile import KernelLibrary, per_dtype
from cupynet.cuda.multi_tensor import BLOCK_THREADS, CHUNK_SIZE, launch_chunked, pointers

__all__ = ["KERNELS", "non_finite_check_and_unscale_", "update_scale_", "multi_tensor_l2norm", "clip_by_total_norm_",
           "begin_unscale_", "record_overflow_", "record_step_"]

KERNELS = KernelLibrary(pathlib.Path(__file__).parent, {
    "unscale.cu": per_dtype("non_finite_check_and_unscale_kernel"),
    "scale_update.cu": ("update_scale_kernel",),
    "l2norm.cu": per_dtype("l2norm_partial_kernel") + ("l2norm_finalize_kernel",),
    "step_state.cu": per_dtype("clip_by_total_norm_kernel") + ("begin_unscale_kernel", "record_overflow_kernel",
                                                               "record_step_kernel"),
})
"""The ``.cu`` files of this package and every kernel the launchers fetch from them."""


def non_finite_check_and_unscale_(groups, arrays, found_inf, inv_scale, tensor_stats) -> None:
    """Launch ``non_finite_check_and_unscale_kernel`` once per dtype group.

    Args:
        groups: ``[(dtype, indices)]`` from ``multi_tensor.group_by_dtype(arrays)``.
        arrays: the CuPy arrays to check and unscale in place.
        found_inf: float32 one-element device array.
        inv_scale: float32 one-element device array.
        tensor_stats: int32 ``(len(arrays), 2)`` device array, or None.
    """
    with device.cupy().cuda.Device(found_inf.device.id):
        for dtype, indices in groups:
            data = pointers(arrays, indices)
            # NOTE: row i of tensor_stats is 2 int32 = 8 bytes after row i - 1
            rows = [0 if tensor_stats is None else tensor_stats.data.ptr + 8 * i for i in indices]
            launch_chunked(KERNELS, "unscale.cu", "non_finite_check_and_unscale_kernel", dtype, [data, rows],
                           [arrays[i].size for i in indices], found_inf, inv_scale, c_int(tensor_stats is not None))


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval,
                  hysteresis, hysteresis_tracker, min_scale, max_scale, min_hit) -> None:
    """Launch ``update_scale_kernel`` (one thread).

    Args:
        scale: float32 one-element device array.
        growth_tracker: int32 one-element device array.
        found_inf: float32 one-element device array.
        growth_factor: Python float.
        backoff_factor: Python float.
        growth_interval: int.
        hysteresis: int.
        hysteresis_tracker: int32 one-element device array, or None (then hysteresis is 1).
        min_scale: numpy.float32 lower bound (0 when none).
        max_scale: numpy.float32 upper bound (inf when none).
        min_hit: int32 one-element device array, or None.
    """
    with device.cupy().cuda.Device(scale.device.id):
        # NOTE: with hysteresis 1 the kernel writes only 0 into the hysteresis scratch
        hyst = device.scratch("hysteresis") if hysteresis_tracker is None else hysteresis_tracker
        hit = device.scratch("min_hit") if min_hit is None else min_hit
        KERNELS.get_kernel("scale_update.cu", "update_scale_kernel")(
            (1,), (1,), (scale, growth_tracker, found_inf, c_double(growth_factor), c_double(backoff_factor),
                         c_int(growth_interval), c_int(hysteresis), hyst, c_float(min_scale), c_float(max_scale),
                         hit))


def multi_tensor_l2norm(device_id, groups, arrays):
    """Launch the partial-sum kernel per dtype group, then the one-block finalize kernel.

    Args:
        device_id: the CUDA device of the arrays.
        groups: ``[(dtype, indices)]`` of the arrays.
        arrays: float32 / float16 / bfloat16 device arrays.

    Returns:
        A float32 device array of shape (1,).
    """
    cupy = device.cupy()
    with cupy.cuda.Device(device_id):
        total_chunks = sum(-(-a.size // CHUNK_SIZE) for a in arrays)
        partials = cupy.empty((max(total_chunks, 1),), dtype=numpy.float32)
        offset = 0
        for dtype, idx in groups:
            offset += launch_chunked(KERNELS, "l2norm.cu", "l2norm_partial_kernel", dtype, [pointers(arrays, idx)],
                                     [arrays[i].size for i in idx], partials[offset:])
        out = cupy.empty((1,), dtype=numpy.float32)
        KERNELS.get_kernel("l2norm.cu", "l2norm_finalize_kernel")(
            (1,), (BLOCK_THREADS,), (partials, c_int(total_chunks), out))
        return out


def clip_by_total_norm_(groups, arrays, total_norm, max_norm) -> None:
    """Launch ``clip_by_total_norm_kernel`` once per dtype group.

    Args:
        groups: ``[(dtype, indices)]`` of the arrays.
        arrays: the CuPy arrays to scale in place.
        total_norm: float32 one-element device array.
        max_norm: numpy.float32 (host value) or a float32 one-element device array.
    """
    on_device = not isinstance(max_norm, numpy.floating)
    with device.cupy().cuda.Device(total_norm.device.id):
        for dtype, indices in groups:
            launch_chunked(KERNELS, "step_state.cu", "clip_by_total_norm_kernel", dtype, [pointers(arrays, indices)],
                           [arrays[i].size for i in indices], total_norm, max_norm if on_device else total_norm,
                           c_float(0.0 if on_device else max_norm), c_int(on_device))


def begin_unscale_(scale, inv_scale, found_inf, tensor_stats) -> None:
    """Launch ``begin_unscale_kernel`` (one block).

    Args:
        scale: float32 one-element device array.
        inv_scale: float32 one-element device array, written.
        found_inf: float32 one-element device array, zeroed.
        tensor_stats: int32 device array zeroed, or None.
    """
    with device.cupy().cuda.Device(scale.device.id):
        stats = device.scratch("tensor_stats") if tensor_stats is None else tensor_stats
        KERNELS.get_kernel("step_state.cu", "begin_unscale_kernel")(
            (1,), (BLOCK_THREADS,),
            (scale, inv_scale, found_inf, stats, c_int(0 if tensor_stats is None else stats.size)))


def record_overflow_(found_inf, tensor_stats, record_stats, record_step, step, record_hits=None) -> None:
    """Launch ``record_overflow_kernel`` (one block).

    Args:
        found_inf: float32 one-element device array.
        tensor_stats: int32 device array, read (``(n, 2)`` when record_hits is given).
        record_stats: int32 device array of the same size, written when found_inf is set.
        record_step: int32 one-element device array, written when found_inf is set.
        step: the step number (a Python int).
        record_hits: int32 ``(n,)`` device array, incremented per non-zero stats row when found_inf is set, or
            None.
    """
    with device.cupy().cuda.Device(found_inf.device.id):
        # NOTE: without record_hits, n_hits = 0 and the kernel never touches the pointer it gets in its place
        hits, n_hits = (record_step, 0) if record_hits is None else (record_hits, record_hits.size)
        KERNELS.get_kernel("step_state.cu", "record_overflow_kernel")(
            (1,), (BLOCK_THREADS,), (found_inf, tensor_stats, record_stats, record_step, hits,
                                     c_int(tensor_stats.size), c_int(n_hits), c_int(step)))


def record_step_(found_inf, skipped, scale, ring_scales, ring_skipped, slot) -> None:
    """Launch ``record_step_kernel`` (one thread).

    Args:
        found_inf: float32 one-element device array, or None (nothing was checked: not a skip).
        skipped: int32 one-element device array, incremented when found_inf is set.
        scale: float32 one-element device array.
        ring_scales: float32 device array, or None (no history ring).
        ring_skipped: int32 device array, or None.
        slot: the ring slot to write (ignored without a ring).
    """
    with device.cupy().cuda.Device(scale.device.id):
        ring = ring_scales is not None
        KERNELS.get_kernel("step_state.cu", "record_step_kernel")(
            (1,), (1,),
            (scale if found_inf is None else found_inf, c_int(found_inf is not None), skipped, scale,
             ring_scales if ring else scale, ring_skipped if ring else skipped, c_int(slot if ring else -1)))

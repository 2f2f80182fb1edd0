"""CuPy launchers of the AMP kernels: lazy compilation, chunk tables, one launch per dtype group.

Only ``cupynet.amp.kernels`` calls these, after checking the arguments; every
argument that is an array here is a CuPy array on one device. Nothing here
reads a device value on the host: no ``.get()``, ``.item()``, ``float()`` or
``bool()`` of a device array, so no launcher ever waits for the GPU.

NOTE: scalar kernel arguments are passed as ``numpy.int32`` / ``numpy.float32``
/ ``numpy.float64`` explicitly: CuPy turns a Python int into a 64-bit ``long
long`` and a Python float into a ``double``, which would not match the
kernel's parameter types.
"""

from __future__ import annotations

import threading

import numpy

from cupynet.amp.kernels._tables import TableCache, build_host_table, table_key
from cupynet.amp.kernels.sources import (
    BLOCK_THREADS,
    CHUNK_SIZE,
    NAME_EXPRESSIONS,
    NVRTC_OPTIONS,
    kernel_name,
    kernel_source,
)
from cupynet.backend import cupy_or_none

__all__ = [
    "TABLE_CACHE", "get_kernel", "non_finite_check_and_unscale_", "update_scale_", "fused_sgd_",
    "fused_adam_", "multi_tensor_l2norm",
]

i32, f32, f64 = numpy.int32, numpy.float32, numpy.float64

TABLE_CACHE = TableCache(capacity=64)
"""Device chunk tables keyed on (pointer, size, dtype) of every array; tests read its hits/misses."""

_modules: dict = {}
_kernels: dict = {}
_constants: dict = {}
_lock = threading.Lock()


def _cupy():
    cupy = cupy_or_none()
    if cupy is None:  # NOTE: unreachable through the public API, which only sends CuPy arrays here
        raise RuntimeError("cupynet.amp.kernels.launch: CuPy with a usable CUDA device is required")
    return cupy


def _module(filename: str):
    """The compiled ``cupy.RawModule`` of one ``.cu`` file (compiled on first use, then cached)."""
    with _lock:
        if filename not in _modules:
            _modules[filename] = _cupy().RawModule(
                code=kernel_source(filename), options=NVRTC_OPTIONS,
                name_expressions=list(NAME_EXPRESSIONS[filename]),
            )
        return _modules[filename]


def get_kernel(filename: str, kernel: str, dtype=None):
    """The kernel function for the current device, by its name expression (cached).

    Args:
        filename: the ``.cu`` file, e.g. ``"sgd.cu"``.
        kernel: the kernel's name, e.g. ``"fused_sgd_kernel"``.
        dtype: the element dtype of a templated kernel, or None.
    """
    name = kernel_name(kernel, dtype)
    key = (_cupy().cuda.runtime.getDevice(), filename, name)
    function = _kernels.get(key)
    if function is None:
        function = _module(filename).get_function(name)
        _kernels[key] = function
    return function


def _constant(dtype, value):
    """A one-element device array the kernels only read (per device; made by a fill kernel, no upload)."""
    cupy = _cupy()
    key = (cupy.cuda.runtime.getDevice(), numpy.dtype(dtype), value)
    with _lock:
        if key not in _constants:
            _constants[key] = cupy.full((1,), value, dtype=dtype)
        return _constants[key]


def _scratch(purpose: str):
    """A zeroed one-element int32 device array a kernel may write, standing in for an absent output.

    NOTE: update_scale_kernel writes only 0 into the hysteresis scratch (hysteresis
    is 1 whenever the caller has no tracker), so sharing it between calls is safe.
    """
    cupy = _cupy()
    key = (cupy.cuda.runtime.getDevice(), "scratch", purpose)
    with _lock:
        if key not in _constants:
            _constants[key] = cupy.zeros((1,), dtype=numpy.int32)
        return _constants[key]


def _pointers(arrays, indices) -> list:
    """Device pointers of ``arrays[i]`` for i in ``indices``; null pointers for an absent list."""
    return [0] * len(indices) if arrays is None else [arrays[i].data.ptr for i in indices]


def _device_table(pointer_lists, sizes, dtype):
    """The device chunk table of these tensors, from the cache when it was built before."""
    cupy = _cupy()
    key = table_key(cupy.cuda.runtime.getDevice(), pointer_lists, sizes, [dtype] * len(sizes))

    def build():
        host, n_chunks = build_host_table(pointer_lists, sizes)
        return cupy.asarray(host), n_chunks  # NOTE: the only host->device copy, once per key

    return TABLE_CACHE.get(key, build)


def _launch_chunked(filename, kernel, dtype, pointer_lists, sizes, *args) -> int:
    """Launch a multi-tensor kernel, one block per chunk; no launch when there is no element."""
    table, n_chunks = _device_table(pointer_lists, sizes, dtype)
    if n_chunks:
        get_kernel(filename, kernel, dtype)((n_chunks,), (BLOCK_THREADS,), (table, i32(len(sizes)), *args))
    return n_chunks


def _single_thread(kernel: str, *args) -> None:
    get_kernel("scale_update.cu", kernel)((1,), (1,), args)


def _device(device_id: int):
    return _cupy().cuda.Device(device_id)


def non_finite_check_and_unscale_(groups, arrays, found_inf, inv_scale, tensor_stats) -> None:
    """Launch ``non_finite_check_and_unscale_kernel`` once per dtype group.

    Args:
        groups: ``[(dtype, indices)]`` from ``_checks.group_by_dtype(arrays)``.
        arrays: the CuPy arrays to check and unscale in place.
        found_inf: float32 one-element device array.
        inv_scale: float32 one-element device array.
        tensor_stats: int32 ``(len(arrays), 2)`` device array, or None.
    """
    with _device(found_inf.device.id):
        for dtype, indices in groups:
            data = _pointers(arrays, indices)
            # NOTE: row i of tensor_stats is 2 int32 = 8 bytes after row i - 1
            rows = [0 if tensor_stats is None else tensor_stats.data.ptr + 8 * i for i in indices]
            _launch_chunked("unscale.cu", "non_finite_check_and_unscale_kernel", dtype, [data, rows],
                            [arrays[i].size for i in indices], found_inf, inv_scale, i32(tensor_stats is not None))


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
    with _device(scale.device.id):
        hyst = _scratch("hysteresis") if hysteresis_tracker is None else hysteresis_tracker
        hit = _scratch("min_hit") if min_hit is None else min_hit
        _single_thread("update_scale_kernel", scale, growth_tracker, found_inf, f64(growth_factor),
                       f64(backoff_factor), i32(growth_interval), i32(hysteresis), hyst, f32(min_scale),
                       f32(max_scale), hit)


def _flags(found_inf, inv_scale):
    found = _constant(numpy.float32, 0.0) if found_inf is None else found_inf
    inv = _constant(numpy.float32, 1.0) if inv_scale is None else inv_scale
    return found, inv, i32(inv_scale is not None)


def fused_sgd_(device_id, groups, params, grads, momentum_bufs, c, first_step, found_inf, inv_scale) -> None:
    """Launch ``fused_sgd_kernel`` once per grad dtype group (then clear a device first-step flag).

    Args:
        device_id: the CUDA device of the arrays.
        groups: ``[(dtype, indices)]`` of the grads.
        params: float32 device arrays.
        grads: float32 / float16 / bfloat16 device arrays.
        momentum_bufs: float32 device arrays, or None when momentum is 0.
        c: an ``SgdCoefficients``.
        first_step: a Python bool, or an int32 one-element device flag.
        found_inf: float32 one-element device array, or None.
        inv_scale: float32 one-element device array, or None.
    """
    with _device(device_id):
        found, inv, use_inv = _flags(found_inf, inv_scale)
        host_flag = isinstance(first_step, bool)
        flag = _constant(numpy.int32, int(first_step)) if host_flag else first_step
        bufs = momentum_bufs if c.use_momentum else None
        for dtype, idx in groups:
            lists = [_pointers(params, idx), _pointers(grads, idx), _pointers(bufs, idx)]
            _launch_chunked("sgd.cu", "fused_sgd_kernel", dtype, lists, [params[i].size for i in idx],
                            found, inv, use_inv, c.neg_lr, c.momentum, c.one_minus_dampening, c.weight_decay,
                            i32(c.use_weight_decay), i32(c.use_momentum), i32(c.nesterov), i32(c.maximize), flag)
        if not host_flag:
            _single_thread("clear_flag_kernel", first_step, found)


def fused_adam_(device_id, groups, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, c,
                found_inf, inv_scale) -> None:
    """Launch ``fused_adam_kernel`` once per grad dtype group, then ``increment_step_kernel``.

    Args:
        device_id: the CUDA device of the arrays.
        groups: ``[(dtype, indices)]`` of the grads.
        params: float32 device arrays.
        grads: float32 / float16 / bfloat16 device arrays.
        exp_avgs: float32 device arrays.
        exp_avg_sqs: float32 device arrays.
        max_exp_avg_sqs: float32 device arrays, or None unless amsgrad.
        step: float32 one-element device array (steps already taken).
        c: an ``AdamCoefficients``.
        found_inf: float32 one-element device array, or None.
        inv_scale: float32 one-element device array, or None.
    """
    with _device(device_id):
        found, inv, use_inv = _flags(found_inf, inv_scale)
        vmax = max_exp_avg_sqs if c.amsgrad else None
        for dtype, idx in groups:
            lists = [_pointers(arrays, idx) for arrays in (params, grads, exp_avgs, exp_avg_sqs, vmax)]
            _launch_chunked("adam.cu", "fused_adam_kernel", dtype, lists, [params[i].size for i in idx],
                            step, found, inv, use_inv, f64(c.lr), f64(c.beta1), f64(c.beta2), c.lerp_weight,
                            c.one_minus_lerp_weight, i32(c.lerp_weight_is_small), c.beta2_f32, c.one_minus_beta2,
                            c.eps, c.weight_decay, c.decay_factor, i32(c.use_weight_decay), i32(c.decoupled),
                            i32(c.amsgrad), i32(c.maximize))
        # NOTE: after every group has read the old step (same stream, so in order)
        _single_thread("increment_step_kernel", step, found)


def multi_tensor_l2norm(device_id, groups, arrays):
    """Launch the partial-sum kernel per dtype group, then the one-block finalize kernel.

    Args:
        device_id: the CUDA device of the arrays.
        groups: ``[(dtype, indices)]`` of the arrays.
        arrays: float32 / float16 / bfloat16 device arrays.

    Returns:
        A float32 device array of shape (1,).
    """
    cupy = _cupy()
    with _device(device_id):
        total_chunks = sum(-(-a.size // CHUNK_SIZE) for a in arrays)
        partials = cupy.empty((max(total_chunks, 1),), dtype=numpy.float32)
        offset = 0
        for dtype, idx in groups:
            offset += _launch_chunked("l2norm.cu", "l2norm_partial_kernel", dtype,
                                      [_pointers(arrays, idx)], [arrays[i].size for i in idx],
                                      partials[offset:])
        out = cupy.empty((1,), dtype=numpy.float32)
        get_kernel("l2norm.cu", "l2norm_finalize_kernel")((1,), (BLOCK_THREADS,), (partials, i32(total_chunks), out))
        return out

"""NumPy twins of the helpers in ``common.cuh``: element access and the fixed-order block sum.

The bit-exact references (``amp/kernels/reference.py``, ``optim/kernels/reference.py``)
are built from these: values are read as fp32, results are rounded to nearest
even into the storage dtype, every NaN is stored as one canonical quiet NaN, and
a block sum adds in exactly the order the kernel's threads do.
"""

from __future__ import annotations

import numpy

from cupynet import dtypes
from cupynet.cuda.multi_tensor import BLOCK_THREADS

__all__ = ["CANONICAL_NAN_BITS", "load_f32", "store_f32", "is_set", "strided_thread_sums", "block_sum"]

CANONICAL_NAN_BITS = {dtypes.float32: 0x7FC00000, dtypes.float16: 0x7E00, dtypes.bfloat16: 0x7FC0}
"""The one NaN bit pattern ``store_f32`` writes, per storage dtype."""

_UINT_OF_SIZE = {2: numpy.uint16, 4: numpy.uint32}


def load_f32(a) -> numpy.ndarray:
    """A flat fp32 copy of ``a`` (exact for float32, float16 and bfloat16): ``load_f32`` of common.cuh.

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
    # NOTE: round to nearest even on the bit pattern, as store_f32(__nv_bfloat16*, float) does
    rounded = (bits + numpy.uint32(0x7FFF) + ((bits >> 16) & numpy.uint32(1))) >> 16
    return rounded.astype(numpy.uint16).view(dtypes.bfloat16)


def store_f32(values: numpy.ndarray, dtype) -> numpy.ndarray:
    """Round fp32 values to ``dtype`` (nearest even) with canonical NaNs: ``store_f32`` of common.cuh.

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
    """Whether an fp32 flag such as found_inf is non-zero, judged on its bits as ``is_nonzero_f32`` does.

    Args:
        flag: a one-element float32 array (host memory).
    """
    return (int(flag.reshape(-1).view(numpy.uint32)[0]) & 0x7FFFFFFF) != 0


def _warp_tree_sum(lanes: numpy.ndarray) -> numpy.ndarray:
    """Lane 0 of ``warp_reduce<ExactSum>`` over the last axis (32 lanes): partners 16, 8, 4, 2, 1 away."""
    offset = 16
    while offset:
        lanes = lanes[..., :offset] + lanes[..., offset:2 * offset]
        offset //= 2
    return lanes[..., 0]


def block_sum(per_thread: numpy.ndarray) -> numpy.ndarray:
    """``block_reduce<ExactSum>`` over the last axis (BLOCK_THREADS threads), replaying its order.

    Args:
        per_thread: float32 array of shape ``(..., BLOCK_THREADS)``: each thread's value.
    """
    n_warps = per_thread.shape[-1] // 32
    warp_sums = _warp_tree_sum(per_thread.reshape(*per_thread.shape[:-1], n_warps, 32))
    padded = numpy.zeros((*per_thread.shape[:-1], 32), numpy.float32)
    padded[..., :n_warps] = warp_sums
    return _warp_tree_sum(padded)


def strided_thread_sums(values: numpy.ndarray) -> numpy.ndarray:
    """Per-thread sums of a block's loop ``for i = t; i < n; i += BLOCK_THREADS: acc += values[i]``.

    NOTE: padding with +0.0 changes nothing (x + 0 == x for the non-negative sums
    cupynet takes this way), and cumsum adds strictly in order, like the thread's loop.

    Args:
        values: float32 array of shape ``(blocks, n)``.

    Returns:
        float32 array of shape ``(blocks, BLOCK_THREADS)``.
    """
    blocks, n = values.shape
    rounds = max(1, -(-n // BLOCK_THREADS))
    padded = numpy.zeros((blocks, rounds * BLOCK_THREADS), numpy.float32)
    padded[:, :n] = values
    return numpy.cumsum(padded.reshape(blocks, rounds, BLOCK_THREADS), axis=1, dtype=numpy.float32)[:, -1, :]

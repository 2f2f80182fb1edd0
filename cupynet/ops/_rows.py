"""Reductions along the last axis of many short rows (softmax, layer norm, cross-entropy), fast on NumPy.

NumPy's reductions along a short last axis pay their loop set-up once per row: for 2048 rows of 64
float32 values, ``max(axis=-1)`` takes 105 us and ``sum(axis=-1)`` 69 us, while the arithmetic is a few
microseconds. Small nets are made of such rows (attention scores, 64-wide activations), so on NumPy:

- ``row_max`` finds each row's ``argmax`` (one vectorised pass) and gathers those values: the same
  values as ``max`` (NaN is the largest, as in ``max``); 2-4x faster up to ``ARGMAX_ROW_WIDTH``, not beyond;
- ``row_sum`` and ``row_mean`` are one GEMV with a vector of ones, 3-7x faster;
- ``leading_sum`` sums down the leading axes (a bias's gradient, a broadcast's ``sum_to``) as one GEMV too:
  2.2x faster for (512, 64), 20x for (100000, 16), where NumPy adds the rows one after another.

Figures: ``benchmarks/bench_row_reductions.py`` (131072 float32 values, one thread, NumPy 2.4 capped at AVX2).

NOTE (numerics): ``row_max`` is exact. ``row_sum`` adds in BLAS's vectorised order instead of NumPy's
pairwise order, so the last bit of a sum can differ. On float32 rows of uniform [0, 1) values the same
benchmark measures OpenBLAS's sums within 1.8e-7 relative of the exact sum up to width 1024 (NumPy's
pairwise sums: 1.2e-7; unit roundoff 6e-8); the GEMV drifts to 3.3e-7 at width 4096, so rows wider than
``GEMV_ROW_WIDTH`` keep NumPy's reduction. Every order stays within the bound ``tests/test_rows.py`` asserts,
``(n - 1) u sum |x|``. ``leading_sum`` has no width limit: NumPy's own sum down the rows adds them in
sequence (error growing with the row count), and BLAS's blocked GEMV was the more accurate of the two at
every shape measured (9.0e-7 against 3.3e-7 relative for (512, 256); 1.1e-5 against 3.0e-6 for (100000, 16)).
CuPy arrays, and arrays that are not C-contiguous fp32/fp64, take the plain reduction.
"""

from __future__ import annotations

import math

import numpy

__all__ = ["row_max", "row_sum", "row_mean", "leading_sum", "ARGMAX_ROW_WIDTH", "GEMV_ROW_WIDTH", "GEMV_MIN_ROWS"]

ARGMAX_ROW_WIDTH = 256
GEMV_ROW_WIDTH = 1024
GEMV_MIN_ROWS = 128  # NOTE: ``leading_sum`` of fewer rows: NumPy's sum costs no more than the GEMV's set-up


def _numpy_rows(a) -> bool:
    """True for a C-contiguous, non-empty fp32/fp64 NumPy array with at least one axis."""
    return (type(a) is numpy.ndarray and a.ndim > 0 and a.size > 0 and a.dtype.kind == "f"
            and a.dtype.itemsize >= 4 and a.flags.c_contiguous)


def _gemv_rows(a) -> bool:
    """True when ``row_sum``/``row_mean`` take the GEMV: NumPy rows (above) at most ``GEMV_ROW_WIDTH`` wide."""
    return _numpy_rows(a) and a.shape[-1] <= GEMV_ROW_WIDTH


def row_max(a):
    """The maximum of each row along the last axis, keeping that axis (length 1); NaN if a row holds NaN.

    Args:
        a: a NumPy or CuPy array.
    """
    if not (_numpy_rows(a) and a.shape[-1] <= ARGMAX_ROW_WIDTH):
        return a.max(axis=-1, keepdims=True)
    width = a.shape[-1]
    where = a.reshape(-1, width).argmax(axis=1)
    where += numpy.arange(0, a.size, width)  # NOTE: flat positions: row start + the row's argmax
    return a.reshape(-1).take(where).reshape(a.shape[:-1] + (1,))


def row_sum(a):
    """The sum of each row along the last axis, keeping that axis (length 1).

    Args:
        a: a NumPy or CuPy array.
    """
    if not _gemv_rows(a):
        return a.sum(axis=-1, keepdims=True)
    width = a.shape[-1]
    return (a.reshape(-1, width) @ numpy.ones(width, dtype=a.dtype)).reshape(a.shape[:-1] + (1,))


def row_mean(a):
    """The mean of each row along the last axis, keeping that axis (length 1): the sum divided by the width.

    Args:
        a: a NumPy or CuPy array.
    """
    if not _gemv_rows(a):
        return a.mean(axis=-1, keepdims=True)
    total = row_sum(a)
    total /= a.shape[-1]  # NOTE: divided, not multiplied by 1/width: as NumPy's mean rounds
    return total


def leading_sum(a, lead):
    """The sum over the first ``lead`` axes of ``a``: an array of shape ``a.shape[lead:]``.

    Args:
        a: a NumPy or CuPy array.
        lead: how many leading axes to sum away.
    """
    rows = math.prod(a.shape[:lead])
    if not (rows >= GEMV_MIN_ROWS and _numpy_rows(a)):
        axes = tuple(range(lead))
        return numpy.add.reduce(a, axis=axes) if type(a) is numpy.ndarray else a.sum(axis=axes)
    rest = a.shape[lead:]
    return (numpy.ones(rows, dtype=a.dtype) @ a.reshape(rows, -1)).reshape(rest)

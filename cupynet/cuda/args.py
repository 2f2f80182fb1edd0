"""Scalar kernel arguments with their C type, as ``cupy.RawKernel`` needs them.

A RawKernel call packs each argument by its Python type, not by the kernel's
parameter type: a Python ``int`` becomes an 8-byte ``long long`` and a Python
``float`` an 8-byte ``double``. Passed to an ``int`` or ``float`` parameter,
the kernel reads 4 of those bytes and every later argument is shifted: no
error, just wrong results. So every launcher of cupynet wraps each scalar in
the function named after the C parameter type it feeds.
"""

from __future__ import annotations

import numpy

__all__ = ["c_int", "c_long_long", "c_float", "c_double"]


def c_int(value) -> numpy.int32:
    """A C ``int`` (4 bytes); bools become 0 / 1 (the kernels take flags as ``int``).

    Args:
        value: an integer in [-2**31, 2**31) or a bool.
    """
    return numpy.int32(int(value))


def c_long_long(value) -> numpy.int64:
    """A C ``long long`` (8 bytes).

    Args:
        value: an integer in [-2**63, 2**63).
    """
    return numpy.int64(int(value))


def c_float(value) -> numpy.float32:
    """A C ``float`` (4 bytes), rounded to nearest from the given value.

    Args:
        value: a real number (a ``numpy.float32`` is passed through exactly).
    """
    return numpy.float32(value)


def c_double(value) -> numpy.float64:
    """A C ``double`` (8 bytes).

    Args:
        value: a real number.
    """
    return numpy.float64(value)

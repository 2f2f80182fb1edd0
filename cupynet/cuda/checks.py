"""Argument checks of the array-level kernel functions (both backends see the same errors).

Everything here runs on the host and looks only at metadata (type, dtype,
shape, strides, device, data pointer): no value is ever read from a device
array, so checking costs no synchronisation. All checks run before anything
is written, so a rejected call leaves every array as it was.
"""

from __future__ import annotations

import math
import numbers

import numpy

from cupynet.backend import cupy_or_none

__all__ = [
    "array_list", "optional_array_list", "scalar_array", "check_stats", "check_counts", "place_of",
    "named", "check_same_shapes", "check_distinct", "real_number", "positive_int",
]


def _describe(a) -> str:
    return f"{a.dtype} array of shape {tuple(a.shape)}"


def _is_array(a) -> bool:
    if isinstance(a, numpy.ndarray):
        return True
    cupy = cupy_or_none()
    return cupy is not None and isinstance(a, cupy.ndarray)


def array_list(fn: str, name: str, arrays, allowed_dtypes) -> list:
    """Check a list/tuple of contiguous arrays of allowed dtypes and return it as a list.

    Args:
        fn: the public function's name, for error messages.
        name: the argument's name, e.g. ``"grads"``.
        arrays: the list or tuple to check.
        allowed_dtypes: the NumPy dtypes the elements may have.
    """
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{fn}: {name} must be a list or tuple of arrays, got {type(arrays).__name__}")
    for i, a in enumerate(arrays):
        if not _is_array(a):
            raise TypeError(f"{fn}: {name}[{i}] must be a numpy or cupy array, got {type(a).__name__}")
        if a.dtype not in allowed_dtypes:
            expected = ", ".join(str(d) for d in allowed_dtypes)
            raise TypeError(f"{fn}: {name}[{i}] has dtype {a.dtype}; expected one of {expected}")
        if not a.flags.c_contiguous:
            raise ValueError(
                f"{fn}: {name}[{i}] with shape {tuple(a.shape)} and strides {tuple(a.strides)} is not "
                "contiguous; expected C-contiguous arrays (pass a contiguous copy and copy the result back)"
            )
    return list(arrays)


def optional_array_list(fn: str, name: str, arrays, allowed_dtypes, required: bool, why: str):
    """Like :func:`array_list`, but None is accepted (and returned) when the list is not required.

    Args:
        fn: the public function's name, for error messages.
        name: the argument's name.
        arrays: the list, tuple or None.
        allowed_dtypes: the NumPy dtypes the elements may have.
        required: whether None is an error.
        why: the condition that makes the list required, for the error message.
    """
    if arrays is None:
        if required:
            raise ValueError(f"{fn}: {name} is None but {why}; pass one float32 array per parameter")
        return None
    return array_list(fn, name, arrays, allowed_dtypes)


def scalar_array(fn: str, name: str, a, dtype, optional: bool = False):
    """Check a one-element control array (shape ``(1,)`` or ``()``) of one dtype.

    Args:
        fn: the public function's name, for error messages.
        name: the argument's name, e.g. ``"found_inf"``.
        a: the array (or None when ``optional``).
        dtype: the required NumPy dtype.
        optional: whether None is accepted.
    """
    if a is None and optional:
        return None
    article = "an" if str(dtype)[0] in "aeiou" else "a"
    if not _is_array(a):
        raise TypeError(f"{fn}: {name} must be {article} {dtype} array of shape (1,), got {type(a).__name__}")
    if a.dtype != dtype or a.size != 1 or a.ndim > 1:
        raise ValueError(f"{fn}: {name} must be {article} {dtype} array of shape (1,) (or 0-d), got {_describe(a)}")
    return a


def check_stats(fn: str, stats, n_arrays: int) -> None:
    """Check the optional per-tensor counter array: int32, shape ``(n_arrays, 2)``, contiguous.

    Args:
        fn: the public function's name, for error messages.
        stats: the array.
        n_arrays: how many tensors it must have rows for.
    """
    if not _is_array(stats):
        raise TypeError(f"{fn}: tensor_stats must be an int32 array, got {type(stats).__name__}")
    if stats.dtype != numpy.int32 or tuple(stats.shape) != (n_arrays, 2) or not stats.flags.c_contiguous:
        raise ValueError(
            f"{fn}: tensor_stats must be a contiguous int32 array of shape ({n_arrays}, 2) "
            f"(one [inf_count, nan_count] row per array), got {_describe(stats)}"
        )


def check_counts(fn: str, name: str, counts, n: int, what: str) -> None:
    """Check a per-tensor counter vector: int32, shape ``(n,)``, contiguous.

    Args:
        fn: the public function's name, for error messages.
        name: the argument's name.
        counts: the array.
        n: how many counts it must hold.
        what: what one count stands for, for the error message (e.g. "one count per tensor_stats row").
    """
    if not _is_array(counts):
        raise TypeError(f"{fn}: {name} must be an int32 array, got {type(counts).__name__}")
    if counts.dtype != numpy.int32 or tuple(counts.shape) != (n,) or not counts.flags.c_contiguous:
        raise ValueError(f"{fn}: {name} must be a contiguous int32 array of shape ({n},) ({what}), "
                         f"got {_describe(counts)}")


def _place(a) -> str:
    return "cpu" if isinstance(a, numpy.ndarray) else f"cuda:{a.device.id}"


def place_of(fn: str, named_arrays) -> str:
    """Return where all given arrays live: ``"cpu"`` (NumPy) or ``"cuda:N"`` (CuPy on device N).

    Args:
        fn: the public function's name, for error messages.
        named_arrays: ``(name, array)`` pairs; arrays that are None are ignored.
    """
    named_arrays = list(named_arrays)
    if all(a is None or type(a) is numpy.ndarray for _, a in named_arrays):
        return "cpu"  # NOTE: the common CPU case, without a place string per array
    first_name, first_place = None, None
    for name, a in named_arrays:
        if a is None:
            continue
        place = _place(a)
        if first_place is None:
            first_name, first_place = name, place
        elif place != first_place:
            raise ValueError(
                f"{fn}: all arrays must be on one device; {first_name} is on {first_place} but {name} is on {place}"
            )
    return first_place or "cpu"


def named(name: str, arrays) -> list:
    """Pair each element of a list with its indexed name, for :func:`place_of`.

    Args:
        name: the list's argument name.
        arrays: the list, or None.
    """
    return [] if arrays is None else [(f"{name}[{i}]", a) for i, a in enumerate(arrays)]


def check_same_shapes(fn: str, reference_name: str, reference, others: dict) -> None:
    """Check that parallel lists have the same length and element shapes as ``reference``.

    Args:
        fn: the public function's name, for error messages.
        reference_name: the name of the list giving the shapes (``"params"``).
        reference: that list.
        others: ``{name: list or None}``; None entries are skipped.
    """
    for name, arrays in others.items():
        if arrays is None:
            continue
        if len(arrays) != len(reference):
            raise ValueError(
                f"{fn}: {name} has {len(arrays)} arrays but {reference_name} has {len(reference)}; expected one each"
            )
        for i, (r, a) in enumerate(zip(reference, arrays)):
            if tuple(a.shape) != tuple(r.shape):
                raise ValueError(
                    f"{fn}: {name}[{i}] has shape {tuple(a.shape)} but {reference_name}[{i}] has shape "
                    f"{tuple(r.shape)}; expected equal shapes"
                )


def _owner(a):
    """The object at the end of ``a``'s ``.base`` chain: the array itself when it owns its memory."""
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def _data_pointer(a) -> int:
    return a.ctypes.data if isinstance(a, numpy.ndarray) else a.data.ptr


def check_distinct(fn: str, named_arrays) -> None:
    """Reject the same (non-empty) memory passed twice among arrays that are written in place.

    Args:
        fn: the public function's name, for error messages.
        named_arrays: ``(name, array)`` pairs of arrays the call writes.
    """
    # NOTE (speed): arrays are grouped by the object that owns their memory (the end of the ``.base``
    # chain); only arrays sharing an owner can be the same memory, and only those pay for reading
    # their data pointers (~1.3 us each on NumPy), so distinct owning gradients cost a dict entry each
    by_owner = {}
    for name, a in named_arrays:
        if a is None or a.size == 0:
            continue
        by_owner.setdefault(id(_owner(a)), []).append((name, a))
    for group in by_owner.values():
        if len(group) < 2:
            continue
        seen = {}
        for name, a in group:
            key = (_place(a), _data_pointer(a))
            if key in seen:
                raise ValueError(f"{fn}: {name} is the same memory as {seen[key]}; each written array must be "
                                 "distinct")
            seen[key] = name


def real_number(fn: str, name: str, value, low=None, high=None, low_inclusive=True, high_inclusive=False) -> float:
    """Check a finite real hyper-parameter within bounds and return it as a Python float.

    Args:
        fn: the public function's name, for error messages.
        name: the argument's name, e.g. ``"lr"``.
        value: the value to check.
        low: the lower bound, or None.
        high: the upper bound, or None.
        low_inclusive: whether ``value == low`` is allowed.
        high_inclusive: whether ``value == high`` is allowed.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    too_low = low is not None and (value < low or (value == low and not low_inclusive))
    too_high = high is not None and (value > high or (value == high and not high_inclusive))
    if not math.isfinite(value) or too_low or too_high:
        lo = "" if low is None else ("[" if low_inclusive else "(") + f"{low}, "
        hi = "" if high is None else f"{high}" + ("]" if high_inclusive else ")")
        bounds = f"in {lo or '(-inf, '}{hi or 'inf)'}"
        raise ValueError(f"{fn}: invalid {name} {value!r}; expected a finite number {bounds}")
    return value


def positive_int(fn: str, name: str, value) -> int:
    """Check an integer >= 1 that fits an int32 kernel argument.

    Args:
        fn: the public function's name, for error messages.
        name: the argument's name.
        value: the value to check.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__} {value!r}")
    if not 1 <= int(value) <= 2**31 - 1:
        raise ValueError(f"{fn}: invalid {name} {value!r}; expected an integer in [1, 2**31 - 1]")
    return int(value)


"""``torch.cuda``'s memory questions, answered from CuPy's default memory pool (0 / no-ops on the CPU).

CuPy keeps freed device blocks in a pool for reuse, as PyTorch's caching allocator does, so the
two vocabularies line up: *allocated* bytes are the pool's ``used_bytes()`` (held by live arrays),
*reserved* bytes its ``total_bytes()`` (used + cached), and ``empty_cache()`` is
``free_all_blocks()``. CuPy records no peak, so the peaks here are the largest values these
functions have seen, each call also reading the pool (see docs/pytorch_compat.md).

Without a usable GPU every count is 0 and every action does nothing, as cupynet has no device memory.
"""

from __future__ import annotations

import threading

from cupynet.backend import cupy_or_none

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "empty_cache",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "memory_stats"]

_peaks = {"allocated": 0, "reserved": 0}
_lock = threading.Lock()


def _check_device(device, caller):
    if device is None or isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return
    text = str(device)
    if text == "cuda" or text.startswith("cuda:") and text[5:].isdigit():
        return
    raise ValueError(f"{caller}: expected a CUDA device (None, an index, 'cuda' or 'cuda:N'), got {device!r}")


def _pool_bytes():
    """(allocated, reserved) bytes of the default pool now; (0, 0) without a GPU. Updates the peaks."""
    cupy = cupy_or_none()
    if cupy is None:
        return 0, 0
    pool = cupy.get_default_memory_pool()
    used, total = int(pool.used_bytes()), int(pool.total_bytes())
    with _lock:
        _peaks["allocated"] = max(_peaks["allocated"], used)
        _peaks["reserved"] = max(_peaks["reserved"], total)
    return used, total


def _peak(device, caller, key):
    _check_device(device, caller)
    _pool_bytes()  # NOTE: each read of the pool may raise the peaks
    return _peaks[key]


def memory_allocated(device=None) -> int:
    """Bytes held by live arrays on the GPU (CuPy's pool ``used_bytes``; 0 on the CPU).

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"`` (cupynet reports the current device's pool).
    """
    _check_device(device, "memory_allocated")
    return _pool_bytes()[0]


def memory_reserved(device=None) -> int:
    """Bytes the pool holds from the driver, used or cached (CuPy's ``total_bytes``; 0 on the CPU).

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"``.
    """
    _check_device(device, "memory_reserved")
    return _pool_bytes()[1]


def max_memory_allocated(device=None) -> int:
    """The largest ``memory_allocated()`` seen since the last reset (read by these functions; 0 on the CPU).

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"``.
    """
    return _peak(device, "max_memory_allocated", "allocated")


def max_memory_reserved(device=None) -> int:
    """The largest ``memory_reserved()`` seen since the last reset (0 on the CPU).

    NOTE: the pool only grows until ``empty_cache``, so this is also a bound of the true peak of
    allocated bytes, which CuPy does not record.

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"``.
    """
    return _peak(device, "max_memory_reserved", "reserved")


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks again from the current allocated and reserved bytes.

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"``.
    """
    _check_device(device, "reset_peak_memory_stats")
    with _lock:
        _peaks["allocated"] = _peaks["reserved"] = 0
    _pool_bytes()


def reset_max_memory_allocated(device=None) -> None:
    """The older name of ``reset_peak_memory_stats``.

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"``.
    """
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Give the pool's cached (free) blocks back to the driver; live arrays are untouched (no-op on the CPU)."""
    cupy = cupy_or_none()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def memory_stats(device=None) -> dict:
    """The counts above as a dict with PyTorch's keys (``allocated_bytes.all.current`` ...).

    Args:
        device: None, a GPU index, ``"cuda"`` or ``"cuda:N"``.
    """
    _check_device(device, "memory_stats")
    used, total = _pool_bytes()
    return {"allocated_bytes.all.current": used, "allocated_bytes.all.peak": _peaks["allocated"],
            "reserved_bytes.all.current": total, "reserved_bytes.all.peak": _peaks["reserved"]}

"""Host (CPU) memory: keep freed NumPy buffers in the process instead of handing them back to the kernel.

Why (CPU training speed): a training step allocates and frees the same large arrays every step (im2col
columns, activations, their gradients: hundreds of KiB to tens of MiB). glibc's malloc serves a
block above ``M_MMAP_THRESHOLD`` (128 KiB at start, then moved by a heuristic) with a fresh
``mmap`` and returns it with ``munmap`` when it is freed, and it gives the top of its heap back
to the kernel once more than ``M_TRIM_THRESHOLD`` of it is free. Either way the next step's
arrays land on pages the kernel must map and zero again, one page fault per 4 KiB touched.
Measured on the LeNet step of ``benchmarks/bench_convnet.py`` (batch 64, no torch in the
process): ~4,700 page faults and ~12 ms of kernel time per 35 ms step; with the setting below,
one fault and ~22 ms per step.

What: on Linux with glibc, ``tune()`` raises both thresholds once (``mallopt``), which is what a
caching allocator does on the GPU: the memory a step used stays mapped for the next step. The
price is resident memory: freed blocks (up to ``TRIM_THRESHOLD`` at the heap's top) are not given
back to the system between steps. ``import cupynet`` calls ``tune()`` unless the environment
variable ``CUPYNET_HOST_MALLOC`` is ``default`` (leave glibc's heuristics alone). Other C
libraries (musl, macOS, Windows) are left untouched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "ENV_VAR", "tune", "state"]

# NOTE: glibc's mallopt parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 256 << 20   # blocks up to 256 MiB come from the heap, not from a private mmap each
TRIM_THRESHOLD = 1 << 30     # keep up to 1 GiB of free heap top mapped between steps
ENV_VAR = "CUPYNET_HOST_MALLOC"

_state = {"tuned": False, "reason": "not tried"}


def _glibc():
    """The C library as a ctypes handle when it is glibc, else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def tune(environ=None) -> bool:
    """Raise glibc's mmap and trim thresholds once, so freed array memory is reused without page faults.

    Returns True when the thresholds were set (by this call or an earlier one).

    Args:
        environ: the environment to read ``CUPYNET_HOST_MALLOC`` from (``os.environ`` when None).
    """
    environ = os.environ if environ is None else environ
    choice = environ.get(ENV_VAR, "tuned")
    if choice not in ("tuned", "default"):
        raise ValueError(f"{ENV_VAR} must be 'tuned' or 'default', got {choice!r}")
    if choice == "default":
        _state.update(tuned=False, reason=f"{ENV_VAR}=default")
        return False
    if _state["tuned"]:
        return True
    libc = _glibc()
    if libc is None:
        _state.update(tuned=False, reason="not glibc")
        return False
    # NOTE: mallopt returns 1 on success; setting any threshold also switches off glibc's moving
    # mmap threshold, so the two values stay as set
    ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(_M_TRIM_THRESHOLD,
                                                                                TRIM_THRESHOLD) == 1
    _state.update(tuned=ok, reason="mallopt" if ok else "mallopt refused")
    return ok


def state() -> dict:
    """What ``tune`` did: ``{"tuned": bool, "reason": str}`` (for ``cupynet info``)."""
    return dict(_state)

"""What the emulated CUDA device counts: device-to-host reads and kernel launches.

A host sync is every read of device memory by the host: ``.get()``, ``.item()``, ``.tolist()``,
``float()``, ``int()``, ``bool()``, ``cupy.asnumpy``, printing or pickling an array, and the reads CuPy
makes on its own to size a result or check an input (a boolean mask index or assignment, ``nonzero``,
``unique``, ``bincount``, ...: ``array.READS_BACK``). On a GPU each one waits for every queued kernel,
so an AMP step that has one per parameter runs at the speed of the round trips.

A launch is every array-module call that runs a kernel (elementwise, reduction, matmul, copy,
fill, a host-to-device copy) and every RawKernel launch; calls that only make a view (reshape of a
contiguous array, transpose, basic slicing, an integer index, ``broadcast_to``) or only allocate
(``empty``) launch nothing. On a GPU each launch costs the host several microseconds, the floor of a
small net's step time.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["host_syncs", "launches", "sync_log", "count_sync", "count_launch", "recording_syncs",
           "refuse_during_capture", "capture_opened", "CUDARuntimeError"]

_lock = threading.Lock()
_counts = {"host_syncs": 0, "launches": 0, "captures": 0}
_sync_log: list = []
_recording = threading.local()


class CUDARuntimeError(RuntimeError):
    """``cupy.cuda.runtime.CUDARuntimeError``: CUDA's error (here for a wait during a graph capture, or a device
    that does not exist); ``cupy.cuda.runtime`` of the emulated device re-exports it."""


def host_syncs() -> int:
    """How many times the host has read device memory in this process (see the module doc)."""
    return _counts["host_syncs"]


def launches() -> int:
    """How many kernels the emulated device has launched in this process (see the module doc)."""
    return _counts["launches"]


def sync_log() -> list:
    """What each host sync read, as ``"what: shape dtype"`` strings, while :func:`recording_syncs` is on."""
    return list(_sync_log)


def refuse_during_capture(what: str) -> None:
    """Raise CUDA's error if a stream is capturing a graph: a capture cannot wait for the device.

    Args:
        what: the call that would wait.
    """
    if _counts["captures"]:
        raise CUDARuntimeError(f"cudaErrorStreamCaptureUnsupported: operation not permitted when stream is "
                               f"capturing ({what})")


def capture_opened(n: int) -> None:
    """Note that ``n`` (1 or -1) more streams capture a CUDA graph.

    Args:
        n: +1 at ``begin_capture``, -1 at ``end_capture``.
    """
    with _lock:
        _counts["captures"] += n


def count_sync(what: str) -> None:
    """Record one device-to-host read (CUDA's error while a graph is being captured: none is counted).

    Args:
        what: a short description (the call and the array), kept while recording.
    """
    refuse_during_capture(what)
    with _lock:
        _counts["host_syncs"] += 1
        if getattr(_recording, "on", False):
            _sync_log.append(what)


def count_launch(n: int = 1) -> None:
    """Record ``n`` kernel launches.

    Args:
        n: how many.
    """
    with _lock:
        _counts["launches"] += n


@contextlib.contextmanager
def recording_syncs():
    """Inside, every host sync's description is kept (read them with :func:`sync_log`); a debugging aid."""
    was_on = getattr(_recording, "on", False)
    if not was_on:
        _sync_log.clear()
    _recording.on = True
    try:
        yield _sync_log
    finally:
        _recording.on = was_on  # NOTE: an inner recording leaves an outer one running

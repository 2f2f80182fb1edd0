"""The emulated ``cupy.cuda``: one device, one stream, a memory pool that counts live arrays.

The device reports itself as an sm_90 GPU named "cupynet emulated CUDA device" (the capability of the
GPUs this project is lent, so the bfloat16 paths that need sm_80 are taken). Work is synchronous:
``synchronize`` has nothing to wait for, and streams are one stream.
"""

from __future__ import annotations

import types

from . import api
from .array import LIVE
from .device import CAPABILITY, NAME, TOTAL_MEMORY, Device, current

__all__ = ["Stream", "MemoryPool", "cuda_namespace", "default_memory_pool", "default_pinned_memory_pool"]

class Stream:
    """``cupy.cuda.Stream``: the one stream (``ptr`` 0, never capturing a graph).

    Args:
        null: ignored.
        non_blocking: ignored.
    """

    def __init__(self, null=False, non_blocking=False):
        self.ptr = 0

    def synchronize(self):
        """Nothing to wait for."""

    def is_capturing(self) -> bool:
        """Never: the emulated device has no CUDA graphs."""
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_STREAM = Stream()


class MemoryPool:
    """``cupy.get_default_memory_pool()``: bytes of live device arrays; nothing is cached, so used == total."""

    def used_bytes(self) -> int:
        """Bytes held by live device arrays."""
        return sum(a.nbytes for a in list(LIVE.values()))

    def total_bytes(self) -> int:
        """Bytes reserved (the same as used: nothing is cached)."""
        return self.used_bytes()

    def free_bytes(self) -> int:
        """Cached free bytes (always 0)."""
        return 0

    def free_all_blocks(self, stream=None):
        """Nothing is cached, so nothing to free."""

    def n_free_blocks(self) -> int:
        """Always 0."""
        return 0

    def get_limit(self) -> int:
        """The device's memory."""
        return TOTAL_MEMORY

    def set_limit(self, size=None, fraction=None):
        """Accepted and ignored."""


_POOL = MemoryPool()


def default_memory_pool() -> MemoryPool:
    """The device memory pool."""
    return _POOL


def default_pinned_memory_pool() -> MemoryPool:
    """The pinned host memory pool (the same counts)."""
    return _POOL


def _properties(index):
    Device(index)  # NOTE: validates the index
    return {"name": NAME.encode(), "major": CAPABILITY[0], "minor": CAPABILITY[1], "totalGlobalMem": TOTAL_MEMORY,
            "multiProcessorCount": 1, "warpSize": 32, "maxThreadsPerBlock": 1024}


def cuda_namespace():
    """The emulated ``cupy.cuda`` module."""
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1, getDevice=current, setDevice=lambda i: Device(i).use(),
        getDeviceProperties=_properties, driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000,
        deviceSynchronize=lambda: None)
    return types.SimpleNamespace(
        __name__="cupy.cuda", is_available=lambda: True, runtime=runtime, Device=Device, Stream=Stream,
        get_current_stream=lambda: _STREAM, MemoryPool=MemoryPool,
        device=types.SimpleNamespace(get_cublas_handle=lambda: 0, Device=Device),
        cupy_version=api.version())

"""The emulated ``cupy.cuda``: one device, one stream, a memory pool that counts live arrays.

The device reports itself as an sm_90 GPU named "cupynet emulated CUDA device" (the capability of the
GPUs this project is lent, so the bfloat16 paths that need sm_80 are taken). Work is synchronous:
``synchronize`` has nothing to wait for, and streams are one stream.
"""

from __future__ import annotations

import types

from . import api
from .array import LIVE

__all__ = ["CUDARuntimeError", "Device", "Stream", "MemoryPool", "cuda_namespace", "default_memory_pool",
           "default_pinned_memory_pool", "NAME", "CAPABILITY", "TOTAL_MEMORY"]

NAME = "cupynet emulated CUDA device"
CAPABILITY = (9, 0)
TOTAL_MEMORY = 16 * 2**30
_current = [0]


class CUDARuntimeError(RuntimeError):
    """``cupy.cuda.runtime.CUDARuntimeError``: what the CUDA runtime raises (here: a device that does not exist)."""


def _check(index):
    """Raise CuPy's error for a device index other than 0 (as ``cudaSetDevice`` does)."""
    if index != 0:
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")


class Device:
    """``cupy.cuda.Device``: a context manager that makes device ``id`` current (there is only device 0).

    As in CuPy, making the object never fails; using a device that does not exist (``with``, ``use``,
    its properties) raises :class:`CUDARuntimeError`.

    Args:
        device: the index (None: the current one).
    """

    def __init__(self, device=None):
        self.id = _current[0] if device is None else int(device)
        self._previous = []

    def __int__(self):
        return self.id

    def __enter__(self):
        _check(self.id)
        self._previous.append(_current[0])
        _current[0] = self.id
        return self

    def __exit__(self, *exc):
        _current[0] = self._previous.pop()

    def use(self):
        """Make this device current."""
        _check(self.id)
        _current[0] = self.id

    def synchronize(self):
        """Wait for the device's work (none is ever pending here)."""

    @property
    def compute_capability(self) -> str:
        """``"90"``, as CuPy writes it."""
        _check(self.id)
        return f"{CAPABILITY[0]}{CAPABILITY[1]}"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("cuda-emulated", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


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
    _check(index)
    return {"name": NAME.encode(), "major": CAPABILITY[0], "minor": CAPABILITY[1], "totalGlobalMem": TOTAL_MEMORY,
            "multiProcessorCount": 1, "warpSize": 32, "maxThreadsPerBlock": 1024}


def cuda_namespace():
    """The emulated ``cupy.cuda`` module."""
    runtime = types.SimpleNamespace(
        CUDARuntimeError=CUDARuntimeError, getDeviceCount=lambda: 1, getDevice=lambda: _current[0],
        setDevice=lambda i: Device(i).use(),
        getDeviceProperties=_properties, driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000,
        deviceSynchronize=lambda: None)
    return types.SimpleNamespace(
        __name__="cupy.cuda", is_available=lambda: True, runtime=runtime, Device=Device, Stream=Stream,
        get_current_stream=lambda: _STREAM, MemoryPool=MemoryPool,
        device=types.SimpleNamespace(get_cublas_handle=lambda: 0, Device=Device),
        cupy_version=api.version())

"""The emulated ``cupy.cuda``: one device, synchronous streams, a memory pool that counts live arrays.

The device reports itself as an sm_90 GPU named "cupynet emulated CUDA device" (the capability of the
GPUs this project is lent, so the bfloat16 paths that need sm_80 are taken). Work is synchronous:
``synchronize`` has nothing to wait for, and a stream only says which one is current and whether it
captures a CUDA graph (during which, as on a GPU, the host cannot wait for the device).
"""

from __future__ import annotations

import threading
import types
import weakref

from . import api
from .counters import CUDARuntimeError, capture_opened, refuse_during_capture

__all__ = ["CUDARuntimeError", "Device", "Stream", "Graph", "get_current_stream", "MemoryPool", "cuda_namespace",
           "default_memory_pool", "default_pinned_memory_pool", "NAME", "CAPABILITY", "TOTAL_MEMORY", "LIVE"]

NAME = "cupynet emulated CUDA device"
CAPABILITY = (9, 0)
TOTAL_MEMORY = 16 * 2**30
_current = [0]
LIVE = weakref.WeakValueDictionary()
"""The device arrays that own their memory (the memory pool's ``used_bytes`` sums them)."""


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
        """Wait for the device's work (none is ever pending here; but a capturing stream cannot wait)."""
        refuse_during_capture("Device.synchronize")

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
    """``cupy.cuda.Stream``: a stream whose work runs at once (the emulated device is synchronous).

    ``with stream:`` makes it current, as in CuPy. A non-default stream can capture a CUDA graph:
    between ``begin_capture`` and ``end_capture`` a host read or a synchronize raises CUDA's error, as on
    a GPU; but the captured work runs at capture time, so the :class:`Graph` replays nothing.

    Args:
        null: the default (legacy) stream, ``ptr`` 0.
        non_blocking: ignored.
        ptds: ignored.
    """

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = 0 if null else id(self)
        self._capturing = False

    def synchronize(self):
        """Nothing to wait for (but a capturing stream cannot wait)."""
        refuse_during_capture("Stream.synchronize")

    def use(self):
        """Make this stream current."""
        stack = _streams()
        stack[-1:] = [self]
        return self

    def begin_capture(self, mode=None):
        """Begin capturing a CUDA graph (see the class doc).

        Args:
            mode: ignored (CuPy's default, relaxed).
        """
        if self.ptr == 0:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if self._capturing:
            raise CUDARuntimeError("cuda-emulated: begin_capture() on a stream that is already capturing")
        self._capturing = True
        capture_opened(1)

    def end_capture(self):
        """End the capture; the :class:`Graph` it returns may be launched once."""
        if not self._capturing:
            raise CUDARuntimeError("cuda-emulated: end_capture() on a stream that is not capturing")
        self._capturing = False
        capture_opened(-1)
        return Graph()

    def is_capturing(self) -> bool:
        """Whether the stream is capturing a CUDA graph."""
        return self._capturing

    def __enter__(self):
        _streams().append(self)
        return self

    def __exit__(self, *exc):
        _streams().pop()


class Graph:
    """``cupy.cuda.Graph``: the captured work already ran at capture, so launching replays nothing.

    NOTE: one launch then leaves the arrays as a GPU would; a second would not repeat the work, so it
    raises rather than answer wrongly.
    """

    def __init__(self):
        self._launched = False

    def launch(self, stream=None):
        """Accept the first launch (its work is done); refuse a second.

        Args:
            stream: ignored.
        """
        if self._launched:
            raise NotImplementedError("cuda-emulated: a CUDA graph cannot be replayed (its work ran eagerly at "
                                      "capture); it can be launched once")
        self._launched = True

    def upload(self, stream=None):
        """Nothing to upload."""


_NULL_STREAM = Stream(null=True)
_local = threading.local()


def _streams() -> list:
    """This thread's stack of current streams (as CuPy's, per thread)."""
    if not hasattr(_local, "streams"):
        _local.streams = []
    return _local.streams


def get_current_stream() -> Stream:
    """The current stream: the innermost ``with stream:``, else the default one."""
    stack = _streams()
    return stack[-1] if stack else _NULL_STREAM


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
        deviceSynchronize=lambda: refuse_during_capture("deviceSynchronize"),
        # NOTE: cudaDataType values of library_types.h, for cuBLAS calls (the emulated GEMM reads them)
        CUDA_R_32F=0, CUDA_R_64F=1, CUDA_R_16F=2, CUDA_R_16BF=14)
    return types.SimpleNamespace(
        __name__="cupy.cuda", is_available=lambda: True, runtime=runtime, Device=Device, Stream=Stream,
        get_current_stream=get_current_stream, Graph=Graph, MemoryPool=MemoryPool,
        device=types.SimpleNamespace(get_cublas_handle=lambda: 0, Device=Device),
        cupy_version=api.version())

"""``torch.cuda.Stream`` / ``Event`` and the current-stream functions (``cupynet.cuda.Stream``, ...).

On a GPU each object wraps CuPy's (``cupy.cuda.Stream`` / ``cupy.cuda.Event``), and ``with
cupynet.cuda.stream(s):`` makes ``s`` CuPy's current stream, so cupynet's ops are queued on it.

Without a GPU (the CPU, and the emulated device, which runs synchronously) every piece of work has
finished when the call that issued it returns, so the objects answer as a GPU stream would once
idle: ``query()`` is True, ``synchronize``/``wait_*`` have nothing to wait for, and an event records
the host clock, so ``start.elapsed_time(end)`` is the milliseconds the work between them took.
NOTE: PyTorch built without CUDA refuses to create these objects; cupynet gives working ones, so a
program that times or overlaps its steps with streams runs unchanged on the CPU.
"""

from __future__ import annotations

import contextlib
import threading
import time

from cupynet import backend

__all__ = ["Stream", "Event", "current_stream", "default_stream", "set_stream", "stream"]


def _gpu_cuda():
    """``cupy.cuda`` when a real GPU is in use (one with events), else None."""
    cupy = backend.cupy_or_none()
    if cupy is None or backend.emulating():
        return None
    return cupy.cuda


def _device_index(device) -> int:
    """The CUDA device index of ``device`` (None, an int, ``"cuda"``, ``"cuda:N"`` or a Device).

    NOTE: parsed here rather than by ``backend.Device``, which refuses ``cuda`` where no GPU is usable.
    """
    if device is None:
        return 0
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    kind, index = (getattr(device, "type", None), getattr(device, "index", None)) if not isinstance(device, str) \
        else (device.partition(":")[0], device.partition(":")[2] or None)
    if kind != "cuda" or (index is not None and not str(index).isdigit()):
        raise ValueError(f"Stream: expected a CUDA device, got {device!r}")
    return int(index or 0)


class Stream:
    """A CUDA stream (CuPy's on a GPU; an always-idle stand-in without one).

    Args:
        device: the CUDA device (index, ``"cuda:N"`` or a Device), default the current one.
        priority: the stream priority (lower is more urgent, as CUDA's; 0 by default).
        **kwargs: ``stream_id`` / ``device_index`` / ``device_type`` (torch's internal form): not supported.
    """

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if kwargs:
            raise TypeError(f"Stream: unsupported arguments {sorted(kwargs)} (device and priority are supported)")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"Stream: priority must be an int, got {priority!r}")
        self.device_index, self.priority = _device_index(device), priority
        cuda = _gpu_cuda()
        self._cupy = None if cuda is None else cuda.Stream(non_blocking=True, priority=priority or None)

    @classmethod
    def _default(cls):
        stream = cls.__new__(cls)
        cuda = _gpu_cuda()
        stream.device_index, stream.priority = 0, 0
        stream._cupy = None if cuda is None else cuda.Stream.null
        return stream

    @property
    def device(self):
        """The stream's device: a ``cuda:N`` Device on a GPU, the text ``"cuda:N"`` without one."""
        name = f"cuda:{self.device_index}"
        return name if self._cupy is None else backend.Device(name)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` (0 without a GPU: the default stream)."""
        return 0 if self._cupy is None else int(self._cupy.ptr)

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return True if self._cupy is None else bool(self._cupy.done)

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def wait_event(self, event) -> None:
        """Make later work on this stream wait for ``event``.

        Args:
            event: an Event.
        """
        _check_event("Stream.wait_event", event)
        if self._cupy is not None and event._cupy is not None:
            self._cupy.wait_event(event._cupy)

    def wait_stream(self, stream) -> None:
        """Make later work on this stream wait for the work queued on ``stream`` so far.

        Args:
            stream: a Stream.
        """
        if not isinstance(stream, Stream):
            raise TypeError(f"Stream.wait_stream: expected a Stream, got {type(stream).__name__}")
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one when None) on this stream; return it.

        Args:
            event: an Event, or None.
        """
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return False
        if self._cupy is None or other._cupy is None:
            return self is other  # NOTE: the stand-ins are distinct streams, each equal only to itself
        return self.cuda_stream == other.cuda_stream and self.device_index == other.device_index

    def __hash__(self):
        return id(self) if self._cupy is None else hash((self.cuda_stream, self.device_index))

    def __enter__(self):
        _stack().append(self)
        if self._cupy is not None:
            self._cupy.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cupy is not None:
            self._cupy.__exit__(*exc)
        _stack().pop()

    def __repr__(self):
        return f"<cupynet.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


def _check_event(what, event):
    if not isinstance(event, Event):
        raise TypeError(f"{what}: expected an Event, got {type(event).__name__}")


class Event:
    """A CUDA event (CuPy's on a GPU; a host-clock stand-in without one).

    Args:
        enable_timing: the event can measure time (``elapsed_time``).
        blocking: ``synchronize`` blocks the thread rather than spinning (GPU only).
        interprocess: shareable between processes (not supported).
        external: an event for graph capture (not supported).
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False,
                 external: bool = False):
        if interprocess or external:
            raise NotImplementedError("Event: interprocess and external events are not supported by cupynet")
        self.enable_timing, self.blocking = bool(enable_timing), bool(blocking)
        self._recorded_at = None
        cuda = _gpu_cuda()
        self._cupy = None if cuda is None else cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (default: the current stream).

        Args:
            stream: a Stream, or None.
        """
        stream = current_stream() if stream is None else stream
        if not isinstance(stream, Stream):
            raise TypeError(f"Event.record: expected a Stream, got {type(stream).__name__}")
        self._recorded_at = time.perf_counter()
        if self._cupy is not None:
            self._cupy.record(stream._cupy)

    def wait(self, stream=None) -> None:
        """Make later work on ``stream`` (default: the current stream) wait for this event.

        Args:
            stream: a Stream, or None.
        """
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work recorded before the event has finished (True when never recorded, as CUDA's)."""
        return True if self._cupy is None else bool(self._cupy.done)

    def synchronize(self) -> None:
        """Wait until the work recorded before the event has finished."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both with ``enable_timing``).

        Args:
            end_event: the later Event.
        """
        _check_event("Event.elapsed_time", end_event)
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded_at is None or end_event._recorded_at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self._cupy is not None:
            return float(_gpu_cuda().get_elapsed_time(self._cupy, end_event._cupy))
        return (end_event._recorded_at - self._recorded_at) * 1000.0

    def ipc_handle(self):
        """Not supported (interprocess events)."""
        raise NotImplementedError("Event.ipc_handle: interprocess events are not supported by cupynet")

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """Not supported (interprocess events).

        Args:
            device: the device.
            handle: the handle of another process's event.
        """
        raise NotImplementedError("Event.from_ipc_handle: interprocess events are not supported by cupynet")

    def __repr__(self):
        return f"<cupynet.cuda.Event enable_timing={self.enable_timing} recorded={self._recorded_at is not None}>"


# NOTE: per thread, as CUDA's current stream is: the stack of `with stream(s):` blocks, and the default stream
_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def default_stream(device=None):
    """The default stream of a CUDA device.

    Args:
        device: the device (index, ``"cuda:N"`` or a Device), default the current one.
    """
    _device_index(device)
    if not hasattr(_local, "default"):
        _local.default = Stream._default()
    return _local.default


def current_stream(device=None):
    """The stream work is queued on now: the innermost ``with stream(s):``, else the default stream.

    Args:
        device: the device (index, ``"cuda:N"`` or a Device), default the current one.
    """
    stack = _stack()
    return stack[-1] if stack else default_stream(device)


def set_stream(stream) -> None:
    """Make ``stream`` the current stream (until another ``set_stream`` or a ``with stream(...)`` block).

    Args:
        stream: a Stream (None: nothing changes, as torch).
    """
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream: expected a Stream, got {type(stream).__name__}")
    stack = _stack()
    stack[:] = [stream]
    if stream._cupy is not None:
        stream._cupy.use()


@contextlib.contextmanager
def stream(stream):
    """``with stream(s):`` queues the work inside on ``s`` (None: the current stream, as torch).

    Args:
        stream: a Stream, or None.
    """
    if stream is None:
        yield None
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"stream: expected a Stream or None, got {type(stream).__name__}")
    with stream:
        yield stream

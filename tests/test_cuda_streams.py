"""torch.cuda.Stream / Event and the current-stream functions: torch's methods on the CPU (always idle, the
host clock for timing) and their wiring to CuPy's streams and events on a GPU (checked here against a fake
``cupy.cuda`` that records the calls; the real one needs a GPU)."""

import time

import pytest

import cupynet
from cupynet import cuda
from cupynet.compat import cuda_streams

torch = pytest.importorskip("torch")
CPU_ONLY = pytest.mark.skipif(cupynet.backend.cuda_available() and not cupynet.backend.emulating(),
                              reason="the stand-ins of a machine without a GPU")


def test_torch_methods_are_all_there():
    for ours, theirs in ((cuda.Stream, torch.cuda.Stream), (cuda.Event, torch.cuda.Event)):
        public = {n for n in dir(theirs) if not n.startswith("_")}
        assert public <= set(dir(ours)), sorted(public - set(dir(ours)))
    for name in ("Stream", "Event", "current_stream", "default_stream", "set_stream", "stream"):
        assert hasattr(torch.cuda, name) and getattr(cuda, name) is getattr(cuda_streams, name)


@CPU_ONLY
def test_stream_on_the_cpu_is_idle_and_orders_nothing():
    s = cuda.Stream(priority=-1)
    assert s.query() is True and s.synchronize() is None and s.cuda_stream == 0 and s.priority == -1
    assert str(s.device) == "cuda:0" and s == s and s != cuda.Stream()
    event = s.record_event()
    assert isinstance(event, cuda.Event) and event.query() is True
    assert s.wait_stream(cuda.current_stream()) is None and s.wait_event(event) is None
    with pytest.raises(TypeError, match="Stream.wait_stream: expected a Stream, got int"):
        s.wait_stream(3)
    with pytest.raises(TypeError, match="Stream.wait_event: expected an Event, got Stream"):
        s.wait_event(s)
    with pytest.raises(TypeError, match="Stream: priority must be an int"):
        cuda.Stream(priority=0.5)
    with pytest.raises(ValueError, match="Stream: expected a CUDA device, got 'cpu'"):
        cuda.Stream(device="cpu")


@CPU_ONLY
def test_event_times_the_host_work_between_two_records():
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    time.sleep(0.03)
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end)
    assert 30.0 <= elapsed < 3000.0  # NOTE: milliseconds, as torch; sleep lasts at least what it is asked
    with pytest.raises(RuntimeError, match="Both events must be created with argument 'enable_timing=True'"):
        cuda.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="Both events must be recorded before calculating elapsed time"):
        cuda.Event(enable_timing=True).elapsed_time(end)
    with pytest.raises(NotImplementedError, match="interprocess"):
        cuda.Event(interprocess=True)


def test_current_stream_follows_with_blocks_and_set_stream():
    default = cuda.current_stream()
    assert default is cuda.default_stream() and default == cuda.default_stream(0)
    a, b = cuda.Stream(), cuda.Stream()
    with cuda.stream(a):
        assert cuda.current_stream() is a
        with cuda.stream(b):
            assert cuda.current_stream() is b
        with cuda.stream(None):
            assert cuda.current_stream() is a
        assert cuda.current_stream() is a
    assert cuda.current_stream() is default
    cuda.set_stream(b)
    assert cuda.current_stream() is b
    cuda.set_stream(default)
    with pytest.raises(TypeError, match="stream: expected a Stream or None, got str"):
        with cuda.stream("s"):
            pass


class _FakeCupyCuda:
    """Records what the wrappers ask of cupy.cuda."""

    def __init__(self):
        self.calls = []
        fake = self

        class Stream:
            def __init__(self, null=False, non_blocking=False, priority=None):
                self.ptr, self.done = 0 if null else 0x1000 + len(fake.calls), False
                fake.calls.append(("Stream", non_blocking, priority))

            def synchronize(self):
                fake.calls.append(("stream.synchronize", self.ptr))

            def wait_event(self, event):
                fake.calls.append(("wait_event", self.ptr, event))

            def use(self):
                fake.calls.append(("use", self.ptr))

            def __enter__(self):
                fake.calls.append(("enter", self.ptr))

            def __exit__(self, *exc):
                fake.calls.append(("exit", self.ptr))

        class Event:
            def __init__(self, block=False, disable_timing=False):
                self.done = True
                fake.calls.append(("Event", block, disable_timing))

            def record(self, stream):
                fake.calls.append(("record", stream.ptr))

            def synchronize(self):
                fake.calls.append(("event.synchronize",))

        Stream.null = Stream(null=True)
        self.Stream, self.Event = Stream, Event

    def get_elapsed_time(self, start, end):
        self.calls.append(("get_elapsed_time", start, end))
        return 1.5


def test_on_a_gpu_the_objects_drive_cupys(monkeypatch):
    fake = _FakeCupyCuda()
    monkeypatch.setattr(cuda_streams, "_gpu_cuda", lambda: fake)
    monkeypatch.setattr(cuda_streams, "_local", type(cuda_streams._local)())
    s = cuda_streams.Stream(priority=-2)
    assert fake.calls[-1] == ("Stream", True, -2) and s.cuda_stream == s._cupy.ptr != 0
    start, end = cuda_streams.Event(enable_timing=True), cuda_streams.Event(enable_timing=True, blocking=True)
    assert fake.calls[-2:] == [("Event", False, False), ("Event", True, False)]
    with cuda_streams.stream(s):
        start.record()
        end.record()
    assert ("enter", s._cupy.ptr) in fake.calls and ("record", s._cupy.ptr) in fake.calls
    assert start.elapsed_time(end) == 1.5 and fake.calls[-1] == ("get_elapsed_time", start._cupy, end._cupy)
    other = cuda_streams.Stream()
    s.wait_stream(other)
    assert fake.calls[-2] == ("record", other._cupy.ptr) and fake.calls[-1][0:2] == ("wait_event", s._cupy.ptr)
    s.synchronize()
    assert fake.calls[-1] == ("stream.synchronize", s._cupy.ptr) and s.query() is False
    assert cuda_streams.default_stream()._cupy is fake.Stream.null

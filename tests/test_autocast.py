"""autocast regions: defaults, nesting, exceptions, decorator form, threads, bad inputs (port of torch's checks)."""

import threading
import warnings

import pytest

import cupynet as cn
from cupynet import amp
from cupynet.autograd.state import STATE
from cupynet.cuda import capability


def _state():
    return dict(STATE.autocast), STATE.autocast_nesting, STATE.autocast_cache_enabled, len(STATE.cast_cache)


@pytest.fixture(autouse=True)
def _clean_state():
    before = _state()
    assert before == ({}, 0, True, 0), f"a previous test leaked autocast state: {before}"
    yield
    assert _state() == ({}, 0, True, 0), f"this test leaked autocast state: {_state()}"


def _weights():
    return cn.randn(4, 3, requires_grad=True), cn.randn(2, 4)


def test_default_dtype_on_cpu_is_bfloat16():
    w, x = _weights()
    with amp.autocast("cpu"):
        assert amp.is_autocast_enabled("cpu")
        assert amp.get_autocast_dtype("cpu") == cn.bfloat16
        assert (x @ w).dtype == cn.bfloat16
    assert not amp.is_autocast_enabled("cpu")
    assert (x @ w).dtype == cn.float32


def test_float16_on_cpu_is_allowed():
    w, x = _weights()
    with amp.autocast("cpu", dtype=cn.float16):
        assert (x @ w).dtype == cn.float16
    with amp.autocast("cpu", dtype="float16"):
        assert amp.get_autocast_dtype("cpu") == cn.float16


def test_device_type_defaults_to_default_device():
    with amp.autocast():
        assert amp.is_autocast_enabled()
        assert amp.is_autocast_enabled(cn.default_device().type)


def test_get_autocast_dtype_outside_region_is_the_default():
    assert amp.get_autocast_dtype("cpu") == cn.bfloat16
    assert amp.get_autocast_dtype("cuda") == cn.float16


def test_nested_enable_disable_restores_each_level():
    w, x = _weights()
    with amp.autocast("cpu", dtype=cn.float16):
        assert STATE.autocast_nesting == 1
        with amp.autocast("cpu", enabled=False):
            assert STATE.autocast_nesting == 2, "disabled regions count in the nesting depth"
            assert not amp.is_autocast_enabled("cpu")
            assert (x @ w).dtype == cn.float32
            with amp.autocast("cpu", dtype=cn.bfloat16):
                assert (x @ w).dtype == cn.bfloat16
            assert not amp.is_autocast_enabled("cpu")
        assert amp.get_autocast_dtype("cpu") == cn.float16
        assert (x @ w).dtype == cn.float16
    assert STATE.autocast_nesting == 0


def test_cache_flag_nests_and_none_inherits():
    with amp.autocast("cpu", cache_enabled=False):
        assert STATE.autocast_cache_enabled is False
        with amp.autocast("cpu", cache_enabled=None):
            assert STATE.autocast_cache_enabled is False
        with amp.autocast("cpu"):
            assert STATE.autocast_cache_enabled is True
        assert STATE.autocast_cache_enabled is False


def test_exception_inside_region_restores_state():
    w, x = _weights()
    with pytest.raises(ZeroDivisionError):
        with amp.autocast("cpu", dtype=cn.float16):
            with amp.autocast("cpu", enabled=False, cache_enabled=False):
                x @ w
                raise ZeroDivisionError("boom")
    assert _state() == ({}, 0, True, 0)
    with amp.autocast("cpu"):
        with pytest.raises(ValueError):
            with amp.autocast("cpu", dtype=cn.float16):
                x @ w  # caches the weight cast
                raise ValueError("boom")
        assert STATE.autocast == {"cpu": cn.bfloat16} and STATE.autocast_nesting == 1


def test_same_object_entered_twice_restores_exactly():
    region = amp.autocast("cpu", dtype=cn.float16)
    with region:
        with amp.autocast("cpu", enabled=False):
            with region:
                assert STATE.autocast == {"cpu": cn.float16}
            assert STATE.autocast == {}
        assert STATE.autocast == {"cpu": cn.float16}


def test_decorator_form_and_fresh_state_per_call():
    w, x = _weights()

    @amp.autocast("cpu", dtype=cn.float16)
    def forward(depth):
        """Recurse so the same decorator is active several times at once."""
        assert STATE.autocast_nesting == depth + 1
        if depth < 2:
            return forward(depth + 1)
        return x @ w

    assert forward.__doc__.startswith("Recurse")
    assert forward(0).dtype == cn.float16
    assert (x @ w).dtype == cn.float32


def test_decorator_on_non_callable_is_an_error():
    with pytest.raises(TypeError, match="autocast: used as a decorator on a non-callable int"):
        amp.autocast("cpu")(3)


def test_region_dict_is_replaced_not_mutated():
    with amp.autocast("cpu", dtype=cn.float16):
        outer = STATE.autocast
        with amp.autocast("cpu", dtype=cn.bfloat16):
            assert outer == {"cpu": cn.float16}, "an outer snapshot must never change"


def _run_in_thread(fn):
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as error:  # surfaced in the main thread below
            box["error"] = error
    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_worker_thread_starts_with_autocast_off():
    w, x = _weights()
    with amp.autocast("cpu", dtype=cn.float16):
        seen = _run_in_thread(lambda: (amp.is_autocast_enabled("cpu"), STATE.autocast_nesting, (x @ w).dtype))
        assert amp.is_autocast_enabled("cpu")
    assert seen == (False, 0, cn.float32)


def test_state_set_in_thread_never_leaks_out():
    w, x = _weights()

    def worker():
        region = amp.autocast("cpu", dtype=cn.float16)
        region.__enter__()  # NOTE: deliberately never exited: the thread's state must die with it
        x @ w
        return STATE.autocast_nesting, len(STATE.cast_cache)

    assert _run_in_thread(worker) == (1, 1)
    assert _state() == ({}, 0, True, 0)
    assert (x @ w).dtype == cn.float32


@pytest.mark.parametrize("bad, error, message", [
    ("gpu", ValueError, r"autocast: unknown device_type 'gpu'; expected one of \['cpu', 'cuda'\]"),
    ("cuda:0", ValueError, r"autocast: unknown device_type 'cuda:0'"),
    (0, TypeError, r"autocast: device_type must be a string \('cpu' or 'cuda'\), got int 0"),
])
def test_unknown_device_type(bad, error, message):
    with pytest.raises(error, match=message):
        amp.autocast(bad)


@pytest.mark.parametrize("dtype, shown", [
    (cn.int32, "int32"), (cn.float32, "float32"), (cn.float64, "float64"), (cn.bool_, "bool"),
])
def test_dtype_must_be_half(dtype, shown):
    with pytest.raises(ValueError, match=f"autocast: dtype must be float16 or bfloat16, got {shown}"):
        amp.autocast("cpu", dtype=dtype)


def test_unknown_dtype_name():
    with pytest.raises(ValueError, match="autocast: dtype must be float16 or bfloat16, got 'half2'"):
        amp.autocast("cpu", dtype="half2")


def test_bad_flags():
    with pytest.raises(TypeError, match="autocast: enabled must be a bool, got int 1"):
        amp.autocast("cpu", enabled=1)
    with pytest.raises(TypeError, match="autocast: cache_enabled must be a bool or None, got str 'no'"):
        amp.autocast("cpu", cache_enabled="no")


def test_bad_device_type_in_queries():
    with pytest.raises(ValueError, match="is_autocast_enabled: unknown device_type 'tpu'"):
        amp.is_autocast_enabled("tpu")
    with pytest.raises(ValueError, match="get_autocast_dtype: unknown device_type 'xla'"):
        amp.get_autocast_dtype("xla")


def test_cuda_without_gpu_warns_and_disables_like_torch(monkeypatch):
    monkeypatch.setattr(cn.backend, "cuda_available", lambda: False)
    w, x = _weights()
    with pytest.warns(UserWarning, match=r"^CUDA is not available\. Disabling autocast") as record:
        region = amp.autocast("cuda")
    assert record[0].filename == __file__  # NOTE: the warning points at the caller's line
    assert "enabled=False" in repr(region)
    with region:
        assert STATE.autocast == {} and STATE.autocast_nesting == 1
        assert not amp.is_autocast_enabled("cuda")
        assert (x @ w).dtype == cn.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with amp.autocast("cuda", enabled=False):  # switching off a device that is absent is silent
            assert STATE.autocast == {}


def test_torch_also_warns_and_disables_cuda_autocast_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the oracle has CUDA: its warning path cannot be taken")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        region = torch.autocast("cuda")
    assert region._enabled is False


@pytest.fixture
def fake_gpu(monkeypatch):
    """Pretend a GPU of a chosen compute capability and CuPy version is present (construction checks only)."""
    def install(cap, cupy_major=14):
        monkeypatch.setattr(cn.backend, "cuda_available", lambda: True)
        monkeypatch.setattr(capability, "compute_capability", lambda index=0: cap)
        monkeypatch.setattr(capability, "cupy_major_version", lambda: cupy_major)
    return install


def test_float16_on_old_gpu_is_rejected(fake_gpu):
    fake_gpu((5, 0))
    with pytest.raises(RuntimeError, match=r"autocast: float16 needs a GPU of compute capability >= 5.3, "
                                           r"but cuda:0 has 5.0"):
        amp.autocast("cuda", dtype=cn.float16)


def test_bfloat16_before_ampere_is_rejected(fake_gpu):
    fake_gpu((7, 5))
    amp.autocast("cuda", dtype=cn.float16)  # fine on a Turing GPU
    with pytest.raises(RuntimeError, match=r"autocast: bfloat16 needs a GPU of compute capability >= 8.0, "
                                           r"but cuda:0 has 7.5; use dtype=float16"):
        amp.autocast("cuda", dtype=cn.bfloat16)


def test_bfloat16_with_cupy_13_is_rejected(fake_gpu):
    fake_gpu((9, 0), cupy_major=13)
    with pytest.raises(RuntimeError, match=r"autocast: bfloat16 needs CuPy >= 14 \(ml_dtypes support\), but "
                                           r"CuPy 13.x is installed"):
        amp.autocast("cuda", dtype=cn.bfloat16)


def test_regions_for_two_devices_nest_independently(fake_gpu):
    w, x = _weights()  # NOTE: before faking the GPU, or the default device would become cuda
    fake_gpu((9, 0))
    with amp.autocast("cuda"):
        assert STATE.autocast == {"cuda": cn.float16}
        assert (x @ w).dtype == cn.float32, "a cuda region leaves cpu tensors alone"
        with amp.autocast("cpu", dtype=cn.bfloat16):
            assert STATE.autocast == {"cuda": cn.float16, "cpu": cn.bfloat16}
            assert (x @ w).dtype == cn.bfloat16
            with amp.autocast("cuda", enabled=False):
                assert STATE.autocast == {"cpu": cn.bfloat16}
            assert amp.is_autocast_enabled("cuda")
        assert STATE.autocast == {"cuda": cn.float16}


def test_supports_on_cpu():
    assert amp.supports_fp16("cpu") and amp.supports_bf16("cpu")


def test_supports_from_capability(fake_gpu, monkeypatch):
    monkeypatch.setattr(capability.backend, "device", lambda spec: cn.backend.Device("cpu") if spec == "cpu"
                        else _FakeCuda())
    fake_gpu((7, 0))
    assert amp.supports_fp16("cuda") and not amp.supports_bf16("cuda")
    fake_gpu((8, 0), cupy_major=13)
    assert not amp.supports_bf16("cuda")
    fake_gpu((8, 0), cupy_major=14)
    assert amp.supports_bf16("cuda")
    fake_gpu((5, 2))
    assert not amp.supports_fp16(0)


class _FakeCuda:
    type, index = "cuda", 0


def test_autocast_repr():
    assert repr(amp.autocast("cpu", dtype=cn.float16)) == ("autocast(device_type='cpu', dtype=float16, "
                                                          "enabled=True, cache_enabled=True)")


# ---- one autocast object entered in two threads (issue 16) ---------------------------------------------------
def _two_threads_one_region(lib, shared: bool, a_exits_first: bool):
    """Thread A enters a float16 region; thread B, inside its own bfloat16 region with the cache off, enters it
    too; then one thread leaves while the other is still inside. Events force the order (no sleeps).

    ``lib`` is ``"cupynet"`` or ``"torch"``; ``shared`` enters ONE region object in both threads, else each
    thread makes its own (the oracle: nothing shared between the threads). Returns what each thread saw:
    ``(autocast enabled, dtype, cache enabled)`` on the cpu, by step name.
    """
    if lib == "torch":
        torch = pytest.importorskip("torch")
        make = lambda dtype, cache: torch.autocast("cpu", dtype=getattr(torch, dtype), cache_enabled=cache)  # noqa: E731
        seen = lambda: (torch.is_autocast_enabled("cpu"), str(torch.get_autocast_dtype("cpu")).replace("torch.", ""),  # noqa: E731
                        torch.is_autocast_cache_enabled())
    else:
        make = lambda dtype, cache: amp.autocast("cpu", dtype=getattr(cn, dtype), cache_enabled=cache)  # noqa: E731
        seen = lambda: (amp.is_autocast_enabled("cpu"), str(amp.get_autocast_dtype("cpu")),  # noqa: E731
                        STATE.autocast_cache_enabled)
    region = make("float16", True)
    the_region = (lambda: region) if shared else (lambda: make("float16", True))
    a_in, b_in, first_out, timeout = threading.Event(), threading.Event(), threading.Event(), 30
    out = {"A": {}, "B": {}}

    def wait(event):
        assert event.wait(timeout), "the other thread never got there"

    def thread_a():
        out["A"]["before"] = seen()
        with the_region():
            out["A"]["inside"] = seen()
            a_in.set()
            wait(b_in)
            if not a_exits_first:
                wait(first_out)
        out["A"]["after"] = seen()
        first_out.set()

    def thread_b():
        wait(a_in)
        with make("bfloat16", False):
            out["B"]["outer"] = seen()
            with the_region():
                out["B"]["inside"] = seen()
                b_in.set()
                if a_exits_first:
                    wait(first_out)
            out["B"]["after inner"] = seen()
            first_out.set()
        out["B"]["after"] = seen()

    errors = []

    def run(fn):
        def target():
            try:
                fn()
            except BaseException as error:  # surfaced in the main thread below
                errors.append(error)
                a_in.set(), b_in.set(), first_out.set()  # let the other thread finish
        return threading.Thread(target=target)

    threads = [run(thread_a), run(thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


@pytest.mark.parametrize("a_exits_first", [True, False], ids=["A-leaves-first", "B-leaves-first"])
def test_one_region_object_entered_in_two_threads_restores_each_threads_state(a_exits_first):
    off, f16, bf16_nocache = (False, "bfloat16", True), (True, "float16", True), (True, "bfloat16", False)
    expected = {"A": {"before": off, "inside": f16, "after": off},
                "B": {"outer": bf16_nocache, "inside": f16, "after inner": bf16_nocache, "after": off}}
    assert _two_threads_one_region("cupynet", shared=True, a_exits_first=a_exits_first) == expected
    assert _two_threads_one_region("cupynet", shared=False, a_exits_first=a_exits_first) == expected
    assert STATE.autocast_nesting == 0 and STATE.autocast == {}


@pytest.mark.parametrize("a_exits_first", [True, False], ids=["A-leaves-first", "B-leaves-first"])
def test_one_region_object_in_two_threads_sees_what_torch_sees_with_one_object_per_thread(a_exits_first):
    # NOTE: torch's own autocast keeps the saved state on the instance, so ONE torch object shared by two threads
    # leaves a thread with autocast on (docs/differences.md); its per-thread objects are the oracle here.
    theirs = _two_threads_one_region("torch", shared=False, a_exits_first=a_exits_first)
    assert _two_threads_one_region("cupynet", shared=True, a_exits_first=a_exits_first) == theirs


def test_exit_in_a_thread_that_did_not_enter_is_an_error():
    region = amp.autocast("cpu", dtype=cn.float16)
    with region:
        with pytest.raises(RuntimeError, match="autocast: __exit__ in a thread that did not enter this region"):
            _run_in_thread(lambda: region.__exit__(None, None, None))
        assert STATE.autocast == {"cpu": cn.float16}

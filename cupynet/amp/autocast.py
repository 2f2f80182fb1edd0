"""``autocast``: regions in which each op runs in the dtype its AMP policy asks for.

The state lives in ``cupynet.autograd.state.STATE`` (thread-local), and the
casting itself is done by one function, ``cupynet.amp.policy.apply_cast_policy``,
called from ``Function.apply``. This module only opens and closes regions:

* entering saves (the region dict, the cache flag), counts one more nesting
  level (disabled regions count too), and installs a *new* dict with this
  device's entry set (enabled) or removed (``enabled=False``);
* leaving, also when the body raised, puts the saved values back exactly, and
  when the outermost region closes the weight-cast cache is emptied.

What a region saved is kept in the thread's own ``STATE.autocast_saved``, not on
the ``autocast`` object, so one object (a module-level region, a decorator) may
be entered in several threads at once: each thread gets its own state back.

The dict is replaced, never mutated, so a snapshot taken by an op
(``ctx.autocast_snapshot``) or by an outer region can never change under it.
"""

from __future__ import annotations

import functools
import warnings

from .. import backend, dtypes
from ..autograd.state import STATE
from ..cuda import capability

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "DEVICE_TYPES", "default_autocast_dtype"]

DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPE = {"cuda": dtypes.float16, "cpu": dtypes.bfloat16}


def default_autocast_dtype(device_type: str):
    """The dtype autocast uses when none is given: float16 on cuda, bfloat16 on cpu (as PyTorch).

    Args:
        device_type: ``"cpu"`` or ``"cuda"``.
    """
    return _DEFAULT_DTYPE[check_device_type(device_type, "default_autocast_dtype")]


def check_device_type(device_type, caller: str = "autocast") -> str:
    """Validate a device type ('cpu' or 'cuda'); None means the default device's type.

    Args:
        device_type: ``"cpu"``, ``"cuda"`` or None.
        caller: the function name, for the error message.
    """
    if device_type is None:
        return backend.default_device().type
    if not isinstance(device_type, str):
        raise TypeError(f"{caller}: device_type must be a string ('cpu' or 'cuda'), got "
                        f"{type(device_type).__name__} {device_type!r}")
    if device_type not in DEVICE_TYPES:
        raise ValueError(f"{caller}: unknown device_type {device_type!r}; expected one of {list(DEVICE_TYPES)} "
                         "(a device type, without an index such as ':0')")
    return device_type


def _check_dtype(dtype, device_type: str):
    if dtype is None:
        return _DEFAULT_DTYPE[device_type]
    try:
        d = dtypes.as_dtype(dtype)
    except TypeError as error:
        raise ValueError(f"autocast: dtype must be float16 or bfloat16, got {dtype!r} ({error})") from None
    if d not in dtypes.LOW_PRECISION:
        raise ValueError(f"autocast: dtype must be float16 or bfloat16, got {d}")
    return d


def _usable(device_type: str, dtype) -> bool:
    """Whether an enabled region can run on ``device_type``: False (with PyTorch's warning) without CUDA.

    NOTE: as ``torch.autocast("cuda")`` on a machine without CUDA: a warning, then a disabled region,
    so one script runs on both kinds of machine. A GPU that cannot run ``dtype`` is still an error.
    """
    if device_type != "cuda":
        return True
    if not backend.cuda_available():
        warnings.warn("CUDA is not available. Disabling autocast (device_type 'cuda' was requested, but CuPy is "
                      "not installed or cupy.cuda.is_available() is False).", UserWarning, stacklevel=3)
        return False
    reason = capability.unsupported_reason(device_type, dtype)
    if reason is not None:
        raise RuntimeError(f"autocast: {reason}")
    return True


class _Saved:
    """What entering a region replaced, to be put back on exit."""

    __slots__ = ("autocast", "cache_enabled")

    def __init__(self):
        self.autocast, self.cache_enabled = STATE.autocast, STATE.autocast_cache_enabled


def push_region(region: dict, cache_enabled: bool) -> _Saved:
    """Install ``region`` (device type -> dtype) and the cache flag; count one nesting level.

    Args:
        region: the new autocast dict (it is installed as given: do not mutate it afterwards).
        cache_enabled: whether the weight-cast cache is used inside.
    """
    saved = _Saved()
    STATE.autocast_nesting += 1
    STATE.autocast, STATE.autocast_cache_enabled = region, cache_enabled
    return saved


def pop_region(saved: _Saved):
    """Undo ``push_region``: restore the saved state; clear the cast cache at the outermost exit.

    Args:
        saved: what ``push_region`` returned.
    """
    STATE.autocast, STATE.autocast_cache_enabled = saved.autocast, saved.cache_enabled
    STATE.autocast_nesting -= 1
    if STATE.autocast_nesting <= 0:
        STATE.autocast_nesting = 0
        # NOTE: the cache holds fp16/bf16 copies of every weight; keeping them past
        # the outermost region would pin that memory and serve stale casts.
        STATE.cast_cache.clear()


class autocast:  # noqa: N801 - PyTorch's name
    """Context manager and decorator: ops inside run in the dtypes their AMP policy asks for.

    ``lower`` ops (matmul, linear, conv, ...) cast floating inputs to ``dtype``;
    ``fp32`` ops (exp, log, softmax, losses, norms, sums) to float32; ``promote``
    ops to the widest input dtype; other ops run in their input dtypes. Gradients
    come back to fp32 parameters as fp32. State is per thread; regions nest.

    Args:
        device_type: ``"cpu"`` or ``"cuda"`` (default: the default device's type). ``"cuda"`` without a
            usable GPU warns and disables the region, as in PyTorch.
        dtype: float16 or bfloat16 (default: float16 on cuda, bfloat16 on cpu).
        enabled: False opens a region with autocast off for this device (nested regions count too).
        cache_enabled: cache the cast of each fp32 weight for the outermost region (None: keep the current
            setting).
    """

    def __init__(self, device_type=None, dtype=None, enabled=True, cache_enabled=True):
        device_type = check_device_type(device_type)
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {type(enabled).__name__} {enabled!r}")
        if cache_enabled is not None and not isinstance(cache_enabled, bool):
            raise TypeError(f"autocast: cache_enabled must be a bool or None, got {type(cache_enabled).__name__} "
                            f"{cache_enabled!r}")
        fast_dtype = _check_dtype(dtype, device_type)
        if enabled:
            enabled = _usable(device_type, fast_dtype)
        self.device = device_type
        self.fast_dtype = fast_dtype
        self._enabled = enabled
        self._cache_enabled = cache_enabled

    def __enter__(self):
        region = dict(STATE.autocast)
        if self._enabled:
            region[self.device] = self.fast_dtype
        else:
            region.pop(self.device, None)
        cache = STATE.autocast_cache_enabled if self._cache_enabled is None else self._cache_enabled
        STATE.autocast_saved.append((self, push_region(region, cache)))
        return self

    def __exit__(self, exc_type, exc, tb):
        pop_region(self._take_saved())
        return False

    def _take_saved(self) -> _Saved:
        """Remove and return what this object's innermost entry saved in this thread.

        NOTE: searched from the top, not just popped: with-blocks always leave the top entry, but a
        generator suspended inside a region can make regions of one thread close out of order.
        """
        stack = STATE.autocast_saved
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is self:
                return stack.pop(i)[1]
        raise RuntimeError("autocast: __exit__ in a thread that did not enter this region (or left it already); "
                           "enter and leave a region in the same thread")

    def __call__(self, func):
        """Decorate ``func`` so each call runs inside a region with these settings (recursion and threads too).

        Args:
            func: the function to wrap.
        """
        if not callable(func):
            raise TypeError(f"autocast: used as a decorator on a non-callable {type(func).__name__}")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast

    def __repr__(self):
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled}, "
                f"cache_enabled={self._cache_enabled})")


def is_autocast_enabled(device_type=None) -> bool:
    """True when this thread is inside an enabled autocast region for ``device_type``.

    Args:
        device_type: ``"cpu"`` or ``"cuda"`` (default: the default device's type).
    """
    return check_device_type(device_type, "is_autocast_enabled") in STATE.autocast


def get_autocast_dtype(device_type):
    """The dtype autocast lowers to on ``device_type``: the enclosing region's, else the default one.

    Args:
        device_type: ``"cpu"`` or ``"cuda"``.
    """
    device_type = check_device_type(device_type, "get_autocast_dtype")
    return STATE.autocast.get(device_type, _DEFAULT_DTYPE[device_type])

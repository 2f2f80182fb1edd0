"""Process-wide switches PyTorch scripts set at the top: matmul precision, determinism, threads, printing.

cupynet accepts each of them with PyTorch's names and checks, and records it; what each one
changes in cupynet is written on the function (often nothing: NumPy and CuPy do not expose the
knob, and cupynet never picks a non-deterministic algorithm). ``compile`` is here too: cupynet has
no compiler and runs every model eagerly. docs/pytorch_compat.md lists them.
"""

from __future__ import annotations

import math
import os
import threading

import numpy

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_num_threads", "get_num_threads", "set_printoptions", "print_options", "compile"]

_MATMUL_PRECISIONS = ("highest", "high", "medium")
_PROFILES = {"default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},  # torch's defaults
             "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
             "full": {"precision": 4, "threshold": numpy.inf, "edgeitems": 3, "linewidth": 80}}


class _Settings:
    """The recorded values (one per process, as PyTorch's globals); a lock keeps writes whole."""

    def __init__(self):
        self.lock = threading.Lock()
        self.matmul_precision = "highest"
        self.deterministic = (False, False)
        self.num_threads = None
        self.print_options = dict(_PROFILES["default"], sci_mode=None)


_SETTINGS = _Settings()


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision: ``"highest"`` (fp32), ``"high"`` (TF32 allowed), ``"medium"``.

    NOTE: cupynet does not switch cuBLAS' compute type: CuPy takes TF32 from its own ``CUPY_TF32=1``
    environment variable at start. The value is kept for ``get_float32_matmul_precision`` and
    ``cupynet.backends.cuda.matmul.allow_tf32``, which mirror it as in PyTorch.

    Args:
        precision: ``"highest"``, ``"high"`` or ``"medium"``.
    """
    if precision not in _MATMUL_PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of {list(_MATMUL_PRECISIONS)}, "
                         f"got {precision!r}")
    with _SETTINGS.lock:
        _SETTINGS.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set (``"highest"`` at start)."""
    return _SETTINGS.matmul_precision


def _check_bool(value, caller: str, name: str):
    if not isinstance(value, bool):
        raise TypeError(f"{caller}: {name} must be a bool, got {type(value).__name__} {value!r}")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record whether deterministic algorithms are required.

    NOTE: every cupynet op is deterministic on the CPU; on the GPU its reductions and atomics-free
    kernels are too, so nothing changes either way (the value is kept for the question below).

    Args:
        mode: True to require deterministic algorithms.
        warn_only: warn instead of raising where an op has none (never happens in cupynet).
    """
    _check_bool(mode, "use_deterministic_algorithms", "mode")
    _check_bool(warn_only, "use_deterministic_algorithms", "warn_only")
    with _SETTINGS.lock:
        _SETTINGS.deterministic = (mode, warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` was set."""
    return _SETTINGS.deterministic[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(..., warn_only=True)`` was set."""
    return _SETTINGS.deterministic[1]


def set_num_threads(num: int) -> None:
    """Record the number of CPU threads for intra-op work.

    NOTE: NumPy's BLAS fixes its thread count at start (``OMP_NUM_THREADS``); cupynet records the
    value for ``get_num_threads`` and does not resize a running BLAS pool.

    Args:
        num: a positive integer.
    """
    if not isinstance(num, int) or isinstance(num, bool) or num < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num!r}")
    with _SETTINGS.lock:
        _SETTINGS.num_threads = num


def get_num_threads() -> int:
    """The thread count last set, else ``OMP_NUM_THREADS``, else the CPUs this process may use."""
    if _SETTINGS.num_threads is not None:
        return _SETTINGS.num_threads
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print (``Tensor.__repr__`` / ``str``), as ``torch.set_printoptions``; NumPy's own options
    are left alone.

    As in PyTorch, the options not given keep their values, except ``sci_mode``, which every call sets (None
    when not given).

    Args:
        precision: digits after the point (default 4).
        threshold: number of elements above which the print is summarised (default 1000).
        edgeitems: items shown at each edge of a summarised dimension (default 3).
        linewidth: characters per line (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``: a preset of the four above, applied first. Any other
            string is ignored, as PyTorch ignores it (YOLOv5 passes ``"long"``); a non-string is a TypeError.
        sci_mode: True for scientific notation always, False never, None: chosen from the values (as PyTorch:
            when the largest magnitude is at least 1e8, the smallest non-zero one below 1e-4, or their ratio
            above 1000).
    """
    options = {}
    if profile is not None:
        if not isinstance(profile, str):
            raise TypeError(f"set_printoptions: profile must be a string such as {list(_PROFILES)}, got {profile!r}")
        options.update(_PROFILES.get(profile, {}))  # NOTE: an unknown profile changes nothing, as in PyTorch
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or \
                    (isinstance(value, float) and value != math.inf):
                raise ValueError(f"set_printoptions: {name} must be a non-negative integer, got {value!r}")
            options[name] = value
    if sci_mode is not None:
        _check_bool(sci_mode, "set_printoptions", "sci_mode")
    with _SETTINGS.lock:
        _SETTINGS.print_options.update(options, sci_mode=sci_mode)


def print_options() -> dict:
    """The print options tensors use now (a copy): ``precision``, ``threshold``, ``edgeitems``, ``linewidth``,
    ``sci_mode``."""
    with _SETTINGS.lock:
        return dict(_SETTINGS.print_options)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """``torch.compile``: cupynet has no compiler, so the model (or function) comes back as it is.

    Everything runs eagerly, as in PyTorch with ``disable=True``; the arguments are accepted for
    scripts written for torch and otherwise ignored. Used without a model it returns a decorator.

    Args:
        model: a Module or function (None: return a decorator).
        fullgraph: ignored.
        dynamic: ignored.
        backend: ignored.
        mode: ignored.
        options: ignored.
        disable: ignored (cupynet behaves as if True).
    """
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"compile: a callable model or function is expected, got {type(model).__name__}")
    return model

"""Is a GPU usable, how many, what are they; and the one place the kernel launchers get CuPy from."""

from __future__ import annotations

import threading

import numpy

from cupynet import backend, random
from cupynet.backend import cuda_available, cupy_or_none

__all__ = ["is_available", "is_initialized", "device_count", "current_device", "get_device_name",
           "get_device_capability", "synchronize", "manual_seed", "manual_seed_all", "cupy", "cupyx", "cublas",
           "constant", "scratch"]


def is_available() -> bool:
    """True when CuPy imports and a CUDA device is usable."""
    return cuda_available()


def device_count() -> int:
    """Number of visible CUDA devices (0 without CuPy or a GPU)."""
    module = cupy_or_none()
    return 0 if module is None else int(module.cuda.runtime.getDeviceCount())


def is_initialized() -> bool:
    """True when a GPU is usable (CuPy initialises CUDA when asked whether one is)."""
    return cuda_available()


def current_device() -> int:
    """The index of the current GPU; a RuntimeError without one (as PyTorch)."""
    module = cupy_or_none()
    if module is None:
        raise RuntimeError("current_device: no CUDA device is usable (CuPy missing or cupy.cuda.is_available() "
                           "is False)")
    return int(module.cuda.runtime.getDevice())


def manual_seed(seed: int):
    """Seed the GPU generators only (the CPU one keeps its state); recorded, and harmless, without a GPU.

    Args:
        seed: a non-negative integer.
    """
    random.seed_gpus(seed)


def manual_seed_all(seed: int):
    """Seed the generators of every GPU (cupynet's GPU generators are seeded together, as ``manual_seed``).

    Args:
        seed: a non-negative integer.
    """
    random.seed_gpus(seed)


def _properties(index):
    module = cupy_or_none()
    if module is None:
        raise RuntimeError("no CUDA device is usable (CuPy missing or cupy.cuda.is_available() is False)")
    return module.cuda.runtime.getDeviceProperties(index)


def get_device_name(device=0) -> str:
    """The GPU's name, e.g. 'NVIDIA H100 80GB HBM3'.

    Args:
        device: the GPU index.
    """
    name = _properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=0) -> tuple:
    """The compute capability as (major, minor).

    Args:
        device: the GPU index.
    """
    props = _properties(device)
    return int(props["major"]), int(props["minor"])


def synchronize():
    """Wait for all work on the current GPU (a no-op on the CPU)."""
    module = cupy_or_none()
    if module is not None:
        module.cuda.Device().synchronize()


def cupy():
    """The ``cupy`` module, for the kernel launchers: every launcher of cupynet gets CuPy here.

    NOTE: one function, looked up as ``device.cupy()`` at every use, so that the kernel
    tests' harness (tests/cuda_emulation) can put its guarded CuPy in place at exactly this
    boundary and run the real launchers. The emulated CUDA device needs no swap: it is what
    ``cupy_or_none`` returns under ``CUPYNET_DEVICE=cuda-emulated``.
    """
    module = cupy_or_none()
    if module is None:  # NOTE: unreachable through the public functions, which send NumPy arrays to the references
        raise RuntimeError("cupynet.cuda: CuPy with a usable CUDA device is required to launch a kernel")
    return module


def cupyx():
    """The ``cupyx`` module (``scatter_add``, ``scipy.special``...): the emulated one on the emulated device."""
    if backend.emulating():
        from cupynet.cuda import emulated  # noqa: PLC0415

        return emulated.cupyx()
    import cupyx as module  # noqa: PLC0415 - CuPy only

    return module


def cublas():
    """CuPy's low-level cuBLAS bindings (``cupy_backends.cuda.libs.cublas``), or the emulated device's GEMM."""
    if backend.emulating():
        from cupynet.cuda import emulated  # noqa: PLC0415

        return emulated.cublas()
    from cupy_backends.cuda.libs import cublas as module  # noqa: PLC0415 - CuPy only

    return module


_constants: dict = {}
_lock = threading.Lock()


def _cached(key, make):
    with _lock:
        if key not in _constants:
            _constants[key] = make()
        return _constants[key]


def constant(dtype, value):
    """A one-element device array holding ``value`` that kernels only read (made once per device).

    Args:
        dtype: its NumPy dtype.
        value: its value.
    """
    module = cupy()
    return _cached((module.cuda.runtime.getDevice(), "constant", numpy.dtype(dtype), value),
                   lambda: module.full((1,), value, dtype=dtype))


def scratch(name: str):
    """A zeroed one-element int32 device array a kernel may write, standing in for an absent output.

    NOTE: shared by every call that asks for the same ``name`` on a device, so only
    pass it where nobody reads what a kernel writes into it.

    Args:
        name: what it stands for, e.g. ``"min_hit"`` (one array per name and device).
    """
    module = cupy()
    return _cached((module.cuda.runtime.getDevice(), "scratch", name), lambda: module.zeros((1,), dtype=numpy.int32))

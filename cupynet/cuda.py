"""``cupynet.cuda``: is a GPU usable, how many, what are they."""

from __future__ import annotations

from .backend import cuda_available, cupy_or_none

__all__ = ["is_available", "device_count", "get_device_name", "get_device_capability", "synchronize"]


def is_available() -> bool:
    """True when CuPy imports and a CUDA device is usable.

    Args:
        None.
    """
    return cuda_available()


def device_count() -> int:
    """Number of visible CUDA devices (0 without CuPy or a GPU).

    Args:
        None.
    """
    cupy = cupy_or_none()
    return 0 if cupy is None else int(cupy.cuda.runtime.getDeviceCount())


def _properties(index):
    cupy = cupy_or_none()
    if cupy is None:
        raise RuntimeError("no CUDA device is usable (CuPy missing or cupy.cuda.is_available() is False)")
    return cupy.cuda.runtime.getDeviceProperties(index)


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
    """Wait for all work on the current GPU (a no-op on the CPU).

    Args:
        None.
    """
    cupy = cupy_or_none()
    if cupy is not None:
        cupy.cuda.Device().synchronize()

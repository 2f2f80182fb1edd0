"""``torch.accelerator``: which accelerator this process has (cupynet: CUDA through CuPy, or none)."""

from __future__ import annotations

from cupynet import backend, cuda

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index", "synchronize"]


def is_available() -> bool:
    """True when a CUDA device is usable."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """The accelerator's device (``device(type='cuda')``), or None without one.

    Args:
        check_available: as PyTorch: also None when the accelerator exists but is not usable (the same in
            cupynet, which only sees usable GPUs).
    """
    if not isinstance(check_available, bool):
        raise TypeError(f"current_accelerator: check_available must be a bool, got {check_available!r}")
    return backend.device("cuda") if is_available() else None


def device_count() -> int:
    """The number of usable GPUs (0 without one)."""
    return cuda.device_count() if is_available() else 0


def current_device_index() -> int:
    """The current GPU's index; a RuntimeError without one."""
    return cuda.current_device()


def synchronize(device=None) -> None:
    """Wait for the GPU's work to finish (a no-op without one).

    Args:
        device: ignored beyond the current GPU (cupynet syncs the current device).
    """
    cuda.synchronize()

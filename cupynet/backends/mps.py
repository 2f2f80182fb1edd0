"""``torch.backends.mps``: Apple's GPU backend, which cupynet does not have."""

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: cupynet runs on NumPy (CPU) and CuPy (NVIDIA GPUs) only."""
    return False


def is_built() -> bool:
    """False: cupynet has no MPS backend."""
    return False

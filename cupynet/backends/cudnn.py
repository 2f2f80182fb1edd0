"""``torch.backends.cudnn``: settings recorded for scripts that set them; cupynet uses no cuDNN.

Convolutions are im2col + GEMM (CuPy 14 has no cuDNN), so ``benchmark`` (autotuning),
``deterministic`` and ``allow_tf32`` change nothing: cupynet's convolutions are deterministic and
their GEMMs follow CuPy's TF32 setting. Assigning a non-bool is a TypeError.
"""

import sys

from cupynet.backends._flags import FlagModule

__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32"]

FLAGS = ("enabled", "benchmark", "deterministic", "allow_tf32")
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: cupynet does not use cuDNN."""
    return False


def version():
    """None: no cuDNN is loaded (as PyTorch answers without one)."""
    return None


sys.modules[__name__].__class__ = FlagModule

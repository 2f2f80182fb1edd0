"""Which half-precision dtypes a device can run: ``supports_fp16`` / ``supports_bf16``, and why not.

On the CPU both are supported: NumPy computes half math in fp32 and rounds,
and ``ml_dtypes`` (a cupynet dependency) provides bfloat16. On a GPU the
answer comes from the compute capability (fp16 arithmetic from sm_53, bf16
from sm_80, as in PyTorch's ``torch.cuda.is_bf16_supported``) and, for bf16,
from the CuPy version: CuPy understands ml_dtypes' bfloat16 only from 14.

These are device questions, so they live in the device layer; ``cupynet.amp``
re-exports ``supports_fp16`` / ``supports_bf16`` and asks ``unsupported_reason``
before it opens a cuda autocast region.
"""

from __future__ import annotations

from cupynet import backend
from cupynet.cuda.device import get_device_capability

__all__ = ["supports_fp16", "supports_bf16", "is_bf16_supported", "compute_capability", "cupy_major_version",
           "unsupported_reason", "FP16_MIN_CAPABILITY", "BF16_MIN_CAPABILITY", "BF16_MIN_CUPY"]

FP16_MIN_CAPABILITY = (5, 3)
BF16_MIN_CAPABILITY = (8, 0)
BF16_MIN_CUPY = 14


def _resolve(device):
    """The Device meant by ``device`` (None: the default device; an int: that GPU)."""
    if device is None:
        return backend.default_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return backend.device(f"cuda:{device}")
    return backend.device(device)


def compute_capability(index: int = 0) -> tuple:
    """The (major, minor) compute capability of CUDA device ``index``.

    Args:
        index: the GPU index.
    """
    return get_device_capability(index)


def cupy_major_version() -> int:
    """The major version of the installed CuPy (0 when CuPy is not importable)."""
    cupy = backend.cupy_or_none()
    if cupy is None:
        return 0
    return int(str(cupy.__version__).split(".")[0])


def _supports(device, min_capability, min_cupy=0) -> bool:
    """True on the CPU; on a GPU, when its compute capability and the CuPy major version reach the minimums."""
    dev = _resolve(device)
    if dev.type == "cpu":
        return True
    return compute_capability(dev.index or 0) >= min_capability and cupy_major_version() >= min_cupy


def supports_fp16(device=None) -> bool:
    """True when ``device`` can run float16 math (CPU: always; GPU: compute capability >= 5.3).

    Args:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, a GPU index, a ``Device``, or None for the default device.
    """
    return _supports(device, FP16_MIN_CAPABILITY)


def supports_bf16(device=None) -> bool:
    """True when ``device`` can run bfloat16 math (CPU: always; GPU: capability >= 8.0 and CuPy >= 14).

    Args:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, a GPU index, a ``Device``, or None for the default device.
    """
    return _supports(device, BF16_MIN_CAPABILITY, BF16_MIN_CUPY)


def is_bf16_supported() -> bool:
    """True when the current GPU can run bfloat16 (``torch.cuda.is_bf16_supported``); False without a GPU."""
    return backend.cuda_available() and bool(supports_bf16("cuda"))


def unsupported_reason(device_type: str, dtype) -> str | None:
    """Why ``dtype`` cannot run on the ``device_type`` device, or None when it can.

    Args:
        device_type: ``"cpu"`` or ``"cuda"``.
        dtype: float16 or bfloat16 (a NumPy dtype).
    """
    if device_type == "cpu":
        return None
    dev = "cuda:0"
    cap = compute_capability(0)
    if dtype.name == "float16" and cap < FP16_MIN_CAPABILITY:
        return (f"float16 needs a GPU of compute capability >= {_fmt(FP16_MIN_CAPABILITY)}, "
                f"but {dev} has {_fmt(cap)}")
    if dtype.name == "bfloat16":
        if cap < BF16_MIN_CAPABILITY:
            return (f"bfloat16 needs a GPU of compute capability >= {_fmt(BF16_MIN_CAPABILITY)}, "
                    f"but {dev} has {_fmt(cap)}; use dtype=float16")
        if cupy_major_version() < BF16_MIN_CUPY:
            return (f"bfloat16 needs CuPy >= {BF16_MIN_CUPY} (ml_dtypes support), but CuPy "
                    f"{cupy_major_version()}.x is installed; upgrade CuPy or use dtype=float16")
    return None


def _fmt(cap) -> str:
    return f"{cap[0]}.{cap[1]}"

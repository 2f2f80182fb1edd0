"""``torch.backends.cuda``: ``matmul.allow_tf32`` and friends, and ``is_built``.

``matmul.allow_tf32`` mirrors ``cupynet.get_float32_matmul_precision()`` as in PyTorch (True is
``"high"``, False ``"highest"``). cupynet records it; CuPy's GEMMs take TF32 from ``CUPY_TF32``.
The reduced-precision-reduction flags are recorded too (cupynet's fp16/bf16 GEMMs accumulate in fp32).
"""

from __future__ import annotations

from cupynet import settings
from cupynet.backend import cupy_or_none

__all__ = ["matmul", "is_built"]


def _check(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"torch.backends.cuda.matmul.{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


class _MatmulSettings:
    """``torch.backends.cuda.matmul``: the TF32 and reduced-precision-reduction switches."""

    __slots__ = ("_fp16_reduction", "_bf16_reduction")

    def __init__(self):
        self._fp16_reduction, self._bf16_reduction = True, True

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matmuls may use TF32 (``get_float32_matmul_precision() != "highest"``)."""
        return settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        settings.set_float32_matmul_precision("high" if _check("allow_tf32", value) else "highest")

    @property
    def allow_fp16_reduced_precision_reduction(self) -> bool:
        """Recorded only: cupynet's float16 GEMMs always accumulate in float32."""
        return self._fp16_reduction

    @allow_fp16_reduced_precision_reduction.setter
    def allow_fp16_reduced_precision_reduction(self, value):
        self._fp16_reduction = _check("allow_fp16_reduced_precision_reduction", value)

    @property
    def allow_bf16_reduced_precision_reduction(self) -> bool:
        """Recorded only: cupynet's bfloat16 GEMMs always accumulate in float32."""
        return self._bf16_reduction

    @allow_bf16_reduced_precision_reduction.setter
    def allow_bf16_reduced_precision_reduction(self, value):
        self._bf16_reduction = _check("allow_bf16_reduced_precision_reduction", value)


matmul = _MatmulSettings()


def is_built() -> bool:
    """True when CuPy imports with a usable GPU (cupynet's CUDA backend is CuPy)."""
    return cupy_or_none() is not None

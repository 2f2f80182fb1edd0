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


def _recorded(name, dtype_name):
    """A bool switch that is only recorded (kept in the slot ``_<name>``): the GEMMs accumulate in float32."""
    slot = "_" + name

    def get(self) -> bool:
        return getattr(self, slot)

    def set_(self, value):
        setattr(self, slot, _check(name, value))

    return property(get, set_, doc=f"Recorded only: cupynet's {dtype_name} GEMMs always accumulate in float32.")


class _MatmulSettings:
    """``torch.backends.cuda.matmul``: the TF32 and reduced-precision-reduction switches."""

    __slots__ = ("_allow_fp16_reduced_precision_reduction", "_allow_bf16_reduced_precision_reduction")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, True)

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matmuls may use TF32 (``get_float32_matmul_precision() != "highest"``)."""
        return settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        settings.set_float32_matmul_precision("high" if _check("allow_tf32", value) else "highest")

    allow_fp16_reduced_precision_reduction = _recorded("allow_fp16_reduced_precision_reduction", "float16")
    allow_bf16_reduced_precision_reduction = _recorded("allow_bf16_reduced_precision_reduction", "bfloat16")


matmul = _MatmulSettings()


def is_built() -> bool:
    """True when CuPy imports with a usable GPU (cupynet's CUDA backend is CuPy)."""
    return cupy_or_none() is not None

"""The dtype and device shortcuts of ``Tensor`` (``.half()``, ``.cuda()``, ...): each is ``self.to(...)``."""

from __future__ import annotations

from . import dtypes

__all__ = ["TensorConversions"]


class TensorConversions:
    """Mixin of ``Tensor``: PyTorch's one-word conversions, all defined through ``Tensor.to``."""

    __slots__ = ()

    def cpu(self):
        """A copy on the CPU (self if already there)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """A copy on the GPU (a clear error where none is usable).

        Args:
            device: GPU index or name; default cuda:0.
        """
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def half(self):
        """Cast to float16."""
        return self.to(dtypes.float16)

    def float(self):
        """Cast to float32."""
        return self.to(dtypes.float32)

    def double(self):
        """Cast to float64."""
        return self.to(dtypes.float64)

    def bfloat16(self):
        """Cast to bfloat16."""
        return self.to(dtypes.bfloat16)

    def long(self):
        """Cast to int64."""
        return self.to(dtypes.int64)

    def int(self):
        """Cast to int32."""
        return self.to(dtypes.int32)

    def bool(self):
        """Cast to bool."""
        return self.to(dtypes.bool_)

    def type(self, dtype=None):
        """The dtype name, or a cast when a dtype is given.

        Args:
            dtype: the target dtype, or None.
        """
        return str(self.dtype) if dtype is None else self.to(dtype)

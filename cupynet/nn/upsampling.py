"""Upsampling layers: ``Upsample`` (``F.interpolate``), ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``."""

from __future__ import annotations

from . import functional as F
from .linear import check_input
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resize the spatial dims (``F.interpolate`` as a layer).

    Args:
        size: the output spatial size.
        scale_factor: multiplier of the spatial size.
        mode: "nearest", "nearest-exact", "linear", "bilinear", "bicubic" or "trilinear".
        align_corners: for the interpolating modes.
        recompute_scale_factor: compute the sampling step from the output size.
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):  # noqa: A002
        """Resize.

        Args:
            input: (N, C, *spatial).
        """
        check_input(self, input)
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        what = f"scale_factor={self.scale_factor}" if self.scale_factor is not None else f"size={self.size}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-D nearest-neighbour upsampling.

    Args:
        size: the output spatial size.
        scale_factor: multiplier of the spatial size.
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-D bilinear upsampling with ``align_corners=True`` (as PyTorch's layer of that name).

    Args:
        size: the output spatial size.
        scale_factor: multiplier of the spatial size.
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)

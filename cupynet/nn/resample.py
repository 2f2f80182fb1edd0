"""Padding, upsampling, pixel shuffle and fold/unfold layers (the math is in ``cupynet.ops.resample``)."""

from __future__ import annotations

import inspect

from . import functional as F
from .linear import check_input
from .module import FunctionalLayer, Module

__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "PixelShuffle", "PixelUnshuffle", "Unfold", "Fold",
]


def _padding(layer, padding, nd):
    """PyTorch's padding argument: an int for every side, or a tuple of 2 * nd ints (last dim first)."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * nd)
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * nd and \
            all(isinstance(p, int) and not isinstance(p, bool) for p in padding):
        return tuple(padding)
    raise ValueError(f"{layer}: padding must be an int or a tuple of {2 * nd} ints, got {padding!r}")


class _PadNd(Module):
    """Shared body of the padding layers: ``F.pad(input, padding, mode, value)`` (not public)."""

    _dims = 1
    _mode = "constant"
    _zero = False

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _padding(type(self).__name__, padding, self._dims)
        self.value = None if self._mode != "constant" else 0.0 if self._zero else value

    def forward(self, input):  # noqa: A002
        """Pad.

        Args:
            input: a Tensor with at least ``dims + 1`` dims (``dims + 2`` at most outside constant mode).
        """
        check_input(self, input, self._dims + 1)
        return F.pad(input, self.padding, mode=self._mode, value=self.value)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"padding={self.padding}, value={self.value}" if self._mode == "constant" and not self._zero \
            else f"{self.padding}"


class ZeroPad1d(_PadNd):
    """Pad the last dim with zeros.

    Args:
        padding: an int for every side or a 2-tuple (left, right).
    """

    _dims = 1
    _zero = True


class ZeroPad2d(_PadNd):
    """Pad the last 2 dims with zeros.

    Args:
        padding: an int for every side or a 4-tuple (left, right, top, bottom).
    """

    _dims = 2
    _zero = True


class ZeroPad3d(_PadNd):
    """Pad the last 3 dims with zeros.

    Args:
        padding: an int for every side or a 6-tuple (left, right, top, bottom, front, back).
    """

    _dims = 3
    _zero = True


class ConstantPad1d(_PadNd):
    """Pad the last dim with a constant.

    Args:
        padding: an int for every side or a 2-tuple (left, right).
        value: the fill value.
    """

    _dims = 1


class ConstantPad2d(_PadNd):
    """Pad the last 2 dims with a constant.

    Args:
        padding: an int for every side or a 4-tuple (left, right, top, bottom).
        value: the fill value.
    """

    _dims = 2


class ConstantPad3d(_PadNd):
    """Pad the last 3 dims with a constant.

    Args:
        padding: an int for every side or a 6-tuple (left, right, top, bottom, front, back).
        value: the fill value.
    """

    _dims = 3


class ReflectionPad1d(_PadNd):
    """Pad the last dim in 'reflect' mode.

    Args:
        padding: an int for every side or a 2-tuple, last dim first.
    """

    _dims = 1
    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dims in 'reflect' mode.

    Args:
        padding: an int for every side or a 4-tuple, last dim first.
    """

    _dims = 2
    _mode = "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last 3 dims in 'reflect' mode.

    Args:
        padding: an int for every side or a 6-tuple, last dim first.
    """

    _dims = 3
    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim in 'replicate' mode.

    Args:
        padding: an int for every side or a 2-tuple, last dim first.
    """

    _dims = 1
    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dims in 'replicate' mode.

    Args:
        padding: an int for every side or a 4-tuple, last dim first.
    """

    _dims = 2
    _mode = "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last 3 dims in 'replicate' mode.

    Args:
        padding: an int for every side or a 6-tuple, last dim first.
    """

    _dims = 3
    _mode = "replicate"


class CircularPad1d(_PadNd):
    """Pad the last dim in 'circular' mode.

    Args:
        padding: an int for every side or a 2-tuple, last dim first.
    """

    _dims = 1
    _mode = "circular"


class CircularPad2d(_PadNd):
    """Pad the last 2 dims in 'circular' mode.

    Args:
        padding: an int for every side or a 4-tuple, last dim first.
    """

    _dims = 2
    _mode = "circular"


class CircularPad3d(_PadNd):
    """Pad the last 3 dims in 'circular' mode.

    Args:
        padding: an int for every side or a 6-tuple, last dim first.
    """

    _dims = 3
    _mode = "circular"


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


_REQUIRED = inspect.Parameter.empty


class PixelShuffle(FunctionalLayer):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r) (``F.pixel_shuffle``).

    Args:
        upscale_factor: r.
    """

    function = "pixel_shuffle"
    signature = (("upscale_factor", _REQUIRED),)
    repr_options = ("upscale_factor",)


class PixelUnshuffle(FunctionalLayer):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W) (``F.pixel_unshuffle``).

    Args:
        downscale_factor: r.
    """

    function = "pixel_unshuffle"
    signature = (("downscale_factor", _REQUIRED),)
    repr_options = ("downscale_factor",)


class Unfold(FunctionalLayer):
    """Extract sliding blocks as columns (``F.unfold``).

    Args:
        kernel_size: block size.
        dilation: spacing between block elements.
        padding: implicit zero padding.
        stride: step between blocks.
    """

    function = "unfold"
    signature = (("kernel_size", _REQUIRED), ("dilation", 1), ("padding", 0), ("stride", 1))
    repr_options = ("kernel_size", "dilation", "padding", "stride")


class Fold(FunctionalLayer):
    """Sum columns of sliding blocks back into an image (``F.fold``).

    Args:
        output_size: the output's spatial size.
        kernel_size: block size.
        dilation: spacing between block elements.
        padding: implicit zero padding.
        stride: step between blocks.
    """

    function = "fold"
    signature = (("output_size", _REQUIRED), ("kernel_size", _REQUIRED), ("dilation", 1), ("padding", 0),
                 ("stride", 1))
    repr_options = ("output_size", "kernel_size", "dilation", "padding", "stride")

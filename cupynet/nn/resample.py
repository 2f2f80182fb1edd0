"""Padding, upsampling, pixel shuffle and fold/unfold layers (the math is in ``cupynet.ops.resample``)."""

from __future__ import annotations

import inspect

from . import functional as F
from .linear import check_input
from .module import Module, functional_layer

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


def _constant_pad(name, nd, zero):
    doc = (f"Pad the last {nd} dim(s) with {'zeros' if zero else 'a constant'}.\n\n    Args:\n"
           f"        padding: an int for every side or a {2 * nd}-tuple (left, right{', top, bottom' * (nd > 1)}"
           f"{', front, back' * (nd > 2)}).\n" + ("" if zero else "        value: the fill value.\n"))
    return type(name, (_PadNd,), {"_dims": nd, "_zero": zero, "__doc__": doc, "__module__": __name__})


def _mode_pad(name, nd, mode):
    doc = (f"Pad the last {nd} dim(s) in {mode!r} mode.\n\n    Args:\n        padding: an int for every side or "
           f"a {2 * nd}-tuple, last dim first.\n")
    return type(name, (_PadNd,), {"_dims": nd, "_mode": mode, "__doc__": doc, "__module__": __name__})


# NOTE: fifteen layers that differ only in (dims, mode); made by two small factories instead of copies
ZeroPad1d, ZeroPad2d, ZeroPad3d = (_constant_pad(f"ZeroPad{n}d", n, True) for n in (1, 2, 3))
ConstantPad1d, ConstantPad2d, ConstantPad3d = (_constant_pad(f"ConstantPad{n}d", n, False) for n in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_mode_pad(f"ReflectionPad{n}d", n, "reflect") for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_mode_pad(f"ReplicationPad{n}d", n, "replicate")
                                                        for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_mode_pad(f"CircularPad{n}d", n, "circular") for n in (1, 2, 3))


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


_OPTION_DOCS = {
    "upscale_factor": "r.",
    "downscale_factor": "r.",
    "output_size": "the output's spatial size.",
    "kernel_size": "block size.",
    "dilation": "spacing between block elements.",
    "padding": "implicit zero padding.",
    "stride": "step between blocks.",
}
_REQUIRED = inspect.Parameter.empty
_BLOCKS = (("kernel_size", _REQUIRED), ("dilation", 1), ("padding", 0), ("stride", 1))


def _layer(name, function, summary, signature):
    """A layer over ``F.<function>`` showing every option in ``repr`` (see ``functional_layer``)."""
    return functional_layer(name, __name__, function, f"{summary} (``F.{function}``).", signature, _OPTION_DOCS,
                            repr_options=tuple(option for option, _ in signature))


PixelShuffle = _layer("PixelShuffle", "pixel_shuffle", "(*, C * r * r, H, W) -> (*, C, H * r, W * r)",
                      (("upscale_factor", _REQUIRED),))
PixelUnshuffle = _layer("PixelUnshuffle", "pixel_unshuffle", "(*, C, H * r, W * r) -> (*, C * r * r, H, W)",
                        (("downscale_factor", _REQUIRED),))
Unfold = _layer("Unfold", "unfold", "Extract sliding blocks as columns", _BLOCKS)
Fold = _layer("Fold", "fold", "Sum columns of sliding blocks back into an image",
              (("output_size", _REQUIRED),) + _BLOCKS)

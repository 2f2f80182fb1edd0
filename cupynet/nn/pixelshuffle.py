"""``PixelShuffle`` and ``PixelUnshuffle``: move channels into space and back (``F.pixel_shuffle``)."""

from __future__ import annotations

import inspect

from .module import FunctionalLayer

__all__ = ["PixelShuffle", "PixelUnshuffle"]

_REQUIRED = inspect.Parameter.empty  # NOTE: a signature entry without a default


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

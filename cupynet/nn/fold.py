"""``Unfold`` and ``Fold``: sliding blocks to columns and back (``F.unfold`` / ``F.fold``)."""

from __future__ import annotations

import inspect

from .module import FunctionalLayer

__all__ = ["Unfold", "Fold"]

_REQUIRED = inspect.Parameter.empty  # NOTE: a signature entry without a default


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

"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and ``CircularPad`` 1d/2d/3d.

Each is ``F.pad`` with a fixed mode over its last 1, 2 or 3 dims (the math is in ``cupynet.ops.resample``).
"""

from __future__ import annotations

from . import functional as F
from .linear import check_input
from .module import Module

__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d",
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


class _ConstantPadNd(_PadNd):
    """torch's base of the constant-mode padding layers (``torch.nn.modules.padding._ConstantPadNd``)."""


class _ReflectionPadNd(_PadNd):
    """torch's base of the 'reflect' padding layers."""

    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    """torch's base of the 'replicate' padding layers."""

    _mode = "replicate"


class _CircularPadNd(_PadNd):
    """torch's base of the 'circular' padding layers."""

    _mode = "circular"


class ZeroPad1d(_ConstantPadNd):
    """Pad the last dim with zeros.

    Args:
        padding: an int for every side or a 2-tuple (left, right).
    """

    _dims = 1
    _zero = True


class ZeroPad2d(_ConstantPadNd):
    """Pad the last 2 dims with zeros.

    Args:
        padding: an int for every side or a 4-tuple (left, right, top, bottom).
    """

    _dims = 2
    _zero = True


class ZeroPad3d(_ConstantPadNd):
    """Pad the last 3 dims with zeros.

    Args:
        padding: an int for every side or a 6-tuple (left, right, top, bottom, front, back).
    """

    _dims = 3
    _zero = True


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant.

    Args:
        padding: an int for every side or a 2-tuple (left, right).
        value: the fill value.
    """

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant.

    Args:
        padding: an int for every side or a 4-tuple (left, right, top, bottom).
        value: the fill value.
    """

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant.

    Args:
        padding: an int for every side or a 6-tuple (left, right, top, bottom, front, back).
        value: the fill value.
    """

    _dims = 3


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dim in 'reflect' mode.

    Args:
        padding: an int for every side or a 2-tuple, last dim first.
    """

    _dims = 1
    _mode = "reflect"


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last 2 dims in 'reflect' mode.

    Args:
        padding: an int for every side or a 4-tuple, last dim first.
    """

    _dims = 2
    _mode = "reflect"


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last 3 dims in 'reflect' mode.

    Args:
        padding: an int for every side or a 6-tuple, last dim first.
    """

    _dims = 3
    _mode = "reflect"


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dim in 'replicate' mode.

    Args:
        padding: an int for every side or a 2-tuple, last dim first.
    """

    _dims = 1
    _mode = "replicate"


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last 2 dims in 'replicate' mode.

    Args:
        padding: an int for every side or a 4-tuple, last dim first.
    """

    _dims = 2
    _mode = "replicate"


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last 3 dims in 'replicate' mode.

    Args:
        padding: an int for every side or a 6-tuple, last dim first.
    """

    _dims = 3
    _mode = "replicate"


class CircularPad1d(_CircularPadNd):
    """Pad the last dim in 'circular' mode.

    Args:
        padding: an int for every side or a 2-tuple, last dim first.
    """

    _dims = 1
    _mode = "circular"


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims in 'circular' mode.

    Args:
        padding: an int for every side or a 4-tuple, last dim first.
    """

    _dims = 2
    _mode = "circular"


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims in 'circular' mode.

    Args:
        padding: an int for every side or a 6-tuple, last dim first.
    """

    _dims = 3
    _mode = "circular"

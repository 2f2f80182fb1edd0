"""Dropout layers: element-wise ``Dropout`` and channel dropout ``Dropout1d/2d/3d``."""

from __future__ import annotations

import numbers

from . import functional as F
from .linear import check_input
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]


class _DropoutNd(Module):
    """torch's base of the dropout layers: the probability ``p`` and ``inplace`` (not public).

    Args:
        p: the drop probability, in [0, 1].
        inplace: accepted for compatibility (computed out of place).
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        """``p=.., inplace=..``."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training, scaling the rest by 1/(1-p); identity in eval.

    Args:
        p: the drop probability, in [0, 1].
        inplace: accepted for compatibility (computed out of place).
    """

    def forward(self, input):  # noqa: A002
        """Apply (only in training mode).

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.dropout(input, self.p, self.training)


class _ChannelDropout(Dropout):
    """Zero whole channels with probability ``p`` in training (scaling the rest by 1/(1-p)); identity in eval.

    Args:
        p: the drop probability, in [0, 1].
        inplace: write into the input when autograd is not recording it.
    """

    _dims = 2

    def forward(self, input):  # noqa: A002
        """Apply (only in training mode).

        Args:
            input: (N, C, *spatial) or unbatched (C, *spatial).
        """
        check_input(self, input)
        return getattr(F, f"dropout{self._dims}d")(input, self.p, self.training, self.inplace)


class Dropout1d(_ChannelDropout):
    """Channel dropout of (N, C, L) inputs.

    Args:
        p: the drop probability, in [0, 1].
        inplace: write into the input when autograd is not recording it.
    """

    _dims = 1


class Dropout2d(_ChannelDropout):
    """Channel dropout of (N, C, H, W) inputs.

    Args:
        p: the drop probability, in [0, 1].
        inplace: write into the input when autograd is not recording it.
    """

    _dims = 2


class Dropout3d(_ChannelDropout):
    """Channel dropout of (N, C, D, H, W) inputs.

    Args:
        p: the drop probability, in [0, 1].
        inplace: write into the input when autograd is not recording it.
    """

    _dims = 3

"""Channel dropout layers ``Dropout1d/2d/3d`` (element-wise ``Dropout`` is in ``nn.activation``)."""

from __future__ import annotations

from . import functional as F
from .activation import Dropout
from .linear import check_input

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d"]


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

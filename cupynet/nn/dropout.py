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


def _channel_dropout(name, dims, layout):
    """The channel dropout class for ``dims`` spatial dimensions; ``layout`` is its batched input shape."""
    doc = f"Channel dropout of {layout} inputs.\n" + _ChannelDropout.__doc__.split("\n", 1)[1]
    return type(name, (_ChannelDropout,), {"__doc__": doc, "__module__": __name__, "_dims": dims})


Dropout1d = _channel_dropout("Dropout1d", 1, "(N, C, L)")
Dropout2d = _channel_dropout("Dropout2d", 2, "(N, C, H, W)")
Dropout3d = _channel_dropout("Dropout3d", 3, "(N, C, D, H, W)")

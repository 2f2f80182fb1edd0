"""``Flatten`` and ``Unflatten``: reshape layers over ``cupynet.ops.flatten`` / ``unflatten``."""

from __future__ import annotations

from .linear import check_input
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dimensions ``start_dim..end_dim`` into one.

    Args:
        start_dim: first dimension to flatten (default 1, keeping the batch).
        end_dim: last dimension to flatten.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002
        """Flatten.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        from ..ops import flatten  # noqa: PLC0415 - a shape op, not in nn.functional
        return flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """``start_dim=.., end_dim=..``."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size``.

    Args:
        dim: the dimension to split.
        unflattened_size: the new sizes (a tuple; their product must equal the old size).
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, got {unflattened_size!r}")
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        """Unflatten.

        Args:
            input: a Tensor.
        """
        check_input(self, input, 1)
        from ..ops import unflatten  # noqa: PLC0415
        return unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        """``dim=.., unflattened_size=..``."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

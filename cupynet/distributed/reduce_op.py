"""``ReduceOp``: how a collective combines the ranks' values (PyTorch's ``torch.distributed.ReduceOp``)."""

from __future__ import annotations

from enum import Enum

__all__ = ["ReduceOp"]


class ReduceOp(Enum):
    """The reductions ``all_reduce`` and ``reduce_scatter`` offer.

    NOTE: ``AVG`` is a ``SUM`` followed by a division by the world size on every rank
    (exact when the world size is a power of two), for both backends.
    """

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"

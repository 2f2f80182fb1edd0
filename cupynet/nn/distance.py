"""``CosineSimilarity`` and ``PairwiseDistance``: distances between two inputs, as layers.

Like the losses, each is a ``FunctionalLayer`` over its ``cupynet.nn.functional`` function, but with
no reduction: the result has one value per pair of rows.
"""

from __future__ import annotations

from .module import FunctionalLayer

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(FunctionalLayer):
    """x1 . x2 / max(|x1| |x2|, eps) along dim.

    Forward takes x1, x2.

    Args:
        dim: the dimension along which to compare.
        eps: a small value that keeps logs and divisions finite.
    """

    function = "cosine_similarity"
    signature = (("dim", 1), ("eps", 1e-8))
    inputs = ("x1", "x2")


class PairwiseDistance(FunctionalLayer):
    """The p-norm of x1 - x2 + eps along the last dim.

    Forward takes x1, x2.

    Args:
        p: the norm's order.
        eps: a small value that keeps logs and divisions finite.
        keepdim: keep the last dimension with size 1.
    """

    function = "pairwise_distance"
    signature = (("p", 2.0), ("eps", 1e-6), ("keepdim", False))
    inputs = ("x1", "x2")

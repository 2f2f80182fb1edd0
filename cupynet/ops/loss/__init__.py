"""Loss functions with ``torch.nn.functional``'s names, signatures and reductions, one family per module.

- ``classification``: ``cross_entropy`` and ``nll_loss``.
- ``likelihood``: negative log-likelihoods (``binary_cross_entropy``,
  ``binary_cross_entropy_with_logits``, ``poisson_nll_loss``, ``gaussian_nll_loss``)
  and ``kl_div``.
- ``regression``: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``.
- ``margin``: ``hinge_embedding_loss``, ``margin_ranking_loss``, ``soft_margin_loss``,
  ``triplet_margin_loss``, ``cosine_embedding_loss``, ``multi_margin_loss``,
  ``multilabel_margin_loss``, ``multilabel_soft_margin_loss``.
- ``distance``: ``cosine_similarity``, ``pairwise_distance``.
- ``arguments`` and ``reduction``: what every loss shares: argument checks and
  broadcasting; fp32 compute, the reductions and their gradients.

Each loss is an op (forward, backward and AMP policy in one class, its function
right below it), or a composite of ops where PyTorch's is one. Backward formulas
are cupynet ops on the saved inputs; piecewise pieces (signs, masks of active
regions) are constants, so gradients are differentiable again. AMP: the losses
on PyTorch's CUDA fp32 list say ``fp32``, ``binary_cross_entropy`` is ``banned``.

This package's namespace holds every loss function (and ``legacy_reduction``);
``cupynet.ops`` gathers them from the family modules.
"""

from .arguments import legacy_reduction
from .classification import cross_entropy, nll_loss
from .distance import cosine_similarity, pairwise_distance
from .likelihood import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    gaussian_nll_loss,
    kl_div,
    poisson_nll_loss,
)
from .margin import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .regression import huber_loss, l1_loss, mse_loss, smooth_l1_loss

__all__ = [
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "poisson_nll_loss", "gaussian_nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
    "cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "cosine_similarity", "pairwise_distance", "legacy_reduction",
]

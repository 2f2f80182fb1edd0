"""Loss modules: hold the options and call the matching ``cupynet.nn.functional`` loss.

Like PyTorch, class weights (``weight``, ``pos_weight``) are registered as
buffers, so they move with ``.to()`` and appear in ``state_dict()`` when given.
"""

from __future__ import annotations

from ..ops.loss import no_legacy
from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss"]


class _Loss(Module):
    """Shared reduction handling (not public)."""

    _reductions = ("none", "mean", "sum")

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in self._reductions:
            raise ValueError(f"{type(self).__name__}: {reduction!r} is not a valid value for reduction; expected "
                             f"one of {self._reductions}")
        self.reduction = reduction

    def _check(self, input, target):  # noqa: A002
        for name, value in (("input", input), ("target", target)):
            if not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}: {name} must be a cupynet Tensor, got "
                                f"{type(value).__name__}")


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer (not public)."""

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(reduction)
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(f"{type(self).__name__}: weight must be a Tensor or None, got {type(weight).__name__}")
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + nll_loss over class logits (class indices or probabilities as target).

    Args:
        weight: per-class weights (C,), or None.
        size_average: deprecated; must be None.
        ignore_index: target value that contributes nothing.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
        label_smoothing: in [0, 1].
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        no_legacy("CrossEntropyLoss", size_average, reduce)
        super().__init__(weight, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: logits (C,), (N, C) or (N, C, d1, ...).
            target: class indices (N, ...) (() or (1,) for an input (C,)) or probabilities shaped like input.
        """
        self._check(input, target)
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities.

    Args:
        weight: per-class weights (C,), or None.
        size_average: deprecated; must be None.
        ignore_index: target value that contributes nothing.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        no_legacy("NLLLoss", size_average, reduce)
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: log-probabilities (C,) or (N, C, ...).
            target: class indices (N, ...) (() or (1,) for an input (C,)).
        """
        self._check(input, target)
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error.

    Args:
        size_average: deprecated; must be None.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        no_legacy("MSELoss", size_average, reduce)
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: predictions.
            target: same shape (another shape broadcasts, with PyTorch's warning).
        """
        self._check(input, target)
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    Args:
        size_average: deprecated; must be None.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        no_legacy("L1Loss", size_average, reduce)
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: predictions.
            target: same shape (another shape broadcasts, with PyTorch's warning).
        """
        self._check(input, target)
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Huber-like loss: 0.5 x^2 / beta below beta, |x| - 0.5 beta above.

    Args:
        size_average: deprecated; must be None.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
        beta: the threshold (>= 0).
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        no_legacy("SmoothL1Loss", size_average, reduce)
        super().__init__(reduction)
        if beta < 0:
            raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: predictions.
            target: same shape (another shape broadcasts, with PyTorch's warning).
        """
        self._check(input, target)
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities (banned under autocast: use BCEWithLogitsLoss).

    Args:
        weight: rescaling weight broadcast to the input, or None.
        size_average: deprecated; must be None.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        no_legacy("BCELoss", size_average, reduce)
        super().__init__(weight, reduction)

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: probabilities in [0, 1].
            target: same shape (another shape is a ValueError, as in PyTorch).
        """
        self._check(input, target)
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """sigmoid + binary cross-entropy, computed stably from logits.

    Args:
        weight: rescaling weight broadcast to the input, or None.
        size_average: deprecated; must be None.
        reduce: deprecated; must be None.
        reduction: "none", "mean" or "sum".
        pos_weight: weight of positive examples per class, or None.
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        no_legacy("BCEWithLogitsLoss", size_average, reduce)
        super().__init__(weight, reduction)
        if pos_weight is not None and not isinstance(pos_weight, Tensor):
            raise TypeError(f"BCEWithLogitsLoss: pos_weight must be a Tensor or None, got {type(pos_weight).__name__}")
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: logits.
            target: same shape (another shape is a ValueError, as in PyTorch), in [0, 1].
        """
        self._check(input, target)
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence; ``input`` holds log-probabilities.

    Args:
        size_average: deprecated; must be None.
        reduce: deprecated; must be None.
        reduction: "none", "mean", "sum" or "batchmean" (the mathematically correct one).
        log_target: the target is given as log-probabilities too.
    """

    _reductions = ("none", "mean", "sum", "batchmean")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        no_legacy("KLDivLoss", size_average, reduce)
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        """The loss.

        Args:
            input: log-probabilities.
            target: probabilities (or log-probabilities with log_target=True); another shape broadcasts.
        """
        self._check(input, target)
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)

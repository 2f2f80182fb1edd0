"""Loss modules: hold the options and call the matching ``cupynet.nn.functional`` loss.

Each class is a ``FunctionalLayer``: PyTorch's constructor signature (``signature``), the function it
calls (``function``) and the inputs ``forward`` takes (``inputs``); ``_Loss`` checks the reduction and
turns the deprecated ``size_average``/``reduce`` into the ``reduction`` they stand for (with PyTorch's
warning). Like PyTorch, class weights (``weight``, ``pos_weight``) are registered as buffers, so they
move with ``.to()`` and appear in ``state_dict()`` when given.
"""

from __future__ import annotations

from ..ops.loss.arguments import legacy_reduction
from ..tensor import Tensor
from .module import FunctionalLayer

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "HuberLoss", "MarginRankingLoss", "SoftMarginLoss", "PoissonNLLLoss", "TripletMarginLoss",
           "CosineEmbeddingLoss", "MultiLabelSoftMarginLoss", "GaussianNLLLoss", "MultiMarginLoss",
           "MultiLabelMarginLoss", "HingeEmbeddingLoss"]

_LEGACY = ("size_average", "reduce")
_BUFFERS = ("weight", "pos_weight")
# NOTE: PyTorch's usual tail of a loss's arguments: the two deprecated ones, then reduction
_REDUCE = (("size_average", None), ("reduce", None), ("reduction", "mean"))


class _Loss(FunctionalLayer):
    """A loss module (not public): checks ``reduction`` and the legacy arguments, keeps weights as buffers."""

    inputs = ("input", "target")
    _reductions = ("none", "mean", "sum")

    def check_options(self, **options) -> None:
        """Refuse a bad reduction, a legacy argument that is not a bool or None, and a weight that is not a Tensor.

        Args:
            **options: every constructor argument by name.
        """
        name = type(self).__name__
        reduction = legacy_reduction(name, options.get("size_average"), options.get("reduce"),
                                     options.get("reduction", "mean"), warn=False)
        if reduction not in self._reductions:
            raise ValueError(f"{name}: {reduction!r} is not a valid value for reduction; expected one of "
                             f"{self._reductions}")
        for buffer in _BUFFERS:
            value = options.get(buffer)
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{name}: {buffer} must be a Tensor or None, got {type(value).__name__}")

    def keep_option(self, name, value) -> None:
        """Store an argument: weights as buffers, legacy arguments only as the reduction they stand for.

        Args:
            name: the argument's name.
            value: its value.
        """
        if name in _BUFFERS:
            self.register_buffer(name, value)
        elif name in _LEGACY:
            self._legacy = {**getattr(self, "_legacy", {}), name: value}
        elif name == "reduction":  # NOTE: after the legacy arguments in every signature, as in PyTorch's
            legacy = getattr(self, "_legacy", {})
            self.reduction = legacy_reduction(type(self).__name__, legacy.get("size_average"), legacy.get("reduce"),
                                              value)
        else:
            setattr(self, name, value)

    def options(self) -> dict:
        """The keyword options passed to the loss function (the legacy arguments are not)."""
        return {name: getattr(self, name) for name, _ in self.signature if name not in _LEGACY}

    def extra_repr(self) -> str:
        """Nothing, as PyTorch's loss modules."""
        return ""


class CrossEntropyLoss(_Loss):
    """log_softmax + nll_loss over class logits (C,), (N, C) or (N, C, d1, ...).

    The target holds class indices or probabilities.

    Forward takes input, target.

    Args:
        weight: per-class weights (C,) or a weight broadcast to the input, or None.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        ignore_index: target value that contributes nothing.
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
        label_smoothing: in [0, 1].
    """

    function = "cross_entropy"
    signature = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean"), ("label_smoothing", 0.0))

    def check_options(self, **options) -> None:
        """Also refuse a label_smoothing outside [0, 1].

        Args:
            **options: every constructor argument by name.
        """
        super().check_options(**options)
        if not 0.0 <= options["label_smoothing"] <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {options['label_smoothing']}")


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (C,) or (N, C, ...).

    Forward takes input, target.

    Args:
        weight: per-class weights (C,) or a weight broadcast to the input, or None.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        ignore_index: target value that contributes nothing.
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "nll_loss"
    signature = (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean"))


class MSELoss(_Loss):
    """Mean squared error (a target of another shape broadcasts, with a warning).

    Forward takes input, target.

    Args:
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "mse_loss"
    signature = _REDUCE


class L1Loss(_Loss):
    """Mean absolute error (a target of another shape broadcasts, with a warning).

    Forward takes input, target.

    Args:
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "l1_loss"
    signature = _REDUCE


class SmoothL1Loss(_Loss):
    """0.5 x^2 / beta below beta, |x| - 0.5 beta above.

    Forward takes input, target.

    Args:
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
        beta: the threshold (>= 0) below which the loss is quadratic.
    """

    function = "smooth_l1_loss"
    signature = _REDUCE + (("beta", 1.0),)

    def check_options(self, **options) -> None:
        """Also refuse a negative beta.

        Args:
            **options: every constructor argument by name.
        """
        super().check_options(**options)
        if options["beta"] < 0:
            raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {options['beta']}")


class HuberLoss(_Loss):
    """0.5 x^2 below delta, delta * (|x| - 0.5 delta) above.

    Forward takes input, target.

    Args:
        reduction: "none", "mean" or "sum".
        delta: the threshold (> 0) below which the loss is quadratic.
    """

    function = "huber_loss"
    signature = (("reduction", "mean"), ("delta", 1.0))


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (banned under autocast: use BCEWithLogitsLoss).

    Forward takes input, target.

    Args:
        weight: per-class weights (C,) or a weight broadcast to the input, or None.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "binary_cross_entropy"
    signature = (("weight", None),) + _REDUCE


class BCEWithLogitsLoss(_Loss):
    """sigmoid + binary cross-entropy, computed stably from logits.

    Forward takes input, target.

    Args:
        weight: per-class weights (C,) or a weight broadcast to the input, or None.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
        pos_weight: weight of positive examples per class, or None.
    """

    function = "binary_cross_entropy_with_logits"
    signature = (("weight", None),) + _REDUCE + (("pos_weight", None),)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence; input holds log-probabilities (reduction may be 'batchmean').

    Forward takes input, target.

    Args:
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
        log_target: the target is given as log-probabilities too.
    """

    function = "kl_div"
    signature = _REDUCE + (("log_target", False),)
    _reductions = ("none", "mean", "sum", "batchmean")


class MarginRankingLoss(_Loss):
    """max(0, -target * (input1 - input2) + margin).

    Forward takes input1, input2, target.

    Args:
        margin: the margin.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "margin_ranking_loss"
    signature = (("margin", 0.0),) + _REDUCE
    inputs = ("input1", "input2", "target")


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)), target in {-1, 1}.

    Forward takes input, target.

    Args:
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "soft_margin_loss"
    signature = _REDUCE


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of the target.

    Forward takes input, target.

    Args:
        log_input: the input is the log of the rate (the loss is exp(input) - target * input).
        full: add Stirling's approximation of log(target!).
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        eps: a small value that keeps logs and divisions finite.
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "poisson_nll_loss"
    signature = (("log_input", True), ("full", False), ("size_average", None), ("eps", 1e-8), ("reduce", None),
                 ("reduction", "mean"))


class TripletMarginLoss(_Loss):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0), pairwise p-norm distances.

    Forward takes anchor, positive, negative.

    Args:
        margin: the margin.
        p: the norm's order.
        eps: a small value that keeps logs and divisions finite.
        swap: use min(d(anchor, negative), d(positive, negative)) as the negative distance.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "triplet_margin_loss"
    signature = (("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False)) + _REDUCE
    inputs = ("anchor", "positive", "negative")


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.

    Forward takes input1, input2, target.

    Args:
        margin: the margin.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "cosine_embedding_loss"
    signature = (("margin", 0.0),) + _REDUCE
    inputs = ("input1", "input2", "target")


class MultiLabelSoftMarginLoss(_Loss):
    """One-versus-all logistic loss averaged over the classes.

    Forward takes input, target.

    Args:
        weight: per-class weights (C,) or a weight broadcast to the input, or None.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "multilabel_soft_margin_loss"
    signature = (("weight", None),) + _REDUCE


class GaussianNLLLoss(_Loss):
    """0.5 * (log(var) + (input - target)^2 / var), var clamped to eps.

    Forward takes input, target, var.

    Args:
        full: add Stirling's approximation of log(target!).
        eps: a small value that keeps logs and divisions finite.
        reduction: "none", "mean" or "sum".
    """

    function = "gaussian_nll_loss"
    signature = (("full", False), ("eps", 1e-6), ("reduction", "mean"))
    inputs = ("input", "target", "var")


class MultiMarginLoss(_Loss):
    """sum over j != y of max(0, margin - x[y] + x[j])^p / C (multi-class hinge).

    Forward takes input, target.

    Args:
        p: the hinge's power, 1 or 2.
        margin: the margin.
        weight: per-class weights (C,) or a weight broadcast to the input, or None.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "multi_margin_loss"
    signature = (("p", 1), ("margin", 1.0), ("weight", None)) + _REDUCE


class MultiLabelMarginLoss(_Loss):
    """Every target class (listed until the first -1) should score 1 above the others.

    Forward takes input, target.

    Args:
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "multilabel_margin_loss"
    signature = _REDUCE


class HingeEmbeddingLoss(_Loss):
    """input for target 1, max(0, margin - input) for target -1.

    Forward takes input, target.

    Args:
        margin: the margin.
        size_average: deprecated: None, or a bool that overrides reduction (False: sum).
        reduce: deprecated: None, or a bool that overrides reduction (False: no reduction).
        reduction: "none", "mean" or "sum".
    """

    function = "hinge_embedding_loss"
    signature = (("margin", 1.0),) + _REDUCE

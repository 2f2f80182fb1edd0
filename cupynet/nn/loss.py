"""Loss modules: hold the options and call the matching ``cupynet.nn.functional`` loss.

Each class is one row of a table (``_loss``): PyTorch's constructor signature, the function it calls
and the inputs ``forward`` takes; ``_Loss`` checks the reduction and turns the deprecated
``size_average``/``reduce`` into the ``reduction`` they stand for (with PyTorch's warning). Like
PyTorch, class weights (``weight``, ``pos_weight``) are registered as buffers, so they move with
``.to()`` and appear in ``state_dict()`` when given.
"""

from __future__ import annotations

from ..ops.loss import legacy_reduction
from ..tensor import Tensor
from .module import FunctionalLayer, functional_layer

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "HuberLoss", "MarginRankingLoss", "SoftMarginLoss", "PoissonNLLLoss", "CosineSimilarity"]

_LEGACY = ("size_average", "reduce")
_BUFFERS = ("weight", "pos_weight")


class _Loss(FunctionalLayer):
    """A loss module (not public): checks ``reduction`` and the legacy arguments, keeps weights as buffers."""

    inputs = ("input", "target")
    check = None
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
        if self.check is not None:
            self.check(**options)

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


_OPTION_DOCS = {
    "weight": "per-class weights (C,) or a weight broadcast to the input, or None.",
    "pos_weight": "weight of positive examples per class, or None.",
    "size_average": "deprecated: None, or a bool that overrides reduction (False: sum).",
    "reduce": "deprecated: None, or a bool that overrides reduction (False: no reduction).",
    "reduction": '"none", "mean" or "sum".',
    "ignore_index": "target value that contributes nothing.",
    "label_smoothing": "in [0, 1].",
    "beta": "the threshold (>= 0) below which the loss is quadratic.",
    "delta": "the threshold (> 0) below which the loss is quadratic.",
    "log_target": "the target is given as log-probabilities too.",
    "margin": "the margin.",
    "log_input": "the input is the log of the rate (the loss is exp(input) - target * input).",
    "full": "add Stirling's approximation of log(target!).",
    "eps": "a small value that keeps logs and divisions finite.",
    "dim": "the dimension along which to compare.",
}
_REDUCE = (("size_average", None), ("reduce", None), ("reduction", "mean"))


def _loss(name, function, summary, signature=_REDUCE, inputs=("input", "target"), check=None, base=_Loss,
          reductions=None):
    """A loss class: ``F.<function>(*inputs, **options)`` (see ``_Loss`` and ``FunctionalLayer``).

    Args:
        name: the class name (PyTorch's).
        function: the ``cupynet.nn.functional`` name.
        summary: the first line of the class docstring.
        signature: the constructor's ``(name, default)`` pairs, in PyTorch's order.
        inputs: the names of ``forward``'s Tensors.
        check: ``check(**options)`` refuses bad options at construction, or None.
        base: ``_Loss``, or ``FunctionalLayer`` for a module with no reduction.
        reductions: the accepted reductions, when not none/mean/sum.
    """
    extra = {} if check is None else {"check": staticmethod(check)}
    if reductions is not None:
        extra["_reductions"] = reductions
    return functional_layer(name, __name__, function, f"{summary}\n\n    Forward takes {', '.join(inputs)}.",
                            signature, _OPTION_DOCS, base=base, inputs=inputs, **extra)


def _check_label_smoothing(label_smoothing, **_):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")


def _check_beta(beta, **_):
    if beta < 0:
        raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")


CrossEntropyLoss = _loss(
    "CrossEntropyLoss", "cross_entropy",
    "log_softmax + nll_loss over class logits (C,), (N, C) or (N, C, d1, ...); the target holds class indices "
    "or probabilities.",
    (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None), ("reduction", "mean"),
     ("label_smoothing", 0.0)), check=_check_label_smoothing)
NLLLoss = _loss("NLLLoss", "nll_loss", "Negative log-likelihood of log-probabilities (C,) or (N, C, ...).",
                (("weight", None), ("size_average", None), ("ignore_index", -100), ("reduce", None),
                 ("reduction", "mean")))
MSELoss = _loss("MSELoss", "mse_loss", "Mean squared error (a target of another shape broadcasts, with a warning).")
L1Loss = _loss("L1Loss", "l1_loss", "Mean absolute error (a target of another shape broadcasts, with a warning).")
SmoothL1Loss = _loss("SmoothL1Loss", "smooth_l1_loss", "0.5 x^2 / beta below beta, |x| - 0.5 beta above.",
                     _REDUCE + (("beta", 1.0),), check=_check_beta)
HuberLoss = _loss("HuberLoss", "huber_loss", "0.5 x^2 below delta, delta * (|x| - 0.5 delta) above.",
                  (("reduction", "mean"), ("delta", 1.0)))
BCELoss = _loss("BCELoss", "binary_cross_entropy",
                "Binary cross-entropy of probabilities (banned under autocast: use BCEWithLogitsLoss).",
                (("weight", None),) + _REDUCE)
BCEWithLogitsLoss = _loss("BCEWithLogitsLoss", "binary_cross_entropy_with_logits",
                          "sigmoid + binary cross-entropy, computed stably from logits.",
                          (("weight", None),) + _REDUCE + (("pos_weight", None),))
KLDivLoss = _loss("KLDivLoss", "kl_div",
                  "Kullback-Leibler divergence; input holds log-probabilities (reduction may be 'batchmean').",
                  _REDUCE + (("log_target", False),), reductions=("none", "mean", "sum", "batchmean"))
MarginRankingLoss = _loss("MarginRankingLoss", "margin_ranking_loss", "max(0, -target * (input1 - input2) + margin).",
                          (("margin", 0.0),) + _REDUCE, ("input1", "input2", "target"))
SoftMarginLoss = _loss("SoftMarginLoss", "soft_margin_loss", "log(1 + exp(-target * input)), target in {-1, 1}.")
PoissonNLLLoss = _loss("PoissonNLLLoss", "poisson_nll_loss", "Poisson negative log-likelihood of the target.",
                       (("log_input", True), ("full", False), ("size_average", None), ("eps", 1e-8),
                        ("reduce", None), ("reduction", "mean")))
CosineSimilarity = _loss("CosineSimilarity", "cosine_similarity", "x1 . x2 / max(|x1| |x2|, eps) along dim.",
                         (("dim", 1), ("eps", 1e-8)), ("x1", "x2"), base=FunctionalLayer)


# ---- the remaining losses of torch.nn -----------------------------------------------------------------------
__all__ += ["PairwiseDistance", "TripletMarginLoss", "CosineEmbeddingLoss", "MultiLabelSoftMarginLoss",
            "GaussianNLLLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "HingeEmbeddingLoss"]
_OPTION_DOCS.update({
    "p": "the norm's order (PairwiseDistance, TripletMarginLoss) or the hinge's power, 1 or 2 (MultiMarginLoss).",
    "keepdim": "keep the last dimension with size 1.",
    "swap": "use min(d(anchor, negative), d(positive, negative)) as the negative distance.",
})
PairwiseDistance = _loss("PairwiseDistance", "pairwise_distance", "The p-norm of x1 - x2 + eps along the last dim.",
                         (("p", 2.0), ("eps", 1e-6), ("keepdim", False)), ("x1", "x2"), base=FunctionalLayer)
TripletMarginLoss = _loss("TripletMarginLoss", "triplet_margin_loss",
                          "max(d(anchor, positive) - d(anchor, negative) + margin, 0), pairwise p-norm distances.",
                          (("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False)) + _REDUCE,
                          ("anchor", "positive", "negative"))
CosineEmbeddingLoss = _loss("CosineEmbeddingLoss", "cosine_embedding_loss",
                            "1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.",
                            (("margin", 0.0),) + _REDUCE, ("input1", "input2", "target"))
MultiLabelSoftMarginLoss = _loss("MultiLabelSoftMarginLoss", "multilabel_soft_margin_loss",
                                 "One-versus-all logistic loss averaged over the classes.",
                                 (("weight", None),) + _REDUCE)
GaussianNLLLoss = _loss("GaussianNLLLoss", "gaussian_nll_loss",
                        "0.5 * (log(var) + (input - target)^2 / var), var clamped to eps.",
                        (("full", False), ("eps", 1e-6), ("reduction", "mean")), ("input", "target", "var"))
MultiMarginLoss = _loss("MultiMarginLoss", "multi_margin_loss",
                        "sum over j != y of max(0, margin - x[y] + x[j])^p / C (multi-class hinge).",
                        (("p", 1), ("margin", 1.0), ("weight", None)) + _REDUCE)
MultiLabelMarginLoss = _loss("MultiLabelMarginLoss", "multilabel_margin_loss",
                             "Every target class (listed until the first -1) should score 1 above the others.")
HingeEmbeddingLoss = _loss("HingeEmbeddingLoss", "hinge_embedding_loss",
                           "input for target 1, max(0, margin - input) for target -1.", (("margin", 1.0),) + _REDUCE)

"""Ready-made models and the ``build_model`` registry used by the CLI and the benchmarks."""

from __future__ import annotations

from .cnn import CNN
from .mlp import MLP
from .transformer import TransformerClassifier

__all__ = ["MLP", "CNN", "TransformerClassifier", "build_model", "register_model", "available_models"]

_REGISTRY = {}


def register_model(name: str):
    """Decorator: register ``builder(input_shape, num_classes, **kw)`` under ``name``.

    Args:
        name: the model name used by ``build_model`` and the CLI.
    """
    def decorate(builder):
        if name in _REGISTRY:
            raise ValueError(f"register_model: a model named {name!r} is already registered")
        _REGISTRY[name] = builder
        return builder
    return decorate


def available_models() -> list:
    """The registered model names."""
    return sorted(_REGISTRY)


def build_model(name: str, input_shape, num_classes: int, **kw):
    """Build a registered model for samples of ``input_shape`` and ``num_classes`` classes.

    Args:
        name: "mlp", "cnn" or "transformer" (or a registered name).
        input_shape: the shape of one sample, e.g. (64,) or (1, 28, 28).
        num_classes: number of classes.
        **kw: model-specific options (hidden=, dropout=, d_model=, ...).
    """
    if name not in _REGISTRY:
        raise ValueError(f"build_model: unknown model {name!r}; available: {available_models()}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"build_model: num_classes must be a positive integer, got {num_classes!r}")
    return _REGISTRY[name](tuple(input_shape), num_classes, **kw)


@register_model("mlp")
def _mlp(input_shape, num_classes, **kw):
    features = 1
    for size in input_shape:
        features *= size
    return MLP(in_features=features, num_classes=num_classes, **kw)


@register_model("cnn")
def _cnn(input_shape, num_classes, **kw):
    if len(input_shape) == 1:
        side = int(round(input_shape[0] ** 0.5))
        if side * side != input_shape[0]:
            raise ValueError(f"build_model('cnn'): a flat input of {input_shape[0]} features is not a square image")
        raise ValueError(f"build_model('cnn'): expected an image shape (C, H, W), got {input_shape}; reshape the "
                         f"data to (1, {side}, {side})")
    return CNN(input_shape=input_shape, num_classes=num_classes, **kw)


@register_model("transformer")
def _transformer(input_shape, num_classes, **kw):
    return TransformerClassifier(input_shape=input_shape, num_classes=num_classes, **kw)

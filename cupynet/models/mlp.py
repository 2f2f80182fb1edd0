"""``MLP``: Flatten, then Linear-ReLU(-Dropout) blocks and a Linear head (keys ``1.weight``, ...)."""

from __future__ import annotations

from .. import nn

__all__ = ["MLP"]


class MLP(nn.Sequential):
    """A multi-layer perceptron classifier; inputs of any shape (N, ...) are flattened first.

    Args:
        in_features: features per sample after flattening (64 for 8x8 digits).
        hidden: widths of the hidden layers.
        num_classes: outputs of the head.
        dropout: dropout after each hidden activation (0 disables it).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, in_features: int = 64, hidden=(256, 128), num_classes: int = 10, dropout: float = 0.0,
                 device=None, dtype=None):
        hidden = (hidden,) if isinstance(hidden, int) else tuple(hidden)
        for name, value in [("in_features", in_features), ("num_classes", num_classes)] + \
                [("hidden", h) for h in hidden]:
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"MLP: {name} must be a positive integer, got {value!r}")
        layers, width = [nn.Flatten()], in_features
        for h in hidden:
            layers += [nn.Linear(width, h, device=device, dtype=dtype), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, num_classes, device=device, dtype=dtype))
        super().__init__(*layers)
        self.in_features, self.num_classes = in_features, num_classes

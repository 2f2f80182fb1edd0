"""``CNN``: a LeNet-style classifier, (conv3x3-ReLU-maxpool2) x 2 then Linear-ReLU-Linear.

Works for any (C, H, W) with H, W >= 4: 1x8x8 digits (8 -> 4 -> 2), 1x28x28
MNIST (28 -> 14 -> 7), 3x32x32 CIFAR-10 (32 -> 16 -> 8). Padding 1 keeps the
conv output size, each pool halves it (floor).
"""

from __future__ import annotations

from .. import nn
from ..tensor import Tensor

__all__ = ["CNN"]


class CNN(nn.Module):
    """LeNet-style CNN: ``features`` (two conv blocks) then ``classifier`` (two Linear layers).

    Args:
        input_shape: (C, H, W) of one sample.
        num_classes: outputs of the head.
        channels: output channels of the two conv blocks.
        hidden: width of the hidden Linear layer.
        dropout: dropout before the head (0 disables it).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, input_shape=(1, 8, 8), num_classes: int = 10, channels=(16, 32), hidden: int = 128,
                 dropout: float = 0.0, device=None, dtype=None):
        super().__init__()
        input_shape = tuple(input_shape)
        if len(input_shape) != 3 or any(not isinstance(s, int) or s <= 0 for s in input_shape) \
                or min(input_shape[1:]) < 4:
            raise ValueError(f"CNN: input_shape must be (C, H, W) with H, W >= 4, got {input_shape}")
        c1, c2 = channels
        kw = {"device": device, "dtype": dtype}
        self.input_shape = input_shape
        self.features = nn.Sequential(
            nn.Conv2d(input_shape[0], c1, 3, padding=1, **kw), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1, **kw), nn.ReLU(), nn.MaxPool2d(2),
        )
        flat = c2 * (input_shape[1] // 4) * (input_shape[2] // 4)
        head = [nn.Flatten(), nn.Linear(flat, hidden, **kw), nn.ReLU()]
        head += [nn.Dropout(dropout)] if dropout > 0 else []
        self.classifier = nn.Sequential(*head, nn.Linear(hidden, num_classes, **kw))

    def forward(self, x):
        """Logits for a batch of images.

        Args:
            x: (N, C, H, W) with (C, H, W) == input_shape.
        """
        if not isinstance(x, Tensor) or x.ndim != 4 or tuple(x.shape[1:]) != self.input_shape:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"CNN: expected input of shape (N, {', '.join(map(str, self.input_shape))}), got {got}")
        return self.classifier(self.features(x))

"""``TransformerClassifier``: tokens from an image or a feature vector, a small encoder, mean-pool, head.

Tokenisation: an image (C, H, W) is cut into ``patch_size`` x ``patch_size``
patches (default: one token per row, i.e. patches of 1 x W); a feature vector
(F,) into ``F / token_size`` tokens. Each token is embedded by a Linear layer
and gets a learned positional embedding (trunc-normal, std 0.02, as in ViT).
"""

from __future__ import annotations

import math

from .. import nn
from ..tensor import Tensor

__all__ = ["TransformerClassifier"]


def _default_token_size(features: int) -> int:
    # NOTE: the largest divisor <= sqrt(F): 64 -> 8 tokens of 8, 784 -> 28 tokens of 28
    return max(d for d in range(1, math.isqrt(features) + 1) if features % d == 0)


class TransformerClassifier(nn.Module):
    """A tiny pre-norm transformer encoder classifier (batch_first).

    Args:
        input_shape: (C, H, W) for images or (F,) for feature vectors.
        num_classes: outputs of the head.
        d_model: model width.
        nhead: attention heads.
        num_layers: encoder layers.
        dim_feedforward: feed-forward hidden width.
        dropout: dropout inside the encoder layers.
        patch_size: image patch side (None: one token per image row).
        token_size: features per token for vector inputs (None: the largest divisor <= sqrt(F)).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, input_shape=(64,), num_classes: int = 10, d_model: int = 64, nhead: int = 4,
                 num_layers: int = 2, dim_feedforward: int = 128, dropout: float = 0.1, patch_size=None,
                 token_size=None, device=None, dtype=None):
        super().__init__()
        self.input_shape = tuple(input_shape)
        self.patch_size, self.token_size = patch_size, token_size
        tokens, token_dim = self._token_layout()
        kw = {"device": device, "dtype": dtype}
        self.embed = nn.Linear(token_dim, d_model, **kw)
        self.pos_embed = nn.Parameter(_empty((1, tokens, d_model), **kw))
        nn.init.trunc_normal_(self.pos_embed, std=0.02, a=-0.04, b=0.04)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation="gelu",
                                           batch_first=True, norm_first=True, **kw)
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.norm = nn.LayerNorm(d_model, **kw)
        self.head = nn.Linear(d_model, num_classes, **kw)

    def _token_layout(self):
        shape = self.input_shape
        if len(shape) == 1:
            size = self.token_size or _default_token_size(shape[0])
            if shape[0] % size:
                raise ValueError(f"TransformerClassifier: token_size {size} must divide the {shape[0]} features")
            self.token_size = size
            return shape[0] // size, size
        if len(shape) != 3:
            raise ValueError(f"TransformerClassifier: input_shape must be (F,) or (C, H, W), got {shape}")
        c, h, w = shape
        ph, pw = (self.patch_size, self.patch_size) if self.patch_size else (1, w)
        if h % ph or w % pw:
            raise ValueError(f"TransformerClassifier: patch_size {self.patch_size} must divide H={h} and W={w}")
        return (h // ph) * (w // pw), c * ph * pw

    def tokens(self, x):
        """Cut a batch into tokens (N, T, token_dim).

        Args:
            x: (N, *input_shape).
        """
        if not isinstance(x, Tensor) or tuple(x.shape[1:]) != self.input_shape:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"TransformerClassifier: expected input of shape (N, "
                             f"{', '.join(map(str, self.input_shape))}), got {got}")
        n = x.shape[0]
        if len(self.input_shape) == 1:
            return x.reshape(n, -1, self.token_size)
        c, h, w = self.input_shape
        ph, pw = (self.patch_size, self.patch_size) if self.patch_size else (1, w)
        x = x.reshape(n, c, h // ph, ph, w // pw, pw).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(n, (h // ph) * (w // pw), c * ph * pw)

    def forward(self, x):
        """Class logits.

        Args:
            x: (N, *input_shape).
        """
        h = self.embed(self.tokens(x)) + self.pos_embed
        h = self.norm(self.encoder(h))
        return self.head(h.mean(dim=1))


def _empty(shape, device=None, dtype=None):
    from .. import creation  # noqa: PLC0415
    return creation.zeros(*shape, device=device, dtype=dtype)

"""``TransformerEncoderLayer`` and ``TransformerEncoder`` with PyTorch's submodule names.

Keys match ``torch.nn.TransformerEncoderLayer`` (``self_attn.in_proj_weight``,
``linear1.weight``, ``norm1.bias``, ...), so state dicts move both ways.
"""

from __future__ import annotations

import copy

from . import functional as F
from .activation import Dropout
from .attention import MultiheadAttention
from .containers import ModuleList
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]


def _activation(activation):
    if activation == "relu":
        return lambda x: F.relu(x)
    if activation == "gelu":
        return lambda x: F.gelu(x)
    if callable(activation):
        return activation
    raise RuntimeError(f"TransformerEncoderLayer: activation should be relu/gelu or a callable, not {activation!r}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual and LayerNorm.

    post-norm (default): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
    pre-norm (norm_first=True): x = x + sa(norm1(x)); x = x + ff(norm2(x)).

    Args:
        d_model: model width.
        nhead: attention heads.
        dim_feedforward: hidden width of the feed-forward block.
        dropout: dropout probability (attention weights, feed-forward, residual branches).
        activation: "relu", "gelu", or a callable / Module.
        layer_norm_eps: LayerNorm eps.
        batch_first: inputs are (N, L, E) instead of (L, N, E).
        norm_first: pre-norm instead of post-norm.
        bias: learn biases in the linear layers and the norms.
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation if isinstance(activation, Module) else _activation(activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """Run the layer.

        Args:
            src: (N, L, E) when batch_first, else (L, N, E).
            src_mask: (L, L) or (N * nhead, L, L) attention mask (bool True = masked, or additive float).
            src_key_padding_mask: (N, L) mask of padded positions.
            is_causal: apply a causal mask when src_mask is None.
        """
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (keys ``layers.0...``), then an optional norm.

    Args:
        encoder_layer: the layer to copy.
        num_layers: how many copies.
        norm: an optional final normalisation Module.
        enable_nested_tensor: accepted for compatibility (ignored).
    """

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a Module, got {type(encoder_layer).__name__}")
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"TransformerEncoder: num_layers must be a positive integer, got {num_layers!r}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """Run every layer, then the norm.

        Args:
            src: the input sequence.
            mask: attention mask for every layer.
            src_key_padding_mask: padding mask for every layer.
            is_causal: apply a causal mask when mask is None.
        """
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        return self.norm(x) if self.norm is not None else x

"""Transformer encoder and decoder layers, their stacks and ``Transformer``, with PyTorch's submodule names.

Keys match ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer`` /
``Transformer`` (``self_attn.in_proj_weight``, ``multihead_attn.out_proj.weight``,
``linear1.weight``, ``norm3.bias``, ``encoder.layers.0...``), so state dicts move both ways.
"""

from __future__ import annotations

import copy

import numpy

from .. import creation
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer"]


def _gelu(x):
    return F.gelu(x)


def _activation(activation):
    if activation == "relu":
        return F.relu  # NOTE: the function itself, as torch's layer holds it, so torch.save(model) names it
    if activation == "gelu":
        return _gelu  # NOTE: one shared function: _ff_block fuses it with linear1 (see _linear_then_activation)
    if callable(activation):
        return activation
    raise RuntimeError(f"TransformerEncoderLayer: activation should be relu/gelu or a callable, not {activation!r}")


def _dropped(module, x):
    """``module(x)``, or ``x`` itself for a hook-free ``Dropout(p=0)`` (it would multiply by 1: one op per call saved).

    Args:
        module: the layer's dropout submodule (or whatever replaced it).
        x: its input.
    """
    if type(module) is Dropout and module.p == 0 and not module._forward_hooks and not module._forward_pre_hooks:
        return x
    return module(x)


def _linear_then_activation(layer, x):
    """``layer.activation(layer.linear1(x))``; one fused op (``ops.linear_gelu``) for the "gelu" activation.

    NOTE: fused only when both parts are what the layer built: a plain hook-free ``Linear`` and the
    "gelu" string's activation; the fused op gives the same values (docs/differences.md).

    Args:
        layer: a transformer encoder or decoder layer.
        x: the feed-forward block's input.
    """
    linear1 = layer.linear1
    if (layer.activation is _gelu and type(linear1) is Linear and not linear1._forward_hooks
            and not linear1._forward_pre_hooks):
        from ..ops.linear_gelu import linear_gelu  # noqa: PLC0415 - the fused op, as Linear + ReLU's
        return linear_gelu(x, *linear1._checked_params(x))
    return layer.activation(linear1(x))


def _build_layer(layer, cross, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                 norm_first, bias, device, dtype):
    """Register the submodules of an encoder (``cross=False``) or decoder layer in PyTorch's order."""
    kw = {"device": device, "dtype": dtype}
    layer.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
    if cross:
        layer.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                  batch_first=batch_first, **kw)
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
    layer.norm_first = norm_first
    for i in range(1, 4 if cross else 3):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
    for i in range(1, 4 if cross else 3):
        setattr(layer, f"dropout{i}", Dropout(dropout))
    layer.activation = activation if isinstance(activation, Module) else _activation(activation)


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
        _build_layer(self, False, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                     norm_first, bias, device, dtype)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return _dropped(self.dropout1, x)

    def _ff_block(self, x):
        return _dropped(self.dropout2, self.linear2(_dropped(self.dropout, _linear_then_activation(self, x))))

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


class _Stack(Module):
    """``num_layers`` deep copies of a layer (keys ``layers.0...``) and an optional final norm (not public)."""

    def __init__(self, layer, num_layers, norm):
        super().__init__()
        name = type(self).__name__
        if not isinstance(layer, Module):
            raise TypeError(f"{name}: the layer to stack must be a Module, got {type(layer).__name__}")
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"{name}: num_layers must be a positive integer, got {num_layers!r}")
        self.layers = ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def _finish(self, x):
        return self.norm(x) if self.norm is not None else x


class TransformerEncoder(_Stack):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (keys ``layers.0...``), then an optional norm.

    Args:
        encoder_layer: the layer to copy.
        num_layers: how many copies.
        norm: an optional final normalisation Module.
        enable_nested_tensor: accepted for compatibility (ignored).
    """

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True):
        super().__init__(encoder_layer, num_layers, norm)

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
        return self._finish(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention to ``memory``, then a feed-forward block (each: dropout, residual, norm).

    post-norm (default): x = norm1(x + sa(x)); x = norm2(x + mha(x, memory)); x = norm3(x + ff(x)).
    pre-norm (norm_first=True): x = x + sa(norm1(x)); x = x + mha(norm2(x), memory); x = x + ff(norm3(x)).

    Args:
        d_model: model width.
        nhead: attention heads.
        dim_feedforward: hidden width of the feed-forward block.
        dropout: dropout probability.
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
        _build_layer(self, True, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                     norm_first, bias, device, dtype)

    _sa_block = TransformerEncoderLayer._sa_block

    def _ff_block(self, x):
        return _dropped(self.dropout3, self.linear2(_dropped(self.dropout, _linear_then_activation(self, x))))

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]
        return _dropped(self.dropout2, x)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        """Run the layer.

        Args:
            tgt: the target sequence, (N, T, E) when batch_first, else (T, N, E).
            memory: the encoder output, (N, S, E) / (S, N, E).
            tgt_mask: (T, T) self-attention mask (bool True = masked, or additive float).
            memory_mask: (T, S) cross-attention mask.
            tgt_key_padding_mask: (N, T) padded target positions.
            memory_key_padding_mask: (N, S) padded memory positions.
            tgt_is_causal: apply a causal self-attention mask when tgt_mask is None.
            memory_is_causal: apply a causal cross-attention mask when memory_mask is None.
        """
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(_Stack):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` (keys ``layers.0...``), then an optional norm.

    Args:
        decoder_layer: the layer to copy.
        num_layers: how many copies.
        norm: an optional final normalisation Module.
    """

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__(decoder_layer, num_layers, norm)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        """Run every layer on (tgt, memory), then the norm.

        Args:
            tgt: the target sequence.
            memory: the encoder output.
            tgt_mask: self-attention mask for every layer.
            memory_mask: cross-attention mask for every layer.
            tgt_key_padding_mask: target padding mask.
            memory_key_padding_mask: memory padding mask.
            tgt_is_causal: apply a causal self-attention mask when tgt_mask is None.
            memory_is_causal: apply a causal cross-attention mask when memory_mask is None.
        """
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self._finish(x)


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need" (PyTorch's ``nn.Transformer``).

    Parameters with more than one dimension are initialised with ``xavier_uniform_``, as PyTorch does.

    Args:
        d_model: model width.
        nhead: attention heads.
        num_encoder_layers: encoder depth.
        num_decoder_layers: decoder depth.
        dim_feedforward: hidden width of the feed-forward blocks.
        dropout: dropout probability.
        activation: "relu", "gelu", or a callable / Module.
        custom_encoder: use this encoder instead.
        custom_decoder: use this decoder instead.
        layer_norm_eps: LayerNorm eps.
        batch_first: inputs are (N, L, E) instead of (L, N, E).
        norm_first: pre-norm layers.
        bias: learn biases in the linear layers and the norms.
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                bias)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*args, **kw), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*args, **kw), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        """Encode ``src``, then decode ``tgt`` attending to the encoding.

        Args:
            src: (N, S, E) when batch_first, else (S, N, E); or unbatched (S, E).
            tgt: (N, T, E) / (T, N, E) / (T, E).
            src_mask: (S, S) encoder self-attention mask.
            tgt_mask: (T, T) decoder self-attention mask (e.g. ``generate_square_subsequent_mask(T)``).
            memory_mask: (T, S) cross-attention mask.
            src_key_padding_mask: (N, S).
            tgt_key_padding_mask: (N, T).
            memory_key_padding_mask: (N, S).
            src_is_causal: apply a causal encoder mask when src_mask is None.
            tgt_is_causal: apply a causal decoder mask when tgt_mask is None.
            memory_is_causal: apply a causal cross-attention mask when memory_mask is None.
        """
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise RuntimeError("Transformer: the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("Transformer: the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=bool(src_is_causal))
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """A (sz, sz) float mask: 0 on and below the diagonal, -inf above (future positions are masked).

        Args:
            sz: the sequence length.
            device: where the mask lives.
            dtype: its floating dtype (float32 by default).
        """
        mask = numpy.triu(numpy.full((sz, sz), -numpy.inf, dtype=numpy.float32), k=1)
        return creation.tensor(mask, dtype=dtype, device=device)

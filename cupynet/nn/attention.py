"""``MultiheadAttention`` with PyTorch's parameters (``in_proj_weight``, ``in_proj_bias``, ``out_proj``).

The layer is composed of ops (linear, reshape, matmul, softmax, dropout, or the
fused ``scaled_dot_product_attention`` when no weights are asked for); no new
math lives here. Masks follow PyTorch's MHA convention: a bool ``attn_mask`` /
``key_padding_mask`` marks positions that may NOT be attended (True = masked);
a float mask is added to the scores.
"""

from __future__ import annotations

import math

from .. import backend
from ..checks import require_tensor
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import Linear, new_parameter
from .module import Module

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the class name PyTorch's MultiheadAttention uses for ``out_proj`` (same repr).

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: learn an additive bias.
        device: where the parameters live.
        dtype: their floating dtype.
    """


def _ops():
    import cupynet.ops as ops  # noqa: PLC0415 - getitem/chunk live in the indexing family, loaded late
    return ops


def _additive(mask, dtype, name: str, layer):
    """A float Tensor to add to the scores: bool True -> -inf, float masks as given."""
    require_tensor(f"{layer!r}", mask, name)
    if mask.dtype == bool:
        xp = backend.get_array_module(mask.array)
        return Tensor(xp.where(mask.array, -xp.inf, 0.0).astype(dtype))
    if mask.dtype.kind != "f" and mask.dtype.name != "bfloat16":
        raise TypeError(f"{layer!r}: {name} must be bool or floating, got dtype {mask.dtype}")
    return mask if mask.dtype == dtype else mask.to(dtype)


class MultiheadAttention(Module):
    """Multi-head attention: ``out_proj(concat_h softmax(q_h k_h^T / sqrt(d)) v_h)``.

    Args:
        embed_dim: model width E (split over the heads).
        num_heads: number of heads (must divide embed_dim).
        dropout: dropout on the attention weights (training only).
        bias: learn in_proj_bias and out_proj.bias.
        add_bias_kv: not supported (must be False).
        add_zero_attn: not supported (must be False).
        kdim: must equal embed_dim (or None).
        vdim: must equal embed_dim (or None).
        batch_first: inputs are (N, L, E) instead of (L, N, E).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if not isinstance(embed_dim, int) or not isinstance(num_heads, int) or embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be positive integers, got "
                             f"embed_dim={embed_dim!r}, num_heads={num_heads!r}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim must be divisible by num_heads, got embed_dim="
                             f"{embed_dim}, num_heads={num_heads}")
        if add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) or vdim not in (None, embed_dim):
            raise NotImplementedError("MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim != embed_dim "
                                      "are not supported")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim = self.vdim = embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self.in_proj_weight = new_parameter((3 * embed_dim, embed_dim), device, dtype)
        if bias:
            self.in_proj_bias = new_parameter((3 * embed_dim,), device, dtype)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _check(self, query, key, value):
        for name, t in (("query", query), ("key", key), ("value", value)):
            require_tensor(f"{self!r}", t, name)
            if t.ndim not in (2, 3) or t.shape[-1] != self.embed_dim:
                raise ValueError(f"{self!r}: expected {name} of shape (N, L, {self.embed_dim}) "
                                 f"{'(batch_first) ' if self.batch_first else '(L, N, E) '}or (L, {self.embed_dim}),"
                                 f" got {tuple(t.shape)}")
        if not query.ndim == key.ndim == value.ndim or key.shape != value.shape:
            raise ValueError(f"{self!r}: key and value must have the same shape and query the same number of "
                             f"dimensions; got query {tuple(query.shape)}, key {tuple(key.shape)}, "
                             f"value {tuple(value.shape)}")

    def _project(self, query, key, value):
        ops, e = _ops(), self.embed_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        if query is key and key is value:
            return ops.chunk(F.linear(query, w, b), 3, dim=-1)
        slices = [slice(0, e), slice(e, 2 * e), slice(2 * e, 3 * e)]
        return tuple(F.linear(x, w[s], b[s] if b is not None else None) for x, s in zip((query, key, value), slices))

    def _split_heads(self, x):
        n, length = x.shape[0], x.shape[1]
        return x.reshape(n, length, self.num_heads, self.head_dim).transpose(1, 2)

    def _merged_mask(self, attn_mask, key_padding_mask, dtype, n, length, source):
        mask = None
        if attn_mask is not None:
            mask = _additive(attn_mask, dtype, "attn_mask", self)
            if mask.ndim == 3:
                mask = mask.reshape(n, self.num_heads, length, source)
            elif mask.ndim != 2 or tuple(mask.shape) != (length, source):
                raise ValueError(f"{self!r}: attn_mask must have shape ({length}, {source}) or "
                                 f"({n * self.num_heads}, {length}, {source}), got {tuple(attn_mask.shape)}")
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, source):
                raise ValueError(f"{self!r}: key_padding_mask must have shape ({n}, {source}), got "
                                 f"{tuple(key_padding_mask.shape)}")
            padding = _additive(key_padding_mask, dtype, "key_padding_mask", self).reshape(n, 1, 1, source)
            mask = padding if mask is None else mask + padding
        return mask

    def _attend(self, q, k, v, mask, need_weights):
        p = self.dropout if self.training else 0.0
        if not need_weights:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p), None
        scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores + mask
        weights = F.softmax(scores, -1)
        out = F.dropout(weights, p, True) @ v if p > 0 else weights @ v
        return out, weights

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        """Attend from ``query`` to ``key``/``value``; returns (output, weights or None).

        Args:
            query: (N, L, E) when batch_first, else (L, N, E); or unbatched (L, E).
            key: (N, S, E) / (S, N, E) / (S, E).
            value: same shape as key.
            key_padding_mask: (N, S); bool True (or -inf) marks keys to ignore.
            need_weights: also return the attention weights (uses the unfused path).
            attn_mask: (L, S) or (N * num_heads, L, S); bool True (or -inf) marks pairs to ignore.
            average_attn_weights: average the returned weights over heads.
            is_causal: apply a causal mask (built here when attn_mask is None).
        """
        self._check(query, key, value)
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (t.unsqueeze(0 if self.batch_first else 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        n, length, source = query.shape[0], query.shape[1], key.shape[1]
        if is_causal and attn_mask is None:
            xp = backend.get_array_module(query.array)
            attn_mask = Tensor(xp.triu(xp.ones((length, source), dtype=bool), k=1))
        q, k, v = (self._split_heads(x) for x in self._project(query, key, value))
        mask = self._merged_mask(attn_mask, key_padding_mask, q.dtype, n, length, source)
        out, weights = self._attend(q, k, v, mask, need_weights)
        out = self.out_proj(out.transpose(1, 2).reshape(n, length, self.embed_dim))
        if not self.batch_first:
            out = out.transpose(0, 1)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if unbatched:
            out = out.squeeze(0 if self.batch_first else 1)
            weights = weights.squeeze(0) if weights is not None else None
        return out, weights

    def extra_repr(self) -> str:
        """Nothing extra (PyTorch prints only out_proj)."""
        return ""

"""Lookup tables (torch.nn's ``sparse`` module): ``Embedding`` and ``EmbeddingBag``.

Each layer holds the ``(num_embeddings, embedding_dim)`` table, initialised N(0, 1) with the padding
row zeroed, as PyTorch; ``forward`` calls ``F.embedding`` / ``F.embedding_bag``.
"""

from __future__ import annotations

from .. import dtypes
from ..checks import positive_int
from . import functional as F
from . import init
from .linear import check_input, new_parameter
from .module import Module, copy_into
from .parameter import as_array

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """A lookup table: row ``i`` of ``weight`` for each index ``i``; init N(0, 1), padding row zeros.

    Args:
        num_embeddings: rows of the table.
        embedding_dim: size of each row.
        padding_idx: a row that stays zero and gets no gradient.
        max_norm: not supported (must be None).
        norm_type: accepted for compatibility.
        scale_grad_by_freq: not supported (must be False).
        sparse: not supported (must be False).
        _weight: an initial weight Tensor of shape (num_embeddings, embedding_dim).
        device: where the weight lives.
        dtype: its floating dtype.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 device=None, dtype=None):
        super().__init__()
        positive_int("Embedding", "num_embeddings", num_embeddings)
        positive_int("Embedding", "embedding_dim", embedding_dim)
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings}), "
                                 f"got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight = new_parameter((num_embeddings, embedding_dim), device, dtype)
        if _weight is None:
            self.reset_parameters()
        else:
            self._load_weight(_weight)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """A layer whose table is a copy of ``embeddings`` (a 2-D Tensor), frozen unless ``freeze=False``.

        NOTE: as PyTorch, the padding row keeps its pretrained values (it only gets no gradient).

        Args:
            embeddings: the (num_embeddings, embedding_dim) table.
            freeze: keep the table out of training (``requires_grad=False``).
            padding_idx: see the class.
            max_norm: see the class.
            norm_type: see the class.
            scale_grad_by_freq: see the class.
            sparse: see the class.
        """
        if getattr(embeddings, "ndim", None) != 2:
            raise ValueError("Embedding.from_pretrained: Embeddings parameter is expected to be 2-dimensional, got "
                             f"shape {tuple(getattr(embeddings, 'shape', ()))}")
        rows, cols = embeddings.shape
        layer = cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, embeddings,
                    device=embeddings.device, dtype=embeddings.dtype)
        layer.weight.requires_grad_(not freeze)
        return layer

    def _load_weight(self, value):
        array = as_array(value, "Embedding(_weight=...)")
        if tuple(array.shape) != tuple(self.weight.shape):
            raise ValueError(f"Embedding: _weight must have shape {tuple(self.weight.shape)}, got "
                             f"{tuple(array.shape)}")
        copy_into(self.weight, array)

    def reset_parameters(self):
        """Draw the weight from N(0, 1) and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.array[self.padding_idx] = 0

    def forward(self, input):  # noqa: A002
        """Look the indices up.

        Args:
            input: an integer Tensor of any shape.
        """
        check_input(self, input)
        if dtypes.is_floating(input.dtype):
            raise TypeError(f"{self!r}: expected an integer index tensor, got dtype {input.dtype}")
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        """``10, 3`` plus padding_idx when set."""
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (``F.embedding_bag``); init N(0, 1), padding row zeros.

    Args:
        num_embeddings: rows of the table.
        embedding_dim: size of each row.
        max_norm: rows looked up with a larger norm are renormalized to it in place, or None.
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: not supported (must be False).
        mode: ``'sum'``, ``'mean'`` or ``'max'``.
        sparse: not supported (must be False).
        _weight: an initial weight Tensor of shape (num_embeddings, embedding_dim).
        include_last_offset: ``offsets`` has one more entry, the end of the last bag.
        padding_idx: an index left out of every bag (its row stays zero and gets no gradient).
        device: where the weight lives.
        dtype: its floating dtype.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        positive_int("EmbeddingBag", "num_embeddings", num_embeddings)
        positive_int("EmbeddingBag", "embedding_dim", embedding_dim)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}")
        if scale_grad_by_freq or sparse:
            raise NotImplementedError("EmbeddingBag: scale_grad_by_freq and sparse are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx must be within num_embeddings ({num_embeddings}), "
                                 f"got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.mode = num_embeddings, embedding_dim, mode
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, False, False
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        self.weight = new_parameter((num_embeddings, embedding_dim), device, dtype)
        if _weight is None:
            self.reset_parameters()
        else:
            array = as_array(_weight, "EmbeddingBag(_weight=...)")
            if tuple(array.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"EmbeddingBag: _weight must have shape {(num_embeddings, embedding_dim)}, got "
                                 f"{tuple(array.shape)}")
            copy_into(self.weight, array)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """A layer whose table is ``embeddings`` (a 2-D Tensor), frozen unless ``freeze=False``.

        Args:
            embeddings: the (num_embeddings, embedding_dim) table.
            freeze: keep the table out of training (``requires_grad=False``).
            max_norm: see the class.
            norm_type: see the class.
            scale_grad_by_freq: see the class.
            mode: see the class.
            sparse: see the class.
            include_last_offset: see the class.
            padding_idx: see the class.
        """
        if embeddings.ndim != 2:
            raise ValueError("EmbeddingBag.from_pretrained: Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        layer = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                    include_last_offset, padding_idx, device=embeddings.device, dtype=embeddings.dtype)
        layer.weight.requires_grad_(not freeze)
        return layer

    def reset_parameters(self):
        """Draw the weight from N(0, 1) and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.array[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        """Reduce each bag.

        Args:
            input: integer indices, (B, N) bags or (L,) cut at ``offsets``.
            offsets: bag starts for a 1-D input.
            per_sample_weights: weights of each entry (mode 'sum' only).
        """
        check_input(self, input)
        if dtypes.is_floating(input.dtype):
            raise TypeError(f"{self!r}: expected an integer index tensor, got dtype {input.dtype}")
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, False, self.mode, False,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        """``10, 3, mode='mean'`` plus padding_idx when set, as PyTorch."""
        text = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        return text + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")

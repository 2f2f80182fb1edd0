"""Embedding lookup (rows of a weight matrix picked by integer indices) and one_hot.

The gradient of ``embedding`` scatter-adds the incoming rows into a zero matrix
of the weight's shape (``scatter_at``: ``numpy.add.at`` on the CPU,
``cupyx.scatter_add`` on the GPU); the ``padding_idx`` row gets no gradient.
That scatter is an op of its own, whose backward gathers rows again, so double
backward works.

NOTE (numerics): the scatter-add of float16/bfloat16 gradients accumulates in
fp32 and rounds once (a popular token would otherwise lose most of its updates).
AMP: embedding is on no autocast list: it runs in the weight's dtype.
"""

from __future__ import annotations

import numbers

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import check_same_device, compute_in_fp32, host_check_range, scatter_at, xp_of
from .arith import cast
from .indexing import gather
from .reduce import sum as reduce_sum
from .shape import reshape, squeeze, unsqueeze

__all__ = ["embedding", "one_hot", "embedding_bag"]


def _renorm_rows_(weight, indices, max_norm, norm_type):
    """Scale the looked-up rows whose ``norm_type``-norm exceeds ``max_norm`` down to it, in place (no graph)."""
    xp = xp_of(weight)
    rows = xp.unique(indices.reshape(-1))
    picked = compute_in_fp32(weight.array[rows])
    norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    factor = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    weight.array[rows] = (picked * factor[:, None]).astype(weight.dtype)
    weight._bump_version()


def _check_embedding_args(input, weight, padding_idx, max_norm, sparse):  # noqa: A002
    if not isinstance(input, Tensor) or input.dtype.kind not in "iu":
        got = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise TypeError(f"embedding: expected input to be an integer (int32/int64) Tensor of indices, got {got}")
    if not isinstance(weight, Tensor) or weight.ndim != 2 or not dtypes.is_floating(weight.dtype):
        got = f"shape {tuple(weight.shape)} {weight.dtype}" if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"embedding: weight must be a 2-D floating Tensor (num_embeddings, embedding_dim), got {got}")
    num = weight.shape[0]
    if padding_idx is not None and (not isinstance(padding_idx, numbers.Integral) or not -num <= padding_idx < num):
        raise ValueError(f"embedding: padding_idx must be within num_embeddings ({num}), got {padding_idx!r}")
    if max_norm is not None and (not isinstance(max_norm, numbers.Real) or max_norm <= 0):
        raise ValueError(f"embedding: max_norm must be a positive number or None, got {max_norm!r}")
    check_same_device("embedding", weight=weight, input=input)
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported (use sparse=False)")
    host_check_range("embedding", input.array, 0, num - 1,
                     lambda: f"index out of range: expected indices in [0, {num - 1}] for num_embeddings={num}")


class Embedding(Function):
    """Pick rows of ``weight`` by integer indices (unlisted for autocast: runs in the weight's dtype)."""

    op_name = "embedding"

    @staticmethod
    def forward(ctx, weight, indices=None, padding_idx=None, scale_grad_by_freq=False):
        ctx.indices, ctx.padding_idx, ctx.scale_by_freq = indices, padding_idx, scale_grad_by_freq
        ctx.num_weights = weight.shape[0]
        return weight.array[indices]

    @staticmethod
    def backward(ctx, grad):
        return EmbeddingBackward.apply(grad, indices=ctx.indices, num_weights=ctx.num_weights,
                                       padding_idx=ctx.padding_idx, scale_grad_by_freq=ctx.scale_by_freq)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002 - PyTorch's names
              scale_grad_by_freq=False, sparse=False):
    """Look up rows of ``weight``: ``out[..., :] = weight[input[...], :]``.

    Args:
        input: an integer Tensor of indices in ``[0, num_embeddings)``.
        weight: the ``(num_embeddings, embedding_dim)`` table.
        padding_idx: a row that gets no gradient (negative counts from the end).
        max_norm: rows looked up with a larger ``norm_type``-norm are renormalized to it in place.
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: divide each row's gradient by how often it occurs in ``input``.
        sparse: sparse gradients; not supported (must be False).
    """
    _check_embedding_args(input, weight, padding_idx, max_norm, sparse)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if max_norm is not None:
        _renorm_rows_(weight, input.array, float(max_norm), float(norm_type))
    return Embedding.apply(weight, indices=input.array.astype(numpy.int64, copy=False), padding_idx=padding_idx,
                           scale_grad_by_freq=bool(scale_grad_by_freq))


def _position_scale(xp, flat, num_weights, padding_idx, scale_grad_by_freq, dtype):
    """Per looked-up position: 0 at the padding index, ``1 / count(index)`` with scale_grad_by_freq, else 1."""
    scale = xp.ones(flat.shape, dtype=dtype)
    if scale_grad_by_freq:
        counts = xp.bincount(flat, minlength=num_weights)
        scale = scale / counts[flat].astype(dtype)
    if padding_idx is not None:
        scale = scale * (flat != padding_idx)
    return scale


# NOTE: the flat index of scatter_rows_flat is 8 bytes per element: above this many elements the row scatter
# (whose per-row cost is then small next to the row itself) is used instead
_FLAT_SCATTER_MAX = 1 << 20


def scatter_rows_flat(flat, values, num_weights):
    """``out[flat[i], :] += values[i, :]`` on NumPy arrays, into zeros of ``(num_weights, width)``.

    NOTE (speed): ``numpy.add.at`` with whole rows runs NumPy's generic indexed loop once per row; the
    same additions element by element, through a flat index, take its fast 1-D path (~4x for 512 rows
    of 64). Each output element still receives its values in the order of the rows, starting from
    zero, so the sums are bit for bit those of the row scatter (tests compare the two).

    Args:
        flat: int64 row indices, shape ``(n,)``.
        values: float array of shape ``(n, width)``.
        num_weights: the number of rows of the result.
    """
    width = values.shape[1]
    out = numpy.zeros(num_weights * width, dtype=values.dtype)
    index = (flat[:, None] * width + numpy.arange(width)).reshape(-1)
    numpy.add.at(out, index, values.reshape(-1))
    return out.reshape(num_weights, width)


class EmbeddingBackward(Function):
    """The weight gradient of embedding: scatter-add rows of ``grad`` at the looked-up indices."""

    op_name = "embedding_dense_backward"

    @staticmethod
    def forward(ctx, grad, indices=None, num_weights=0, padding_idx=None, scale_grad_by_freq=False):
        xp, flat = xp_of(grad), indices.reshape(-1)
        rows = compute_in_fp32(grad.array).reshape(flat.size, grad.shape[-1])  # NOTE: not -1: empty indices
        plain = padding_idx is None and not scale_grad_by_freq
        # NOTE (speed): every position's scale is 1 unless a padding row or frequency scaling is asked for
        ctx.scale = None if plain else _position_scale(xp, flat, num_weights, padding_idx, scale_grad_by_freq,
                                                       rows.dtype)
        ctx.indices, ctx.grad_shape = indices, grad.shape
        values = rows if plain else rows * ctx.scale[:, None]
        if xp is numpy and values.size <= _FLAT_SCATTER_MAX:
            out = scatter_rows_flat(flat, values, num_weights)
        else:
            out = scatter_at("sum", xp.zeros((num_weights, rows.shape[1]), dtype=rows.dtype), flat, values)
        return out.astype(grad.dtype, copy=False).reshape((num_weights,) + grad.shape[indices.ndim:])

    @staticmethod
    def backward(ctx, grad_grad):
        # NOTE: the adjoint of a scatter-add is a gather of the same rows, scaled the same way
        rows = Embedding.apply(grad_grad, indices=ctx.indices)
        if ctx.scale is None:
            return rows
        scale = ctx.scale.reshape(ctx.indices.shape + (1,) * (rows.ndim - ctx.indices.ndim))
        return rows * Tensor(scale.astype(rows.dtype))


def one_hot(tensor, num_classes=-1):
    """One-hot encoding of integer class values: an int64 Tensor with a new last dim of ``num_classes``.

    Args:
        tensor: an integer Tensor of non-negative class values.
        num_classes: the number of classes; -1 means ``max(tensor) + 1`` (one host sync).
    """
    if not isinstance(tensor, Tensor) or tensor.dtype.kind not in "iu":
        got = tensor.dtype if isinstance(tensor, Tensor) else type(tensor).__name__
        raise TypeError(f"one_hot: expected an integer (int64) Tensor of class values, got {got}")
    if not isinstance(num_classes, numbers.Integral) or (num_classes < 1 and num_classes != -1):
        raise ValueError(f"one_hot: num_classes must be a positive int or -1, got {num_classes!r}")
    xp, values = xp_of(tensor), tensor.array
    if values.size and int(values.min()) < 0:
        raise ValueError("one_hot: Class values must be non-negative.")
    if num_classes == -1:
        if not values.size:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    elif values.size and int(values.max()) >= num_classes:
        raise ValueError(f"one_hot: Class values must be smaller than num_classes ({num_classes}).")
    return Tensor((values[..., None] == xp.arange(num_classes)).astype(numpy.int64))


# ---- embedding_bag -------------------------------------------------------------------------------------------
_BAG_MODES = ("sum", "mean", "max")


def _bag_table(input, offsets, include_last_offset):  # noqa: A002
    """The bags as a dense ``(B, longest)`` table of positions into the flat input, and the mask of real slots.

    NOTE: bags are contiguous runs of the input, so a slot table indexes them without a Python loop; its
    size is B times the longest bag (a batch of very uneven bags pads the short ones).
    """
    xp = xp_of(input)
    if input.ndim == 2:
        rows, width = input.shape
        return xp.arange(rows * width).reshape(rows, width), xp.ones((rows, width), dtype=bool)
    length, starts = input.shape[0], offsets.array.astype(numpy.int64, copy=False)
    ends = starts[1:] if include_last_offset else xp.concatenate([starts[1:], xp.asarray([length])])
    starts = starts[:-1] if include_last_offset else starts
    sizes = ends - starts
    longest = int(sizes.max()) if sizes.size else 0
    slot = xp.arange(longest)
    valid = slot[None, :] < sizes[:, None]
    return xp.where(valid, starts[:, None] + slot[None, :], 0), valid


def _check_offsets(input, offsets, include_last_offset):  # noqa: A002
    if not isinstance(offsets, Tensor) or offsets.ndim != 1 or offsets.dtype.kind not in "iu":
        got = f"{offsets.ndim}-D {offsets.dtype}" if isinstance(offsets, Tensor) else type(offsets).__name__
        raise ValueError(f"embedding_bag: offsets has to be a 1D integer Tensor when input is 1D, got {got}")
    values = offsets.array
    if include_last_offset and values.size == 0:
        raise ValueError("embedding_bag: include_last_offset needs at least one offset (the end of the input)")
    if values.size and int(values[0]) != 0:
        raise ValueError(f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                         f"start from position 0. However, got {int(values[0])}")
    if values.size and (bool((values[1:] < values[:-1]).any()) or int(values[-1]) > input.shape[0]):
        raise ValueError(f"embedding_bag: offsets must be non-decreasing and at most the input's length "
                         f"({input.shape[0]}), got {values.tolist()}")


def _check_bag_args(input, offsets, mode, per_sample_weights, include_last_offset):  # noqa: A002
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if not isinstance(input, Tensor) or input.ndim not in (1, 2):
        got = f"dimension {input.ndim}" if isinstance(input, Tensor) else type(input).__name__
        raise ValueError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of {got}")
    if input.ndim == 2 and offsets is not None:
        raise ValueError("embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a "
                         "mini-batch of fixed length sequences. However, found offsets of type Tensor")
    if input.ndim == 1:
        _check_offsets(input, offsets, include_last_offset)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}').")
        if not isinstance(per_sample_weights, Tensor) or tuple(per_sample_weights.shape) != tuple(input.shape):
            got = tuple(per_sample_weights.shape) if isinstance(per_sample_weights, Tensor) else per_sample_weights
            raise ValueError(f"embedding_bag: If per_sample_weights ({got}) is not None, then it must have the same "
                             f"shape as the input ({tuple(input.shape)})")


def _bag_max(rows, valid, dtype):
    """Per bag and feature, the largest looked-up value (its row gets the gradient); 0 for an empty bag."""
    xp = xp_of(rows)
    if rows.shape[1] == 0:
        return reduce_sum(rows, dim=1)  # NOTE: zeros that are still part of the graph, as PyTorch's
    lowest = xp.asarray(-xp.inf if dtypes.is_floating(dtype) else 0, dtype=dtype)
    held = xp.where(valid[..., None], rows.array, lowest)
    winner = Tensor(held.argmax(axis=1)[:, None, :])  # NOTE: the first of tied maxima, as a gather index
    best = squeeze(gather(rows, 1, winner), 1)
    return best * Tensor(valid.any(axis=1, keepdims=True).astype(dtype))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,  # noqa: A002
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings, without materialising each looked-up row per bag.

    A 2-D ``input`` (B, N) is B bags of N indices; a 1-D ``input`` is cut into bags at ``offsets``
    (the start of each bag; with ``include_last_offset`` the last entry is the input's end). Entries
    equal to ``padding_idx`` are left out of their bag (and of its count for ``'mean'``); an empty bag
    gives zeros. Built from ``embedding``, gathers and reductions, so every gradient (weight,
    ``per_sample_weights``) and its second derivative follow from those ops.

    Args:
        input: integer indices, (B, N) or (L,).
        weight: the ``(num_embeddings, embedding_dim)`` table.
        offsets: a 1-D integer Tensor of bag starts (1-D input only).
        max_norm: rows looked up with a larger ``norm_type``-norm are renormalized to it in place.
        norm_type: the p of the norm for ``max_norm``.
        scale_grad_by_freq: not supported (must be False).
        mode: ``'sum'``, ``'mean'`` or ``'max'``.
        sparse: sparse gradients; not supported (must be False).
        per_sample_weights: a floating Tensor of the input's shape weighting each entry (``'sum'`` only).
        include_last_offset: ``offsets`` has one more entry, the end of the last bag.
        padding_idx: an index left out of every bag (negative counts from the end).
    """
    _check_bag_args(input, offsets, mode, per_sample_weights, include_last_offset)
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq is not supported (use False)")
    _check_embedding_args(input, weight, padding_idx, max_norm, sparse)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    flat = input.array.reshape(-1).astype(numpy.int64, copy=False)
    if max_norm is not None:
        _renorm_rows_(weight, flat, float(max_norm), float(norm_type))
    xp = xp_of(weight)
    positions, valid = _bag_table(input, offsets, include_last_offset)
    picked = flat[positions] if flat.size else xp.zeros(positions.shape, dtype=numpy.int64)
    if padding_idx is not None:
        valid = valid & (picked != padding_idx)
    rows = Embedding.apply(weight, indices=picked, padding_idx=padding_idx)  # (B, longest, D)
    mask = Tensor(valid[..., None].astype(weight.dtype))
    if mode == "max":
        total = _bag_max(rows, valid, weight.dtype)
    elif per_sample_weights is not None:
        scale = reshape(per_sample_weights, (-1,))[Tensor(positions)] * Tensor(valid.astype(weight.dtype))
        total = reduce_sum(rows * unsqueeze(scale, -1), dim=1)
    else:
        total = reduce_sum(rows * mask, dim=1)
    if mode == "mean":
        counts = valid.sum(axis=1, keepdims=True)
        total = total * Tensor(xp.where(counts > 0, 1.0 / xp.maximum(counts, 1), 0.0).astype(total.dtype))
    # NOTE: under autocast the sum runs in fp32 (its policy); embedding_bag is unlisted in PyTorch, so its
    # result keeps the weight's dtype: one rounding at the end
    return total if total.dtype == weight.dtype else cast(total, weight.dtype)


METHODS = {}

"""Joining and splitting ops of the indexing family: cat, stack, split, chunk, unbind.

Each is its own inverse's backward: cat's gradient is split, split's is cat,
stack's is unbind and unbind's is stack, so double backward comes for free.
Kept in their own file for size; ``cupynet.ops.indexing`` re-exports them and
lists their classes as part of the indexing family.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ._index_util import check_same_shapes, check_tensor_list, share_version
from ._util import normalize_dim, xp_of
from .arith import cast

__all__ = ["cat", "concat", "stack", "split", "chunk", "unbind"]


class Cat(Function):
    """Concatenation along an existing dimension; promote under autocast."""

    op_name = "cat"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        ctx.dim, ctx.sizes = dim, tuple(t.shape[dim] for t in tensors)
        dtype = dtypes.result_type(*(t.dtype for t in tensors))
        return xp_of(*tensors).concatenate([t.data.astype(dtype, copy=False) for t in tensors], axis=dim)

    @staticmethod
    def backward(ctx, grad):
        parts = Split.apply(grad, sizes=ctx.sizes, dim=ctx.dim)
        return tuple(p if need else None for p, need in zip(parts, ctx.needs_input_grad))


class Stack(Function):
    """Join equal-shaped tensors along a new dimension; promote under autocast."""

    op_name = "stack"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        ctx.dim = dim
        dtype = dtypes.result_type(*(t.dtype for t in tensors))
        return xp_of(*tensors).stack([t.data.astype(dtype, copy=False) for t in tensors], axis=dim)

    @staticmethod
    def backward(ctx, grad):
        parts = Unbind.apply(grad, dim=ctx.dim)
        return tuple(p if need else None for p, need in zip(parts, ctx.needs_input_grad))


class Split(Function):
    """Consecutive pieces of ``sizes`` along ``dim`` (views); backward concatenates the gradients."""

    op_name = "split"

    @staticmethod
    def forward(ctx, a, sizes=(), dim=0):
        ctx.dim, start, pieces = dim, 0, []
        for size in sizes:
            pieces.append(a.data[(slice(None),) * dim + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        return Cat.apply(*grads, dim=ctx.dim)


class Unbind(Function):
    """Every slice along ``dim`` with that dimension removed (views); backward stacks the gradients."""

    op_name = "unbind"

    @staticmethod
    def forward(ctx, a, dim=0):
        ctx.dim = dim
        return tuple(a.data[(slice(None),) * dim + (i,)] for i in range(a.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return Stack.apply(*grads, dim=ctx.dim)


def cat(tensors, dim=0):
    """Concatenate tensors along an existing dimension (dtypes promote).

    Args:
        tensors: a non-empty list or tuple of Tensors whose shapes match except in ``dim``.
        dim: the dimension to join along.
    """
    tensors = check_tensor_list("cat", tensors)
    shaped = [t for t in tensors if tuple(t.shape) != (0,)]
    if shaped and len(shaped) < len(tensors) and any(t.ndim != 1 for t in shaped):
        # NOTE: PyTorch's legacy rule: a 1-D empty tensor is skipped, whatever the others' shapes (it gets no
        # gradient, and its dtype still takes part in the promotion)
        dtype = dtypes.result_type(*(t.dtype for t in tensors))
        tensors = [t if t.dtype == dtype else cast(t, dtype) for t in shaped]
    d = normalize_dim("cat", dim, tensors[0].ndim)
    check_same_shapes("cat", tensors, skip_dim=d)
    return Cat.apply(*tensors, dim=d)


concat = cat


def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dimension ``dim`` (dtypes promote).

    Args:
        tensors: a non-empty list or tuple of Tensors of one shape.
        dim: where the new dimension goes, in ``[-(ndim + 1), ndim]``.
    """
    tensors = check_tensor_list("stack", tensors)
    d = normalize_dim("stack", dim, tensors[0].ndim + 1)
    check_same_shapes("stack", tensors)
    return Stack.apply(*tensors, dim=d)


def _split_sizes(n, split_size_or_sections, dim):
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0 or (size == 0 and n > 0):
            raise RuntimeError(f"split: split_size must be a positive integer (dimension {dim} has size {n}), "
                               f"got {size}")
        return (size,) * (n // size) + ((n % size,) if n % size else ()) if n else (0,)
    sizes = tuple(split_size_or_sections)
    if any(not isinstance(s, int) or s < 0 for s in sizes) or sum(sizes) != n:
        raise RuntimeError(f"split: split_sizes must be non-negative ints that sum exactly to {n} (the size of "
                           f"dimension {dim}), but got split_sizes={list(sizes)}")
    return sizes


def split(tensor, split_size_or_sections, dim=0):
    """Split into pieces of ``split_size`` (the last may be smaller) or of the listed sizes (views).

    Args:
        tensor: a Tensor.
        split_size_or_sections: an int piece size, or a list of sizes summing to the dimension's size.
        dim: the dimension to split.
    """
    d = normalize_dim("split", dim, tensor.ndim)
    sizes = _split_sizes(tensor.shape[d], split_size_or_sections, d)
    return tuple(share_version(p, tensor) for p in Split.apply(tensor, sizes=sizes, dim=d))


def chunk(input, chunks, dim=0):  # noqa: A002
    """Split into ``chunks`` pieces of size ``ceil(n / chunks)`` (possibly fewer pieces), as PyTorch.

    Args:
        input: a Tensor.
        chunks: the number of pieces, a positive int.
        dim: the dimension to split.
    """
    if not isinstance(chunks, int) or chunks <= 0:
        raise RuntimeError(f"chunk: expects `chunks` to be a positive int, got {chunks!r}")
    d = normalize_dim("chunk", dim, input.ndim)
    return split(input, max(-(-input.shape[d] // chunks), 1), d)


def unbind(input, dim=0):  # noqa: A002
    """All slices along ``dim``, with that dimension removed (views).

    Args:
        input: a Tensor.
        dim: the dimension to remove.
    """
    d = normalize_dim("unbind", dim, input.ndim)
    return tuple(share_version(p, input) for p in Unbind.apply(input, dim=d))

"""Rearranging ops of the indexing family: tril/triu, repeat/tile, flip, roll.

Kept in their own file for size; ``cupynet.ops.indexing`` re-exports them and
lists their classes as part of the indexing family.
"""

from __future__ import annotations

from ..autograd.function import Function
from ._index_util import normalize_dims
from ._util import normalize_dim, xp_of
from .shape import reshape

__all__ = ["tril", "triu", "repeat", "tile", "flip", "roll"]


class Tril(Function):
    """Lower triangle of the last two dimensions (the rest set to zero)."""

    op_name = "tril"

    @classmethod
    def forward(cls, ctx, a, diagonal=0):
        ctx.diagonal = diagonal
        return getattr(xp_of(a), cls.op_name)(a.data, k=diagonal)

    @classmethod
    def backward(cls, ctx, grad):
        return cls.apply(grad, diagonal=ctx.diagonal)


class Triu(Tril):
    """Upper triangle of the last two dimensions (the rest set to zero)."""

    op_name = "triu"


def _triangle(cls, input, diagonal):
    if input.ndim < 2:
        raise RuntimeError(f"{cls.op_name}: input tensor must have at least 2 dimensions, got shape "
                           f"{tuple(input.shape)}")
    if not isinstance(diagonal, int):
        raise TypeError(f"{cls.op_name}: expected diagonal to be an int, got {type(diagonal).__name__}")
    return cls.apply(input, diagonal=diagonal)


def tril(input, diagonal=0):  # noqa: A002
    """Keep the lower triangle (on and below ``diagonal``) of the last two dimensions.

    Args:
        input: a Tensor with at least 2 dimensions.
        diagonal: 0 is the main diagonal, positive above it, negative below.
    """
    return _triangle(Tril, input, diagonal)


def triu(input, diagonal=0):  # noqa: A002
    """Keep the upper triangle (on and above ``diagonal``) of the last two dimensions.

    Args:
        input: a Tensor with at least 2 dimensions.
        diagonal: 0 is the main diagonal, positive above it, negative below.
    """
    return _triangle(Triu, input, diagonal)


class Repeat(Function):
    """Tile the tensor ``repeats[i]`` times along each dimension; backward sums the copies."""

    op_name = "repeat"

    @staticmethod
    def forward(ctx, a, repeats=()):
        ctx.in_shape, ctx.repeats = a.shape, repeats
        return xp_of(a).tile(a.data, repeats)

    @staticmethod
    def backward(ctx, grad):
        from .reduce import sum as sum_op  # noqa: PLC0415 - reduce imports this module
        padded = (1,) * (len(ctx.repeats) - len(ctx.in_shape)) + tuple(ctx.in_shape)
        # NOTE: view the gradient as (r0, s0, r1, s1, ...) and sum over every r axis
        pairs = tuple(v for pair in zip(ctx.repeats, padded) for v in pair)
        summed = sum_op(reshape(grad, pairs), dim=tuple(range(0, len(pairs), 2)))
        return reshape(summed, ctx.in_shape)


class Tile(Repeat):
    """``repeat`` with missing leading repeat counts taken as 1."""

    op_name = "tile"


def _repeat_counts(op_name, sizes):
    sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    if any(not isinstance(s, int) or s < 0 for s in sizes):
        raise RuntimeError(f"{op_name}: repeat counts must be non-negative ints, got {tuple(sizes)}")
    return tuple(sizes)


def repeat(input, *sizes):  # noqa: A002
    """Tile ``input`` ``sizes[i]`` times along each dimension (``Tensor.repeat``).

    Args:
        input: a Tensor.
        *sizes: one count per dimension (at least ``input.ndim`` of them), as ints or one tuple.
    """
    sizes = _repeat_counts("repeat", sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError(f"repeat: Number of dimensions of repeat dims ({len(sizes)}) can not be smaller than "
                           f"number of dimensions of tensor ({input.ndim}, shape {tuple(input.shape)})")
    return Repeat.apply(input, repeats=sizes)


def tile(input, dims):  # noqa: A002
    """Tile ``input``; fewer counts than dimensions are padded with leading 1s.

    Args:
        input: a Tensor.
        dims: the repeat counts, a tuple of ints.
    """
    dims = _repeat_counts("tile", (dims,) if isinstance(dims, int) else (tuple(dims),))
    return Tile.apply(input, repeats=(1,) * (input.ndim - len(dims)) + dims)


class Flip(Function):
    """Reverse the order of elements along ``dims``."""

    op_name = "flip"

    @staticmethod
    def forward(ctx, a, dims=()):
        ctx.dims = dims
        return xp_of(a).flip(a.data, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, dims=ctx.dims)


def flip(input, dims):  # noqa: A002
    """Reverse the order of elements along ``dims``.

    Args:
        input: a Tensor.
        dims: a dimension or a sequence of distinct dimensions.
    """
    dims = normalize_dims("flip", dims, input.ndim)
    return Flip.apply(input, dims=dims if input.ndim else ())  # NOTE: a 0-d tensor takes dim 0 and has no axis


class Roll(Function):
    """Shift elements cyclically along dims (the flattened tensor when dims is None)."""

    op_name = "roll"

    @staticmethod
    def forward(ctx, a, shifts=0, dims=None):
        ctx.shifts, ctx.dims = shifts, dims
        return xp_of(a).roll(a.data, shifts, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        back = tuple(-s for s in ctx.shifts) if isinstance(ctx.shifts, tuple) else -ctx.shifts
        return Roll.apply(grad, shifts=back, dims=ctx.dims)


def roll(input, shifts, dims=None):  # noqa: A002
    """Shift elements cyclically by ``shifts`` along ``dims`` (the flattened tensor when dims is None).

    Args:
        input: a Tensor.
        shifts: an int, or a tuple with one shift per dim.
        dims: a dimension, a tuple of dimensions, or None.
    """
    if dims is None:
        if not isinstance(shifts, int):
            raise RuntimeError(f"roll: with dims=None, shifts must be one int, got {shifts!r}")
        return Roll.apply(input, shifts=shifts, dims=None)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align, got shifts={shifts} and dims={dims}")
    dims = tuple(normalize_dim("roll", d, input.ndim) for d in dims)
    return Roll.apply(input, shifts=shifts, dims=dims)

"""Matrix structure: diagonal, diag_embed, diag, trace, block_diag, kron, cross, cdist, triu/tril_indices.

Reading a diagonal is a ``GetItem`` (its backward writes the gradient back on
the diagonal) and building one is an ``IndexAddZeros`` (its backward reads it):
the pair from indexing.py, so both have double backward. ``kron`` and
``block_diag`` are compositions of existing ops. ``cross`` (promote under
autocast) and ``cdist`` (fp32) are op classes with PyTorch's cast policies.
"""

from __future__ import annotations

import warnings

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import compute_in_fp32, normalize_dim, xp_of
from .arith import mul
from .indexing import GetItem, IndexAddZeros, cat, masked_fill
from .reduce import sum as sum_
from .shape import movedim, permute, reshape, sum_to, unsqueeze

__all__ = ["diagonal", "diag_embed", "diag", "trace", "block_diag", "kron", "cross", "linalg_cross", "cdist",
           "triu_indices", "tril_indices"]


def _diagonal_index(rows, cols, offset, xp):
    n = max(0, min(rows - max(-offset, 0), cols - max(offset, 0)))
    k = xp.arange(n)
    return k + max(-offset, 0), k + max(offset, 0)


def _two_dims(op_name, ndim, dim1, dim2):
    d1, d2 = normalize_dim(op_name, dim1, ndim), normalize_dim(op_name, dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


class Diagonal(GetItem):
    """The diagonal of the last two dimensions (moved there first), as the last dimension."""

    op_name = "diagonal"


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002 - PyTorch's names
    """The diagonal (``offset`` above the main one) of the matrices in dims ``dim1``, ``dim2``, as the last dim.

    Args:
        input: a Tensor with at least 2 dimensions.
        offset: 0 the main diagonal, > 0 above it, < 0 below it.
        dim1: the rows' dimension.
        dim2: the columns' dimension.
    """
    d1, d2 = _two_dims("diagonal", input.ndim, dim1, dim2)
    rest = [d for d in range(input.ndim) if d not in (d1, d2)]
    moved = permute(input, *rest, d1, d2)
    rows, cols = _diagonal_index(moved.shape[-2], moved.shape[-1], offset, xp_of(input))
    return Diagonal.apply(moved, index=(Ellipsis, rows, cols))


class DiagEmbed(IndexAddZeros):
    """Zeros with the last dimension of the input written on a diagonal of two new last dimensions."""

    op_name = "diag_embed"


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """Matrices whose ``offset`` diagonal (in dims ``dim1``, ``dim2`` of the result) holds input's last dim.

    Args:
        input: a Tensor.
        offset: which diagonal.
        dim1: the result's rows dimension.
        dim2: the result's columns dimension.
    """
    n = input.shape[-1] + abs(offset)
    d1, d2 = _two_dims("diag_embed", input.ndim + 1, dim1, dim2)
    rows, cols = _diagonal_index(n, n, offset, xp_of(input))
    out = DiagEmbed.apply(input, index=(Ellipsis, rows, cols), shape=input.shape[:-1] + (n, n))
    rest = list(range(input.ndim - 1))
    order = [0] * (input.ndim + 1)  # NOTE: result dim -> which dim of ``out`` goes there
    free = iter(rest)
    for d in range(input.ndim + 1):
        order[d] = input.ndim - 1 if d == d1 else input.ndim if d == d2 else next(free)
    return permute(out, *order)


_read_diagonal = diagonal  # NOTE: diag's argument is named ``diagonal`` (PyTorch's name) and hides the function


def diag(input, diagonal=0):  # noqa: A002
    """A 1-D input becomes a matrix with it on a diagonal; a 2-D input gives that diagonal.

    Args:
        input: a 1-D or 2-D Tensor.
        diagonal: which diagonal (0 main, > 0 above, < 0 below).
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return _read_diagonal(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def trace(input):  # noqa: A002
    """The sum of the main diagonal of a 2-D tensor.

    Args:
        input: a 2-D Tensor.
    """
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return sum_(diagonal(input))


def block_diag(*tensors):
    """A block-diagonal matrix of the given tensors (0-D and 1-D ones count as one row).

    Args:
        *tensors: Tensors with at most 2 dimensions.
    """
    blocks = []
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{t.ndim} dimensions")
        blocks.append(reshape(t, (1, -1) if t.ndim < 2 else t.shape))
    dtype = dtypes.result_type(*(b.dtype for b in blocks)) if blocks else dtypes.get_default_dtype()
    xp = xp_of(*blocks) if blocks else numpy
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        pieces = [Tensor(xp.zeros((b.shape[0], left), dtype=dtype)), b.to(dtype),
                  Tensor(xp.zeros((b.shape[0], width - left - b.shape[1]), dtype=dtype))]
        rows.append(cat(pieces, dim=1))
        left += b.shape[1]
    return cat(rows, dim=0) if rows else Tensor(xp.zeros((0, 0), dtype=dtype))


def kron(input, other):  # noqa: A002
    """The Kronecker product: block ``(i, j, ...)`` is ``input[i, j, ...] * other``.

    Args:
        input: a Tensor.
        other: a Tensor.
    """
    n = max(input.ndim, other.ndim)
    a = reshape(input, (1,) * (n - input.ndim) + input.shape)
    b = reshape(other, (1,) * (n - other.ndim) + other.shape)
    # NOTE: interleave the dims: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...), multiply, merge pairs
    a = reshape(a, tuple(s for d in a.shape for s in (d, 1)))
    b = reshape(b, tuple(s for d in b.shape for s in (1, d)))
    return reshape(mul(a, b), tuple(x * y for x, y in zip(a.shape[::2], b.shape[1::2])))


def _cross_on(op_name, input, other, d, shown):  # noqa: A002
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{op_name}: inputs dimension {shown} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    out = Cross.apply(movedim(input, d, -1), movedim(other, d, -1))
    return movedim(out, -1, d)


class Cross(Function):
    """The 3-vector cross product along the last dimension."""

    op_name = "cross"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        out = xp_of(a).cross(compute_in_fp32(a.array), compute_in_fp32(b.array), axis=-1)
        return out.astype(dtypes.result_type(a.dtype, b.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = sum_to(Cross.apply(b, grad), a.shape) if ctx.needs_input_grad[0] else None
        gb = sum_to(Cross.apply(grad, a), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (default: the first dimension of size 3, with a warning).

    Args:
        input: a Tensor.
        other: a Tensor broadcastable with input.
        dim: the dimension of size 3.
    """
    if input.ndim != other.ndim:
        raise RuntimeError(f"cross: inputs must have the same number of dimensions, got {input.ndim} and "
                           f"{other.ndim}")
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated. Please either pass the dim "
                      "explicitly or simply use torch.linalg.cross.", UserWarning, stacklevel=2)
        sizes = [d for d in range(input.ndim) if input.shape[d] == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
    return _cross_on("linalg.cross", input, other, normalize_dim("cross", dim, input.ndim), dim)


def linalg_cross(input, other, *, dim=-1):  # noqa: A002
    """``torch.linalg.cross``: the cross product along ``dim`` (default the last), inputs broadcast.

    Args:
        input: a Tensor.
        other: a Tensor.
        dim: the dimension of size 3.
    """
    n = max(input.ndim, other.ndim)
    input, other = reshape(input, (1,) * (n - input.ndim) + input.shape), reshape(other, (1,) * (n - other.ndim)
                                                                                   + other.shape)
    return _cross_on("linalg.cross", input, other, normalize_dim("linalg.cross", dim, n), dim)


def _max_or_zero(mag):
    """``mag.max(-1)``, and 0 where the last dimension is empty (PyTorch's inf-norm of no features).

    NOTE: CuPy's ``max`` takes no ``initial=`` and refuses a reduction over an
    empty axis, so the empty case is told apart by shape (known on the host: no sync).

    Args:
        mag: the absolute differences, (..., P, R, M).
    """
    if mag.shape[-1] == 0:
        return xp_of(mag).zeros(mag.shape[:-1], dtype=mag.dtype)
    return mag.max(-1)


def _dist_grad(diff, dist, p):
    """d dist / d diff for the p-norm (0 where the distance is 0, as PyTorch)."""
    zero = dist == 0
    if p == 0:
        return diff * 0
    if p == 1:
        return diff.sign()
    if p == numpy.inf:
        hit = (diff.abs() == dist).to(diff.dtype)
        return diff.sign() * hit / sum_(hit, -1, keepdim=True)
    safe = masked_fill(dist, zero, 1.0)
    if p == 2:
        return masked_fill(diff / safe, zero, 0.0)
    return masked_fill(diff.sign() * diff.abs() ** (p - 1) / safe ** (p - 1), zero, 0.0)


class Cdist(Function):
    """Pairwise p-norm distances between the rows of two batches of matrices."""

    op_name = "cdist"
    amp_policy = "fp32"
    save_outputs = True  # NOTE: backward divides by the distances

    @staticmethod
    def forward(ctx, x1, x2, p=2.0):
        ctx.p = p
        ctx.save_for_backward(x1, x2)
        diff = compute_in_fp32(x1.array)[..., :, None, :] - compute_in_fp32(x2.array)[..., None, :, :]
        mag = xp_of(x1).abs(diff)
        if p == 0:
            out = (mag != 0).sum(-1).astype(diff.dtype)
        elif p == numpy.inf:
            out = _max_or_zero(mag)
        else:
            out = (mag ** p).sum(-1) ** (1.0 / p)
        return out.astype(x1.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x1, x2 = ctx.saved_tensors
        diff = unsqueeze(x1, -2) - unsqueeze(x2, -3)
        dist = unsqueeze(ctx.output(0), -1)
        g = unsqueeze(grad, -1) * _dist_grad(diff, dist, ctx.p)
        g1 = sum_to(sum_(g, -2), x1.shape) if ctx.needs_input_grad[0] else None
        g2 = sum_to(-sum_(g, -3), x2.shape) if ctx.needs_input_grad[1] else None
        return g1, g2


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Distances ``||x1[..., i, :] - x2[..., j, :]||_p`` for every pair of rows.

    Args:
        x1: a (..., P, M) Tensor.
        x2: a (..., R, M) Tensor.
        p: the norm's order, >= 0 (inf allowed).
        compute_mode: accepted for PyTorch compatibility; cupynet always computes the differences directly.
    """
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if not dtypes.is_floating(x1.dtype) or not dtypes.is_floating(x2.dtype):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}, X2 got: {x2.dtype}")
    return Cdist.apply(x1, x2, p=float(p))


def _triangle_indices(name, row, col, offset, dtype, device):
    from ..creation import tensor  # noqa: PLC0415 - creation sits below ops; only these two need it
    if row < 0 or col < 0:
        raise RuntimeError(f"{name}: row and col must be non-negative, got {row} and {col}")
    lower = name == "tril_indices"
    rows, cols = (numpy.tril_indices if lower else numpy.triu_indices)(row, offset, col)
    return tensor(numpy.stack([rows, cols]).astype(numpy.int64), dtype=dtype or dtypes.int64, device=device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) row and column indices of the upper triangle of a row x col matrix.

    Args:
        row: number of rows.
        col: number of columns.
        offset: which diagonal the triangle starts at.
        dtype: the indices' dtype (int64).
        device: where to put them.
    """
    return _triangle_indices("triu_indices", row, col, offset, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) row and column indices of the lower triangle of a row x col matrix.

    Args:
        row, col, offset, dtype, device: as in ``triu_indices`` (``offset`` is the diagonal the triangle ends at).
    """
    return _triangle_indices("tril_indices", row, col, offset, dtype, device)


METHODS = {"diagonal": diagonal, "diag_embed": diag_embed, "diag": diag, "trace": trace, "kron": kron,
           "cross": cross}

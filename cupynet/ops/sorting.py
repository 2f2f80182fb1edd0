"""Ordering ops: sort, argsort, topk, kthvalue, median/nanmedian, mode, unique, unique_consecutive,
searchsorted and bucketize.

Every op here that returns values picks them by index: the indices are found on
the arrays (``argsort``, never differentiated), and the values are a read of the
input at those indices, a ``GetItem`` (indexing.py). Its backward adds the gradient
back at the same positions, so each op gets first and higher-order gradients from
that one pair of ops. ``unique``, ``searchsorted`` and ``bucketize`` have no gradient
(PyTorch has none either).

NOTE (ties and NaN): as PyTorch, NaN sorts after every number (before them when
descending), and a stable sort keeps equal values in input order; cupynet always
sorts stably, so ``stable=False`` gives the same (valid) order as ``stable=True``.
"""

from __future__ import annotations

import collections

import numpy

from .. import dtypes
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import normalize_dim, xp_of
from .indexing import GetItem, along_dim_index, check_index_tensor
from .shape import reshape

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "unique",
           "unique_consecutive",
           "searchsorted", "bucketize"]

# NOTE: PyTorch returns named tuples (torch.return_types.sort, ...): fields by name or unpacking
SortResult = collections.namedtuple("sort", ["values", "indices"])
TopkResult = collections.namedtuple("topk", ["values", "indices"])
KthvalueResult = collections.namedtuple("kthvalue", ["values", "indices"])
MedianResult = collections.namedtuple("median", ["values", "indices"])
ModeResult = collections.namedtuple("mode", ["values", "indices"])


def _stable_argsort(array, axis, descending):
    """Indices that sort ``array`` along ``axis`` stably (NaN last ascending, first descending)."""
    xp = xp_of(array)
    if not descending:
        return xp.argsort(array, axis=axis, kind="stable")
    # NOTE: sort the reversed array ascending, then reverse that order: equal values keep input order and
    # NaN (last ascending) comes first, with no negation (which unsigned and bool dtypes cannot do)
    n = array.shape[axis]
    order = xp.argsort(xp.flip(array, axis), axis=axis, kind="stable")
    return (n - 1 - xp.flip(order, axis)).astype(dtypes.int64, copy=False)


def _read_along(op_name, input, indices, d):  # noqa: A002 - PyTorch's name
    """``input`` at ``indices`` (an array) along dim ``d``: a differentiable read."""
    values = Sort.apply(input, index=along_dim_index(xp_of(input), indices, d))
    return values, Tensor(indices.astype(dtypes.int64, copy=False))


def _as_1d(input):  # noqa: A002
    return reshape(input, (1,)) if input.ndim == 0 else input


def _back_to_0d(input, result, cls):  # noqa: A002
    if input.ndim != 0:
        return cls(*result)
    return cls(*(reshape(t, ()) for t in result))


class Sort(GetItem):
    """The input read at sorted positions along a dimension (values of sort/topk/kthvalue/median)."""

    op_name = "sort"


def sort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """The values of ``input`` sorted along ``dim``, and the indices they came from.

    Args:
        input: a Tensor.
        dim: the dimension to sort along.
        descending: largest first.
        stable: keep equal values in input order (cupynet's sort is always stable).

    Returns:
        ``(values, indices)``: values is differentiable; indices are int64.
    """
    require_tensor("sort", input)
    d = normalize_dim("sort", dim, input.ndim)
    flat = _as_1d(input)
    order = _stable_argsort(flat.array, d, descending)
    return _back_to_0d(input, _read_along("sort", flat, order, d), SortResult)


def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """The indices that sort ``input`` along ``dim`` (int64, no gradient).

    Args:
        input: a Tensor.
        dim: the dimension to sort along.
        descending: largest first.
        stable: keep equal values in input order (always so in cupynet).
    """
    return sort(input, dim, descending, stable).indices


def msort(input):  # noqa: A002
    """``input`` sorted along its first dimension (values only).

    Args:
        input: a Tensor.
    """
    return sort(input, dim=0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's names
    """The ``k`` largest (or smallest) values along ``dim`` and their indices.

    Args:
        input: a Tensor.
        k: how many values; 0 <= k <= input.size(dim).
        dim: the dimension to search.
        largest: the largest values (False: the smallest).
        sorted: return them in order (always so in cupynet).
    """
    require_tensor("topk", input)
    d = normalize_dim("topk", dim, input.ndim)
    flat = _as_1d(input)
    if not isinstance(k, int) or not 0 <= k <= flat.shape[d]:
        raise RuntimeError(f"selected index k out of range (topk: k={k} for dimension {dim} of size "
                           f"{flat.shape[d]})")
    order = _stable_argsort(flat.array, d, largest)
    keep = (slice(None),) * d + (slice(0, k),)
    return _back_to_0d(input, _read_along("topk", flat, order[keep], d), TopkResult)


def _pick(input, dim, keepdim, positions):  # noqa: A002
    """Sort ``input`` along ``dim``, read position ``positions`` (an array broadcast over the other dims)."""
    d = normalize_dim("median", dim, input.ndim)
    flat = _as_1d(input)
    xp = xp_of(flat)
    order = _stable_argsort(flat.array, d, False)
    chosen = xp.take_along_axis(order, xp.expand_dims(positions, d), axis=d)
    values, indices = _read_along("median", flat, chosen, d)
    if not keepdim or input.ndim == 0:
        shape = tuple(s for i, s in enumerate(flat.shape) if i != d) if input.ndim else ()
        values, indices = reshape(values, shape), reshape(indices, shape)
    return values, indices


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    """The ``k``-th smallest value (1-based) along ``dim`` and its index.

    Args:
        input: a Tensor.
        k: which value, 1 <= k <= input.size(dim).
        dim: the dimension to search.
        keepdim: keep ``dim`` with size 1.
    """
    require_tensor("kthvalue", input)
    d = normalize_dim("kthvalue", dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not isinstance(k, int) or not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    other = tuple(s for i, s in enumerate(input.shape) if i != d)
    positions = xp_of(input).full(other, k - 1, dtype=dtypes.int64)
    return KthvalueResult(*_pick(input, d, keepdim, positions))


def _median_positions(input, d, ignore_nan):  # noqa: A002
    """Where the lower median sits in each sorted slice: NaN's position when a NaN is present (median),
    the median of the numbers alone (nanmedian)."""
    array = input.array if input.ndim else input.array.reshape(1)
    n = array.shape[d]
    is_nan = xp_of(input).isnan(array) if dtypes.is_floating(array.dtype) else None
    if is_nan is None:
        return xp_of(input).full(array.shape[:d] + array.shape[d + 1:], (n - 1) // 2, dtype=dtypes.int64)
    valid = n - is_nan.sum(axis=d)
    if ignore_nan:  # NOTE: an all-NaN slice reads position 0, a NaN, as PyTorch's nanmedian
        return xp_of(input).maximum(valid - 1, 0) // 2
    return xp_of(input).where(valid < n, valid, (n - 1) // 2)


def _median(op_name, input, dim, keepdim, ignore_nan):  # noqa: A002
    require_tensor(op_name, input)
    if dim is None:
        flat = reshape(input, (-1,))
        if flat.shape[0] == 0:
            return Tensor(xp_of(input).full((), numpy.nan, dtype=input.dtype))
        return _pick(flat, 0, False, _median_positions(flat, 0, ignore_nan))[0]
    d = normalize_dim(op_name, dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{op_name}(): Expected reduction dim {d} to have non-zero size.")
    return MedianResult(*_pick(input, d, keepdim, _median_positions(input, d, ignore_nan)))


def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median: of all values (a 0-d Tensor), or along ``dim`` with its index.

    A slice holding NaN has median NaN (at the first NaN's index), as in PyTorch.

    Args:
        input: a Tensor.
        dim: the dimension, or None for the median of all values (then only the value is returned).
        keepdim: keep ``dim`` with size 1.
    """
    return _median("median", input, dim, keepdim, ignore_nan=False)


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """``median`` that ignores NaN (NaN only where a slice is all NaN).

    Args:
        input: a Tensor.
        dim: the dimension, or None for the median of all values.
        keepdim: keep ``dim`` with size 1.
    """
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


def _mode_positions(rows):
    """For 2-D ``rows``: the most frequent value of each row (the smallest of a tie), and its last position.

    NOTE: each row is sorted; a run of equal values is counted by the distance to where it began, found
    for all rows at once on the flattened array (each row's first element starts a run). The first
    position holding the longest count ends the longest run of smallest value (PyTorch's choice).
    """
    xp = xp_of(rows)
    n_rows, n = rows.shape
    ordered = xp.sort(rows, axis=1)
    starts = xp.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    starts = starts.reshape(-1)
    run_begin = xp.flatnonzero(starts)[xp.cumsum(starts) - 1]
    counts = (xp.arange(n_rows * n) - run_begin).reshape(n_rows, n)
    values = ordered[xp.arange(n_rows), xp.argmax(counts, axis=1)]
    # NOTE: PyTorch's CPU kernel reports the last position of the mode value in the row
    last = n - 1 - xp.argmax((rows == values[:, None])[:, ::-1], axis=1)
    return last


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """The most frequent value along ``dim`` (the smallest one on a tie) and the last index holding it.

    Args:
        input: a Tensor.
        dim: the dimension to reduce.
        keepdim: keep ``dim`` with size 1.

    Returns:
        ``(values, indices)``: values is differentiable (the gradient goes to the returned index).
    """
    require_tensor("mode", input)
    d = normalize_dim("mode", dim, input.ndim)
    flat = _as_1d(input)
    if flat.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    xp = xp_of(flat)
    moved = xp.moveaxis(flat.array, d, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    last = _mode_positions(rows) if rows.shape[0] else xp.zeros((0,), dtype=dtypes.int64)
    chosen = xp.expand_dims(last.reshape(moved.shape[:-1]), d)
    values, indices = _read_along("mode", flat, chosen.astype(dtypes.int64, copy=False), d)
    if not keepdim or input.ndim == 0:
        shape = tuple(s for i, s in enumerate(flat.shape) if i != d) if input.ndim else ()
        values, indices = reshape(values, shape), reshape(indices, shape)
    return ModeResult(values, indices)


# ---- unique values (no gradient) ----------------------------------------------------------------------
def _unique_result(values, inverse, counts, return_inverse, return_counts):
    out = [Tensor(values)]
    if return_inverse:
        out.append(Tensor(inverse.astype(dtypes.int64, copy=False)))
    if return_counts:
        out.append(Tensor(counts.astype(dtypes.int64, copy=False)))
    return out[0] if len(out) == 1 else tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values of ``input`` (or distinct slices along ``dim``), in ascending order.

    Args:
        input: a Tensor.
        sorted: accepted for PyTorch compatibility; the result is always sorted (as PyTorch's CPU result).
        return_inverse: also return, for each input element (slice), the index of its value in the output.
        return_counts: also return how often each distinct value occurs.
        dim: the dimension whose slices are compared, or None to flatten.
    """
    require_tensor("unique", input)
    xp = xp_of(input)
    if dim is None:
        values, inverse, counts = xp.unique(input.array.reshape(-1), return_inverse=True, return_counts=True)
        inverse = inverse.reshape(input.shape)
    else:
        d = normalize_dim("unique", dim, input.ndim)
        values, inverse, counts = xp.unique(input.array, return_inverse=True, return_counts=True, axis=d)
        inverse = inverse.reshape(-1)
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Collapse runs of equal consecutive values (or slices along ``dim``) to one.

    Args:
        input: a Tensor.
        return_inverse: also return, per element (slice), the index of its run in the output.
        return_counts: also return the length of each run.
        dim: the dimension whose slices are compared, or None to flatten.
    """
    require_tensor("unique_consecutive", input)
    xp = xp_of(input)
    d = 0 if dim is None else normalize_dim("unique_consecutive", dim, input.ndim)
    array = input.array.reshape(-1) if dim is None else xp.moveaxis(input.array, d, 0)
    rows = array.reshape(array.shape[0], int(numpy.prod(array.shape[1:])))  # NOTE: not -1, ambiguous when empty
    starts = xp.ones(rows.shape[0], dtype=bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    values = array[starts] if dim is None else xp.moveaxis(array[starts], 0, d)
    inverse = xp.cumsum(starts) - 1
    positions = xp.concatenate([xp.nonzero(starts)[0], xp.asarray([rows.shape[0]])])
    counts = xp.diff(positions)
    inverse = inverse.reshape(input.shape) if dim is None else inverse
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


# ---- binary search (no gradient) --------------------------------------------------------------------
def _search_side(op_name, right, side):
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"{op_name}(): side can only be 'left' or 'right' but got {side!r}")
    if right and side == "left":
        raise RuntimeError(f"{op_name}(): side and right can't be set to opposites, got side of left while "
                           "right was True")
    return side


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    """Indices where ``input``'s values would be inserted in ``sorted_sequence`` to keep it sorted.

    Args:
        sorted_sequence: a Tensor sorted along its last dimension (1-D, or with input's leading dimensions).
        input: a Tensor (or a number) of values to look up.
        out_int32: int32 indices instead of int64.
        right: the last suitable position instead of the first (``side='right'``).
        side: "left" or "right" (the same as right=False/True).
        sorter: indices that sort an unsorted ``sorted_sequence`` along its last dimension.
    """
    require_tensor("searchsorted", sorted_sequence, "sorted_sequence")
    side = _search_side("searchsorted", right, side)
    xp = xp_of(sorted_sequence)
    scalar = not isinstance(input, Tensor)
    values = xp.asarray(input, dtype=sorted_sequence.dtype) if scalar else input.array
    bounds = sorted_sequence.array
    if sorter is not None:
        check_index_tensor("searchsorted", sorter)
        bounds = xp.take_along_axis(bounds, sorter.array, axis=-1)
    if bounds.ndim > 1 and (scalar or bounds.shape[:-1] != values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(bounds.shape)} and input value tensor {list(values.shape)}")
    if bounds.ndim <= 1:
        out = xp.searchsorted(bounds.reshape(-1), values, side=side)
    else:  # NOTE: one search per row of boundaries (a Python loop over the leading dims)
        rows, lookups = bounds.reshape(-1, bounds.shape[-1]), values.reshape(-1, values.shape[-1])
        out = xp.stack([xp.searchsorted(r, v, side=side) for r, v in zip(rows, lookups)]).reshape(values.shape)
    return Tensor(xp.asarray(out, dtype=dtypes.int32 if out_int32 else dtypes.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """The bucket of each value: ``i`` such that ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` if right).

    Args:
        input: a Tensor (or a number).
        boundaries: a 1-D increasing Tensor.
        out_int32: int32 indices instead of int64.
        right: buckets closed on the left instead.
    """
    require_tensor("bucketize", boundaries, "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


METHODS = {"sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue, "median": median,
           "nanmedian": nanmedian, "mode": mode, "unique": unique, "unique_consecutive": unique_consecutive}

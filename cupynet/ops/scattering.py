"""Writing at an index: scatter, scatter_reduce, index_add, index_copy, index_fill, masked_scatter.

(``scatter_add`` lives in indexing.py beside ``gather``.) Each op returns a new
tensor; its in-place twin (``scatter_``, ``index_add_``, ``masked_scatter_``, ...) runs the
same op and writes the result back through the in-place machinery (``write_in_place``,
ops/inplace.py): a plain write outside a graph, history rebased inside one, as PyTorch.

Every op here turns its arguments into one canonical advanced index (the same
one ``gather`` reads with, ``along_dim_index``), so the backward is made of reads
at that index (``GetItem``) and writes of zeros (``masked_fill``): the positions
an op overwrote get no gradient from ``input``, and ``src`` receives the gradient
read back at its positions. Those are cupynet ops, so double backward works.

NOTE (duplicates): where an index names one position twice, ``scatter`` and
``index_copy`` keep the last write on the CPU (PyTorch leaves it undefined), and
the ``amax``/``amin`` reductions share the gradient evenly among the tied winners,
as PyTorch does.
"""

from __future__ import annotations

import math
import numbers

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import check_same_device, compute_in_fp32, normalize_dim, scatter_at, xp_of
from .indexing import (
    GetItem,
    IndexAddZeros,
    _broadcast_shape,
    _check_condition,
    _check_index_device,
    along_dim_index,
    check_gather_shapes,
    check_index_tensor,
    masked_fill,
    scatter_add,
)
from .indexing import index_add as add_at_index
from .inplace import write_in_place
from .shape import broadcast_to

__all__ = ["scatter", "scatter_reduce", "index_add", "index_copy", "index_fill", "masked_scatter"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _written_mask(shape, index, xp):
    """A bool array of ``shape``, True at the positions ``index`` writes."""
    mask = xp.zeros(shape, dtype=bool)
    mask[index] = True
    return mask


def _src_grad(ctx, grad):
    """The gradient of ``src``: ``grad`` read at the scattered positions, placed in src's shape."""
    out = GetItem.apply(grad, index=ctx.index)
    if out.shape != ctx.src_shape:
        out = IndexAddZeros.apply(out, index=ctx.src_view, shape=ctx.src_shape)
    return out


def _check_bounds(op_name, index, size, dim):
    """PyTorch's error for an index outside [-size, size) (negative indices are refused too, as PyTorch)."""
    if index.size and xp_of(index) is numpy:  # NOTE: on the GPU an out-of-range index is not checked (a sync)
        bad = (index < 0) | (index >= size)
        if bad.any():
            value = int(index.reshape(-1)[int(bad.reshape(-1).argmax())])
            raise RuntimeError(f"{op_name}(): index {value} is out of bounds for dimension {dim} with size {size}")


def _scatter_args(op_name, input, dim, index, src):  # noqa: A002
    check_index_tensor(op_name, index)
    _check_index_device(op_name, input, index)
    d = normalize_dim(op_name, dim, input.ndim)
    others = [("input", input, False)] + ([("src", src, True)] if isinstance(src, Tensor) else [])
    check_gather_shapes(op_name, d, index, *others)
    if isinstance(src, Tensor) and src.dtype != input.dtype:
        raise RuntimeError(f"{op_name}(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
                           f"{src.dtype})")
    _check_bounds(op_name, index.array, input.shape[d] if input.ndim else 1, d)
    return along_dim_index(xp_of(input), index.array, d), tuple(slice(0, s) for s in index.shape)


class Scatter(Function):
    """``input`` with ``src`` (or a number) written at ``index`` along a dimension."""

    op_name = "scatter"

    @staticmethod
    def forward(ctx, a, src, index=(), src_view=(), value=None):
        ctx.index, ctx.src_view = index, src_view
        ctx.src_shape = None if src is None else src.shape
        ctx.mask = Tensor(_written_mask(a.shape, index, xp_of(a)))
        out = a.array.copy()
        out[index] = value if src is None else src.array[src_view]
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_a = masked_fill(grad, ctx.mask, 0.0) if ctx.needs_input_grad[0] else None
        grad_src = _src_grad(ctx, grad) if ctx.src_shape is not None and ctx.needs_input_grad[1] else None
        return grad_a, grad_src


def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002 - PyTorch's names
    """A copy of ``input`` with ``src[i][j]`` (or ``value``) written at ``[index[i][j]][j]`` (for dim 0).

    Args:
        input: a Tensor.
        dim: the dimension to scatter along.
        index: an int64 Tensor with input's number of dimensions.
        src: the values (a Tensor of input's dtype), or a number (then it is ``value``).
        value: a number written at every indexed position (instead of src).
        reduce: None, "add" or "multiply" (PyTorch's older form of scatter_reduce's "sum"/"prod").
    """
    if not isinstance(src, Tensor) and src is not None:
        src, value = None, src
    if (src is None) == (value is None):
        raise TypeError("scatter(): expected exactly one of src (a Tensor) or value (a number)")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        if src is None:
            src = Tensor(xp_of(input).full(index.shape, value, dtype=input.dtype))
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    index_tuple, src_view = _scatter_args("scatter", input, dim, index, src)
    if src is None:
        return Scatter.apply(input, None, index=index_tuple, src_view=src_view, value=value)
    return Scatter.apply(input, src, index=index_tuple, src_view=src_view)


# ---- scatter_reduce ---------------------------------------------------------------------------------
_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -numpy.inf, "amin": numpy.inf}


def _reduce_arrays(a, src, index, reduce, include_self):
    """The forward arrays: the result, and how many values (self included) met at each position."""
    xp = xp_of(a)
    acc = compute_in_fp32(a.array).copy()
    written = _written_mask(a.shape, index, xp)
    if not include_self:
        identity = _IDENTITY[reduce]
        if a.dtype.kind in "iub" and identity in (numpy.inf, -numpy.inf):
            info = numpy.iinfo(a.dtype) if a.dtype.kind != "b" else None
            identity = (info.min if identity < 0 else info.max) if info else identity > 0
        acc[written] = identity
    # NOTE: the index's shape is its arrays' broadcast shape: index[0] alone is (n, 1, ...) when dim is not 0
    shape = numpy.broadcast_shapes(*(i.shape for i in index))
    counts = xp.zeros(a.shape, dtype=acc.dtype) + (1 if include_self else (~written))
    counts = add_at_index(counts, index, xp.ones(shape, dtype=acc.dtype))
    acc = scatter_at("sum" if reduce == "mean" else reduce, acc, index, src.array.astype(acc.dtype)[tuple(
        slice(0, s) for s in shape)])
    if reduce == "mean":
        acc = acc / counts if a.dtype.kind == "f" or a.dtype == dtypes.bfloat16 else acc // counts
    return acc.astype(a.dtype, copy=False), counts


class ScatterReduce(Function):
    """``input`` with ``src`` combined at ``index`` by sum, prod, mean, amax or amin."""

    op_name = "scatter_reduce"

    @staticmethod
    def forward(ctx, a, src, index=(), src_view=(), reduce="sum", include_self=True):
        ctx.index, ctx.src_view, ctx.src_shape = index, src_view, src.shape
        ctx.reduce, ctx.include_self = reduce, include_self
        out, counts = _reduce_arrays(a, src, index, reduce, include_self)
        ctx.counts = Tensor(counts)
        ctx.written = Tensor(_written_mask(a.shape, index, xp_of(a)))
        ctx.save_for_backward(a, src)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, src = ctx.saved_tensors
        out = None
        if ctx.reduce in ("amax", "amin", "prod"):
            out = ScatterReduce.apply(a, src, index=ctx.index, src_view=ctx.src_view, reduce=ctx.reduce,
                                      include_self=ctx.include_self)
        grad_a, grad_src = _REDUCE_GRADS[ctx.reduce](ctx, grad, a, src, out)
        if not ctx.include_self and grad_a is not None:
            grad_a = masked_fill(grad_a, ctx.written, 0.0)
        return (grad_a if ctx.needs_input_grad[0] else None), (grad_src if ctx.needs_input_grad[1] else None)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """A copy of ``input`` with ``src`` combined at ``index`` along ``dim`` by ``reduce``.

    Args:
        input: a Tensor.
        dim: the dimension to scatter along.
        index: an int64 Tensor with input's number of dimensions.
        src: the values (input's dtype).
        reduce: "sum", "prod", "mean", "amax" or "amin".
        include_self: whether input's own values at the written positions take part.
    """
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    require_tensor("scatter_reduce()", src, "src")
    index_tuple, src_view = _scatter_args("scatter_reduce", input, dim, index, src)
    return ScatterReduce.apply(input, src, index=index_tuple, src_view=src_view, reduce=reduce,
                               include_self=include_self)


def _sum_grads(ctx, grad, a, src, out):
    return grad, _src_grad(ctx, grad)


def _mean_grads(ctx, grad, a, src, out):
    scaled = grad / ctx.counts.to(grad.dtype)
    return scaled, _src_grad(ctx, scaled)


def _add_at(ctx, values, shape):
    """Zeros of ``shape`` with ``values`` (src-shaped) added at the scattered positions."""
    picked = GetItem.apply(values, index=ctx.src_view)
    return IndexAddZeros.apply(picked, index=ctx.index, shape=shape)


def _extreme_grads(ctx, grad, a, src, out):
    # NOTE: every value equal to the result shares the gradient evenly, as PyTorch's amax/amin backward
    out = out.detach()
    hit_a = (a == out).to(grad.dtype)
    if not ctx.include_self:
        hit_a = masked_fill(hit_a, ctx.written, 0.0)
    hit_src = (src == _src_grad(ctx, out)).to(grad.dtype)
    ties = hit_a + _add_at(ctx, hit_src, a.shape)
    share = grad / ties
    return share * hit_a, _src_grad(ctx, share) * hit_src


def _prod_grads(ctx, grad, a, src, out):
    # NOTE: d(out)/d(x) = out / x for a nonzero x; for a zero the product of the others, computed by
    # the same reduction with that zero replaced by 1 (exact where a slot holds exactly one zero)
    zero_a, zero_src = (a == 0), (src == 0)
    ones_a = masked_fill(a, zero_a, 1.0)
    ones_src = masked_fill(src, zero_src, 1.0)
    without_zeros = ScatterReduce.apply(ones_a, ones_src, index=ctx.index, src_view=ctx.src_view, reduce="prod",
                                        include_self=ctx.include_self)
    zeros = zero_a.to(grad.dtype) * (1.0 if ctx.include_self else 0.0) + _add_at(ctx, zero_src.to(grad.dtype),
                                                                                   a.shape)
    others_a = masked_fill(out, zero_a, 0.0) / ones_a + zero_a.to(grad.dtype) * without_zeros * (zeros == 1).to(
        grad.dtype)
    out_at_src = _src_grad(ctx, out)
    others_src = masked_fill(out_at_src, zero_src, 0.0) / ones_src + zero_src.to(grad.dtype) * _src_grad(
        ctx, without_zeros * (zeros == 1).to(grad.dtype))
    return grad * others_a, _src_grad(ctx, grad) * others_src


_REDUCE_GRADS = {"sum": _sum_grads, "mean": _mean_grads, "amax": _extreme_grads, "amin": _extreme_grads,
                 "prod": _prod_grads}


# ---- index_add / index_copy / index_fill ---------------------------------------------------------------
def _index_args(op_name, input, dim, index, source=None):  # noqa: A002
    check_index_tensor(op_name, index, (0, 1))
    _check_index_device(op_name, input, index)
    d = normalize_dim(op_name, dim, input.ndim)
    positions = index.array.reshape(-1)
    _check_bounds(op_name, positions, input.shape[d] if input.ndim else 1, d)
    if source is not None:
        require_tensor(f"{op_name}()", source, "source")
        n = source.shape[d] if source.ndim else 1
        if n != positions.size:
            raise RuntimeError(f"{op_name}(): Number of indices ({positions.size}) should be equal to "
                               f"source.size(dim) ({n}), for dim: {d}")
        expected = input.shape[:d] + (positions.size,) + input.shape[d + 1:]
        if source.ndim and tuple(source.shape) != expected:
            raise RuntimeError(f"{op_name}(): source of shape {tuple(source.shape)} does not fit input of shape "
                               f"{tuple(input.shape)} at {positions.size} indices of dim {d} (expected "
                               f"{expected})")
        if source.dtype != input.dtype:
            raise RuntimeError(f"{op_name}(): self ({input.dtype}) and source ({source.dtype}) must have the same "
                               "scalar type")
    return (slice(None),) * d + (positions,)


def _as_source_shape(t, input, index):  # noqa: A002
    return t.reshape(input.array[index].shape) if t.ndim == 0 else t


class IndexAdd(Function):
    """``input`` with ``alpha * source`` added at ``index`` along a dimension (repeats accumulate)."""

    op_name = "index_add"

    @staticmethod
    def forward(ctx, a, source, index=(), alpha=1):
        ctx.index, ctx.alpha = index, alpha
        values = source.array if alpha == 1 else source.array * alpha
        return add_at_index(a.array.copy(), index, values.reshape(a.array[index].shape))

    @staticmethod
    def backward(ctx, grad):
        grad_source = None
        if ctx.needs_input_grad[1]:
            grad_source = GetItem.apply(grad, index=ctx.index)
            grad_source = grad_source if ctx.alpha == 1 else grad_source * ctx.alpha
        return grad, grad_source


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """A copy of ``input`` with ``alpha * source`` added at positions ``index`` along ``dim``.

    Args:
        input: a Tensor.
        dim: the dimension.
        index: a 1-D int Tensor, one entry per slice of source along dim.
        source: the values, shaped as input except ``source.size(dim) == len(index)``.
        alpha: a number multiplying source.
    """
    index_tuple = _index_args("index_add", input, dim, index, source)
    return IndexAdd.apply(input, _as_source_shape(source, input, index_tuple), index=index_tuple, alpha=alpha)


class IndexCopy(Function):
    """``input`` with ``source`` written at ``index`` along a dimension (or ``value`` filled there)."""

    op_name = "index_copy"

    @staticmethod
    def forward(ctx, a, source, index=(), value=None):
        ctx.index, ctx.has_source = index, source is not None
        ctx.mask = Tensor(_written_mask(a.shape, index, xp_of(a)))
        out = a.array.copy()
        out[index] = value if source is None else source.array
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_a = masked_fill(grad, ctx.mask, 0.0) if ctx.needs_input_grad[0] else None
        grad_source = GetItem.apply(grad, index=ctx.index) if ctx.has_source and ctx.needs_input_grad[1] else None
        return grad_a, grad_source


def index_copy(input, dim, index, source):  # noqa: A002
    """A copy of ``input`` with the slices of ``source`` written at positions ``index`` along ``dim``.

    Args:
        input: a Tensor.
        dim: the dimension.
        index: a 1-D int Tensor, one entry per slice of source along dim.
        source: the values, shaped as input except ``source.size(dim) == len(index)``.
    """
    index_tuple = _index_args("index_copy", input, dim, index, source)
    return IndexCopy.apply(input, _as_source_shape(source, input, index_tuple), index=index_tuple)


class IndexFill(IndexCopy):
    """``input`` with a number written at ``index`` along a dimension."""

    op_name = "index_fill"


def index_fill(input, dim, index, value):  # noqa: A002
    """A copy of ``input`` with ``value`` written at positions ``index`` along ``dim``.

    Args:
        input: a Tensor.
        dim: the dimension.
        index: a 1-D int Tensor.
        value: a number (or a 0-d Tensor).
    """
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        value = value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"index_fill(): expected value to be a number, got {type(value).__name__}")
    index_tuple = _index_args("index_fill", input, dim, index)
    return IndexFill.apply(input, None, index=index_tuple, value=value)


# ---- masked_scatter ------------------------------------------------------------------------------------
class MaskedScatter(Function):
    """``input`` with the first elements of ``source`` (row-major) written where ``mask`` is True."""

    op_name = "masked_scatter"
    amp_policy = None  # NOTE: on none of torch's autocast lists: runs in its inputs' (equal) dtype

    @staticmethod
    def forward(ctx, a, source, mask=None):
        count = int(mask.sum())
        ctx.mask, ctx.count, ctx.source_shape = Tensor(mask), count, source.shape
        out = a.array.copy()
        out[mask] = source.array.reshape(-1)[:count]
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_a = masked_fill(grad, ctx.mask, 0.0) if ctx.needs_input_grad[0] else None
        grad_source = None
        if ctx.needs_input_grad[1]:
            read = GetItem.apply(grad, index=ctx.mask.array)  # NOTE: the masked positions, row-major, as written
            size = math.prod(ctx.source_shape)
            grad_source = IndexAddZeros.apply(read, index=(slice(0, ctx.count),), shape=(size,))
            grad_source = grad_source.reshape(ctx.source_shape)
        return grad_a, grad_source


def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` with ``source``'s elements, in row-major order, written where ``mask`` is True.

    Args:
        input: a Tensor.
        mask: a bool Tensor broadcastable with input (the result has the broadcast shape).
        source: a Tensor of input's dtype with at least as many elements as ``mask`` has True values.
    """
    _check_condition("masked_scatter", mask, "mask")
    if not isinstance(source, Tensor):
        raise TypeError(f"masked_scatter(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got {input.dtype} and "
                           f"{source.dtype}")
    check_same_device("masked_scatter", input=input, mask=mask)
    shape = tuple(_broadcast_shape("masked_scatter", [("input", input.shape), ("mask", mask.shape)]))
    xp = xp_of(input)
    full_mask = xp.broadcast_to(mask.array, shape)
    if int(full_mask.sum()) > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if tuple(input.shape) != shape:
        input = broadcast_to(input, shape)  # noqa: A001 - the broadcast input
    return MaskedScatter.apply(input, source, mask=full_mask)


# ---- the in-place twins --------------------------------------------------------------------------------
def _in_place(name, input, other, compute):  # noqa: A002
    """Write ``compute(input)`` (an out-of-place op of this family) into ``input``, through write_in_place."""
    def write():
        xp_of(input).copyto(input.array, compute(input).array)
    return write_in_place(name, input, other, compute, write)


def _keeps_shape(name, input, mask):  # noqa: A002
    shape = _broadcast_shape(name, [("input", input.shape), ("mask", mask.shape)])
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"{name}: mask of shape {tuple(mask.shape)} does not broadcast to the shape "
                           f"{tuple(input.shape)} of the tensor being updated")


def scatter_(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """In-place ``scatter``: ``src`` (or ``value``) written at ``index`` along ``dim``.

    Args:
        input: the Tensor to update.
        dim: the dimension to scatter along.
        index: an int64 Tensor with input's number of dimensions.
        src: the values (a Tensor of input's dtype), or a number (then it is ``value``).
        value: a number written at every indexed position (instead of src).
        reduce: None, "add" or "multiply".
    """
    return _in_place("scatter_", input, src, lambda t: scatter(t, dim, index, src, value=value, reduce=reduce))


def scatter_add_(input, dim, index, src):  # noqa: A002
    """In-place ``scatter_add``: ``src`` added at ``index`` along ``dim`` (repeats accumulate).

    Args:
        input: the Tensor to update.
        dim: the dimension to scatter along.
        index: an integer Tensor, no larger than src.
        src: the values to add (input's dtype).
    """
    return _in_place("scatter_add_", input, src, lambda t: scatter_add(t, dim, index, src))


def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """In-place ``scatter_reduce``: ``src`` reduced into ``input`` at ``index`` along ``dim``.

    Args:
        input: the Tensor to update.
        dim: the dimension to scatter along.
        index: an int64 Tensor.
        src: the values (input's dtype).
        reduce: "sum", "prod", "mean", "amax" or "amin".
        include_self: whether input's own values take part in the reduction.
    """
    return _in_place("scatter_reduce_", input, src,
                     lambda t: scatter_reduce(t, dim, index, src, reduce, include_self=include_self))


def index_add_(input, dim, index, source, *, alpha=1):  # noqa: A002
    """In-place ``index_add``: ``alpha * source`` added at positions ``index`` along ``dim``.

    Args:
        input: the Tensor to update.
        dim: the dimension.
        index: a 1-D int Tensor.
        source: the values, shaped as input except ``source.size(dim) == len(index)``.
        alpha: a number multiplying source.
    """
    return _in_place("index_add_", input, source, lambda t: index_add(t, dim, index, source, alpha=alpha))


def index_copy_(input, dim, index, source):  # noqa: A002
    """In-place ``index_copy``: the slices of ``source`` written at positions ``index`` along ``dim``.

    Args:
        input: the Tensor to update.
        dim: the dimension.
        index: a 1-D int Tensor.
        source: the values, shaped as input except ``source.size(dim) == len(index)``.
    """
    return _in_place("index_copy_", input, source, lambda t: index_copy(t, dim, index, source))


def index_fill_(input, dim, index, value):  # noqa: A002
    """In-place ``index_fill``: ``value`` written at positions ``index`` along ``dim``.

    Args:
        input: the Tensor to update.
        dim: the dimension.
        index: a 1-D int Tensor.
        value: a number (or a 0-d Tensor).
    """
    return _in_place("index_fill_", input, None, lambda t: index_fill(t, dim, index, value))


def masked_scatter_(input, mask, source):  # noqa: A002
    """In-place ``masked_scatter``: ``source``'s elements written where ``mask`` is True.

    Args:
        input: the Tensor to update.
        mask: a bool Tensor broadcastable to input's shape.
        source: a Tensor of input's dtype with at least as many elements as mask has True values.
    """
    _check_condition("masked_scatter_", mask, "mask")
    _keeps_shape("masked_scatter_", input, mask)
    return _in_place("masked_scatter_", input, source, lambda t: masked_scatter(t, mask, source))


METHODS = {"scatter": scatter, "scatter_reduce": scatter_reduce, "index_add": index_add, "index_copy": index_copy,
           "index_fill": index_fill, "masked_scatter": masked_scatter, "scatter_": scatter_,
           "scatter_add_": scatter_add_, "scatter_reduce_": scatter_reduce_, "index_add_": index_add_,
           "index_copy_": index_copy_, "index_fill_": index_fill_, "masked_scatter_": masked_scatter_}

"""Indexing ops: ``x[...]``, setitem, gather/scatter_add/index_select, where and
masked_fill; joining and splitting (cat, stack, split, chunk, unbind); and
rearranging (tril/triu, repeat/tile, flip, roll). (``one_hot`` lives in embedding.py.)

The file reads top-down: how an index reaches NumPy/CuPy (one canonical form: a
tuple whose items are ints, slices, None, Ellipsis, Python bools or integer
arrays on the tensor's device; boolean masks become their ``nonzero()`` integer
arrays, as NumPy does internally, so the backward scatter sees plain integers),
then the ops.

Every "read at an index" op (``x[...]``, ``index_select``, ``gather``) is
``GetItem`` with a canonical NumPy index, and its backward is one op,
``IndexAddZeros``: the gradient is added into zeros at the same index with
add-at semantics, so an index named k times receives all k contributions
(``scatter_at`` in _util.py: ``numpy.add.at`` / ``cupyx.scatter_add``). The
backward of ``IndexAddZeros`` is a read at the same index again, so the pair
gives double backward for free.
Joining ops are each other's backward: cat's gradient is split, split's is cat,
stack's is unbind and unbind's is stack.

NOTE (CUDA): index values are not bounds-checked on the GPU (that would need a
host sync per op); on the CPU an out-of-range index raises an IndexError that
names the op. Negative indices count from the end, as in NumPy.
"""

from __future__ import annotations

import numbers

import numpy

from .. import backend, dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..checks import require_tensor
from ..tensor import Tensor, mark_view
from ._util import data, lift, normalize_dim, scatter_at, xp_of
from .arith import cast
from .inplace import ZeroAt, write_in_place  # NOTE: the in-place rules, one definition
from .out import write_out
from .shape import reshape, sum_to

__all__ = [
    "getitem", "setitem_", "gather", "scatter_add", "index_select", "where", "masked_fill", "masked_fill_", "cat",
    "concat", "stack", "split", "chunk", "unbind", "tril", "triu", "tile", "flip", "roll",
]


_BASIC = (slice, type(None), type(Ellipsis), bool, numbers.Integral)


def _plain(item):
    return [_plain(v) if isinstance(v, (list, tuple)) else (v.item() if isinstance(v, Tensor) else v) for v in item]


def _index_array(op_name, xp, x, item):
    if isinstance(item, Tensor):
        if type(item.array) is not type(x.array):
            raise IndexError(f"{op_name}: the index tensor is on {item.device} but the indexed tensor is on "
                             f"{x.device}; expected both on the same device")
        array = item.array
    elif isinstance(item, (list, range)) or (isinstance(item, tuple) and len(item) > 0):
        array = xp.asarray(backend.to_numpy(numpy.asarray(_plain(item))))
    elif isinstance(item, (numpy.ndarray, numpy.generic)) or hasattr(item, "__cuda_array_interface__"):
        array = numpy.asarray(backend.to_numpy(item)) if xp is numpy else xp.asarray(item)
    else:
        raise IndexError(f"{op_name}: only integers, slices, None, Ellipsis and integer or bool tensors/arrays "
                         f"are valid indices, got {type(item).__name__} {item!r}")
    if array.size == 0 and array.dtype.kind == "f":
        array = array.astype(dtypes.int64)  # NOTE: x[[]] selects nothing; NumPy would read [] as float64
    if array.dtype.kind not in "iub":
        raise IndexError(f"{op_name}: tensors used as indices must be long, int, byte or bool tensors, "
                         f"got an index of dtype {array.dtype}")
    return array


def normalize_index(op_name, x, index):
    """The index as a tuple NumPy/CuPy index with: Tensors, lists and foreign arrays become arrays on x's device.

    Args:
        op_name: the op, for error messages.
        x: the Tensor being indexed.
        index: anything Python's ``x[...]`` accepts.
    """
    xp = backend.get_array_module(x.array)
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if isinstance(item, _BASIC) and not isinstance(item, Tensor):
            out.append(item)
            continue
        array = _index_array(op_name, xp, x, item)
        if array.dtype == dtypes.bool_ and array.ndim > 0:
            out.extend(array.nonzero())  # NOTE: a host sync on the GPU: the result size depends on the data
        else:
            out.append(array)
    return tuple(out)


def is_basic(index) -> bool:
    """True when ``index`` (a normalised tuple) has no arrays: the result is a view and hits no element twice.

    Args:
        index: a normalised index tuple.
    """
    return all(isinstance(item, _BASIC) for item in index)


def read(op_name, array, index):
    """``array[index]`` with NumPy's IndexError re-raised naming the op and the shape.

    Args:
        op_name: the op, for the message.
        array: a NumPy/CuPy array.
        index: a normalised index tuple.
    """
    try:
        return array[index]
    except IndexError as error:
        raise IndexError(f"{op_name}: {error} (indexing a tensor of shape {tuple(array.shape)})") from None


def index_add(out, index, values):
    """``out[index] += values`` where a repeated index accumulates every contribution; returns the result.

    NOTE: half-precision values accumulate in fp32 and are rounded once, so a
    row hit many times (an embedding, a gather backward) does not lose mass;
    small ints and bool go through a wider dtype too (``scatter_dtype``).

    Args:
        out: the array to add into (may be modified; use the returned array).
        index: a normalised index tuple.
        values: an array broadcastable to ``out[index]``.
    """
    if is_basic(index):
        out[index] += values  # NOTE: basic indexing never names an element twice
        return out
    return scatter_at("sum", out, index, values)


def along_dim_index(xp, index, dim):
    """The advanced index that reads ``a[..., index[i, j, k], ...]`` at ``dim`` and position elsewhere.

    ``a[along_dim_index(xp, idx, d)]`` is ``torch.gather(a, d, idx)``; its shape is ``idx.shape``.

    Args:
        xp: numpy or cupy.
        index: an integer array with as many dimensions as the tensor.
        dim: the gathered dimension (non-negative).
    """
    out = []
    for axis, size in enumerate(index.shape):
        if axis == dim:
            out.append(index)
        else:
            shape = [1] * index.ndim
            shape[axis] = size
            out.append(xp.arange(size).reshape(shape))
    return tuple(out)


def check_index_tensor(op_name, index, allowed_ndims=None):
    """Raise when an index argument is not an integer Tensor (of an allowed rank).

    Args:
        op_name: the op, for the message.
        index: the value passed as index.
        allowed_ndims: accepted numbers of dimensions, or None for any.
    """
    require_tensor(op_name, index, "index")
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{op_name}: expected index to be an int32 or int64 tensor, got {index.dtype}")
    if allowed_ndims is not None and index.ndim not in allowed_ndims:
        raise IndexError(f"{op_name}: expected index with {' or '.join(map(str, allowed_ndims))} dimensions, "
                         f"got shape {tuple(index.shape)}")


def check_gather_shapes(op_name, dim, index, *others):
    """Raise unless ``index`` has the rank of each other tensor and is no larger outside ``dim``.

    Args:
        op_name: the op, for the message.
        dim: the gathered/scattered dimension (non-negative).
        index: the index Tensor.
        *others: (name, Tensor, check_dim) for each tensor the index must fit into.
    """
    for name, t, include_dim in others:
        if t.ndim != index.ndim:
            raise RuntimeError(f"{op_name}: Index tensor must have the same number of dimensions as {name} tensor "
                               f"(index shape {tuple(index.shape)}, {name} shape {tuple(t.shape)})")
        for d, (i, s) in enumerate(zip(index.shape, t.shape)):
            if i > s and (include_dim or d != dim):
                raise RuntimeError(f"{op_name}: Size does not match at dimension {d}: expected index "
                                   f"{tuple(index.shape)} to be no larger than {name} {tuple(t.shape)}"
                                   + ("" if include_dim else f" apart from dimension {dim}"))


def check_same_shapes(op_name, tensors, skip_dim=None):
    """Raise naming both tensors when shapes differ (outside ``skip_dim``), as cat/stack need.

    Args:
        op_name: the op, for the message.
        tensors: the Tensors.
        skip_dim: a dimension allowed to differ (cat), or None (stack).
    """
    first = tensors[0]
    for k, t in enumerate(tensors[1:], start=1):
        if t.ndim != first.ndim:
            raise RuntimeError(f"{op_name}: Tensors must have same number of dimensions: tensors[0] has shape "
                               f"{tuple(first.shape)} but tensors[{k}] has shape {tuple(t.shape)}")
        same = all(a == b for d, (a, b) in enumerate(zip(first.shape, t.shape)) if d != skip_dim)
        if not same:
            rule = "equal size" if skip_dim is None else f"matching sizes except in dimension {skip_dim}"
            raise RuntimeError(f"{op_name}: expects each tensor to have {rule}, but tensors[0] has shape "
                               f"{tuple(first.shape)} and tensors[{k}] has shape {tuple(t.shape)}")


def check_tensor_list(op_name, tensors):
    """Raise unless ``tensors`` is a non-empty sequence of Tensors; return it as a tuple.

    Args:
        op_name: the op, for the message.
        tensors: the value passed as the list of tensors.
    """
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op_name}: expected a list or tuple of Tensors, got {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{op_name}: expected a non-empty list of Tensors")
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: expected Tensors, but tensors[{k}] is {type(t).__name__}")
    return tuple(tensors)


def normalize_dims(op_name, dims, ndim):
    """A tuple of distinct non-negative dims from an int or a sequence, with clear errors.

    Args:
        op_name: the op, for the message.
        dims: an int or a sequence of ints.
        ndim: the number of dimensions of the tensor.
    """
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(normalize_dim(op_name, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op_name}: dims {dims} name the same dimension more than once")
    return out


def share_version(out, base, index):
    """Record a piece of a multi-output view op (split, unbind): one version counter with its base (as PyTorch).

    NOTE: such pieces cannot be written in place while they are part of a graph, as in PyTorch; the
    index lets an in-place change of the base give them their new history.

    Args:
        out: the Tensor holding a view.
        base: the Tensor it views.
        index: the basic index that reads the piece from the base.
    """
    return mark_view(out, base, GetItem, {"index": index + (Ellipsis,)}, writable=False)


# ---- reading at an index and its backward -------------------------------------------------------
class GetItem(Function):
    """``a[index]`` for a normalised index; backward adds the gradient back at the same index."""

    op_name = "getitem"

    @classmethod
    def forward(cls, ctx, a, index=()):
        ctx.index, ctx.in_shape = index, a.shape
        return read(cls.op_name, a.array, index)

    @staticmethod
    def backward(ctx, grad):
        return IndexAddZeros.apply(grad, index=ctx.index, shape=ctx.in_shape)

    @staticmethod
    def region_in_base(region, in_shape, index=()):
        """Where a view's elements lie in its base: ``region`` (bool, the view's shape) in the base's shape.

        Args:
            region: bool array of the view's shape.
            in_shape: the base's shape.
            index: the basic index (the op's option).
        """
        out = backend.get_array_module(region).zeros(in_shape, dtype=bool)
        out[index] = region
        return out


def getitem(input, index):  # noqa: A002 - PyTorch's argument name
    """``input[index]``: basic slicing, None/Ellipsis, negative steps, integer/bool arrays and Tensors.

    Args:
        input: a Tensor.
        index: an int, slice, None, Ellipsis, list, array, Tensor, or a tuple of them.
    """
    index = normalize_index("getitem", input, index)
    if not is_basic(index):
        return GetItem.apply(input, index=index)
    if not any(item is Ellipsis for item in index):
        index += (Ellipsis,)  # NOTE: x[0] of a vector is then a 0-d view, as in PyTorch, not a NumPy scalar copy
    return mark_view(GetItem.apply(input, index=index), input, GetItem, {"index": index})


def _value_array(op_name, t, value):
    if isinstance(value, numbers.Number):
        return value
    if isinstance(value, Tensor):
        if type(value.array) is not type(t.array):
            raise RuntimeError(f"{op_name}: value is on {value.device} but the tensor is on {t.device}")
        return value.array.astype(t.dtype, copy=False)
    return lift(value, like=t).array.astype(t.dtype, copy=False)


class IndexPut(Function):
    """``input`` with ``value`` written at ``index`` (the new value of ``input[index] = value``).

    The gradient of ``input`` is zero where it was written over; ``value`` gets the
    gradient read at the index, summed back to its shape where it was broadcast.

    Args:
        input: the Tensor written into.
        value: a number or a Tensor broadcastable to ``input[index]``.
        index: a normalised index (keyword).
    """

    op_name = "_index_put"  # NOTE: the node of setitem_ (internal: the public index_put is not written yet)

    @classmethod
    def forward(cls, ctx, input, value, index=()):  # noqa: A002
        out = input.array.copy()
        source = _value_array("setitem_", input, value)
        put("setitem_", out, index, source)
        ctx.index, ctx.value_shape = index, getattr(source, "shape", ())
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_input = grad_value = None
        if ctx.needs_input_grad[0]:
            xp = xp_of(grad)
            written = xp.zeros(grad.shape, dtype=bool)
            written[ctx.index] = True
            grad_input = ZeroAt.apply(grad, region=written)
        if ctx.needs_input_grad[1]:
            grad_value = sum_to(GetItem.apply(grad, index=ctx.index), ctx.value_shape)
        return grad_input, grad_value


class IndexAddZeros(Function):
    """Zeros of ``shape`` with ``values`` added at ``index`` (repeats accumulate): the backward of a read."""

    op_name = "_index_add_zeros"  # NOTE: internal (the leading _ keeps it out of the op reference)

    @staticmethod
    def forward(ctx, values, index=(), shape=()):
        ctx.index = index
        return index_add(xp_of(values).zeros(shape, dtype=values.dtype), index, values.array)

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, index=ctx.index)


def _check_index_device(op_name, t, index):
    if type(index.array) is not type(t.array):
        raise RuntimeError(f"{op_name}: expected index on the same device as input ({t.device}), "
                           f"got index on {index.device}")


class IndexSelect(GetItem):
    """``a`` at the positions ``index`` along one dimension."""

    op_name = "index_select"


def index_select(input, dim, index):  # noqa: A002
    """The entries of ``input`` at positions ``index`` along ``dim``.

    Args:
        input: a Tensor.
        dim: the dimension to select along.
        index: a 1-D (or 0-D) integer Tensor.
    """
    check_index_tensor("index_select", index, (0, 1))
    _check_index_device("index_select", input, index)
    d = normalize_dim("index_select", dim, input.ndim)
    if input.ndim == 0:  # NOTE: as PyTorch: a 0-d input takes one index (which must be 0) and stays 0-d
        if index.numel() != 1:
            raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        return reshape(IndexSelect.apply(reshape(input, (1,)), index=(index.array.reshape(-1),)), ())
    return IndexSelect.apply(input, index=(slice(None),) * d + (index.array.reshape(-1),))


class Gather(GetItem):
    """``out[i][j] = a[index[i][j]][j]`` (for dim 0), as ``torch.gather``."""

    op_name = "gather"


def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    """Values along ``dim`` at ``index``: ``out[i][j] = input[index[i][j]][j]`` for dim 0.

    Args:
        input: a Tensor.
        dim: the dimension to gather along.
        index: an integer Tensor with input's number of dimensions, no larger outside ``dim``.
        sparse_grad: accepted for PyTorch compatibility; the gradient is always dense.
    """
    check_index_tensor("gather", index)
    _check_index_device("gather", input, index)
    d = normalize_dim("gather", dim, input.ndim)
    check_gather_shapes("gather", d, index, ("input", input, False))
    return Gather.apply(input, index=along_dim_index(xp_of(input), index.array, d))


def setitem_(input, index, value):  # noqa: A002
    """``input[index] = value`` in place (not recorded by autograd; bumps the version counter).

    Args:
        input: the Tensor to write into.
        index: anything ``getitem`` accepts.
        value: a number, array or Tensor broadcastable to ``input[index]`` (cast to input's dtype).
    """
    index = normalize_index("setitem_", input, index)
    source = _value_array("setitem_", input, value)
    return write_in_place("setitem_", input, value, lambda old: IndexPut.apply(old, value, index=index),
                          lambda: put("setitem_", input.array, index, source))


def put(op_name, array, index, source):
    """``array[index] = source`` with NumPy's errors re-raised naming the op and the shapes.

    Args:
        op_name: the op, for the message.
        array: the NumPy/CuPy array written into.
        index: a normalised index tuple.
        source: a number or an array broadcastable to ``array[index]``.
    """
    try:
        array[index] = source
    except ValueError as error:
        shape = getattr(source, "shape", ())
        raise RuntimeError(f"{op_name}: cannot assign a value of shape {tuple(shape)} into a tensor of shape "
                           f"{tuple(array.shape)} at this index: {error}") from None
    except IndexError as error:
        raise IndexError(f"{op_name}: {error} (indexing a tensor of shape {tuple(array.shape)})") from None


# ---- scattering ------------------------------------------------------------------------------------
def _check_same_dtype_unless_autocast(op_name, a, b):
    from ..autograd.state import STATE  # noqa: PLC0415
    if a.dtype != b.dtype and not STATE.autocast:
        raise RuntimeError(f"{op_name}: Expected self.dtype to be equal to src.dtype, got {a.dtype} and {b.dtype}")


class ScatterAdd(Function):
    """``input`` with ``src`` added at ``index`` along a dimension (repeats accumulate); promote under autocast."""

    op_name = "scatter_add"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, a, src, index=(), src_view=()):
        ctx.index, ctx.src_view, ctx.src_shape = index, src_view, src.shape
        return index_add(a.array.copy(), index, src.array[src_view])

    @staticmethod
    def backward(ctx, grad):
        grad_src = None
        if ctx.needs_input_grad[1]:
            grad_src = GetItem.apply(grad, index=ctx.index)
            if grad_src.shape != ctx.src_shape:
                grad_src = IndexAddZeros.apply(grad_src, index=ctx.src_view, shape=ctx.src_shape)
        return (grad if ctx.needs_input_grad[0] else None), grad_src


def scatter_add(input, dim, index, src):  # noqa: A002
    """A copy of ``input`` with ``src[i][j]`` added at ``[index[i][j]][j]`` (dim 0); repeats accumulate.

    Args:
        input: a Tensor.
        dim: the dimension to scatter along.
        index: an integer Tensor, no larger than src, and no larger than input outside ``dim``.
        src: the values to add (same dtype as input).
    """
    check_index_tensor("scatter_add", index)
    _check_index_device("scatter_add", input, index)
    require_tensor("scatter_add", src, "src")
    d = normalize_dim("scatter_add", dim, input.ndim)
    check_gather_shapes("scatter_add", d, index, ("input", input, False), ("src", src, True))
    _check_same_dtype_unless_autocast("scatter_add", input, src)
    src_view = tuple(slice(0, s) for s in index.shape)
    return ScatterAdd.apply(input, src, index=along_dim_index(xp_of(input), index.array, d), src_view=src_view)


# ---- where and masked_fill ------------------------------------------------------------------------
def _check_condition(op_name, condition, what="condition"):
    if not isinstance(condition, Tensor):
        raise TypeError(f"{op_name}: expected {what} to be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype != dtypes.bool_:
        raise RuntimeError(f"{op_name}: expected {what} to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype}")


def _broadcast_shape(op_name, named_shapes):
    try:
        return numpy.broadcast_shapes(*(s for _, s in named_shapes))  # NOTE: shapes only; no device work
    except ValueError:
        listed = ", ".join(f"{n} {tuple(s)}" for n, s in named_shapes)
        raise RuntimeError(f"{op_name}: shapes cannot be broadcast together: {listed}") from None


def _promote(values):
    if not any(isinstance(v, Tensor) for v in values):  # NOTE: two numbers: PyTorch's dtypes for numbers
        if any(isinstance(v, float) for v in values):
            return dtypes.get_default_dtype()
        return dtypes.bool_ if all(isinstance(v, bool) for v in values) else dtypes.int64
    out = dtypes.result_type(*(v.dtype for v in values if isinstance(v, Tensor)))
    scalars = [v for v in values if not isinstance(v, Tensor)]
    if any(isinstance(s, float) for s in scalars) and not dtypes.is_floating(out):
        return dtypes.float32  # NOTE: an int tensor with a float number gives the default float32, as PyTorch
    if any(isinstance(s, int) and not isinstance(s, bool) for s in scalars) and out == dtypes.bool_:
        return dtypes.int64
    return out


class Where(Function):
    """``input`` where ``condition`` holds, else ``other`` (either may be a Python number)."""

    op_name = "where"

    @staticmethod
    def forward(ctx, condition, a, b, dtype=None):
        ctx.save_for_backward(condition)
        ctx.shapes = (getattr(a, "shape", ()), getattr(b, "shape", ()))
        return xp_of(condition).where(condition.array, data(a), data(b)).astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        # NOTE: where(cond, grad, 0) rather than grad * cond, so an inf/NaN gradient
        # of the branch not taken does not leak into the other as NaN.
        ga = sum_to(Where.apply(condition, grad, 0, dtype=grad.dtype), ctx.shapes[0]) \
            if ctx.needs_input_grad[1] else None
        gb = sum_to(Where.apply(condition, 0, grad, dtype=grad.dtype), ctx.shapes[1]) \
            if ctx.needs_input_grad[2] else None
        return None, ga, gb


def where(condition, input=None, other=None):  # noqa: A002
    """Elementwise ``input if condition else other``; with only ``condition``, the indices where it holds.

    Args:
        condition: a bool Tensor.
        input: a Tensor or number chosen where condition is True.
        other: a Tensor or number chosen where condition is False.
    """
    _check_condition("where", condition)
    if input is None and other is None:
        return tuple(Tensor(a) for a in condition.array.nonzero())
    values = (input, other)
    for name, v in zip(("input", "other"), values):
        if not isinstance(v, (Tensor, numbers.Number)):
            raise TypeError(f"where: expected {name} to be a Tensor or a number, got {type(v).__name__}")
    _broadcast_shape("where", [("condition", condition.shape)]
                     + [(n, v.shape) for n, v in zip(("input", "other"), values) if isinstance(v, Tensor)])
    return Where.apply(condition, input, other, dtype=_promote(values))


def _check_fill_value(op_name, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op_name}: only supports a 0-dimensional value tensor, but got a tensor with "
                               f"{value.ndim} dimension(s)")
    elif not isinstance(value, numbers.Number):
        raise TypeError(f"{op_name}: expected value to be a number or a 0-d Tensor, got {type(value).__name__}")


class MaskedFill(Where):
    """``value`` where ``mask`` holds, else ``input`` (a Where whose output keeps input's dtype)."""

    op_name = "masked_fill"


def masked_fill(input, mask, value):  # noqa: A002
    """A copy of ``input`` with ``value`` where ``mask`` is True.

    Args:
        input: a Tensor.
        mask: a bool Tensor broadcastable with input.
        value: a number or a 0-d Tensor (differentiable).
    """
    _check_condition("masked_fill", mask, "mask")
    _check_fill_value("masked_fill", value)
    _broadcast_shape("masked_fill", [("input", input.shape), ("mask", mask.shape)])
    return MaskedFill.apply(mask, value, input, dtype=input.dtype)


def masked_fill_(input, mask, value):  # noqa: A002
    """Write ``value`` into ``input`` where ``mask`` is True, in place (not recorded; bumps the version).

    Args:
        input: the Tensor to update.
        mask: a bool Tensor broadcastable to input's shape.
        value: a number or a 0-d Tensor.
    """
    _check_condition("masked_fill_", mask, "mask")
    _check_fill_value("masked_fill_", value)
    xp = xp_of(input)
    shape = _broadcast_shape("masked_fill_", [("input", input.shape), ("mask", mask.shape)])
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"masked_fill_: mask of shape {tuple(mask.shape)} does not broadcast to the shape "
                           f"{tuple(input.shape)} of the tensor being updated")
    source = _value_array("masked_fill_", input, value)
    return write_in_place("masked_fill_", input, value, lambda old: masked_fill(old, mask, value),
                          lambda: xp.copyto(input.array, source, casting="unsafe", where=mask.array))


class Cat(Function):
    """Concatenation along an existing dimension; promote under autocast."""

    op_name = "cat"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        ctx.dim, ctx.sizes = dim, tuple(t.shape[dim] for t in tensors)
        dtype = dtypes.result_type(*(t.dtype for t in tensors))
        return xp_of(*tensors).concatenate([t.array.astype(dtype, copy=False) for t in tensors], axis=dim)

    @staticmethod
    def backward(ctx, grad):
        parts = Split.apply(grad, sizes=ctx.sizes, dim=ctx.dim)
        return tuple(p if need else None for p, need in zip(parts, ctx.needs_input_grad))


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dimension (dtypes promote).

    Args:
        tensors: a non-empty list or tuple of Tensors whose shapes match except in ``dim``.
        dim: the dimension to join along.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    tensors = check_tensor_list("cat", tensors)
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"cat: zero-dimensional tensor (at position {i}) cannot be concatenated; "
                               "give it a dimension first (t.view(1) or t.unsqueeze(0)), or use stack")
    shaped = [t for t in tensors if tuple(t.shape) != (0,)]
    if shaped and len(shaped) < len(tensors) and any(t.ndim != 1 for t in shaped):
        # NOTE: PyTorch's legacy rule: a 1-D empty tensor is skipped, whatever the others' shapes (it gets no
        # gradient, and its dtype still takes part in the promotion)
        dtype = dtypes.result_type(*(t.dtype for t in tensors))
        tensors = [t if t.dtype == dtype else cast(t, dtype) for t in shaped]
    d = normalize_dim("cat", dim, tensors[0].ndim)
    check_same_shapes("cat", tensors, skip_dim=d)
    result = Cat.apply(*tensors, dim=d)
    return result if out is None else write_out("cat", result, out)


concat = cat


class Stack(Function):
    """Join equal-shaped tensors along a new dimension; promote under autocast."""

    op_name = "stack"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, *tensors, dim=0):
        ctx.dim = dim
        dtype = dtypes.result_type(*(t.dtype for t in tensors))
        return xp_of(*tensors).stack([t.array.astype(dtype, copy=False) for t in tensors], axis=dim)

    @staticmethod
    def backward(ctx, grad):
        parts = Unbind.apply(grad, dim=ctx.dim)
        return tuple(p if need else None for p, need in zip(parts, ctx.needs_input_grad))


def stack(tensors, dim=0, *, out=None):
    """Join equal-shaped tensors along a new dimension ``dim`` (dtypes promote).

    Args:
        tensors: a non-empty list or tuple of Tensors of one shape.
        dim: where the new dimension goes, in ``[-(ndim + 1), ndim]``.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    tensors = check_tensor_list("stack", tensors)
    d = normalize_dim("stack", dim, tensors[0].ndim + 1)
    check_same_shapes("stack", tensors)
    result = Stack.apply(*tensors, dim=d)
    return result if out is None else write_out("stack", result, out)


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


class Split(Function):
    """Consecutive pieces of ``sizes`` along ``dim`` (views); backward concatenates the gradients."""

    op_name = "split"

    @staticmethod
    def forward(ctx, a, sizes=(), dim=0):
        ctx.dim, start, pieces = dim, 0, []
        for size in sizes:
            pieces.append(a.array[(slice(None),) * dim + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        if not STATE.grad_enabled:  # NOTE (speed): no graph recorded: concatenate the arrays, no op dispatch
            return Tensor(xp_of(*grads).concatenate([g.array for g in grads], axis=ctx.dim))
        return Cat.apply(*grads, dim=ctx.dim)


def split(tensor, split_size_or_sections, dim=0):
    """Split into pieces of ``split_size`` (the last may be smaller) or of the listed sizes (views).

    Args:
        tensor: a Tensor.
        split_size_or_sections: an int piece size, or a list of sizes summing to the dimension's size.
        dim: the dimension to split.
    """
    d = normalize_dim("split", dim, tensor.ndim)
    sizes = _split_sizes(tensor.shape[d], split_size_or_sections, d)
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    return tuple(share_version(p, tensor, (slice(None),) * d + (slice(start, start + size),))
                 for p, start, size in zip(Split.apply(tensor, sizes=sizes, dim=d), starts, sizes))


class Unbind(Function):
    """Every slice along ``dim`` with that dimension removed (views); backward stacks the gradients."""

    op_name = "unbind"

    @staticmethod
    def forward(ctx, a, dim=0):
        ctx.dim = dim
        return tuple(a.array[(slice(None),) * dim + (i,)] for i in range(a.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return Stack.apply(*grads, dim=ctx.dim)


def unbind(input, dim=0):  # noqa: A002
    """All slices along ``dim``, with that dimension removed (views).

    Args:
        input: a Tensor.
        dim: the dimension to remove.
    """
    d = normalize_dim("unbind", dim, input.ndim)
    return tuple(share_version(p, input, (slice(None),) * d + (i,)) for i, p in enumerate(Unbind.apply(input, dim=d)))


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


def _triangle(cls, input, diagonal):
    if input.ndim < 2:
        raise RuntimeError(f"{cls.op_name}: input tensor must have at least 2 dimensions, got shape "
                           f"{tuple(input.shape)}")
    if not isinstance(diagonal, int):
        raise TypeError(f"{cls.op_name}: expected diagonal to be an int, got {type(diagonal).__name__}")
    return cls.apply(input, diagonal=diagonal)


class Tril(Function):
    """Lower triangle of the last two dimensions (the rest set to zero)."""

    op_name = "tril"

    @classmethod
    def forward(cls, ctx, a, diagonal=0):
        ctx.diagonal = diagonal
        return getattr(xp_of(a), cls.op_name)(a.array, k=diagonal)

    @classmethod
    def backward(cls, ctx, grad):
        return cls.apply(grad, diagonal=ctx.diagonal)


def tril(input, diagonal=0):  # noqa: A002
    """Keep the lower triangle (on and below ``diagonal``) of the last two dimensions.

    Args:
        input: a Tensor with at least 2 dimensions.
        diagonal: 0 is the main diagonal, positive above it, negative below.
    """
    return _triangle(Tril, input, diagonal)


class Triu(Tril):
    """Upper triangle of the last two dimensions (the rest set to zero)."""

    op_name = "triu"


def triu(input, diagonal=0):  # noqa: A002
    """Keep the upper triangle (on and above ``diagonal``) of the last two dimensions.

    Args:
        input: a Tensor with at least 2 dimensions.
        diagonal: 0 is the main diagonal, positive above it, negative below.
    """
    return _triangle(Triu, input, diagonal)


def _repeat_counts(op_name, sizes):
    sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    if any(not isinstance(s, int) or s < 0 for s in sizes):
        raise RuntimeError(f"{op_name}: repeat counts must be non-negative ints, got {tuple(sizes)}")
    return tuple(sizes)


class Repeat(Function):
    """Tile the tensor ``repeats[i]`` times along each dimension; backward sums the copies."""

    op_name = "repeat"

    @staticmethod
    def forward(ctx, a, repeats=()):
        ctx.in_shape, ctx.repeats = a.shape, repeats
        return xp_of(a).tile(a.array, repeats)

    @staticmethod
    def backward(ctx, grad):
        padded = (1,) * (len(ctx.repeats) - len(ctx.in_shape)) + tuple(ctx.in_shape)
        # NOTE: view the gradient as (r0, s0, r1, s1, ...) and sum every r axis down to 1
        pairs = tuple(v for pair in zip(ctx.repeats, padded) for v in pair)
        summed = sum_to(reshape(grad, pairs), tuple(v for pair in zip((1,) * len(padded), padded) for v in pair))
        return reshape(summed, ctx.in_shape)


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


class Tile(Repeat):
    """``repeat`` with missing leading repeat counts taken as 1."""

    op_name = "tile"


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
        return xp_of(a).flip(a.array, axis=dims)

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
        return xp_of(a).roll(a.array, shifts, axis=dims)

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


METHODS = {name: globals()[name] for name in __all__ if name not in ("cat", "concat", "stack", "getitem",
                                                                      "setitem_")}
METHODS["repeat"] = repeat
METHODS["where"] = lambda self, condition, other: where(condition, self, other)

"""Indexing ops: ``x[...]``, setitem, gather/scatter_add/index_select, where and masked_fill.

Every "read at an index" op (``x[...]``, ``index_select``, ``gather``) is
``GetItem`` with a canonical NumPy index, and its backward is one op,
``IndexAddZeros``: the gradient is added into zeros at the same index with
add-at semantics, so an index named k times receives all k contributions
(``numpy.add.at`` / ``cupyx.scatter_add``). The backward of ``IndexAddZeros`` is
a read at the same index again, so the pair gives double backward for free.

The rest of the family (cat/stack/split/chunk/unbind in ``_join.py``,
tril/triu/repeat/tile/flip/roll in ``_rearrange.py``) is re-exported here.
(``one_hot`` lives in embedding.py.)

NOTE (CUDA): index values are not bounds-checked on the GPU (that would need a
host sync per op); on the CPU an out-of-range index raises an IndexError that
names the op. Negative indices count from the end, as in NumPy.
"""

from __future__ import annotations

import numbers

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._index_util import (
    along_dim_index,
    check_gather_shapes,
    check_index_tensor,
    index_add,
    is_basic,
    normalize_index,
    read,
    share_version,
)
from ._util import data, lift, normalize_dim, xp_of
from .inplace import _check_inplace  # NOTE: the in-place rules, one definition
from .shape import reshape, sum_to

__all__ = ["getitem", "setitem_", "gather", "scatter_add", "index_select", "where", "masked_fill", "masked_fill_",
           "cat", "concat", "stack", "split", "chunk", "unbind", "tril", "triu", "tile", "flip", "roll"]


# ---- reading at an index and its backward -------------------------------------------------------
class GetItem(Function):
    """``a[index]`` for a normalised index; backward adds the gradient back at the same index."""

    op_name = "getitem"

    @classmethod
    def forward(cls, ctx, a, index=()):
        ctx.index, ctx.in_shape = index, a.shape
        return read(cls.op_name, a.data, index)

    @staticmethod
    def backward(ctx, grad):
        return IndexAddZeros.apply(grad, index=ctx.index, shape=ctx.in_shape)


class IndexAddZeros(Function):
    """Zeros of ``shape`` with ``values`` added at ``index`` (repeats accumulate): the backward of a read."""

    op_name = "_index_add_zeros"  # NOTE: internal (the leading _ keeps it out of the op reference)

    @staticmethod
    def forward(ctx, values, index=(), shape=()):
        ctx.index = index
        return index_add(xp_of(values).zeros(shape, dtype=values.dtype), index, values.data)

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, index=ctx.index)


class IndexSelect(GetItem):
    """``a`` at the positions ``index`` along one dimension."""

    op_name = "index_select"


class Gather(GetItem):
    """``out[i][j] = a[index[i][j]][j]`` (for dim 0), as ``torch.gather``."""

    op_name = "gather"


def _check_index_device(op_name, t, index):
    if type(index.data) is not type(t.data):
        raise RuntimeError(f"{op_name}: expected index on the same device as input ({t.device}), "
                           f"got index on {index.device}")


def getitem(input, index):  # noqa: A002 - PyTorch's argument name
    """``input[index]``: basic slicing, None/Ellipsis, negative steps, integer/bool arrays and Tensors.

    Args:
        input: a Tensor.
        index: an int, slice, None, Ellipsis, list, array, Tensor, or a tuple of them.
    """
    index = normalize_index("getitem", input, index)
    out = GetItem.apply(input, index=index)
    return share_version(out, input) if is_basic(index) else out


def setitem_(input, index, value):  # noqa: A002
    """``input[index] = value`` in place (not recorded by autograd; bumps the version counter).

    Args:
        input: the Tensor to write into.
        index: anything ``getitem`` accepts.
        value: a number, array or Tensor broadcastable to ``input[index]`` (cast to input's dtype).
    """
    _check_inplace("setitem_", input)
    index = normalize_index("setitem_", input, index)
    source = _value_array("setitem_", input, value)
    try:
        input.data[index] = source
    except ValueError as error:
        shape = getattr(source, "shape", ())
        raise RuntimeError(f"setitem_: cannot assign a value of shape {tuple(shape)} into a tensor of shape "
                           f"{tuple(input.shape)} at this index: {error}") from None
    except IndexError as error:
        raise IndexError(f"setitem_: {error} (indexing a tensor of shape {tuple(input.shape)})") from None
    input._bump_version()
    return input


def _value_array(op_name, t, value):
    if isinstance(value, numbers.Number):
        return value
    if isinstance(value, Tensor):
        if type(value.data) is not type(t.data):
            raise RuntimeError(f"{op_name}: value is on {value.device} but the tensor is on {t.device}")
        return value.data.astype(t.dtype, copy=False)
    return lift(value, like=t).data.astype(t.dtype, copy=False)


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
        return reshape(IndexSelect.apply(reshape(input, (1,)), index=(index.data.reshape(-1),)), ())
    return IndexSelect.apply(input, index=(slice(None),) * d + (index.data.reshape(-1),))


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
    return Gather.apply(input, index=along_dim_index(xp_of(input), index.data, d))


# ---- scattering ------------------------------------------------------------------------------------
class ScatterAdd(Function):
    """``input`` with ``src`` added at ``index`` along a dimension (repeats accumulate); promote under autocast."""

    op_name = "scatter_add"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, a, src, index=(), src_view=()):
        ctx.index, ctx.src_view, ctx.src_shape = index, src_view, src.shape
        return index_add(a.data.copy(), index, src.data[src_view])

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
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add: expected src to be a Tensor, got {type(src).__name__}")
    d = normalize_dim("scatter_add", dim, input.ndim)
    check_gather_shapes("scatter_add", d, index, ("input", input, False), ("src", src, True))
    _check_same_dtype_unless_autocast("scatter_add", input, src)
    src_view = tuple(slice(0, s) for s in index.shape)
    return ScatterAdd.apply(input, src, index=along_dim_index(xp_of(input), index.data, d), src_view=src_view)


def _check_same_dtype_unless_autocast(op_name, a, b):
    from ..autograd.state import STATE  # noqa: PLC0415
    if a.dtype != b.dtype and not STATE.autocast:
        raise RuntimeError(f"{op_name}: Expected self.dtype to be equal to src.dtype, got {a.dtype} and {b.dtype}")


# ---- where and masked_fill ------------------------------------------------------------------------
class Where(Function):
    """``input`` where ``condition`` holds, else ``other`` (either may be a Python number)."""

    op_name = "where"

    @staticmethod
    def forward(ctx, condition, a, b, dtype=None):
        ctx.save_for_backward(condition)
        ctx.shapes = (getattr(a, "shape", ()), getattr(b, "shape", ()))
        return xp_of(condition).where(condition.data, data(a), data(b)).astype(dtype, copy=False)

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


class MaskedFill(Where):
    """``value`` where ``mask`` holds, else ``input`` (a Where whose output keeps input's dtype)."""

    op_name = "masked_fill"


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


def where(condition, input=None, other=None):  # noqa: A002
    """Elementwise ``input if condition else other``; with only ``condition``, the indices where it holds.

    Args:
        condition: a bool Tensor.
        input: a Tensor or number chosen where condition is True.
        other: a Tensor or number chosen where condition is False.
    """
    _check_condition("where", condition)
    if input is None and other is None:
        return tuple(Tensor(a) for a in condition.data.nonzero())
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
    _check_inplace("masked_fill_", input)
    _check_condition("masked_fill_", mask, "mask")
    _check_fill_value("masked_fill_", value)
    xp = xp_of(input)
    shape = _broadcast_shape("masked_fill_", [("input", input.shape), ("mask", mask.shape)])
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"masked_fill_: mask of shape {tuple(mask.shape)} does not broadcast to the shape "
                           f"{tuple(input.shape)} of the tensor being updated")
    xp.copyto(input.data, _value_array("masked_fill_", input, value), casting="unsafe", where=mask.data)
    input._bump_version()
    return input


# ---- the rest of the family, kept in their own files for size ---------------------------------------
from ._join import Cat, Split, Stack, Unbind, cat, chunk, concat, split, stack, unbind  # noqa: E402
from ._rearrange import Flip, Repeat, Roll, Tile, Tril, Triu, flip, repeat, roll, tile, tril, triu  # noqa: E402

for _cls in (Cat, Split, Stack, Unbind, Flip, Repeat, Roll, Tile, Tril, Triu):
    _cls.__module__ = __name__  # NOTE: so cupynet.ops.OP_CLASSES (which reads this module) lists them

METHODS = {name: globals()[name] for name in __all__ if name not in ("cat", "concat", "stack", "getitem",
                                                                      "setitem_")}
METHODS["repeat"] = repeat
METHODS["where"] = lambda self, condition, other: where(condition, self, other)

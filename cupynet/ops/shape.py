"""Shape ops that move no arithmetic: reshape, transpose/permute, broadcast and its inverse.

Their backward formulas are the inverse shape op, so they are their own
double-backward too. ``sum_to`` (sum a broadcast gradient back to an input's
shape) and ``broadcast_to`` are each other's backward.
"""

from __future__ import annotations

from ..autograd.function import Function
from ..autograd.state import STATE
from ..tensor import Tensor, mark_view
from . import _rows
from ._util import normalize_dim, xp_of

__all__ = ["reshape", "view", "transpose", "permute", "broadcast_to", "expand", "expand_as", "sum_to",
           "squeeze", "unsqueeze", "flatten", "unflatten", "movedim", "swapaxes", "narrow", "t"]


def _resolve_shape(op_name, numel, shape):
    shape = tuple(int(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if len(unknown) > 1:
        raise RuntimeError(f"{op_name}: only one dimension can be inferred, got shape {shape}")
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op_name}: shape {shape} is invalid for input of size {numel}")
        shape = shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"{op_name}: shape {shape} is invalid for input of size {numel}")
    return shape


class _ShapeChange(Function):
    """An op that gives its input a new ``shape``; backward is the inverse op back to the input's shape.

    Subclasses give ``change(array, shape)`` (the array op) and ``inverse(grad, shape)`` (a cupynet op, so
    the gradient is differentiable again).
    """

    @staticmethod
    def forward(ctx, a, shape=None):
        ctx.in_shape = a.shape
        return ctx.fn.change(a.array, shape)

    @staticmethod
    def backward(ctx, grad):
        return ctx.fn.inverse(grad, ctx.in_shape)


def _same_memory(view, array):
    """True when ``view`` (a NumPy/CuPy result) reads ``array``'s memory rather than a copy of it."""
    base = view.base
    return base is not None and (base is array or base is array.base)


class Reshape(_ShapeChange):
    """Same values, new shape."""

    op_name = "reshape"

    change = staticmethod(lambda array, shape: array.reshape(shape))
    inverse = staticmethod(lambda grad, shape: reshape(grad, shape))

    @staticmethod
    def backward(ctx, grad):
        if not STATE.grad_enabled:  # NOTE (speed): no graph recorded: reshape the array, no op dispatch
            return Tensor(grad.array.reshape(ctx.in_shape))
        return reshape(grad, ctx.in_shape)

    @staticmethod
    def region_in_base(region, in_shape, shape=()):
        """Where a view's elements lie in its base: ``region`` (bool, the view's shape) in the base's shape.

        Args:
            region: bool array of the view's shape.
            in_shape: the base's shape.
            shape: the view's shape (the op's option).
        """
        return region.reshape(in_shape)


def reshape(input, *shape):  # noqa: A002 - PyTorch's name
    """Same data in a new shape (one dimension may be -1).

    Args:
        input: a Tensor.
        *shape: the new shape, as ints or one tuple.
    """
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    shape = _resolve_shape("reshape", input.array.size, shape)
    if shape == input.shape:
        return input
    out = Reshape.apply(input, shape=shape)
    return mark_view(out, input, Reshape, {"shape": shape}) if _same_memory(out.array, input.array) else out


view = reshape


def _inverse(dims):
    """The permutation that undoes ``dims``."""
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return tuple(inverse)


def _permuted(input, dims):
    """``Permute.apply`` recorded as a view of ``input`` (a permutation never copies)."""
    return mark_view(Permute.apply(input, dims=dims), input, Permute, {"dims": dims})


class Permute(Function):
    """Reorder dimensions."""

    op_name = "permute"

    @staticmethod
    def forward(ctx, a, dims=None):
        ctx.dims = dims
        return a.array.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        if not STATE.grad_enabled:  # NOTE (speed): no graph recorded: transpose the array, no op dispatch
            return Tensor(grad.array.transpose(_inverse(ctx.dims)))
        return permute(grad, _inverse(ctx.dims))

    @staticmethod
    def region_in_base(region, in_shape, dims=()):
        """Where a view's elements lie in its base: ``region`` (bool, the view's shape) in the base's shape.

        Args:
            region: bool array of the view's shape.
            in_shape: the base's shape.
            dims: the permutation (the op's option).
        """
        return region.transpose(_inverse(dims))


def permute(input, *dims):  # noqa: A002
    """Reorder the dimensions.

    Args:
        input: a Tensor.
        *dims: a permutation of ``range(ndim)``, as ints or one tuple.
    """
    dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    dims = tuple(normalize_dim("permute", d, input.ndim) for d in dims)
    if sorted(dims) != list(range(input.ndim)):
        raise RuntimeError(f"permute: dims {dims} is not a permutation of the {input.ndim} dimensions of "
                           f"a tensor of shape {tuple(input.shape)}")
    return _permuted(input, dims)


class BroadcastTo(_ShapeChange):
    """Broadcast to a larger shape (a view); backward sums back."""

    op_name = "broadcast_to"

    change = staticmethod(lambda array, shape: xp_of(array).broadcast_to(array, shape))
    inverse = staticmethod(lambda grad, shape: sum_to(grad, shape))


def broadcast_to(input, shape):  # noqa: A002
    """Broadcast to ``shape`` following NumPy's rules.

    Args:
        input: a Tensor.
        shape: the target shape.
    """
    shape = tuple(shape)
    if shape == input.shape:
        return input
    try:
        xp_of(input).broadcast_shapes(input.shape, shape)
    except ValueError:
        raise RuntimeError(f"broadcast_to: cannot broadcast a tensor of shape {tuple(input.shape)} to "
                           f"{shape}") from None
    return mark_view(BroadcastTo.apply(input, shape=shape), input, BroadcastTo, {"shape": shape})


def _sum_to_array(array, shape):
    lead = array.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and array.shape[lead + i] != 1)
    if not axes:
        return array.reshape(shape)
    if axes == tuple(range(lead)) and array.dtype.kind == "f" and array.dtype.itemsize >= 4:
        return _rows.leading_sum(array, lead)  # NOTE: only added leading dims (a bias's broadcast): see _rows
    # NOTE: half-precision gradients are summed in fp32 and rounded once
    acc_dtype = "float32" if array.dtype.itemsize < 4 and array.dtype.kind in "fV" else None
    out = array.sum(axis=axes, keepdims=True, dtype=acc_dtype)
    return out.astype(array.dtype, copy=False).reshape(shape)


class SumTo(_ShapeChange):
    """Sum over the dimensions that broadcasting added or stretched, giving ``shape``."""

    op_name = "sum_to"

    change = staticmethod(lambda array, shape: _sum_to_array(array, shape))
    inverse = staticmethod(lambda grad, shape: broadcast_to(grad, shape))


def sum_to(input, shape):  # noqa: A002
    """Sum a broadcast tensor back down to ``shape`` (the backward of broadcasting).

    Args:
        input: a Tensor.
        shape: the shape it was broadcast from.
    """
    shape = tuple(shape)
    return input if tuple(input.shape) == shape else SumTo.apply(input, shape=shape)


def transpose(input, dim0, dim1):  # noqa: A002
    """Swap two dimensions.

    Args:
        input: a Tensor.
        dim0: a dimension.
        dim1: another dimension.
    """
    dims = list(range(input.ndim))
    a, b = normalize_dim("transpose", dim0, input.ndim), normalize_dim("transpose", dim1, input.ndim)
    dims[a], dims[b] = dims[b], dims[a]
    return _permuted(input, tuple(dims))


swapaxes = transpose


def t(input):  # noqa: A002
    """The transpose of a matrix (``input.T``); a 0-d or 1-D tensor comes back as it is (PyTorch's ``t``).

    Args:
        input: a Tensor of at most 2 dimensions.
    """
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def narrow(input, dim, start, length):  # noqa: A002
    """The slice ``start:start + length`` of dimension ``dim``, a view (PyTorch's ``narrow``).

    Args:
        input: a Tensor with at least one dimension.
        dim: the dimension.
        start: the first index (negative counts from the end).
        length: how many elements.
    """
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dim("narrow", dim, input.ndim)
    size = input.shape[d]
    begin = start + size if start < 0 else start
    if not 0 <= begin <= size or length < 0 or begin + length > size:
        raise IndexError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return input[(slice(None),) * d + (slice(begin, begin + length),)]


def movedim(input, source, destination):  # noqa: A002
    """Move one dimension to a new position.

    Args:
        input: a Tensor.
        source: the dimension to move.
        destination: where it goes.
    """
    dims = list(range(input.ndim))
    s = normalize_dim("movedim", source, input.ndim)
    d = normalize_dim("movedim", destination, input.ndim)
    if input.ndim == 0:
        return _permuted(input, ())  # NOTE: dim 0 of a 0-d tensor, as PyTorch: nothing to move
    dims.pop(s)
    dims.insert(d, s)
    return _permuted(input, tuple(dims))


def expand(input, *sizes):  # noqa: A002
    """Broadcast to ``sizes``; -1 keeps a dimension's size.

    Args:
        input: a Tensor.
        *sizes: the target sizes, as ints or one tuple.
    """
    sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    lead = len(sizes) - input.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({input.ndim})")
    shape = tuple(input.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return broadcast_to(input, shape)


def expand_as(input, other):  # noqa: A002
    """Broadcast to ``other``'s shape.

    Args:
        input: a Tensor.
        other: a Tensor with the target shape.
    """
    return broadcast_to(input, other.shape)


def squeezed_shape(op_name, shape, dim):
    """``shape`` without its size-1 dimensions (all of them, or those among ``dim``).

    Args:
        op_name: the op, for errors.
        shape: the input's shape.
        dim: a dimension or tuple of dimensions, or None for all.
    """
    if dim is None:
        return tuple(s for s in shape if s != 1)
    dims = {normalize_dim(op_name, d, len(shape)) for d in (dim if isinstance(dim, tuple) else (dim,))}
    return tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))


def unsqueezed_shape(op_name, shape, dim):
    """``shape`` with a dimension of size 1 inserted at ``dim``.

    Args:
        op_name: the op, for errors.
        shape: the input's shape.
        dim: where the new dimension goes (negative counts from the end of the result).
    """
    d = normalize_dim(op_name, dim, len(shape) + 1)
    return tuple(shape[:d]) + (1,) + tuple(shape[d:])


def squeeze(input, dim=None):  # noqa: A002
    """Drop dimensions of size 1 (all of them, or only ``dim``).

    Args:
        input: a Tensor.
        dim: a dimension or tuple of dimensions, or None for all.
    """
    return reshape(input, squeezed_shape("squeeze", input.shape, dim))


def unsqueeze(input, dim):  # noqa: A002
    """Insert a dimension of size 1 at ``dim``.

    Args:
        input: a Tensor.
        dim: where the new dimension goes (negative counts from the end of the result).
    """
    return reshape(input, unsqueezed_shape("unsqueeze", input.shape, dim))


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """Merge dimensions ``start_dim..end_dim`` into one.

    Args:
        input: a Tensor.
        start_dim: first dimension to merge.
        end_dim: last dimension to merge.
    """
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = normalize_dim("flatten", start_dim, input.ndim), normalize_dim("flatten", end_dim, input.ndim)
    if s > e:
        raise RuntimeError(f"flatten: start_dim {start_dim} cannot come after end_dim {end_dim}")
    merged = 1
    for n in input.shape[s:e + 1]:
        merged *= n
    return reshape(input, input.shape[:s] + (merged,) + input.shape[e + 1:])


def unflatten(input, dim, sizes):  # noqa: A002
    """Split dimension ``dim`` into ``sizes``.

    Args:
        input: a Tensor.
        dim: the dimension to split.
        sizes: the new sizes (one may be -1).
    """
    d = normalize_dim("unflatten", dim, input.ndim)
    sizes = _resolve_shape("unflatten", input.shape[d], sizes)
    return reshape(input, input.shape[:d] + sizes + input.shape[d + 1:])


METHODS = {name: globals()[name] for name in __all__ if name not in ("sum_to",)}
METHODS["view_as"] = lambda self, other: reshape(self, other.shape)

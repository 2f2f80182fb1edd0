"""In-place updates (``add_``, ``mul_``, ``zero_``, ``copy_``, ``clamp_``, ...); each bumps the version counter.

Every in-place op goes through ``write_in_place``. Under ``no_grad``, or when no
operand needs a gradient (what optimizers and initialisers do, ``p.data.add_``),
it writes the new values into the tensor's memory and records nothing.

When an operand is part of a graph (``out += identity`` in a ResNet block,
``x[mask] = 0``, ``x[:, 0] = y`` with ``y`` requiring grad), history is
*rebased* as in PyTorch: the out-of-place twin of the op runs on a snapshot of
the old value and is recorded, its values are written into the tensor's memory,
and the tensor takes the new node's place (``x.grad_fn`` becomes
``AddBackward``). The old values are gone, so a node that still needs them for
backward raises PyTorch's "modified by an inplace operation" error instead of
giving a wrong gradient: saved inputs through the version counter, saved
outputs because their node is told (``Node.mark_overwritten``).

Writing through a *view* (``x[:, 0].mul_(2)``, ``x.T.add_(1)``) changes the
base's memory, so the base's history must include the write. The view op
records ``(base, op, options)`` on the view (``tensor.mark_view``); the base
then gets a ``CopySlices`` node, as in PyTorch: its backward gives the old base
the gradient everywhere except the written region, and the written value the
gradient of that region (read through the same view ops). The view, and every
other live view of the base that needs gradients, is then made again from the
new base, so its history includes the write too.

Refused as in PyTorch, with its messages: a leaf that requires grad (or a view
of one) outside ``no_grad``; a view whose elements share memory (``expand``);
a piece of a multi-output view op (``split``, ``unbind``) in a graph; a view
made under ``no_grad`` of a tensor that requires grad, written with grad on.
"""

from __future__ import annotations

from ..autograd.function import Function
from ..autograd.state import STATE
from ..random import normal_values, resolve_generator, uniform_values
from ..tensor import Tensor, live_views, remember_view, view_info, view_root
from ._util import data, xp_of, zero_where_not
from .arith import _move, add, cast, div, mul, sub
from .clamping import clamp
from .shape import BroadcastTo, squeezed_shape, sum_to, unsqueezed_shape

__all__ = ["add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "clamp_", "clip_", "normal_", "uniform_",
           "unsqueeze_", "squeeze_"]

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")
_NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                 "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                 "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
                 "inplace to be tracked) or both outside (if you want the inplace to be tracked).")


def write_in_place(name, t, other, out_of_place, write):
    """The one entry of every in-place op: rebase history when a graph is involved, else just ``write()``.

    Args:
        name: the op, for error messages.
        t: the Tensor written into.
        other: the operand that may bring a graph in (a Tensor, a number or None).
        out_of_place: ``old -> new`` with recorded cupynet ops (``old`` is a snapshot of ``t``).
        write: writes the new values into ``t.array`` when nothing is recorded.
    """
    _check_writable(name, t)
    if STATE.grad_enabled and (t._requires_grad or (isinstance(other, Tensor) and other._requires_grad)):
        return _rebase(name, t, out_of_place)
    if STATE.grad_enabled and t.array.base is not None:
        _check_no_grad_view(name, t)
    write()
    t._bump_version()
    return t


def _check_writable(name, t):
    array = t.array
    if array.base is not None and 0 in array.strides and \
            any(s == 0 and n > 1 for s, n in zip(array.strides, array.shape)):
        raise RuntimeError(f"{name}: {_OVERLAP}")


def _check_no_grad_view(name, t):
    if view_info(t) is not None and view_root(t)._requires_grad:
        raise RuntimeError(f"{name}: {_NO_GRAD_VIEW}")


def _rebase(name, t, out_of_place):
    """Run the recorded out-of-place op, write its values into ``t`` and give ``t`` (or its base) a new node."""
    info = view_info(t) if t.array.base is not None else None
    if info is None:
        if t._requires_grad and t.grad_fn is None:
            raise RuntimeError(f"{name}: {_LEAF}")
        new = _recorded(name, t, out_of_place)
        _write(t, new)
        new.grad_fn.rebase_output(new._output_nr, t)
        _regenerate_views(t)
        return t
    root, chain = view_root(t), _view_chain(name, t)
    if root._requires_grad and root.grad_fn is None:
        raise RuntimeError(f"{name}: {_VIEW_OF_LEAF}")
    new = _recorded(name, t, out_of_place)
    written = _written_region(chain, xp_of(root), tuple(t.shape))  # NOTE: before any write: errors change nothing
    remembered = t._requires_grad  # NOTE: a view that needed gradients when made is already on the root's list
    _write(t, new, overwritten=root)
    _position(root, CopySlices.apply(_at(root), new, chain=chain, written=written))
    if not remembered:
        remember_view(t)
    _regenerate_views(root)
    return t


def _recorded(name, t, out_of_place):
    new = out_of_place(_snapshot(t))
    if tuple(new.shape) != tuple(t.shape):
        raise RuntimeError(f"{name}: output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(new.shape)}")
    if new.dtype != t.dtype:
        new = cast(new, t.dtype)  # NOTE: differentiable: the gradient flows back in the operands' dtypes
    return new


def _write(t, new, overwritten=None):
    overwritten = overwritten if overwritten is not None else t
    if overwritten.grad_fn is not None:
        overwritten.grad_fn.mark_overwritten(overwritten._output_nr)
    xp_of(t).copyto(t.array, new.array)
    t._bump_version()


def _snapshot(t):
    """``t``'s current value as a separate Tensor at the same place in the graph.

    NOTE: the recorded op may save its inputs for backward (``y *= w`` needs the
    old ``y`` for ``w``'s gradient), and ``t``'s memory is about to be written
    over; PyTorch keeps the original self for the same reason.
    """
    return _at(t, t.array.copy())


def _at(t, array=None):
    """A Tensor at ``t``'s place in the graph (sharing ``t``'s array unless another is given)."""
    out = Tensor(t.array if array is None else array)
    out.grad_fn, out._output_nr, out._requires_grad = t.grad_fn, t._output_nr, t._requires_grad
    return out


def _position(t, made):
    """Give ``t`` the graph position of ``made`` (a tensor a recorded op just returned)."""
    if made.grad_fn is not None:
        made.grad_fn.rebase_output(made._output_nr, t)


# ---- views ------------------------------------------------------------------------------------
def _view_chain(name, t):
    """The view ops from the root to ``t``: ``[(op, options, shape of the tensor it was applied to)]``.

    Args:
        name: the in-place op about to write through ``t`` (it checks the view is writable), or None.
        t: a view.
    """
    steps, info = [], view_info(t)
    while info is not None:
        base, op, options, writable = info
        if name is not None and op is BroadcastTo:
            raise RuntimeError(f"{name}: {_OVERLAP}")
        if name is not None and not writable and t._requires_grad:
            raise RuntimeError(
                f"{name}: Output {t._output_nr} of {t.grad_fn.name() if t.grad_fn else 'a view op'} is a view and "
                "is being modified inplace. This view is the output of a function that returns multiple views. "
                "Such functions do not allow the output views to be modified inplace. You should replace the "
                "inplace operation by an out-of-place one.")
        steps.append((op, options, tuple(base.shape)))
        t, info = base, view_info(base)
    return tuple(reversed(steps))


def _written_region(chain, xp, view_shape):
    """A bool array of the root's shape: True where the view's elements lie."""
    region = xp.ones(view_shape, dtype=bool)
    for op, options, in_shape in reversed(chain):
        region = op.region_in_base(region, in_shape, **options)
    return region


def _replay(t, chain):
    for op, options, _ in chain:
        t = op.apply(t, **options)
    return t


def _regenerate(view, root):
    """Make ``view`` again from ``root`` (recorded), so its history includes the root's latest change."""
    _position(view, _replay(root, _view_chain(None, view)))


def _regenerate_views(root):
    for view in live_views(root):
        _regenerate(view, root)


class CopySlices(Function):
    """The base's new node after a write through one of its views (PyTorch's CopySlices).

    Forward returns the base's array (already written). Backward: the old base gets
    the gradient outside the written region (zero inside), the written value gets
    the region, read through the same view ops.

    Args:
        base: the base at its place in the graph before the write.
        value: the new values of the view (recorded).
        chain: the view ops from the base to the view (keyword).
        written: bool array of the base's shape, True in the written region (keyword).
    """

    op_name = "_copy_slices"  # NOTE: internal (the leading _ keeps it out of the op reference)

    @staticmethod
    def forward(ctx, base, value, chain=(), written=None):
        ctx.chain, ctx.written = chain, written
        return base.array

    @staticmethod
    def backward(ctx, grad):
        grad_base = ZeroAt.apply(grad, region=ctx.written) if ctx.needs_input_grad[0] else None
        grad_value = _replay(grad, ctx.chain) if ctx.needs_input_grad[1] else None
        return grad_base, grad_value


class ZeroAt(Function):
    """The gradient with zeros in a region (exact: an inf or NaN there becomes 0, not NaN); its own backward.

    Args:
        grad: a Tensor.
        region: bool array of ``grad``'s shape, True where the result is zero (keyword).
    """

    op_name = "_zero_at"  # NOTE: internal (the leading _ keeps it out of the op reference)

    @staticmethod
    def forward(ctx, grad, region=None):
        ctx.region = region
        xp = xp_of(grad)
        return zero_where_not(~region, grad.array, xp)

    @staticmethod
    def backward(ctx, grad):
        return ZeroAt.apply(grad, region=ctx.region)


class Fill(Function):
    """``input``'s shape filled with ``value`` (a number, or a 0-d Tensor that gets the summed gradient).

    Args:
        input: the Tensor whose shape and dtype the result takes (its gradient is zero).
        value: a number or a 0-d Tensor.
    """

    op_name = "fill"

    @staticmethod
    def forward(ctx, input, value):  # noqa: A002
        ctx.value_dtype = value.dtype if isinstance(value, Tensor) else None
        return xp_of(input).full(input.shape, data(value), dtype=input.dtype)

    @staticmethod
    def backward(ctx, grad):
        return None, (grad.sum() if ctx.needs_input_grad[1] else None)


class Copy(Function):
    """``src`` broadcast to ``input``'s shape and cast to its dtype (the new value of ``input.copy_(src)``).

    Args:
        input: the Tensor written into (its gradient is zero).
        src: a Tensor broadcastable to ``input``'s shape, on the same device.
    """

    op_name = "copy"

    @staticmethod
    def forward(ctx, input, src):  # noqa: A002
        ctx.src_shape = src.shape
        array = xp_of(input).broadcast_to(src.array, input.shape).astype(input.dtype, copy=True)
        return array

    @staticmethod
    def backward(ctx, grad):
        return None, (sum_to(grad, ctx.src_shape) if ctx.needs_input_grad[1] else None)


# ---- the ops ----------------------------------------------------------------------------------------
def _assign(t, compute):
    """A ``write`` for ``write_in_place``: the computed array, cast to ``t``'s dtype, into ``t``'s memory."""
    def write():
        result = compute()
        xp_of(t).copyto(t.array, result if result.dtype == t.dtype else result.astype(t.dtype))
    return write


def add_(input, other, alpha=1):  # noqa: A002
    """In place ``input += alpha * other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
    """
    return write_in_place("add_", input, other, lambda old: add(old, other, alpha=alpha),
                          _assign(input, lambda: input.array + alpha * data(other)))


def sub_(input, other, alpha=1):  # noqa: A002
    """In place ``input -= alpha * other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
    """
    return write_in_place("sub_", input, other, lambda old: sub(old, other, alpha=alpha),
                          _assign(input, lambda: input.array - alpha * data(other)))


def mul_(input, other):  # noqa: A002
    """In place ``input *= other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
    """
    return write_in_place("mul_", input, other, lambda old: mul(old, other),
                          _assign(input, lambda: input.array * data(other)))


def div_(input, other):  # noqa: A002
    """In place ``input /= other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
    """
    return write_in_place("div_", input, other, lambda old: div(old, other),
                          _assign(input, lambda: input.array / data(other)))


def zero_(input):  # noqa: A002
    """Fill with zeros in place (on a graph tensor the old value then gets a zero gradient).

    Args:
        input: the Tensor to update.
    """
    return fill_(input, 0)


def fill_(input, value):  # noqa: A002
    """Fill with ``value`` in place.

    Args:
        input: the Tensor to update.
        value: a number or a 0-d Tensor (which receives the summed gradient when it requires grad).
    """
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                           "dimensions.")
    return write_in_place("fill_", input, value, lambda old: Fill.apply(old, value),
                          lambda: input.array.fill(data(value)))


def copy_(input, src):  # noqa: A002
    """Copy ``src``'s values into ``input`` in place (broadcasting, casting, across devices).

    Args:
        input: the Tensor to update.
        src: a Tensor or array with a broadcastable shape.
    """
    if not isinstance(src, Tensor):
        src = Tensor(src)
    if input.is_cuda != src.is_cuda:
        src = Tensor(_move(src.array, input.device)) if not src.requires_grad else src.to(input.device)
    try:
        xp_of(input).broadcast_shapes(src.shape, input.shape)
    except ValueError:
        raise RuntimeError(f"copy_: the size of src {tuple(src.shape)} must be broadcastable to the size of the "
                           f"tensor {tuple(input.shape)}") from None
    return write_in_place("copy_", input, src, lambda old: Copy.apply(old, src),
                          _assign(input, lambda: xp_of(input).broadcast_to(src.array, input.shape)))


def clamp_(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """In place ``clamp`` (bounds are numbers or broadcastable Tensors).

    Args:
        input: the Tensor to update.
        min: lower bound (number, Tensor or None).
        max: upper bound (number, Tensor or None).
    """
    other = next((b for b in (min, max) if isinstance(b, Tensor) and b._requires_grad), None)
    return write_in_place("clamp_", input, other, lambda old: clamp(old, min, max),
                          _assign(input, lambda: clamp(input, min, max).array))


clip_ = clamp_


def _draw(input, draw, generator, fn):  # noqa: A002
    """Write ``draw(array_generator, dtype)`` (in ``input``'s dtype) into ``input``; no graph."""
    if not input.dtype.kind == "f" and input.dtype.name != "bfloat16":
        raise TypeError(f"expected a floating point tensor, got dtype {input.dtype}")
    device = input.device
    dtype = input.dtype
    gen = resolve_generator(generator, device, fn)

    def compute():
        if device.type == "cuda":
            with device.xp.cuda.Device(device.index):
                return draw(gen, dtype)
        return draw(gen, dtype)
    return write_in_place("random fill", input, None, lambda old: Copy.apply(old, Tensor(compute())),
                          _assign(input, compute))


def normal_(input, mean=0.0, std=1.0, generator=None):  # noqa: A002
    """Fill with values drawn from N(mean, std^2) in place.

    Args:
        input: a floating Tensor.
        mean: the mean.
        std: the standard deviation (>= 0).
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    return _draw(input, lambda gen, dt: normal_values(gen, input.shape, dt, mean, std, like=input.array), generator,
                 "normal_")


def uniform_(input, from_=0.0, to=1.0, generator=None):  # noqa: A002
    """Fill with values drawn from U(from_, to) in place.

    Args:
        input: a floating Tensor.
        from_: lower bound.
        to: upper bound.
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    if not from_ <= to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _draw(input, lambda gen, dt: uniform_values(gen, input.shape, dt, from_, to, like=input.array), generator,
                 "uniform_")


# ---- in-place shape changes ----------------------------------------------------------------------------
def _reshape_in_place(name, t, shape):
    """Give ``t`` the new ``shape`` over the same memory (only size-1 dimensions come or go: always a view)."""
    if STATE.grad_enabled and t._requires_grad:
        raise RuntimeError(f"{name}: changing the shape of a tensor that requires grad in place is not supported by "
                           f"cupynet (PyTorch records it in the graph); use {name[:-1]}(), which returns a view")
    t.array = t.array.reshape(shape)
    t._bump_version()
    return t


def unsqueeze_(input, dim):  # noqa: A002 - PyTorch's names
    """Insert a dimension of size 1 at ``dim``, in place (the same memory; bumps the version).

    Args:
        input: a Tensor that does not require grad (or grad mode off).
        dim: where the new dimension goes (negative counts from the end of the result).
    """
    return _reshape_in_place("unsqueeze_", input, unsqueezed_shape("unsqueeze_", input.shape, dim))


def squeeze_(input, dim=None):  # noqa: A002
    """Drop dimensions of size 1 (all of them, or only ``dim``), in place (the same memory; bumps the version).

    Args:
        input: a Tensor that does not require grad (or grad mode off).
        dim: a dimension or tuple of dimensions, or None for all.
    """
    return _reshape_in_place("squeeze_", input, squeezed_shape("squeeze_", input.shape, dim))


METHODS = {name: globals()[name] for name in __all__}


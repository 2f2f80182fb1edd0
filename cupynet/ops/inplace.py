"""In-place updates (``add_``, ``mul_``, ``zero_``, ``copy_``, ...); each bumps the version counter.

Under ``no_grad``, or when no operand needs a gradient (what optimizers and
initialisers do), an in-place op writes the new values into the tensor's memory
and records nothing.

When an operand is part of a graph (``out += identity`` in a ResNet block,
``grad_norm += g.pow(2).sum()``), history is *rebased* as in PyTorch: the
out-of-place op runs and is recorded, its values are written into the tensor's
memory, and the tensor takes the new node's place (``x.grad_fn`` becomes
``AddBackward``). The old values are gone, so a node that still needs them for
backward raises PyTorch's "modified by an inplace operation" error instead of
giving a wrong gradient: saved inputs through the version counter, saved outputs
because their node is told (``Node.mark_overwritten``).

NOTE: two cases stay refused with a clear error: a leaf that requires grad (as
in PyTorch), and a graph tensor whose memory is a view of another array
(PyTorch would rebase the base tensor's history too, through ``CopySlices``;
cupynet's views are separate graph tensors, so the base would silently miss the
change). ``zero_`` and ``fill_`` are refused on graph tensors.
"""

from __future__ import annotations

from ..autograd.state import STATE
from ..tensor import Tensor
from ._util import data, xp_of
from .arith import _move, add, cast, div, mul, sub

__all__ = ["add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_"]


def _check_inplace(name, t):
    """Refuse the in-place ops that cannot rebase history (used by ops with no out-of-place twin)."""
    if STATE.grad_enabled and t.requires_grad:
        _refuse_leaf(name, t)
        raise RuntimeError(f"{name}: in-place ops of this kind on tensors that are part of a graph are not "
                           "supported by cupynet's autograd; use the out-of-place form")


def _refuse_leaf(name, t):
    if t.requires_grad and t.grad_fn is None:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation.")


def _joins_graph(t, other):
    return STATE.grad_enabled and (t.requires_grad or (isinstance(other, Tensor) and other.requires_grad))


def _is_view(array):
    return array.base is not None


def _rebase(name, t, out_of_place):
    """Run the recorded out-of-place op, write its values into ``t`` and give ``t`` its place in the graph."""
    _refuse_leaf(name, t)
    if _is_view(t.array):
        raise RuntimeError(f"{name}: in-place op on a tensor that is part of a graph and whose memory is a view of "
                           "another array (a slice, transpose or reshape): cupynet cannot rebase the base's history; "
                           "use the out-of-place form")
    out = out_of_place(_snapshot(t))
    if tuple(out.shape) != tuple(t.shape):
        raise RuntimeError(f"{name}: output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(out.shape)}")
    if out.dtype != t.dtype:
        out = cast(out, t.dtype)  # NOTE: differentiable: the gradient flows back in the operands' dtypes
    if t.grad_fn is not None:
        t.grad_fn.mark_overwritten(t._output_nr)
    xp_of(t).copyto(t.array, out.array)
    t._bump_version()
    out.grad_fn.rebase_output(out._output_nr, t)
    return t


def _snapshot(t):
    """``t``'s current value as a separate Tensor at the same place in the graph.

    NOTE: the recorded op may save its inputs for backward (``y *= w`` needs the
    old ``y`` for ``w``'s gradient), and ``t``'s memory is about to be written
    over; PyTorch keeps the original self for the same reason.
    """
    old = Tensor(t.array.copy())
    old.grad_fn, old._output_nr, old._requires_grad = t.grad_fn, t._output_nr, t.requires_grad
    return old


def _inplace(name, t, compute, other=None, out_of_place=None):
    if out_of_place is not None and _joins_graph(t, other):
        return _rebase(name, t, out_of_place)
    _check_inplace(name, t)
    result = compute()
    if result.dtype != t.dtype:
        result = result.astype(t.dtype)
    xp_of(t).copyto(t.array, result)
    t._bump_version()
    return t


def add_(input, other, alpha=1):  # noqa: A002
    """In place ``input += alpha * other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
    """
    return _inplace("add_", input, lambda: input.array + alpha * data(other), other,
                    lambda old: add(old, other, alpha=alpha))


def sub_(input, other, alpha=1):  # noqa: A002
    """In place ``input -= alpha * other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
    """
    return _inplace("sub_", input, lambda: input.array - alpha * data(other), other,
                    lambda old: sub(old, other, alpha=alpha))


def mul_(input, other):  # noqa: A002
    """In place ``input *= other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
    """
    return _inplace("mul_", input, lambda: input.array * data(other), other, lambda old: mul(old, other))


def div_(input, other):  # noqa: A002
    """In place ``input /= other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
    """
    return _inplace("div_", input, lambda: input.array / data(other), other, lambda old: div(old, other))


def zero_(input):  # noqa: A002
    """Fill with zeros in place.

    Args:
        input: the Tensor to update.
    """
    return _inplace("zero_", input, lambda: xp_of(input).zeros_like(input.array))


def fill_(input, value):  # noqa: A002
    """Fill with ``value`` in place.

    Args:
        input: the Tensor to update.
        value: a number.
    """
    return _inplace("fill_", input, lambda: xp_of(input).full_like(input.array, data(value)))


def copy_(input, src):  # noqa: A002
    """Copy ``src``'s values into ``input`` in place (broadcasting, casting, across devices).

    Args:
        input: the Tensor to update.
        src: a Tensor or array with a broadcastable shape.
    """
    source = src.array if isinstance(src, Tensor) else src
    if input.is_cuda != (type(source).__module__.split(".")[0] == "cupy"):
        source = _move(source, input.device)
    return _inplace("copy_", input, lambda: xp_of(input).broadcast_to(source, input.shape))


METHODS = {name: globals()[name] for name in __all__}

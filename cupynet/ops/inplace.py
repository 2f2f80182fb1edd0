"""In-place updates (``add_``, ``mul_``, ``zero_``, ``copy_``, ...): not recorded; each bumps the version counter.

In-place changes of tensors that are part of a graph are refused (cupynet does
not rebase history as PyTorch does); under ``no_grad``, or on tensors that need
no gradient, they are allowed: that is what optimizers and initialisers do.
"""

from __future__ import annotations

from ..tensor import Tensor
from ._util import data, xp_of
from .arith import _move

__all__ = ["add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_"]


def _check_inplace(name, t):
    from ..autograd.state import STATE  # noqa: PLC0415
    if STATE.grad_enabled and t.requires_grad:
        if t.grad_fn is None:
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place operation.")
        raise RuntimeError(f"{name}: in-place ops on tensors that are part of a graph are not supported by "
                           "cupynet's autograd; use the out-of-place form")


def _inplace(name, t, compute):
    _check_inplace(name, t)
    result = compute()
    if result.dtype != t.dtype:
        result = result.astype(t.dtype)
    xp_of(t).copyto(t.data, result)
    t._bump_version()
    return t


def add_(input, other, alpha=1):  # noqa: A002
    """In place ``input += alpha * other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
    """
    return _inplace("add_", input, lambda: input.data + alpha * data(other))


def sub_(input, other, alpha=1):  # noqa: A002
    """In place ``input -= alpha * other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
    """
    return _inplace("sub_", input, lambda: input.data - alpha * data(other))


def mul_(input, other):  # noqa: A002
    """In place ``input *= other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
    """
    return _inplace("mul_", input, lambda: input.data * data(other))


def div_(input, other):  # noqa: A002
    """In place ``input /= other``.

    Args:
        input: the Tensor to update.
        other: a Tensor or number.
    """
    return _inplace("div_", input, lambda: input.data / data(other))


def zero_(input):  # noqa: A002
    """Fill with zeros in place.

    Args:
        input: the Tensor to update.
    """
    return _inplace("zero_", input, lambda: xp_of(input).zeros_like(input.data))


def fill_(input, value):  # noqa: A002
    """Fill with ``value`` in place.

    Args:
        input: the Tensor to update.
        value: a number.
    """
    return _inplace("fill_", input, lambda: xp_of(input).full_like(input.data, data(value)))


def copy_(input, src):  # noqa: A002
    """Copy ``src``'s values into ``input`` in place (broadcasting, casting, across devices).

    Args:
        input: the Tensor to update.
        src: a Tensor or array with a broadcastable shape.
    """
    source = src.data if isinstance(src, Tensor) else src
    if input.is_cuda != (type(source).__module__.split(".")[0] == "cupy"):
        source = _move(source, input.device)
    return _inplace("copy_", input, lambda: xp_of(input).broadcast_to(source, input.shape))


METHODS = {name: globals()[name] for name in __all__}

"""The arguments every loss checks, PyTorch's deprecated ``size_average`` / ``reduce``, and broadcasting.

A target of another shape is treated as PyTorch treats it, loss by loss
(``broadcast_pair``): ``mse_loss``, ``l1_loss``, ``smooth_l1_loss`` and
``huber_loss`` warn and broadcast; ``kl_div``, ``poisson_nll_loss`` and
``hinge_embedding_loss`` broadcast silently; ``soft_margin_loss`` broadcasts the
target to the input's shape only; ``margin_ranking_loss`` broadcasts inputs of
the same number of dimensions; the binary cross-entropies refuse it. Broadcast
operands get their gradients summed back to their own shapes.
"""

from __future__ import annotations

import warnings

import numpy

from ... import checks as shared_checks
from ...checks import require_floating, require_tensor
from .._util import xp_of
from ..shape import broadcast_to

REDUCTIONS = ("none", "mean", "sum")


def check_reduction(op, reduction, allowed=REDUCTIONS):
    """Raise a clear ValueError for an unknown ``reduction``.

    Args:
        op: the loss, for the message.
        reduction: the given value.
        allowed: the accepted values.
    """
    shared_checks.check_choice(op, "reduction", reduction, allowed)


def check_tensor(op, name, t, floating=True):
    """Raise unless ``t`` is a Tensor (a floating one when ``floating``).

    Args:
        op: the loss, for the message.
        name: the argument's name.
        t: the value.
        floating: require a floating dtype.
    """
    require_tensor(op, t, name)
    if floating:
        require_floating(op, t, name)


def check_number(op, name, value, low=None, high=None):
    """Raise unless ``value`` is a real number in ``[low, high]``.

    Args:
        op: the loss, for the message.
        name: the argument's name.
        value: the value.
        low: the smallest allowed value (None: no bound).
        high: the largest allowed value (None: no bound).
    """
    shared_checks.check_number(op, name, value, low=low, high=high, high_inclusive=True)


def check_optional_weight(op, name, weight, shape):
    """Raise unless ``weight`` is None or a floating Tensor that broadcasts to ``shape``.

    Args:
        op: the loss, for the message.
        name: the argument's name.
        weight: the value.
        shape: the shape it must broadcast to.
    """
    if weight is None:
        return
    check_tensor(op, name, weight)
    try:
        xp_of(weight).broadcast_shapes(tuple(weight.shape), tuple(shape))
    except ValueError:
        raise ValueError(f"{op}: {name} of shape {tuple(weight.shape)} does not broadcast to the input shape "
                         f"{tuple(shape)}") from None


BROADCAST_WARNING = ("Using a target size {target} that is different to the input size {input}. This will likely "
                     "lead to incorrect results due to broadcasting. Please ensure they have the same size.")


def broadcast_shape(op, named_shapes):
    """The shape the given shapes broadcast to, or PyTorch's RuntimeError naming the first mismatch.

    Args:
        op: the loss, for the message.
        named_shapes: ``(name, shape)`` pairs, in argument order.
    """
    ndim = max(len(shape) for _, shape in named_shapes)
    out = []
    for axis in range(ndim):
        sizes = [(name, shape[axis - ndim + len(shape)]) for name, shape in named_shapes
                 if axis - ndim + len(shape) >= 0]
        big = [(name, n) for name, n in sizes if n != 1]
        for name, n in big[1:]:
            if n != big[0][1]:
                raise RuntimeError(f"{op}: The size of {big[0][0]} ({big[0][1]}) must match the size of {name} ({n}) "
                                   f"at non-singleton dimension {axis}")
        out.append(big[0][1] if big else 1)
    return tuple(out)


def broadcast_pair(op, input, target, warn=False):  # noqa: A002 - PyTorch's name
    """``input`` and ``target`` broadcast (differentiably) to their common shape, as PyTorch's pointwise losses do.

    NOTE: equal shapes (the usual case) pass through untouched. Otherwise, as in PyTorch,
    ``warn`` gives the UserWarning of mse/l1/smooth_l1/huber ("Using a target size ...");
    shapes that do not broadcast are a RuntimeError; each operand's gradient is summed back
    to its own shape by ``broadcast_to``'s backward.

    Args:
        op: the loss, for messages.
        input: the input Tensor.
        target: the target Tensor.
        warn: warn that the shapes differ (PyTorch does for mse/l1/smooth_l1/huber).
    """
    check_tensor(op, "input", input)
    check_tensor(op, "target", target)
    if input.shape == target.shape:
        return input, target
    if warn:
        # NOTE: stacklevel 4 points at the user's line: this helper <- _distance_loss <- mse_loss (etc.) <- the caller
        warnings.warn(BROADCAST_WARNING.format(target=tuple(target.shape), input=tuple(input.shape)), UserWarning,
                      stacklevel=4)
    shape = broadcast_shape(op, (("input", tuple(input.shape)), ("target", tuple(target.shape))))
    return broadcast_to(input, shape), broadcast_to(target, shape)


def legacy_reduction(op, size_average, reduce, reduction, warn=True):
    """The reduction PyTorch's deprecated ``size_average`` / ``reduce`` stand for, else ``reduction`` itself.

    As in PyTorch, either one given (not None) overrides ``reduction``: a missing one counts as True;
    ``reduce=False`` is ``'none'``, else ``size_average=False`` is ``'sum'``, else ``'mean'``; with its warning.

    Args:
        op: the loss, for the message.
        size_average: None, or a bool: average (True) or sum (False) over the elements.
        reduce: None, or a bool: False returns the per-element losses.
        reduction: the ``reduction`` argument, returned when both legacy arguments are None.
        warn: give PyTorch's deprecation warning (a loss module's constructor checks first without it).
    """
    if size_average is None and reduce is None:
        return reduction
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if value is not None and not isinstance(value, (bool, numpy.bool_)):
            raise TypeError(f"{op}: {name} must be a bool or None (it is deprecated: use reduction=), got "
                            f"{value!r:.80}")
    legacy = "none" if reduce is False else ("sum" if size_average is False else "mean")
    if warn:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{legacy}' instead.",
                      UserWarning, stacklevel=3)
    return legacy

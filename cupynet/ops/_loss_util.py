"""Helpers shared by the loss ops (no ops here): argument checks, reductions, stable sigmoid pieces.

NOTE (numerics): every loss computes in fp32 for float16/bfloat16 inputs and
rounds the reduced result once; backward formulas run in fp32 too and round
each gradient once to its input's dtype.
"""

from __future__ import annotations

import numbers
import os

import numpy

from .. import backend, dtypes
from ..tensor import Tensor
from ._util import require_floating, xp_of
from .arith import cast
from .shape import broadcast_to, reshape
from .unary import exp, log

REDUCTIONS = ("none", "mean", "sum")


def fp32(t):
    """A low-precision Tensor cast (differentiably) to float32; others (and None) as they are.

    Args:
        t: a Tensor or None.
    """
    return cast(t, dtypes.float32) if t is not None and t.dtype in dtypes.LOW_PRECISION else t


def back_to(t, dtype):
    """``t`` cast (differentiably) to ``dtype`` when it differs.

    Args:
        t: a Tensor or None.
        dtype: the wanted dtype.
    """
    return t if t is None or t.dtype == dtype else cast(t, dtype)


def check_reduction(op, reduction, allowed=REDUCTIONS):
    """Raise a clear ValueError for an unknown ``reduction``.

    Args:
        op: the loss, for the message.
        reduction: the given value.
        allowed: the accepted values.
    """
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {', '.join(repr(r) for r in allowed)}, "
                         f"got {reduction!r}")


def check_tensor(op, name, t, floating=True):
    """Raise unless ``t`` is a Tensor (a floating one when ``floating``).

    Args:
        op: the loss, for the message.
        name: the argument's name.
        t: the value.
        floating: require a floating dtype.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(t).__name__}")
    if floating:
        require_floating(op, t, name)


def check_same_shape(op, input, target, what="target"):  # noqa: A002 - PyTorch's name
    """Raise when input and target shapes differ (cupynet does not broadcast a loss's target; PyTorch warns).

    Args:
        op: the loss, for the message.
        input: the input Tensor.
        target: the target Tensor.
        what: the second argument's name.
    """
    check_tensor(op, "input", input)
    check_tensor(op, what, target)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{op}: {what} shape {tuple(target.shape)} does not match input shape "
                         f"{tuple(input.shape)}; they must be equal")


def check_number(op, name, value, low=None, high=None):
    """Raise unless ``value`` is a real number in ``[low, high]``.

    Args:
        op: the loss, for the message.
        name: the argument's name.
        value: the value.
        low: the smallest allowed value (None: no bound).
        high: the largest allowed value (None: no bound).
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ValueError(f"{op}: {name} must be a number {bounds}, got {value!r}")


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


def compute_arrays(*tensors):
    """The arrays of ``tensors`` in their common compute dtype (fp32 for half types), and the result dtype.

    Args:
        *tensors: floating Tensors.
    """
    if len(tensors) == 1:  # NOTE: the common case, without the promotion rules
        out_dtype = tensors[0].data.dtype
        work = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
        return [tensors[0].data.astype(work, copy=False)], out_dtype
    out_dtype = dtypes.result_type(*(t.dtype for t in tensors))
    work = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
    return [t.data.astype(work, copy=False) for t in tensors], out_dtype


def constant(array_or_value, like):
    """A constant (no-grad) Tensor of ``array_or_value`` in ``like``'s array module.

    Args:
        array_or_value: an array.
        like: an array whose module to use.
    """
    return Tensor(backend.get_array_module(like).asarray(array_or_value))


def reduce_array(elementwise, reduction, out_dtype, divisor=None):
    """Reduce per-element losses ('none', 'mean' or 'sum'; 'mean' divides by ``divisor`` when given).

    Args:
        elementwise: the per-element loss array (fp32 or fp64).
        reduction: 'none', 'mean' or 'sum'.
        out_dtype: the result's dtype (rounded once).
        divisor: an array or number to divide the sum by for 'mean' (default: the element count).
    """
    if reduction == "none":
        out = elementwise
    elif reduction == "sum" or divisor is not None:
        out = elementwise.sum()
        out = out / divisor if reduction != "sum" else out
    else:
        out = elementwise.mean()
    return xp_of(elementwise).asarray(out).astype(out_dtype, copy=False)


def expand_grad(grad, reduction, shape, divisor):
    """The gradient of each element of a reduced loss: ``grad`` spread back to ``shape`` (a Tensor op).

    Args:
        grad: the incoming gradient (0-d for 'mean'/'sum').
        reduction: 'none', 'mean' or 'sum'.
        shape: the per-element loss shape.
        divisor: the Tensor or number 'mean' divided by.
    """
    if reduction == "none":
        return grad
    if reduction == "mean":
        grad = grad / divisor
    return broadcast_to(reshape(grad, (1,) * len(shape)), tuple(shape)) if shape else grad


def log_sigmoid(x):
    """``log(sigmoid(x))`` in cupynet ops, stable for large ``|x|`` (differentiable again).

    NOTE: ``log sigmoid(x) = -(max(-x, 0) + log(1 + exp(-|x|)))``; the sign of x is a
    constant (its derivative is zero), so ``|x| = x * sign`` stays differentiable.

    Args:
        x: a floating Tensor.
    """
    negative = Tensor((x.data < 0).astype(x.dtype))
    sign = 1.0 - 2.0 * negative
    return -(-x * negative + log(1.0 + exp(-x * sign)))


def sigmoid(x):
    """``sigmoid(x) = exp(log_sigmoid(x))`` in cupynet ops, stable and differentiable again.

    Args:
        x: a floating Tensor.
    """
    return exp(log_sigmoid(x))


def host_check_range(op, values, low, high, what, ignore=None):
    """Raise when an integer array has a value outside ``[low, high]`` (``ignore`` excepted).

    NOTE: this reads two numbers back to the host (one sync on a GPU); out-of-range
    class indices would otherwise read memory they should not or silently wrap.

    Args:
        op: the op, for the message.
        values: an integer array.
        low: the smallest valid value.
        high: the largest valid value.
        what: a phrase describing valid values, for the message (or a callable making it, called on error).
        ignore: a value that is allowed anyway (ignore_index).
    """
    if values.size == 0:
        return
    xp = xp_of(values)
    if xp is not numpy and not os.environ.get("CUPYNET_CHECK_INDICES"):
        # NOTE: on the GPU the check would cost a host sync in every training step,
        # so (like PyTorch's asynchronous device asserts) it is opt-in there:
        # CUPYNET_CHECK_INDICES=1. On the CPU it is cheap and always on.
        return
    lowest, highest = ((numpy.minimum.reduce(values, axis=None), numpy.maximum.reduce(values, axis=None))
                       if xp is numpy else (values.min(), values.max()))
    if low <= lowest and highest <= high:  # NOTE: two reductions settle the common case
        return
    what = what() if callable(what) else what
    bad = (values < low) | (values > high)
    if ignore is not None:
        bad &= values != ignore
    if bad.any():  # NOTE: on the CPU a plain read; on the GPU only with CUPYNET_CHECK_INDICES=1 (see above)
        value = int(backend.to_numpy(values.reshape(-1)[int(bad.reshape(-1).argmax())]))
        raise IndexError(f"{op}: Target {value} is out of bounds ({what})")


def numel(shape):
    """The number of elements of ``shape``.

    Args:
        shape: a tuple of ints.
    """
    n = 1
    for s in shape:
        n *= s
    return n


def no_legacy(op, size_average, reduce):
    """Raise for PyTorch's deprecated ``size_average`` / ``reduce`` arguments (use ``reduction``).

    Args:
        op: the loss, for the message.
        size_average: must be None.
        reduce: must be None.
    """
    if size_average is not None or reduce is not None:
        raise ValueError(f"{op}: size_average and reduce are deprecated and not supported; use reduction=")


def check_same_device(op, **tensors):
    """Raise when option tensors (weights, masks, indices) live on another device than the first one.

    Args:
        op: the op, for the message.
        **tensors: name -> Tensor or None; the first non-None one sets the device.
    """
    given = [(name, t) for name, t in tensors.items() if isinstance(t, Tensor)]
    for name, t in given[1:]:
        if type(t.data) is not type(given[0][1].data):
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but {given[0][0]} is on "
                               f"{given[0][1].device} and {name} is on {t.device}")

"""What every loss does around its own math: compute in fp32, reduce once, round once; and the gradient back.

NOTE (numerics): every loss computes in fp32 for float16/bfloat16 inputs
(``compute_arrays``) and rounds the reduced result once (``reduce_array``);
backward formulas run in fp32 too (``fp32``) and round each gradient once to
its input's dtype (``back_to``); ``expand_grad`` spreads the gradient of a
reduced loss back over the elements. The losses written as expressions of
cupynet ops reduce with ``reduce_loss``.
"""

from __future__ import annotations

import math

import numpy

from ... import dtypes
from .._util import xp_of
from ..arith import cast
from ..reduce import mean as mean_
from ..reduce import sum as sum_
from ..shape import broadcast_to, reshape


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


def compute_arrays(*tensors):
    """The arrays of ``tensors`` in their common compute dtype (fp32 for half types), and the result dtype.

    Args:
        *tensors: floating Tensors.
    """
    if len(tensors) == 1:  # NOTE: the common case, without the promotion rules
        out_dtype = tensors[0].array.dtype
        work = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
        return [tensors[0].array.astype(work, copy=False)], out_dtype
    out_dtype = dtypes.result_type(*(t.dtype for t in tensors))
    work = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
    return [t.array.astype(work, copy=False) for t in tensors], out_dtype


def numel(shape):
    """The number of elements of ``shape``.

    Args:
        shape: a tuple of ints.
    """
    n = 1
    for s in shape:
        n *= s
    return n


def _quiet_divide(total, divisor):
    """``total / divisor`` where 0 / 0 is nan and x / 0 is inf silently, as PyTorch (no NumPy warning).

    NOTE (speed): ``numpy.errstate`` costs about 1 us a loss, so it is entered only where the
    division could warn: a host divisor that is zero or not finite (CuPy never warns).
    """
    if xp_of(divisor) is not numpy:
        return total / divisor
    value = float(divisor)  # NOTE: a host number (a 0-d array or a Python number); an array compare costs more
    if value != 0 and math.isfinite(value):
        return total / divisor
    with numpy.errstate(invalid="ignore", divide="ignore"):
        return total / divisor


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
        if reduction != "sum":
            out = _quiet_divide(out, divisor)
    elif elementwise.size == 0:
        out = float("nan")  # NOTE: the mean of nothing, without NumPy's "Mean of empty slice" warning
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


def reduce_loss(loss, reduction, empty_mean=math.nan):
    """``loss`` reduced by 'none', 'mean' or 'sum' (cupynet ops, differentiable).

    Args:
        loss: per-sample losses.
        reduction: 'none', 'mean' or 'sum'.
        empty_mean: the mean of no losses (nan; PyTorch's multi-class margin losses give 0).
    """
    if reduction == "none":
        return loss
    if reduction == "sum":
        return sum_(loss)
    # NOTE: 0 * empty_mean: the mean of nothing without NumPy's "Mean of empty slice" warning
    return sum_(loss) * empty_mean if loss.array.size == 0 else mean_(loss)

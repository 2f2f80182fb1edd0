"""Softmax and its family along a dimension: softmax, log_softmax, softmin, gumbel_softmax.

NOTE (numerics): the row max is subtracted before ``exp`` (every exponent <= 0:
no overflow, same result); float16/bfloat16 inputs are computed in float32 and
the ops are ``fp32`` under autocast. ``cross_entropy`` runs ``LogSoftmax.kernel``
in its forward. Integer inputs need a floating ``dtype=`` (cast first, as in
PyTorch).
"""

from __future__ import annotations

import warnings

import numpy

from .. import dtypes
from .. import random as rng
from ..autograd.function import Function
from ..checks import check_finite, require_floating, require_tensor
from ..tensor import Tensor
from . import _rows
from ._util import compute_in_fp32, normalize_dim, xp_of
from .activation import _check
from .reduce import sum as reduce_sum
from .unary import exp

__all__ = ["softmax", "log_softmax", "softmin", "gumbel_softmax"]


def implicit_dim(op_name, ndim, stacklevel=3) -> int:
    """PyTorch's legacy dimension for softmax-like ops called without ``dim``, with its deprecation warning.

    NOTE: the rule of PyTorch 0.3: dim 0 for 0-, 1- and 3-D inputs (a vector, or one unbatched
    sequence of (seq, batch, features)), dim 1 otherwise (the classes of a (batch, classes) input).

    Args:
        op_name: the op, for the warning.
        ndim: the input's number of dimensions.
        stacklevel: the frame the warning names (the caller's caller by default).
    """
    warnings.warn(f"Implicit dimension choice for {op_name} has been deprecated. Change the call to include "
                  "dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_args(op_name, input, dim, dtype):  # noqa: A002
    require_tensor(op_name, input)
    if dim is None:
        dim = implicit_dim(op_name, input.ndim, stacklevel=4)
    axis = normalize_dim(op_name, dim, input.ndim)
    if dtype is not None:
        target = dtypes.as_dtype(dtype)
        if not dtypes.is_floating(target):
            raise TypeError(f"{op_name}: dtype must be a floating dtype, got {target}")
        input = input.to(target)  # NOTE: cast first, as PyTorch: an integer input with a float dtype is fine
    require_floating(op_name, input)
    return input, axis


def _max_along(x, axis):
    """``x.max(axis, keepdims=True)``; along the last axis through ``_rows`` (same values, faster on NumPy)."""
    return _rows.row_max(x) if axis is not None and axis % x.ndim == x.ndim - 1 else x.max(axis=axis, keepdims=True)


def _sum_along(x, axis):
    """``x.sum(axis, keepdims=True)``; along the last axis through ``_rows`` (BLAS's summation order on NumPy)."""
    return _rows.row_sum(x) if axis is not None and axis % x.ndim == x.ndim - 1 else x.sum(axis=axis, keepdims=True)


class Softmax(Function):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim``; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "softmax", "fp32", True

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.axis = dim if a.ndim else None
        if a.array.size == 0:
            return a.array.copy()  # NOTE: an empty tensor has no row max to take
        x = compute_in_fp32(a.array)
        # NOTE: subtracting the row max makes every exponent <= 0: no overflow, same result
        e = xp_of(a).exp(x - _max_along(x, ctx.axis))
        return (e / _sum_along(e, ctx.axis)).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        gy = grad * y
        return gy - y * reduce_sum(gy, dim=ctx.axis, keepdim=True)


def softmax(input, dim=None, dtype=None, *, _stacklevel=3):  # noqa: A002
    """``exp(input) / sum(exp(input))`` along ``dim``, computed stably (the row max is subtracted first).

    Under autocast the result is float32 (fp32 policy). Half inputs are computed in float32.

    Args:
        input: a floating Tensor (any Tensor when ``dtype`` is given: it is cast first, as in PyTorch).
        dim: the dimension the values sum to 1 along (None: PyTorch's legacy choice, with a warning).
        dtype: cast the input to this dtype first (the result has it).
        _stacklevel: accepted for PyTorch compatibility.
    """
    input, axis = _softmax_args("softmax", input, dim, dtype)
    return Softmax.apply(input, dim=axis)


class LogSoftmax(Function):
    """``x - max - log(sum(exp(x - max)))`` along ``dim``; fp32 under autocast."""

    op_name, amp_policy, save_outputs = "log_softmax", "fp32", True

    @staticmethod
    def kernel(xp, x, axis):
        """The forward's array math (cross_entropy's forward runs it too).

        Args:
            xp: numpy or cupy.
            x: the input array in its compute dtype.
            axis: the axis to normalise along (None: all of a 0-d array).
        """
        shifted = x - _max_along(x, axis)
        return shifted - xp.log(_sum_along(xp.exp(shifted), axis))

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.axis = dim if a.ndim else None
        if a.array.size == 0:
            return a.array.copy()  # NOTE: an empty tensor has no row max to take
        return LogSoftmax.kernel(xp_of(a), compute_in_fp32(a.array), ctx.axis).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output(0)
        return grad - exp(y) * reduce_sum(grad, dim=ctx.axis, keepdim=True)


def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):  # noqa: A002
    """``input - logsumexp(input)`` along ``dim``, computed stably; fp32 under autocast.

    Args:
        input: a floating Tensor (any Tensor when ``dtype`` is given: it is cast first, as in PyTorch).
        dim: the dimension to normalise along (None: PyTorch's legacy choice, with a warning).
        dtype: cast the input to this dtype first (the result has it).
        _stacklevel: accepted for PyTorch compatibility.
    """
    input, axis = _softmax_args("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(input, dim=axis)


def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002 - PyTorch's argument names
    """``softmax(-input)`` along ``dim``.

    Args:
        input: a floating Tensor (any Tensor when ``dtype`` is given).
        dim: the dimension the values sum to 1 along (None: PyTorch's legacy choice, with a warning).
        _stacklevel: accepted for PyTorch compatibility.
        dtype: cast the input to this dtype first.
    """
    require_tensor("softmin", input)
    if dim is None:
        dim = implicit_dim("softmin", input.ndim)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    return softmax(-input, dim)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1, generator=None):
    """Sample from the Gumbel-softmax distribution; ``hard=True`` returns one-hot samples, soft gradients.

    ``y = softmax((logits + g) / tau)`` with ``g = -log(E)``, ``E ~ Exponential(1)`` drawn from the
    device's generator (samples differ from PyTorch's: another stream). With ``hard`` the result is
    the one-hot of ``argmax(y)`` whose gradient is that of ``y`` (straight-through).

    Args:
        logits: a floating Tensor of unnormalised log-probabilities.
        tau: the temperature (> 0).
        hard: return one-hot samples.
        eps: deprecated by PyTorch, no effect (a warning when changed).
        dim: the class dimension.
        generator: a ``cupynet.Generator`` to draw from (cupynet's addition).
    """
    _check("gumbel_softmax", logits, "logits")
    check_finite("gumbel_softmax", "tau", tau)
    if tau <= 0:
        raise ValueError(f"gumbel_softmax: tau must be > 0, got {tau}")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    axis = normalize_dim("gumbel_softmax", dim, logits.ndim)
    gen = rng.resolve_generator(generator, logits.device, "gumbel_softmax")
    xp, wide = xp_of(logits), "float64" if logits.dtype == numpy.float64 else "float32"
    gumbels = Tensor((-xp.log(gen.standard_exponential(tuple(logits.shape), dtype=wide))).astype(logits.dtype))
    soft = softmax((logits + gumbels) / tau, axis)
    if not hard:
        return soft
    if logits.ndim == 0:
        hot = xp.ones_like(soft.array)
    else:
        winner = xp.expand_dims(soft.array.argmax(axis=axis), axis)  # NOTE: the first of tied maxima
        classes = xp.arange(logits.shape[axis]).reshape([-1 if d == axis else 1 for d in range(logits.ndim)])
        hot = (classes == winner).astype(soft.dtype)
    return Tensor(hot) - soft.detach() + soft


METHODS = {"softmax": softmax, "log_softmax": log_softmax}

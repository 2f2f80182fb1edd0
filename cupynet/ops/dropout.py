"""Dropout: zero each element (or each channel) with probability ``p`` and scale the survivors by ``1/(1-p)``.

The mask comes from the input device's generator (``cupynet.random.generator_for``),
so ``cupynet.manual_seed`` makes it reproducible on each device. The scaled
mask is kept for backward, where the gradient is ``grad * mask / (1 - p)``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy

from .. import dtypes
from .. import random as rng
from ..autograd.function import Function
from ..checks import check_bool, require_floating, require_tensor
from ..tensor import Tensor
from ._util import compute_in_fp32, xp_of
from .activation import _maybe_inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d"]


def _scaled_mask(a, p, mask_shape):
    """``bernoulli(1 - p) / (1 - p)`` in ``a``'s compute dtype (float32 for half inputs), shape ``mask_shape``."""
    xp = xp_of(a)
    compute_dtype = dtypes.float64 if a.dtype == dtypes.float64 else dtypes.float32
    if p == 1.0:
        return xp.zeros(mask_shape, dtype=compute_dtype)
    # NOTE: torch's CPU dropout is bernoulli_(1 - p) (one 53-bit uniform per element) then div_(1 - p)
    keep = rng.bernoulli_mask(rng.generator_for(a.device), mask_shape, 1.0 - p)
    # NOTE: as torch's noise.div_(1 - p): the scale 1/(1-p) is computed in fp32 (fp64 for fp64 inputs) and
    # rounded to the input's dtype (a half noise tensor), then the product is rounded once
    scalar = numpy.dtype(compute_dtype).type
    scale = scalar(numpy.asarray(scalar(1.0) / scalar(1.0 - p)).astype(a.dtype))
    return keep.astype(compute_dtype) * scale


def _check_args(op_name, input, p, training, inplace):  # noqa: A002
    require_tensor(op_name, input)
    require_floating(op_name, input)
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{op_name}: p must be a number in [0, 1], got {p!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op_name}: dropout probability has to be between 0 and 1, but got p={p}")
    for label, flag in (("training", training), ("inplace", inplace)):
        check_bool(op_name, label, flag)


class Dropout(Function):
    """``x * mask / (1 - p)`` with a fresh Bernoulli(1 - p) mask, broadcast from ``mask_shape``."""

    op_name = "dropout"

    @staticmethod
    def forward(ctx, a, p=0.5, mask_shape=None):
        scale = _scaled_mask(a, p, a.shape if mask_shape is None else mask_shape)
        ctx.scale = Tensor(scale)
        return (compute_in_fp32(a.array) * scale).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002 - PyTorch's argument names
    """Randomly zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)`` (only when training).

    ``training=False`` returns ``input`` itself; ``p=1`` gives zeros.

    Args:
        input: a floating Tensor.
        p: probability of an element being zeroed, in [0, 1].
        training: apply dropout (True) or return the input unchanged (False).
        inplace: write into ``input`` when autograd is not recording it (as activations do).
    """
    _check_args("dropout", input, p, training, inplace)
    if not training:
        return input
    return _maybe_inplace(input, inplace, lambda: Dropout.apply(input, p=float(p)))


def _legacy_dropout2d(input, p, training, inplace):  # noqa: A002
    """PyTorch's deprecated dropout2d of a 2-D or 5-D (or other) input: a warning, then one draw per (N, C)."""
    if input.ndim < 2:
        raise RuntimeError("dropout2d: Feature dropout requires at least 2 dimensions in the input")
    warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result in "
                  "an error in a future release. To retain the behavior and silence this warning, please use "
                  "dropout instead.", UserWarning, stacklevel=4)
    if not training:
        return input
    mask_shape = input.shape[:2] + (1,) * (input.ndim - 2)  # NOTE: a 2-D (N, C) input drops single elements
    return _maybe_inplace(input, inplace, lambda: Dropout.apply(input, p=float(p), mask_shape=mask_shape))


def _channel_dropout(nd, input, p, training, inplace):  # noqa: A002
    op_name = f"dropout{nd}d"
    _check_args(op_name, input, p, training, inplace)
    if nd == 2 and input.ndim not in (3, 4):
        return _legacy_dropout2d(input, p, training, inplace)
    if input.ndim not in (nd + 1, nd + 2):
        spatial = ("L", "H, W", "D, H, W")[nd - 1]
        raise ValueError(f"{op_name}: expected a {nd + 1}-D (C, {spatial}) or {nd + 2}-D (N, C, {spatial}) input, "
                         f"got shape {tuple(input.shape)}")
    if not training:
        return input
    mask_shape = input.shape[:-nd] + (1,) * nd  # NOTE: one draw per (sample, channel), broadcast over space
    return _maybe_inplace(input, inplace, lambda: Dropout.apply(input, p=float(p), mask_shape=mask_shape))


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of (N, C, L) or (C, L): each ``input[n, c]`` is dropped with probability ``p``.

    Args:
        input: a floating Tensor.
        p: probability of a channel being zeroed, in [0, 1].
        training: apply dropout (True) or return the input unchanged (False).
        inplace: write into ``input`` when autograd is not recording it.
    """
    return _channel_dropout(1, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels: each ``input[n, c]`` (or ``input[c]`` without batch) is dropped with probability ``p``.

    Args:
        input, p, training, inplace: as in ``dropout1d``, for (N, C, H, W) or (C, H, W) inputs.
    """
    return _channel_dropout(2, input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``.

    Args:
        input, p, training, inplace: as in ``dropout1d``.
    """
    return _channel_dropout(3, input, p, training, inplace)

METHODS = {}

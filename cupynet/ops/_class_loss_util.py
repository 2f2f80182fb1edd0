"""Helpers of the class-index losses (cross_entropy, nll_loss): class layout, softmax on arrays, index terms, checks.

Kept apart from ``loss.py`` so that file holds the ops themselves.
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..tensor import Tensor
from ._loss_util import check_reduction, check_tensor, host_check_range
from ._util import xp_of
from .reduce import sum as sum_
from .unary import exp, log


def _class_dim(x):
    return 1 if x.ndim > 1 else 0


def _class_shape(ndim, cdim, n_classes):
    return tuple(n_classes if i == cdim else 1 for i in range(ndim))


def _log_softmax_array(xf, axis):
    """Stable log-softmax on an array: ``x - max - log(sum(exp(x - max)))``."""
    xp = xp_of(xf)
    shifted = xf - xf.max(axis=axis, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


def _log_softmax_ops(x, dim):
    """Log-softmax in cupynet ops; the max is a constant (it cancels), so the result is differentiable."""
    shifted = x - Tensor(x.data.max(axis=dim, keepdims=True))
    return shifted - log(sum_(exp(shifted), dim=dim, keepdim=True))


def _class_weight(weight, xf, cdim):
    """The per-class weight as an array broadcasting along the class dim (1.0 when there is none)."""
    if weight is None:
        return 1.0
    return weight.data.astype(xf.dtype).reshape(_class_shape(xf.ndim, cdim, xf.shape[cdim]))


def _index_terms(xf, target, weight, ignore_index, smoothing):
    """Per-element weight ``w[t]`` (0 where ignored), the picked log-prob index, and the dense target ``q``.

    NOTE: ``q[c] = (1 - s) * w[t] * [c == t] + s / C * w[c]`` (zero for ignored
    elements) is the distribution the loss pulls the softmax towards.
    """
    xp, cdim, n_classes = xp_of(xf), _class_dim(xf), xf.shape[_class_dim(xf)]
    class_shape = _class_shape(xf.ndim, cdim, n_classes)
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    w_class = weight.data.astype(xf.dtype) if weight is not None else xp.ones(n_classes, dtype=xf.dtype)
    w_t = w_class[safe] * valid
    onehot = xp.expand_dims(safe, cdim) == xp.arange(n_classes).reshape(class_shape)
    q = onehot * xp.expand_dims(w_t * (1.0 - smoothing), cdim)
    if smoothing:
        q = q + w_class.reshape(class_shape) * xp.expand_dims(valid * (smoothing / n_classes), cdim)
    return xp.expand_dims(safe, cdim), w_t, valid, q.astype(xf.dtype, copy=False)


# NOTE (speed): up to this many classes, NumPy runs the softmax on a class-major copy (C, N).
# A reduction along a short contiguous row (axis=1 of (N, 10)) costs NumPy one inner-loop call
# per row; along axis 0 it is one vectorised pass per class: 3-4x faster for (512, 10).
_CLASS_MAJOR_MAX = 64


def _row_softmax(xf, xp):
    """``(x - rowmax, softmax, log(sum(exp(x - rowmax))))`` of an (N, C) array, as (N, C) arrays (or views) and (N,).

    Args:
        xf: (N, C) logits in the compute dtype.
        xp: the array module.
    """
    if xp is numpy and xf.shape[1] <= _CLASS_MAJOR_MAX:
        xt = numpy.ascontiguousarray(xf.T)
        # NOTE: the ufuncs' own reduce: ndarray.max/sum go through a Python wrapper first
        shifted = xt - numpy.maximum.reduce(xt, axis=0)
        e = numpy.exp(shifted)
        total = numpy.add.reduce(e, axis=0)
        return shifted.T, (e / total).T, numpy.log(total)
    shifted = xf - xf.max(axis=1, keepdims=True)
    e = xp.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    return shifted, e / total, xp.log(total[:, 0])


def _check_class_input(op, input, target, weight, ignore_index, reduction, allow_probabilities):  # noqa: A002
    check_tensor(op, "input", input)
    check_tensor(op, "target", target, floating=False)
    check_reduction(op, reduction)
    if input.ndim == 0:
        raise ValueError(f"{op}: expected input of shape (C,), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    cdim = _class_dim(input)
    n_classes = input.shape[cdim]
    if weight is not None:
        check_tensor(op, "weight", weight)
        if tuple(weight.shape) != (n_classes,):
            raise ValueError(f"{op}: weight must have shape ({n_classes},) for {n_classes} classes, "
                             f"got {tuple(weight.shape)}")
    if allow_probabilities and dtypes.is_floating(target.dtype):
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(f"{op}: class-probability target shape {tuple(target.shape)} does not match input "
                             f"shape {tuple(input.shape)}")
        if ignore_index >= 0:
            raise ValueError(f"{op}: ignore_index is not supported for floating point target, got "
                             f"ignore_index={ignore_index}")
        return
    if target.dtype.kind not in "iu":
        expected = "integer class indices" + (" or floating class probabilities" if allow_probabilities else "")
        raise TypeError(f"{op}: expected target of {expected}, got dtype {target.dtype}")
    expected = tuple(input.shape[:cdim]) + tuple(input.shape[cdim + 1:])
    if tuple(target.shape) != expected:
        raise ValueError(f"{op}: expected target of shape {expected} for input of shape {tuple(input.shape)}, "
                         f"got target of shape {tuple(target.shape)}")
    host_check_range(op, target.data, 0, n_classes - 1,
                     lambda: f"expected class indices in [0, {n_classes - 1}] for {n_classes} classes, or "
                             f"ignore_index={ignore_index}", ignore=ignore_index)

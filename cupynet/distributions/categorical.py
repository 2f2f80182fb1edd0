"""``Categorical(probs | logits)``: one of ``K`` categories, ``K`` the last dimension of the parameter."""

from __future__ import annotations

import numpy

from .. import dtypes
from ..backend import get_array_module
from ..checks import require_tensor
from ..ops import argmax, broadcast_to, clamp, gather, log, logsumexp, softmax
from ..random import cpu_generator, generator_for
from ..tensor import Tensor
from . import constraints
from .distribution import ProbsOrLogits, finfo

__all__ = ["Categorical"]


def _as_param(name, value):
    require_tensor("Categorical", value, f"`{name}`")
    if value.ndim < 1:
        raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
    if not dtypes.is_floating(value.dtype):
        raise TypeError(f"Categorical: `{name}` must be a floating Tensor, got dtype {value.dtype}")
    return value


class Categorical(ProbsOrLogits):
    """A distribution over ``0 .. K-1``; the last dimension of ``probs``/``logits`` indexes the categories.

    ``probs`` are normalised to sum to 1 (nonnegative); ``logits`` are normalised
    by subtracting their logsumexp. Give exactly one.

    Args:
        probs: nonnegative weights, shape ``batch_shape + (K,)``.
        logits: unnormalised log-probabilities, shape ``batch_shape + (K,)``.
        validate_args: check the given parameter (probs on the simplex after normalising) and log_prob's values.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.check_one_of(probs, logits)
        if probs is not None:
            probs = _as_param("probs", probs)
            self._probs = probs / probs.sum(-1, keepdim=True)
        else:
            logits = _as_param("logits", logits)
            self._logits = logits - logsumexp(logits, -1, keepdim=True)
        param = self._probs if self._probs is not None else self._logits
        self._num_events = param.shape[-1]
        super().__init__(batch_shape=tuple(param.shape[:-1]), validate_args=validate_args)

    @staticmethod
    def _probs_from_logits(logits):
        return softmax(logits, -1)

    @staticmethod
    def _logits_from_probs(probs):
        eps = float(finfo(probs.dtype).eps)
        return log(clamp(probs, eps, 1 - eps))

    @property
    def support(self):
        """The integers ``0 .. K-1``."""
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        """The shape of probs/logits: ``batch_shape + (K,)``."""
        return self._batch_shape + (self._num_events,)

    @property
    def mean(self):
        """NaN (categories are labels, not numbers), as torch gives."""
        return self._nan()

    @property
    def variance(self):
        """NaN, as torch gives."""
        return self._nan()

    @property
    def mode(self):
        """The most probable category."""
        return argmax(self.probs, -1)

    def _nan(self):
        param = self.probs
        xp = get_array_module(param.array)
        return Tensor(xp.full(self._batch_shape, numpy.nan, dtype=param.dtype))

    def sample(self, sample_shape=()):
        """Draw category indices (int64) of shape ``sample_shape + batch_shape`` by inverting the CDF.

        Args:
            sample_shape: the leading shape of the sample.
        """
        shape = self._extended_shape(sample_shape)
        probs = self.probs.array
        xp = get_array_module(probs)
        draws = int(numpy.prod(shape[:len(shape) - len(self._batch_shape)], dtype=numpy.int64))
        if self.probs.device.type == "cpu" and draws:
            # NOTE: the CPU stream samples as torch: multinomial(probs_2d, draws, replacement=True).T
            rows = probs.reshape(-1, self._num_events)
            return Tensor(cpu_generator().multinomial(rows, draws, True).T.reshape(shape))
        # NOTE: the CDF is accumulated in float64 and divided by its last entry, so it ends at exactly 1
        # and u < 1 never passes it; zero-probability categories have cdf[k] == cdf[k-1] and are never chosen.
        cdf = xp.cumsum(probs.astype(numpy.float64), axis=-1)
        cdf /= cdf[..., -1:]
        device = self.probs.device
        if device.type == "cuda":
            with device.xp.cuda.Device(device.index):
                u = generator_for(device).random(shape, dtype=numpy.float64)
        else:
            u = generator_for(device).random(shape, dtype=numpy.float64)
        return Tensor((cdf <= u[..., None]).sum(axis=-1).astype(numpy.int64))

    def log_prob(self, value):
        """``logits[value]`` (normalised), broadcast over the batch.

        Args:
            value: category indices, a Tensor broadcastable with batch_shape.
        """
        self._validate_sample(value)
        xp = get_array_module(value.array)
        shape = numpy.broadcast_shapes(tuple(value.shape), self._batch_shape)
        index = Tensor(xp.broadcast_to(value.array.astype(numpy.int64), shape)[..., None])
        logits = broadcast_to(self.logits, shape + (self._num_events,))
        return gather(logits, -1, index).squeeze(-1)

    def entropy(self):
        """``-sum(p log p)`` over the categories (0 log 0 taken as 0).

        Args:
            (none)
        """
        # NOTE: logits of zero-probability categories are -inf (from logits) or log(eps) (from probs);
        # clamping to the dtype's lowest finite value makes p * logit exactly 0 there instead of NaN.
        logits = clamp(self.logits, min=float(finfo(self.logits.dtype).min))
        return -(logits * self.probs).sum(-1)

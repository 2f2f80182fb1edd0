"""``Bernoulli(probs | logits)``: 1 with probability ``probs``, else 0."""

from __future__ import annotations

from ..ops import binary_cross_entropy_with_logits, clamp, log, log1p, sigmoid
from . import constraints
from .distribution import ProbsOrLogits, broadcast_all, finfo

__all__ = ["Bernoulli"]


class Bernoulli(ProbsOrLogits):
    """Coin flips: 1 with probability ``probs`` (or ``sigmoid(logits)``), 0 otherwise; samples in probs' dtype.

    Args:
        probs: the probability of 1, in [0, 1] (Tensor or number).
        logits: the log-odds of 1 (Tensor or number).
        validate_args: check the given parameter and that log_prob's values are 0 or 1.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.check_one_of(probs, logits)
        if probs is not None:
            (self._probs,) = broadcast_all(probs)
        else:
            (self._logits,) = broadcast_all(logits)
        param = self._probs if self._probs is not None else self._logits
        super().__init__(batch_shape=tuple(param.shape), validate_args=validate_args)

    @staticmethod
    def _probs_from_logits(logits):
        return sigmoid(logits)

    @staticmethod
    def _logits_from_probs(probs):
        eps = float(finfo(probs.dtype).eps)
        p = clamp(probs, eps, 1 - eps)
        return log(p) - log1p(-p)

    @property
    def mean(self):
        """``probs``."""
        return self.probs

    @property
    def variance(self):
        """``probs (1 - probs)``."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """Draw 0/1 values (in probs' dtype) of shape ``sample_shape + batch_shape``: ``u < probs``.

        Args:
            sample_shape: the leading shape of the sample.
        """
        probs = self.probs.detach()
        u = self._standard_draw(self._extended_shape(sample_shape), probs, lambda g, s, d: g.random(s, dtype=d))
        return (u < probs).to(probs.dtype)

    def log_prob(self, value):
        """``value log p + (1 - value) log(1 - p)``, computed stably from the logits.

        Args:
            value: 0/1 values, a Tensor broadcastable with batch_shape.
        """
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value.to(logits.dtype), reduction="none")

    def entropy(self):
        """``-(p log p + (1 - p) log(1 - p))``.

        Args:
            (none)
        """
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

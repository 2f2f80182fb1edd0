"""``Uniform(low, high)``: constant density on ``[low, high)``, reparametrized as ``low + (high - low) * u``."""

from __future__ import annotations

import math

from ..ops import clamp, log, where
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Uniform"]


def _bound(t):
    """A bound for a constraint: a number when ``t`` has one element (so it prints as torch prints it)."""
    return t.item() if t.numel() == 1 else t.array


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``, batched over the broadcast shape of ``low`` and ``high``.

    Args:
        low: the lower bound, included (Tensor or number).
        high: the upper bound, excluded; must be > low (Tensor or number).
        validate_args: check low < high, and that log_prob's values are real.
    """

    arg_constraints = {"low": constraints.real, "high": constraints.real}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(batch_shape=tuple(self.low.shape), validate_args=validate_args)
        if self._validate_args:
            self._check_param("low", constraints.less_than(_bound(self.high)))

    @property
    def support(self):
        """``[low, high]`` (closed, as torch checks values; log_prob is -inf at ``high`` itself)."""
        return constraints.interval(_bound(self.low), _bound(self.high))

    @property
    def mean(self):
        """``(low + high) / 2``."""
        return (self.low + self.high) / 2

    @property
    def mode(self):
        """NaN: every point of the support is a mode."""
        return self.low * float("nan")

    @property
    def stddev(self):
        """``(high - low) / sqrt(12)``."""
        return (self.high - self.low) / math.sqrt(12)

    @property
    def variance(self):
        """``(high - low)^2 / 12``."""
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        """``low + (high - low) * u``, ``u ~ U[0, 1)``: gradients reach low and high.

        Args:
            sample_shape: the leading shape of the sample.
        """
        shape = self._extended_shape(sample_shape)
        u = self._standard_draw(shape, self.low, lambda g, s, d: g.random(s, dtype=d))
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        """``-log(high - low)`` inside ``[low, high)``, ``-inf`` outside.

        Args:
            value: a real Tensor broadcastable with batch_shape.
        """
        self._validate_sample(value)
        inside = (self.low <= value) & (value < self.high)
        return where(inside, -log(self.high - self.low), float("-inf"))

    def cdf(self, value):
        """``(value - low) / (high - low)`` clamped to [0, 1].

        Args:
            value: a real Tensor broadcastable with batch_shape.
        """
        self._validate_sample(value)
        return clamp((value - self.low) / (self.high - self.low), 0, 1)

    def icdf(self, value):
        """``low + value * (high - low)``.

        Args:
            value: probabilities in [0, 1].
        """
        return self.low + value * (self.high - self.low)

    def entropy(self):
        """``log(high - low)``.

        Args:
            (none)
        """
        return log(self.high - self.low)

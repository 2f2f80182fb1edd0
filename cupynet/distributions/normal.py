"""``Normal(loc, scale)``: the Gaussian, reparametrized as ``loc + scale * eps`` with ``eps ~ N(0, 1)``."""

from __future__ import annotations

import math

from ..ops import erf, erfinv, log
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Normal"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(Distribution):
    """The normal distribution N(loc, scale^2), batched over the broadcast shape of ``loc`` and ``scale``.

    Args:
        loc: the mean (Tensor or number).
        scale: the standard deviation, > 0 (Tensor or number).
        validate_args: check that scale > 0 and that log_prob's values are real.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape=tuple(self.loc.shape), validate_args=validate_args)

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def stddev(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale ** 2``."""
        return self.scale ** 2

    def rsample(self, sample_shape=()):
        """``loc + scale * eps``, ``eps ~ N(0, 1)`` from the device's generator: gradients reach loc and scale.

        Args:
            sample_shape: the leading shape of the sample.
        """
        shape = self._extended_shape(sample_shape)
        eps = self._standard_draw(shape, self.loc, lambda g, s, d: g.standard_normal(s, dtype=d))
        return self.loc + eps * self.scale

    def log_prob(self, value):
        """``-(value - loc)^2 / (2 scale^2) - log(scale) - log(2 pi) / 2``.

        Args:
            value: a real Tensor broadcastable with batch_shape.
        """
        self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - log(self.scale) - _HALF_LOG_2PI

    def cdf(self, value):
        """``(1 + erf((value - loc) / (scale sqrt(2)))) / 2``.

        Args:
            value: a real Tensor broadcastable with batch_shape.
        """
        self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        """The quantile: ``loc + scale sqrt(2) erfinv(2 value - 1)``.

        Args:
            value: probabilities in [0, 1].
        """
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        """``1/2 + log(2 pi)/2 + log(scale)``.

        Args:
            (none)
        """
        return 0.5 + _HALF_LOG_2PI + log(self.scale)

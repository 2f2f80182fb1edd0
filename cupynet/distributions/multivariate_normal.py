"""``MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)``: the Gaussian over vectors.

Everything is computed from the lower Cholesky factor ``L`` of the covariance
(``Sigma = L L^T``), held unbroadcast: ``rsample`` is ``loc + L eps`` (gradients reach
``loc`` and the matrix given), ``log_prob`` solves ``L z = value - loc`` instead of
inverting ``Sigma``, and ``log det Sigma`` is ``2 sum log diag L``.
"""

from __future__ import annotations

import math

import numpy

from .. import dtypes
from ..backend import get_array_module
from ..ops import broadcast_to, diagonal, log, matmul, squeeze, unsqueeze
from ..ops.decomposition import inv, linalg_cholesky, solve_triangular
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution

__all__ = ["MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)
_MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")


def _mT(t):  # noqa: N802 - the matrix transpose, torch's name
    return t.transpose(-2, -1)


class MultivariateNormal(Distribution):
    """The multivariate normal N(loc, Sigma), batched; give exactly one of the three matrix spellings.

    Args:
        loc: the mean, (..., k).
        covariance_matrix: Sigma, (..., k, k), symmetric positive-definite.
        precision_matrix: Sigma^-1, (..., k, k), symmetric positive-definite.
        scale_tril: L with Sigma = L L^T, (..., k, k), lower triangular with a positive diagonal.
        validate_args: check the parameters (and log_prob's values) as torch does.
    """

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = {n: m for n, m in zip(_MATRICES, (covariance_matrix, precision_matrix, scale_tril)) if m is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (self._given, matrix), = given.items()
        if not isinstance(loc, Tensor) or loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if not isinstance(matrix, Tensor) or matrix.ndim < 2:
            spelled = "scale_tril matrix" if self._given == "scale_tril" else self._given  # NOTE: torch's texts
            raise ValueError(f"{spelled} must be at least two-dimensional, with optional leading batch dimensions")
        k = loc.shape[-1]
        if matrix.shape[-2:] != (k, k):
            raise ValueError(f"{self._given}: expected a (..., {k}, {k}) matrix for loc of shape {tuple(loc.shape)}, "
                             f"got {tuple(matrix.shape)}")
        if not dtypes.is_floating(loc.dtype) or loc.dtype != matrix.dtype:
            raise ValueError(f"MultivariateNormal: loc ({loc.dtype}) and {self._given} ({matrix.dtype}) must have "
                             "one floating dtype")
        try:
            batch = tuple(numpy.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        except ValueError:
            raise ValueError(f"MultivariateNormal: the batch shapes of loc {tuple(loc.shape)} and {self._given} "
                             f"{tuple(matrix.shape)} do not broadcast") from None
        self.loc = broadcast_to(loc, batch + (k,))
        setattr(self, "_" + self._given, matrix)
        super().__init__(batch_shape=batch, event_shape=(k,), validate_args=validate_args)
        self._unbroadcasted_scale_tril = self._scale_tril_of(matrix)

    def _scale_tril_of(self, matrix):
        if self._given == "scale_tril":
            return matrix
        if self._given == "covariance_matrix":
            return linalg_cholesky(matrix)
        # NOTE: Sigma = P^-1; one explicit inverse of the (usually small) precision matrix, then its Cholesky
        return linalg_cholesky(inv(matrix))

    def _given_params(self):
        return ("loc", self._given)

    def _matrix(self, name, compute):
        """The parameter ``name`` as given, or computed from L, broadcast to batch_shape + (k, k)."""
        value = getattr(self, "_" + name, None)
        value = compute() if value is None else value
        return broadcast_to(value, self._batch_shape + self._event_shape * 2)

    @property
    def scale_tril(self):
        """L, lower triangular with Sigma = L L^T."""
        return self._matrix("scale_tril", lambda: self._unbroadcasted_scale_tril)

    @property
    def covariance_matrix(self):
        """Sigma = L L^T."""
        return self._matrix("covariance_matrix", lambda: matmul(self._unbroadcasted_scale_tril,
                                                                 _mT(self._unbroadcasted_scale_tril)))

    @property
    def precision_matrix(self):
        """Sigma^-1 = L^-T L^-1."""
        def compute():
            l_inv = _l_inv(self._unbroadcasted_scale_tril)
            return matmul(_mT(l_inv), l_inv)
        return self._matrix("precision_matrix", compute)

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """The diagonal of Sigma: the row sums of L squared."""
        return broadcast_to((self._unbroadcasted_scale_tril ** 2).sum(-1), self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        """``loc + L eps``, ``eps ~ N(0, I)`` from the device's generator: gradients reach loc and the matrix.

        Args:
            sample_shape: the leading shape of the sample.
        """
        shape = self._extended_shape(sample_shape)
        eps = self._standard_draw(shape, self.loc, lambda g, s, d: g.standard_normal(s, dtype=d))
        return self.loc + squeeze(matmul(self._unbroadcasted_scale_tril, unsqueeze(eps, -1)), -1)

    def _half_log_det(self):
        """``log det L = (1/2) log det Sigma``."""
        return log(diagonal(self._unbroadcasted_scale_tril, 0, -2, -1)).sum(-1)

    def log_prob(self, value):
        """``-(k log 2 pi + |L^-1 (value - loc)|^2) / 2 - log det L``.

        Args:
            value: a real Tensor (..., k) broadcastable with batch_shape + event_shape.
        """
        self._validate_sample(value)
        diff = value - self.loc
        maha = _mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * _LOG_2PI + maha) - self._half_log_det()

    def entropy(self):
        """``k (1 + log 2 pi) / 2 + log det L``, one value per batch entry.

        Args:
            (none)
        """
        h = 0.5 * self._event_shape[0] * (1.0 + _LOG_2PI) + self._half_log_det()
        return broadcast_to(h, self._batch_shape)


def _l_inv(lower):
    """L^-1 by a triangular solve against I."""
    eye = Tensor(get_array_module(lower.array).eye(lower.shape[-1], dtype=lower.dtype))
    return solve_triangular(lower, broadcast_to(eye, lower.shape), upper=False)


def _mahalanobis(lower, diff):
    """``|L^-1 diff|^2`` over the last dimension, broadcasting L's batch against diff's."""
    z = solve_triangular(lower, unsqueeze(diff, -1), upper=False)
    return (squeeze(z, -1) ** 2).sum(-1)

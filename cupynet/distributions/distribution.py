"""``Distribution``: the base of every distribution (``torch.distributions.Distribution``).

A distribution holds parameters as Tensors (gradients flow back to them through
``rsample``, ``log_prob``, ``entropy``), a ``batch_shape`` (independent, possibly
different distributions side by side) and an ``event_shape`` (the shape of one draw).
A sample of ``sample_shape`` has shape ``sample_shape + batch_shape + event_shape``.
With ``validate_args`` (on by default, as in torch) bad parameters fail at
construction and values outside the support fail in ``log_prob``, with torch's text.
"""

from __future__ import annotations

import numbers

import ml_dtypes
import numpy

from .. import dtypes
from ..autograd import no_grad
from ..creation import as_tensor
from ..ops import broadcast_to
from ..random import generator_for
from ..tensor import Tensor

__all__ = ["Distribution", "ProbsOrLogits", "broadcast_all", "finfo"]


def broadcast_all(*values):
    """Tensors of one broadcast shape from Tensors and numbers (numbers take the tensors' dtype and device).

    Args:
        *values: Tensors or real numbers.
    """
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, Tensor) and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise ValueError(f"Input arguments must all be instances of numbers.Number or Tensor, got "
                             f"{type(v).__name__}")
    like = tensors[0] if tensors else None
    dtype = like.dtype if like is not None and dtypes.is_floating(like.dtype) else dtypes.get_default_dtype()
    device = like.device if like is not None else None
    as_tensors = [v if isinstance(v, Tensor) else as_tensor(float(v), dtype=dtype, device=device) for v in values]
    shape = numpy.broadcast_shapes(*(tuple(t.shape) for t in as_tensors))
    return tuple(t if tuple(t.shape) == shape else broadcast_to(t, shape) for t in as_tensors)


def _check_sample_shape(sample_shape):
    if isinstance(sample_shape, (int, numpy.integer)) and not isinstance(sample_shape, bool):
        sample_shape = (sample_shape,)
    if not isinstance(sample_shape, (tuple, list)) or not all(
            isinstance(s, (int, numpy.integer)) and not isinstance(s, bool) and s >= 0 for s in sample_shape):
        raise TypeError(f"sample_shape must be a tuple of non-negative ints (a torch.Size), got {sample_shape!r}")
    return tuple(int(s) for s in sample_shape)


class Distribution:
    """Base class: shapes, argument validation, ``sample`` from ``rsample``; subclasses give the math.

    Args:
        batch_shape: the shape of the batch of distributions.
        event_shape: the shape of one draw.
        validate_args: check parameters and values (None: the class default, True unless changed).
    """

    has_rsample = False
    arg_constraints = {}
    support = None
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution made afterwards without ``validate_args``.

        Args:
            value: True or False.
        """
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if name in self._given_params():
                    self._check_param(name, constraint)

    def _given_params(self):
        """The parameter names given by the user (a distribution with two spellings checks only the one given)."""
        return tuple(self.arg_constraints)

    def _check_param(self, name, constraint):
        value = getattr(self, name)
        if not bool(constraint.check(value.array).all()):
            raise ValueError(f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of distribution "
                             f"{self!r} to satisfy the constraint {constraint!r}, but found invalid values:\n"
                             f"{value}")

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return _check_sample_shape(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()):
        """Draw a sample of shape ``sample_shape + batch_shape + event_shape``, with no gradient.

        Args:
            sample_shape: the leading shape of the sample (a tuple of ints).
        """
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        """A reparametrized sample: differentiable with respect to the parameters.

        Args:
            sample_shape: the leading shape of the sample (a tuple of ints).
        """
        raise NotImplementedError(f"{type(self).__name__} has no rsample (it is not reparametrizable); use sample")

    def log_prob(self, value):
        """The log of the probability density/mass at ``value``.

        Args:
            value: a Tensor broadcastable with ``batch_shape + event_shape``.
        """
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def entropy(self):
        """The entropy, one value per batch entry.

        Args:
            (none)
        """
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    @property
    def mean(self):
        """The mean."""
        raise NotImplementedError(f"{type(self).__name__}.mean is not implemented")

    @property
    def variance(self):
        """The variance."""
        raise NotImplementedError(f"{type(self).__name__}.variance is not implemented")

    @property
    def stddev(self):
        """The standard deviation: the square root of the variance."""
        return self.variance.sqrt()

    def _validate_sample(self, value):
        """Check ``value``'s type, shape and support as torch does, before ``log_prob`` uses it.

        Args:
            value: what was passed to log_prob/cdf.
        """
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        if not self._validate_args:
            return
        event_dim = len(self._event_shape)
        if tuple(value.shape[value.ndim - event_dim:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        for have, want in zip(reversed(tuple(value.shape)), reversed(expected)):
            if have != 1 and want != 1 and have != want:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {tuple(value.shape)} vs "
                                 f"{expected}.")
        if not bool(self.support.check(value.array).all()):
            raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within the "
                             f"support ({self.support!r}) of the distribution {self!r}, but found invalid values:\n"
                             f"{value}")

    def _standard_draw(self, shape, like, draw):
        """``draw(array_generator, shape, dtype)`` on ``like``'s device, in its dtype (float32 for half).

        Args:
            shape: the array's shape.
            like: a parameter Tensor: device and dtype come from it.
            draw: the NumPy/CuPy Generator call.
        """
        device = like.device
        native = dtypes.float64 if like.dtype == dtypes.float64 else dtypes.float32
        if device.type == "cuda":
            with device.xp.cuda.Device(device.index):
                return Tensor(draw(generator_for(device), shape, native).astype(like.dtype, copy=False))
        return Tensor(draw(generator_for(device), shape, native).astype(like.dtype, copy=False))

    def __repr__(self):
        shown = []
        for name in self.arg_constraints:
            if name in self._given_params():
                value = getattr(self, name)
                shown.append(f"{name}: {value.item() if value.numel() == 1 else tuple(value.shape)}")
        return f"{type(self).__name__}({', '.join(shown)})"



def finfo(dtype):
    """``numpy.finfo`` that also knows bfloat16 (through ml_dtypes).

    Args:
        dtype: a floating dtype.
    """
    return ml_dtypes.finfo(dtype)


class ProbsOrLogits(Distribution):
    """A discrete distribution given by exactly one of ``probs`` or ``logits``; the other is derived on first use.

    Subclasses call ``check_one_of``, set ``self._probs`` or ``self._logits``, then this ``__init__``; they give
    ``_probs_from_logits`` and ``_logits_from_probs``.

    Args:
        batch_shape: the shape of the batch of distributions.
        event_shape: the shape of one draw.
        validate_args: check the given parameter and log_prob's values.
    """

    _probs = None
    _logits = None

    def __init__(self, batch_shape, event_shape=(), validate_args=None):
        self._given = "probs" if self._probs is not None else "logits"
        super().__init__(batch_shape, event_shape, validate_args)

    @staticmethod
    def check_one_of(probs, logits):
        """Exactly one of the two must be given (torch's error otherwise).

        Args:
            probs: the probs argument.
            logits: the logits argument.
        """
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")

    def _given_params(self):
        return (self._given,)

    @property
    def probs(self):
        """The probabilities (derived from ``logits`` on first use when logits were given)."""
        if self._probs is None:
            self._probs = self._probs_from_logits(self._logits)
        return self._probs

    @property
    def logits(self):
        """The logits (derived from ``probs`` on first use, probs clamped to [eps, 1 - eps] as torch does)."""
        if self._logits is None:
            self._logits = self._logits_from_probs(self._probs)
        return self._logits

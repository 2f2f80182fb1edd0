"""``LayerNorm``, ``GroupNorm``, ``RMSNorm`` and ``LocalResponseNorm``: norms with no running statistics.

Batch and instance norms are in ``batchnorm.py`` and ``instancenorm.py``.
"""

from __future__ import annotations

from ..checks import positive_int
from . import functional as F
from . import init
from .linear import check_input, new_parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _affine_parameters(layer, size, affine, bias, device, dtype):
    """Register weight (ones) and bias (zeros) of a norm layer, or None for the absent ones."""
    if affine:
        layer.weight = init.ones_(new_parameter((size,), device, dtype))
    else:
        layer.register_parameter("weight", None)
    if affine and bias:
        layer.bias = init.zeros_(new_parameter((size,), device, dtype))
    else:
        layer.register_parameter("bias", None)


class LayerNorm(Module):
    """Normalise over the last ``len(normalized_shape)`` dimensions, then scale and shift.

    Args:
        normalized_shape: an int or tuple: the trailing shape to normalise over.
        eps: added to the variance.
        elementwise_affine: learn weight (ones) and bias (zeros).
        bias: learn the bias (when elementwise_affine).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        for size in shape:
            positive_int("LayerNorm", "normalized_shape", size)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        if elementwise_affine:
            self.weight = init.ones_(new_parameter(shape, device, dtype))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = init.zeros_(new_parameter(shape, device, dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        """Normalise.

        Args:
            input: a Tensor whose trailing shape is ``normalized_shape``.
        """
        check_input(self, input)
        n = len(self.normalized_shape)
        if tuple(input.shape[input.ndim - n:]) != self.normalized_shape or input.ndim < n:
            raise ValueError(f"{self!r}: expected input with trailing shape {self.normalized_shape}, got shape "
                             f"{tuple(input.shape)}")
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``(4,), eps=1e-05, elementwise_affine=True``."""
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise channels in ``num_groups`` groups over (C/G, *spatial), then a per-channel affine.

    Args:
        num_groups: number of groups (must divide num_channels).
        num_channels: channels C of the (N, C, *) input.
        eps: added to the variance.
        affine: learn per-channel weight (ones) and bias (zeros).
        device: where the parameters live.
        dtype: their floating dtype.
        bias: learn the bias (when affine; keyword-only, as in PyTorch 2.x).
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        positive_int("GroupNorm", "num_groups", num_groups)
        positive_int("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_parameters(self, num_channels, affine, bias, device, dtype)

    def forward(self, input):  # noqa: A002
        """Normalise.

        Args:
            input: (N, C, *).
        """
        check_input(self, input, 2)
        if input.shape[1] != self.num_channels:
            raise ValueError(f"{self!r}: expected input with {self.num_channels} channels (dim 1), got shape "
                             f"{tuple(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``2, 4, eps=1e-05, affine=True``."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape``, then an optional scale.

    Args:
        normalized_shape: an int or tuple: the trailing shape to normalise over.
        eps: added to the mean square (None: the input dtype's machine epsilon, as PyTorch).
        elementwise_affine: learn a weight (ones).
        device: where the parameter lives.
        dtype: its floating dtype.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        for size in shape:
            positive_int("RMSNorm", "normalized_shape", size)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        if elementwise_affine:
            self.weight = init.ones_(new_parameter(shape, device, dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input):  # noqa: A002
        """Normalise.

        Args:
            input: a Tensor whose trailing shape is ``normalized_shape``.
        """
        check_input(self, input)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """``(4,), eps=None, elementwise_affine=True``."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each channel by its neighbours' mean square (``F.local_response_norm``).

    Args:
        size: number of neighbouring channels.
        alpha: multiplicative factor.
        beta: exponent.
        k: additive factor.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        """Normalise.

        Args:
            input: (N, C, *), at least 3D.
        """
        check_input(self, input)
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"

"""``InstanceNorm1d/2d/3d``: each sample's channels normalised over their own spatial dims."""

from __future__ import annotations

from . import functional as F
from .batchnorm import _NormBase
from .linear import check_input

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Shared code of InstanceNorm1d/2d/3d: per-sample statistics, optional running ones (not public)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check(self, input):  # noqa: A002
        check_input(self, input)
        if input.ndim not in self._ndims:
            raise ValueError(f"{self!r}: expected {self._ndims[0]}D (unbatched) or {self._ndims[1]}D (batched) "
                             f"input, got {input.ndim}D input of shape {tuple(input.shape)}")
        channels = input.shape[0 if input.ndim == self._ndims[0] else 1]
        if channels != self.num_features and (self.affine or self.track_running_stats):
            raise ValueError(f"{self!r}: expected input with {self.num_features} channels, got shape "
                             f"{tuple(input.shape)}")

    def forward(self, input):  # noqa: A002
        """Normalise each sample's channels over their spatial dims (running stats in eval when tracked).

        Args:
            input: (N, C, *spatial) or unbatched (C, *spatial).
        """
        self._check(input)
        unbatched = input.ndim == self._ndims[0]
        x = input.unsqueeze(0) if unbatched else input
        # NOTE: as PyTorch, num_batches_tracked is kept in the state dict but never counted up here
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            self.momentum if self.momentum is not None else 0.0, self.eps)
        return y.squeeze(0) if unbatched else y


_INSTANCE_ARGS = """
    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running-stat update factor.
        affine: learn weight (ones) and bias (zeros); off by default, as in PyTorch.
        track_running_stats: keep running statistics (used in eval); off by default.
        device: where parameters and buffers live.
        dtype: the parameters' floating dtype.
        bias: learn the bias (when affine).
"""


class InstanceNorm1d(_InstanceNorm):
    __doc__ = "Instance normalisation over (N, C, L) or unbatched (C, L) inputs.\n" + _INSTANCE_ARGS

    _ndims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    __doc__ = "Instance normalisation over (N, C, H, W) or unbatched (C, H, W) inputs.\n" + _INSTANCE_ARGS

    _ndims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    __doc__ = "Instance normalisation over (N, C, D, H, W) or unbatched (C, D, H, W) inputs.\n" + _INSTANCE_ARGS

    _ndims = (4, 5)

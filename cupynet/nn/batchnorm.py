"""``BatchNorm1d/2d/3d`` and ``SyncBatchNorm``: normalisation with batch statistics and running ones.

NOTE (AMP): ``running_mean`` / ``running_var`` are float32 whatever the layer's
parameters are cast to (``.half()`` keeps them fp32; see ``nn/module.py``), and
``F.batch_norm`` updates them in place from fp32 batch statistics.
``num_batches_tracked`` is an int64 buffer, as in PyTorch.
"""

from __future__ import annotations

import numbers

from .. import creation, dtypes
from ..autograd import no_grad
from ..checks import positive_int
from ..ops.norm import sync_batch_norm
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import check_input
from .module import Module
from .normalization import _affine_parameters

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Shared code of the batch and instance norms: running statistics, momentum, train/eval (not public).

    NOTE: torch's names: ``_NormBase`` is what both families share and ``_BatchNorm`` the batch norms alone,
    so ``isinstance`` checks (FLOP counters, BatchNorm folding) tell an instance norm from a batch norm.
    """

    _fp32_buffers = ("running_mean", "running_var")
    _ndims = (2, 3)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        name = type(self).__name__
        positive_int(name, "num_features", num_features)
        if momentum is not None and (not isinstance(momentum, numbers.Real) or not 0.0 <= momentum <= 1.0):
            raise ValueError(f"{name}: momentum must be a number in [0, 1] or None, got {momentum!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine_parameters(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=_stat_dtype(dtype),
                                                                device=device))
            self.register_buffer("running_var", creation.ones(num_features, dtype=_stat_dtype(dtype), device=device))
            self.register_buffer("num_batches_tracked", creation.zeros((), dtype=dtypes.int64, device=device))
        else:
            for buffer in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(buffer, None)

    def reset_running_stats(self):
        """Zero running_mean and num_batches_tracked, set running_var to ones."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def _check(self, input):  # noqa: A002
        check_input(self, input)
        if input.ndim not in self._ndims:
            wanted = " or ".join(f"{n}D" for n in self._ndims)
            raise ValueError(f"{self!r}: expected {wanted} input (got {input.ndim}D input of shape "
                             f"{tuple(input.shape)})")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{self!r}: expected input with {self.num_features} features/channels (dim 1), "
                             f"got shape {tuple(input.shape)}")

    def _average_factor(self):
        if not (self.training and self.track_running_stats):
            return 0.0 if self.momentum is None else self.momentum
        with no_grad():
            self.num_batches_tracked.add_(1)
        if self.momentum is None:
            # NOTE: the cumulative average's factor 1 / num_batches_tracked is computed on the device and
            # handed over as a 0-d Tensor (PyTorch reads the count on the host: a sync per step)
            return Tensor((1.0 / self.num_batches_tracked.array).astype(self.running_mean.dtype))
        return self.momentum

    def forward(self, input):  # noqa: A002
        """Normalise with batch statistics (training) or the running ones (eval).

        Args:
            input: (N, C) / (N, C, L) for BatchNorm1d, (N, C, H, W) for BatchNorm2d.
        """
        self._check(input)
        factor = self._average_factor()
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


def _stat_dtype(dtype):
    # NOTE: running statistics are at least fp32 (a float64 layer keeps float64 stats)
    return dtypes.float64 if dtype is not None and dtypes.as_dtype(dtype) == dtypes.float64 else dtypes.float32


class _BatchNorm(_NormBase):
    """torch's base of the batch norms (1d/2d/3d and SyncBatchNorm); the instance norms are not among them."""


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running-stat update factor (None: cumulative average).
        affine: learn weight (ones) and bias (zeros).
        track_running_stats: keep running_mean / running_var / num_batches_tracked buffers.
        device: where parameters and buffers live.
        dtype: the parameters' floating dtype (running stats stay fp32).
        bias: learn the bias (when affine; keyword-only, as in PyTorch 2.x).
    """


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running-stat update factor (None: cumulative average).
        affine: learn weight (ones) and bias (zeros).
        track_running_stats: keep running_mean / running_var / num_batches_tracked buffers.
        device: where parameters and buffers live.
        dtype: the parameters' floating dtype (running stats stay fp32).
        bias: learn the bias (when affine; keyword-only, as in PyTorch 2.x).
    """

    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    __doc__ = BatchNorm2d.__doc__.replace("(N, C, H, W)", "(N, C, D, H, W)")
    _ndims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose training statistics cover the whole batch of every rank (any (N, C, *) input).

    In one process, in eval mode, or without an initialized ``cupynet.distributed`` group it is BatchNorm;
    in training under a group of several ranks, each rank's batch sums (and, in backward, the gradient sums
    of the statistics) are all-reduced, so N ranks with batch b compute what one process with batch N*b
    does (``ops.norm.sync_batch_norm``). Every rank must call it the same number of times.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: running-stat update factor (None: cumulative average).
        affine: learn weight (ones) and bias (zeros).
        track_running_stats: keep running_mean / running_var / num_batches_tracked buffers.
        process_group: must be None: the default group (cupynet has no sub-groups).
        device: where parameters and buffers live.
        dtype: the parameters' floating dtype (running stats stay fp32).
    """

    _ndims = (2, 3, 4, 5, 6, 7, 8)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        if process_group is not None:
            raise ValueError(f"SyncBatchNorm: process_group must be None (the default group; cupynet has no "
                             f"sub-groups), got {process_group!r}")
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = None

    def _check(self, input):  # noqa: A002
        if isinstance(input, Tensor) and input.ndim < 2:
            raise ValueError(f"{self!r}: expected at least 2D input (got {input.ndim}D input)")
        super()._check(input)

    def forward(self, input):  # noqa: A002
        """Normalise with the statistics of every rank's batch (training, several ranks) or as BatchNorm.

        Args:
            input: (N, C, *), this rank's share of the batch.
        """
        from .. import distributed as dist  # noqa: PLC0415 - loads on the first SyncBatchNorm step

        if not (self.training and dist.is_initialized() and dist.get_world_size() > 1):
            return super().forward(input)
        self._check(input)
        factor = self._average_factor()
        return sync_batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, factor, self.eps)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm1d/2d/3d (itself or inside it) replaced by a SyncBatchNorm.

        The new layers take the old ones' parameters (the same Parameter objects), buffers and train/eval
        mode; other modules are kept and returned as they are.

        Args:
            module: the module (or model) to convert.
            process_group: must be None (the default group).
        """
        out = module
        # NOTE: by name: these four are the batch norms (the instance norms share _NormBase, not this)
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm)):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                setattr(out, name, getattr(module, name))
            out.train(module.training)
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out

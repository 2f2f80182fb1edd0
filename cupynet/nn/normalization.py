"""``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d``, LRN and ``Embedding``.

NOTE (BatchNorm, AMP): ``running_mean`` / ``running_var`` are float32 whatever
the layer's parameters are cast to (``.half()`` keeps them fp32; see
``nn/module.py``), and ``F.batch_norm`` updates them in place from fp32 batch
statistics. ``num_batches_tracked`` is an int64 buffer, as in PyTorch.
"""

from __future__ import annotations

import numbers

from .. import creation, dtypes
from ..autograd import no_grad
from ..ops.norm import sync_batch_norm
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import check_input, new_parameter
from .module import Module, copy_into
from .parameter import as_array

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "Embedding", "SyncBatchNorm"]


def _positive(layer: str, name: str, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{layer}: {name} must be a positive integer, got {value!r}")
    return value


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
            _positive("LayerNorm", "normalized_shape", size)
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
        _positive("GroupNorm", "num_groups", num_groups)
        _positive("GroupNorm", "num_channels", num_channels)
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


class _BatchNorm(Module):
    """Shared code of BatchNorm1d/2d: running statistics, momentum, train/eval (not public)."""

    _fp32_buffers = ("running_mean", "running_var")
    _ndims = (2, 3)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        name = type(self).__name__
        _positive(name, "num_features", num_features)
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
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
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


class _InstanceNorm(_BatchNorm):
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
            _positive("RMSNorm", "normalized_shape", size)
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


class Embedding(Module):
    """A lookup table: row ``i`` of ``weight`` for each index ``i``; init N(0, 1), padding row zeros.

    Args:
        num_embeddings: rows of the table.
        embedding_dim: size of each row.
        padding_idx: a row that stays zero and gets no gradient.
        max_norm: not supported (must be None).
        norm_type: accepted for compatibility.
        scale_grad_by_freq: not supported (must be False).
        sparse: not supported (must be False).
        _weight: an initial weight Tensor of shape (num_embeddings, embedding_dim).
        device: where the weight lives.
        dtype: its floating dtype.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 device=None, dtype=None):
        super().__init__()
        _positive("Embedding", "num_embeddings", num_embeddings)
        _positive("Embedding", "embedding_dim", embedding_dim)
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be within num_embeddings ({num_embeddings}), "
                                 f"got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight = new_parameter((num_embeddings, embedding_dim), device, dtype)
        if _weight is None:
            self.reset_parameters()
        else:
            self._load_weight(_weight)

    def _load_weight(self, value):
        array = as_array(value, "Embedding(_weight=...)")
        if tuple(array.shape) != tuple(self.weight.shape):
            raise ValueError(f"Embedding: _weight must have shape {tuple(self.weight.shape)}, got "
                             f"{tuple(array.shape)}")
        copy_into(self.weight, array)

    def reset_parameters(self):
        """Draw the weight from N(0, 1) and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.array[self.padding_idx] = 0

    def forward(self, input):  # noqa: A002
        """Look the indices up.

        Args:
            input: an integer Tensor of any shape.
        """
        check_input(self, input)
        if dtypes.is_floating(input.dtype):
            raise TypeError(f"{self!r}: expected an integer index tensor, got dtype {input.dtype}")
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        """``10, 3`` plus padding_idx when set."""
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")

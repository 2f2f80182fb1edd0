"""``torch.nn.utils.fusion``: fold an eval-mode BatchNorm into the convolution or linear layer before it.

In eval mode a BatchNorm is the affine map ``y = (x - mean) * w / sqrt(var + eps) + b`` per channel, so
it folds into the preceding layer's weight (scaled per output channel) and bias. Programs do this before
inference (YOLOv5's ``fuse()``); the fused layer computes what the pair computed, up to rounding.
"""

from __future__ import annotations

import copy

import cupynet
from cupynet.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _bn_scale_shift(bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The per-channel (scale, shift) of the eval BatchNorm: scale = w / sqrt(var + eps), shift = b."""
    weight = cupynet.ones_like(bn_rm) if bn_w is None else bn_w
    bias = cupynet.zeros_like(bn_rm) if bn_b is None else bn_b
    return weight * cupynet.rsqrt(bn_rv + bn_eps), bias


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The (weight, bias) Parameters of the convolution followed by the eval BatchNorm, as one convolution.

    Args:
        conv_w: the convolution weight (out, in/groups, *kernel), or (in, out/groups, *kernel) when ``transpose``.
        conv_b: its bias, or None (zero).
        bn_rm: the BatchNorm's running mean.
        bn_rv: its running variance.
        bn_eps: its eps.
        bn_w: its weight (None: ones).
        bn_b: its bias (None: zeros).
        transpose: True for a transposed convolution (output channels on dim 1 of the weight).
    """
    weight_dtype = conv_w.dtype
    bias_dtype = weight_dtype if conv_b is None else conv_b.dtype
    bias = cupynet.zeros_like(bn_rm) if conv_b is None else conv_b
    scale, shift = _bn_scale_shift(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * scale.reshape(shape)).to(weight_dtype)
    fused_b = ((bias - bn_rm) * scale + shift).to(bias_dtype)
    return (Parameter(fused_w.detach(), conv_w.requires_grad),
            Parameter(fused_b.detach(), bias.requires_grad))


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The (weight, bias) Parameters of the linear layer followed by the eval BatchNorm1d, as one linear layer.

    Args:
        linear_w: the linear weight (out_features, in_features).
        linear_b: its bias, or None (zero).
        bn_rm: the BatchNorm's running mean.
        bn_rv: its running variance.
        bn_eps: its eps.
        bn_w: its weight.
        bn_b: its bias.
    """
    bias = cupynet.zeros_like(bn_rm) if linear_b is None else linear_b
    scale, shift = _bn_scale_shift(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (bias - bn_rm) * scale + shift
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), bias.requires_grad)


def _check_eval(fn: str, layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError(f"{fn}: Fusion only for eval! (call .eval() on both modules first)")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError(f"{fn}: the BatchNorm keeps no running statistics (track_running_stats=False)")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` with the eval-mode ``bn`` after it folded in (both must be in eval mode).

    Args:
        conv: a Conv or ConvTranspose layer.
        bn: the BatchNorm that follows it.
        transpose: True when ``conv`` is transposed.
    """
    _check_eval("fuse_conv_bn_eval", conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` with the eval-mode ``bn`` after it folded in (both must be in eval mode).

    Args:
        linear: a Linear layer.
        bn: the BatchNorm1d that follows it (``num_features`` equal to ``out_features``, or 1).
    """
    _check_eval("fuse_linear_bn_eval", linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("fuse_linear_bn_eval: to fuse, linear.out_features must equal bn.num_features (or "
                             f"bn.num_features must be 1), got {linear.out_features} and {bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused

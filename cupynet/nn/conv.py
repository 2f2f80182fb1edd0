"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` with PyTorch's arguments, parameter shapes and init."""

from __future__ import annotations

import math

from . import functional as F
from . import init
from .linear import check_input, new_parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _tuple(layer: str, name: str, value, n: int, allow_str: bool = False):
    if allow_str and isinstance(value, str):
        if value not in ("same", "valid"):
            raise ValueError(f"{layer}: invalid padding string {value!r}, should be one of {{'valid', 'same'}}")
        return value
    values = (value,) * n if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else None
    if values is None or len(values) != n or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{layer}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    return values


class _ConvNd(Module):
    """Shared constructor, init and repr of the convolution layers (not public)."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, output_padding=0):
        super().__init__()
        name, n = type(self).__name__, self._dims
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}: {arg} must be a positive integer, got {value!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must both be "
                             f"divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported, got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(name, "kernel_size", kernel_size, n)
        self.stride = _tuple(name, "stride", stride, n)
        self.padding = _tuple(name, "padding", padding, n, allow_str=not self._transposed)
        self.dilation = _tuple(name, "dilation", dilation, n)
        self.output_padding = _tuple(name, "output_padding", output_padding, n)
        self.transposed, self.padding_mode = self._transposed, padding_mode
        shape = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        self.weight = new_parameter(shape + self.kernel_size, device, dtype)
        if bias:
            self.bias = new_parameter((out_channels,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: weight kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _check(self, input):  # noqa: A002
        check_input(self, input)
        n = self._dims
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"{self!r}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input, "
                             f"got shape {tuple(input.shape)}")
        channels = input.shape[-n - 1]
        if channels != self.in_channels:
            raise ValueError(f"{self!r}: expected input with {self.in_channels} channels (dim {-n - 1}), "
                             f"got shape {tuple(input.shape)}")

    def extra_repr(self) -> str:
        """PyTorch's text: ``1, 6, kernel_size=(5, 5), stride=(1, 1)`` plus the non-default options."""
        n = self._dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            text += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


    def forward(self, input):  # noqa: A002
        """Convolve.

        Args:
            input: (N, C_in, *spatial) or unbatched (C_in, *spatial).
        """
        self._check(input)
        fn = getattr(F, f"conv{self._dims}d")
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """Shared constructor (PyTorch's argument order) and forward of the transposed convolutions (not public)."""

    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding=output_padding)

    def forward(self, input, output_size=None):  # noqa: A002
        """Transposed convolution.

        Args:
            input: (N, C_in, *spatial) or unbatched (C_in, *spatial).
            output_size: not supported (use output_padding); must be None.
        """
        if output_size is not None:
            raise NotImplementedError(f"{self!r}: output_size is not supported; set output_padding instead")
        self._check(input)
        fn = getattr(F, f"conv_transpose{self._dims}d")
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.output_padding, self.groups,
                  self.dilation)


_CONV_ARGS = """
    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: int or tuple (one entry per spatial dim).
        stride: int or tuple.
        padding: int, tuple, "valid" or "same".
        dilation: int or tuple.
        groups: blocked connections from input to output channels.
        bias: learn an additive bias.
        padding_mode: only "zeros".
        device: where the parameters live.
        dtype: their floating dtype.
"""
_TRANSPOSED_ARGS = """
    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: int or tuple (one entry per spatial dim).
        stride: int or tuple.
        padding: int or tuple.
        output_padding: extra size added to one side of each output dim.
        groups: blocked connections.
        bias: learn an additive bias.
        dilation: int or tuple.
        padding_mode: only "zeros".
        device: where the parameters live.
        dtype: their floating dtype.
"""


class Conv1d(_ConvNd):
    __doc__ = "1-D convolution over (N, C_in, L) inputs.\n" + _CONV_ARGS
    _dims = 1


class Conv2d(_ConvNd):
    __doc__ = "2-D convolution over (N, C_in, H, W) inputs.\n" + _CONV_ARGS
    _dims = 2


class Conv3d(_ConvNd):
    __doc__ = "3-D convolution over (N, C_in, D, H, W) inputs.\n" + _CONV_ARGS
    _dims = 3


class ConvTranspose1d(_ConvTransposeNd):
    __doc__ = "1-D transposed convolution; weight shape (C_in, C_out/groups, kL).\n" + _TRANSPOSED_ARGS
    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    __doc__ = "2-D transposed convolution (\"deconvolution\"); weight shape (C_in, C_out/groups, kH, kW).\n" \
        + _TRANSPOSED_ARGS
    _dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    __doc__ = "3-D transposed convolution; weight shape (C_in, C_out/groups, kD, kH, kW).\n" + _TRANSPOSED_ARGS
    _dims = 3

"""``MaxPool2d``, ``AvgPool2d`` and ``AdaptiveAvgPool2d`` (the math is in ``cupynet.ops.pool``)."""

from __future__ import annotations

from . import functional as F
from .linear import check_input
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]


def _check_4d(layer, input):  # noqa: A002
    check_input(layer, input)
    if input.ndim not in (3, 4):
        raise ValueError(f"{layer!r}: expected a 3D (unbatched) or 4D (batched) input, got shape "
                         f"{tuple(input.shape)}")


class MaxPool2d(Module):
    """Max over sliding windows.

    Args:
        kernel_size: window size (int or 2-tuple).
        stride: step (default kernel_size).
        padding: implicit -inf padding.
        dilation: spacing of window elements.
        return_indices: also return argmax indices (not supported).
        ceil_mode: use ceil instead of floor for the output size.
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        if return_indices:
            raise NotImplementedError("MaxPool2d: return_indices=True is not supported")
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        """Pool.

        Args:
            input: (N, C, H, W) or (C, H, W).
        """
        _check_4d(self, input)
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over sliding windows.

    Args:
        kernel_size: window size.
        stride: step (default kernel_size).
        padding: implicit zero padding.
        ceil_mode: use ceil for the output size.
        count_include_pad: count padded zeros in the mean.
        divisor_override: divide by this instead of the window size.
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):  # noqa: A002
        """Pool.

        Args:
            input: (N, C, H, W) or (C, H, W).
        """
        _check_4d(self, input)
        options = {}
        if not self.count_include_pad:
            options["count_include_pad"] = False
        if self.divisor_override is not None:
            options["divisor_override"] = self.divisor_override
        if self.ceil_mode:
            options["ceil_mode"] = True
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, **options)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size.

    Args:
        output_size: (H_out, W_out), or one int for both (None keeps that dimension).
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        """Pool.

        Args:
            input: (N, C, H, W) or (C, H, W).
        """
        _check_4d(self, input)
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"output_size={self.output_size}"

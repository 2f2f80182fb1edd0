"""Max, average, adaptive and unpooling layers in 1-D, 2-D and 3-D (the math is in ``cupynet.ops.pool``)."""

from __future__ import annotations

from . import functional as F
from .linear import check_input
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _check_nd(layer, input, nd):  # noqa: A002
    check_input(layer, input)
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{layer!r}: expected a {nd + 1}D (unbatched) or {nd + 2}D (batched) input, got shape "
                         f"{tuple(input.shape)}")


class _MaxPoolNd(Module):
    """Shared body of MaxPool1d/2d/3d (not public).

    Args:
        kernel_size: window size (int or tuple).
        stride: step (default kernel_size).
        padding: implicit -inf padding.
        dilation: spacing of window elements.
        return_indices: also return the flat index of each maximum.
        ceil_mode: use ceil instead of floor for the output size.
    """

    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        """Pool (and return the indices too when ``return_indices``).

        Args:
            input: (N, C, *spatial) or unbatched (C, *spatial).
        """
        _check_nd(self, input, self._dims)
        fn = getattr(F, f"max_pool{self._dims}d")
        return fn(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                  return_indices=self.return_indices)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    __doc__ = "Max over sliding windows of (N, C, L) inputs.\n" + _MaxPoolNd.__doc__.split("\n", 1)[1]
    _dims = 1


class MaxPool2d(_MaxPoolNd):
    __doc__ = "Max over sliding windows of (N, C, H, W) inputs.\n" + _MaxPoolNd.__doc__.split("\n", 1)[1]
    _dims = 2


class MaxPool3d(_MaxPoolNd):
    __doc__ = "Max over sliding windows of (N, C, D, H, W) inputs.\n" + _MaxPoolNd.__doc__.split("\n", 1)[1]
    _dims = 3


class _AvgPoolNd(Module):
    """Shared body of AvgPool1d/2d/3d (not public).

    Args:
        kernel_size: window size.
        stride: step (default kernel_size).
        padding: implicit zero padding.
        ceil_mode: use ceil for the output size.
        count_include_pad: count padded zeros in the mean.
        divisor_override: divide by this instead of the window size (2-D and 3-D only, as in PyTorch).
    """

    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):  # noqa: A002
        """Pool.

        Args:
            input: (N, C, *spatial) or unbatched (C, *spatial).
        """
        _check_nd(self, input, self._dims)
        options = {} if self.divisor_override is None else {"divisor_override": self.divisor_override}
        fn = getattr(F, f"avg_pool{self._dims}d")
        return fn(input, self.kernel_size, self.stride, self.padding, ceil_mode=self.ceil_mode,
                  count_include_pad=self.count_include_pad, **options)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    __doc__ = "Mean over sliding windows of (N, C, L) inputs.\n" + _AvgPoolNd.__doc__.split("\n", 1)[1]
    _dims = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    __doc__ = "Mean over sliding windows of (N, C, H, W) inputs.\n" + _AvgPoolNd.__doc__.split("\n", 1)[1]
    _dims = 2


class AvgPool3d(_AvgPoolNd):
    __doc__ = "Mean over sliding windows of (N, C, D, H, W) inputs.\n" + _AvgPoolNd.__doc__.split("\n", 1)[1]
    _dims = 3


class _AdaptiveAvgPoolNd(Module):
    """Shared body of AdaptiveAvgPool1d/2d/3d (not public).

    Args:
        output_size: the output's spatial size, an int or a tuple (None keeps that input size).
    """

    _dims = 2

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        """Pool.

        Args:
            input: (N, C, *spatial) or unbatched (C, *spatial).
        """
        _check_nd(self, input, self._dims)
        return getattr(F, f"adaptive_avg_pool{self._dims}d")(input, self.output_size)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"output_size={self.output_size}"


class _AdaptiveMaxPoolNd(_AdaptiveAvgPoolNd):
    """Shared body of AdaptiveMaxPool1d/2d/3d (not public).

    Args:
        output_size: the output's spatial size, an int or a tuple (None keeps that input size).
        return_indices: also return the flat index of each maximum (for ``MaxUnpool``).
    """

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):  # noqa: A002
        """Pool (and return the indices too when ``return_indices``).

        Args:
            input: (N, C, *spatial) or unbatched (C, *spatial).
        """
        _check_nd(self, input, self._dims)
        return getattr(F, f"adaptive_max_pool{self._dims}d")(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    __doc__ = "Average pooling of (N, C, L) inputs to a fixed length.\n" + \
        _AdaptiveAvgPoolNd.__doc__.split("\n", 1)[1]
    _dims = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    __doc__ = "Average pooling of (N, C, H, W) inputs to a fixed size.\n" + \
        _AdaptiveAvgPoolNd.__doc__.split("\n", 1)[1]
    _dims = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    __doc__ = "Average pooling of (N, C, D, H, W) inputs to a fixed size.\n" + \
        _AdaptiveAvgPoolNd.__doc__.split("\n", 1)[1]
    _dims = 3


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    __doc__ = "Max pooling of (N, C, L) inputs to a fixed length.\n" + _AdaptiveMaxPoolNd.__doc__.split("\n", 1)[1]
    _dims = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    __doc__ = "Max pooling of (N, C, H, W) inputs to a fixed size.\n" + _AdaptiveMaxPoolNd.__doc__.split("\n", 1)[1]
    _dims = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    __doc__ = "Max pooling of (N, C, D, H, W) inputs to a fixed size.\n" + \
        _AdaptiveMaxPoolNd.__doc__.split("\n", 1)[1]
    _dims = 3


class _MaxUnpoolNd(Module):
    """Shared body of MaxUnpool1d/2d/3d (not public).

    Args:
        kernel_size: the pooling window that made the indices.
        stride: its step (default kernel_size).
        padding: its padding.
    """

    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        # NOTE: stored as tuples, as PyTorch's MaxUnpool does (its repr shows them)
        as_tuple = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * self._dims  # noqa: E731
        self.kernel_size = as_tuple(kernel_size)
        self.stride = as_tuple(stride if stride is not None else kernel_size)
        self.padding = as_tuple(padding)

    def forward(self, input, indices, output_size=None):  # noqa: A002
        """Unpool: each value put at its index in a zero output.

        Args:
            input: the pooled values, (N, C, *spatial) or unbatched (C, *spatial).
            indices: the int64 indices the max pooling returned.
            output_size: the output's size, when the default ``(in - 1)*stride - 2*padding + kernel`` is not it.
        """
        _check_nd(self, input, self._dims)
        return getattr(F, f"max_unpool{self._dims}d")(input, indices, self.kernel_size, self.stride, self.padding,
                                                      output_size)

    def extra_repr(self) -> str:
        """PyTorch's text."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    __doc__ = "Partial inverse of MaxPool1d.\n" + _MaxUnpoolNd.__doc__.split("\n", 1)[1]
    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    __doc__ = "Partial inverse of MaxPool2d.\n" + _MaxUnpoolNd.__doc__.split("\n", 1)[1]
    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    __doc__ = "Partial inverse of MaxPool3d.\n" + _MaxUnpoolNd.__doc__.split("\n", 1)[1]
    _dims = 3

"""Array-level window helpers shared by conv.py and pool.py (xp arrays in, xp arrays out; no autograd).

A *geometry* describes one spatial dimension of a strided, dilated window map
between an "input space" of ``size`` elements and an "output space" of ``out``
windows: window ``j`` reads input positions ``j*stride + k*dilation - lo`` for
``k`` in ``range(kernel)``; positions outside ``[0, size)`` are padding. The
same geometry serves the forward map (im2col, gather) and its adjoint (col2im,
scatter-add), which is what makes conv / conv_transpose / weight-grad and the
pooling backward ops exact adjoints of each other.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from .. import dtypes
from ._util import xp_of


class Geometry(NamedTuple):
    """One spatial dimension of a window map.

    Args:
        kernel: window size.
        stride: step between windows.
        dilation: step between taps of a window.
        lo: padding before the first input element.
        size: input length.
        out: number of windows.
    """

    kernel: int
    stride: int
    dilation: int
    lo: int
    size: int
    out: int

    @property
    def extent(self) -> int:
        """Span of one dilated window."""
        return self.dilation * (self.kernel - 1) + 1

    @property
    def padded(self) -> int:
        """Length of the padded input buffer that holds every window and every input element."""
        return max(self.lo + self.size, (self.out - 1) * self.stride + self.extent)


def output_length(size, kernel, stride, dilation, lo, hi, ceil_mode=False):
    """Number of windows along one dimension (PyTorch's formula, with pooling's ceil_mode rule).

    Args:
        size: input length.
        kernel: window size.
        stride: step between windows.
        dilation: step between taps.
        lo: padding before.
        hi: padding after.
        ceil_mode: round up, keeping only windows that start inside the input or the left padding.
    """
    span = size + lo + hi - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + lo:
        out -= 1
    return out


def pad_input(x, geoms, value=0.0):
    """``x`` (N, C, *spatial) padded so every window of ``geoms`` lies inside it.

    Args:
        x: the input array.
        geoms: one Geometry per spatial dimension.
        value: the padding value (0 for conv and avg pooling, -inf for max pooling).
    """
    pads = tuple((g.lo, g.padded - g.lo - g.size) for g in geoms)
    if not any(lo or hi for lo, hi in pads):
        return x
    return xp_of(x).pad(x, ((0, 0), (0, 0)) + pads, constant_values=value)


def windows(x, geoms, value=0.0):
    """A strided view ``(N, C, *out, *kernel)`` of every window of ``x`` (no copy beyond the padding).

    Args:
        x: the input array (N, C, *spatial).
        geoms: one Geometry per spatial dimension.
        value: padding value.
    """
    xp = xp_of(x)
    padded = pad_input(x, geoms, value)
    nd = len(geoms)
    view = xp.lib.stride_tricks.sliding_window_view(padded, tuple(g.extent for g in geoms),
                                                    axis=tuple(range(2, 2 + nd)))
    index = ((slice(None), slice(None)) + tuple(slice(0, (g.out - 1) * g.stride + 1, g.stride) for g in geoms)
             + tuple(slice(None, None, g.dilation) for g in geoms))
    return view[index]


def tap_windows(geoms):
    """For each kernel tap, in C order: ``(tap, slices)``, the tap's index per dimension and the strided
    slices of the padded grid that this tap reads in every window (what im2col copies and col2im adds back).

    Args:
        geoms: one Geometry per spatial dimension.
    """
    for tap in itertools.product(*(range(g.kernel) for g in geoms)):
        yield tap, tuple(slice(k * g.dilation, k * g.dilation + (g.out - 1) * g.stride + 1, g.stride)
                         for k, g in zip(tap, geoms))


def col2im(cols, geoms, out_dtype):
    """Adjoint of ``windows``: add every window of ``cols`` (N, C, *out, *kernel) back onto the input grid.

    NOTE: overlapping windows are summed in fp32 for half dtypes (one rounding at the end); the loop runs
    over kernel taps (e.g. 9 for 3x3), each a strided slice-add, so it needs no scatter and is deterministic.

    Args:
        cols: window values, shape (N, C, *out, *kernel).
        geoms: one Geometry per spatial dimension.
        out_dtype: dtype of the result.
    """
    xp = xp_of(cols)
    acc = dtypes.float32 if out_dtype in dtypes.LOW_PRECISION else out_dtype
    buf = xp.zeros(cols.shape[:2] + tuple(g.padded for g in geoms), dtype=acc)
    for taps, target in tap_windows(geoms):
        buf[(slice(None), slice(None)) + target] += cols[(Ellipsis,) + taps]
    crop = tuple(slice(g.lo, g.lo + g.size) for g in geoms)
    return xp.ascontiguousarray(buf[(slice(None), slice(None)) + crop]).astype(out_dtype, copy=False)

"""Resampling: padding (``pad``), interpolation (``interpolate``), ``pixel_shuffle`` and ``unfold`` / ``fold``.

Every op here is linear in its input, and all but constant padding and unfold/fold
are *axis maps*: along each resampled axis, output element ``j`` is
``sum_t w[t, j] * x[idx[t, j]]`` for a few taps ``t`` (one tap and no weight for
nearest interpolation and reflect/replicate/circular padding; two for linear; four
for cubic). ``AxisMap`` gathers, ``_AxisMapAdjoint`` scatter-adds the same taps back,
and each is the other's backward, so gradients of every order come from two forwards.
Constant padding is its own adjoint with the pads negated (padding ``p`` and cropping
``p`` undo each other), and ``unfold`` (im2col) and ``fold`` (col2im) are adjoints too.

NOTE (numerics): gathers are exact in every dtype; weighted taps accumulate in fp32
for float16/bfloat16 and round once; scatter-adds (the backward) accumulate in fp32.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy

from ..autograd.function import Function
from ..checks import require_floating, require_tensor
from ..tensor import Tensor
from ._conv_args import ntuple
from ._im2col import Geometry, col2im, output_length, windows
from ._util import compute_in_fp32, scatter_at, xp_of
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from .shape import permute, reshape

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "unfold", "fold"]


# ----------------------------------------------------------------------------- axis maps


class Tap(NamedTuple):
    """One resampled axis of an ``AxisMap``.

    Args:
        axis: the axis of the input it maps.
        index: (taps, out) int array: the input positions each output position reads.
        weight: (taps, out) float64 array of tap weights, or None for a plain gather (one tap).
        size: the input's length along ``axis`` (the adjoint's output length).
    """

    axis: int
    index: object
    weight: object
    size: int


def _along(vector, axis, ndim):
    """``vector`` shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    return vector.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _gather_axis(x, tap):
    axis, index, weight, _ = tap
    xp = xp_of(x)
    if weight is None:
        return xp.take(x, index[0], axis=axis)
    out = None
    for idx, w in zip(index, weight):
        term = xp.take(x, idx, axis=axis) * _along(w.astype(x.dtype, copy=False), axis, x.ndim)
        out = term if out is None else out + term
    return out


def _scatter_axis(g, tap):
    axis, index, weight, size = tap
    xp = xp_of(g)
    moved = xp.moveaxis(g, axis, 0)
    out = xp.zeros((size,) + moved.shape[1:], dtype=g.dtype)
    for t, idx in enumerate(index):
        values = moved if weight is None else moved * weight[t].astype(g.dtype, copy=False).reshape(
            (-1,) + (1,) * (moved.ndim - 1))
        out = scatter_at("sum", out, idx, values)
    return xp.ascontiguousarray(xp.moveaxis(out, 0, axis))


def _run_maps(x, maps, step, dtype):
    y = compute_in_fp32(x)
    for tap in maps:
        y = step(y, tap)
    return xp_of(y).ascontiguousarray(y).astype(dtype, copy=False)


class AxisMap(Function):
    """Gather (with optional weights) along each mapped axis: padding and interpolation share this op."""

    op_name = "axis_map"

    @staticmethod
    def forward(ctx, x, maps=()):
        ctx.maps, ctx.dtype = maps, x.dtype
        if all(tap[2] is None for tap in maps):  # NOTE: pure gathers are exact: no fp32 round trip needed
            y = x.array
            for tap in maps:
                y = _gather_axis(y, tap)
            return xp_of(y).ascontiguousarray(y)
        return _run_maps(x.array, maps, _gather_axis, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _AxisMapAdjoint.apply(grad, maps=ctx.maps, dtype=ctx.dtype)


class _AxisMapAdjoint(Function):
    """Scatter-add every tap back onto its input position (the backward of ``AxisMap``)."""

    op_name = "axis_map_backward"

    @staticmethod
    def forward(ctx, g, maps=(), dtype=None):
        ctx.maps = maps
        return _run_maps(g.array, maps[::-1], _scatter_axis, g.dtype)

    @staticmethod
    def backward(ctx, grad):
        return AxisMap.apply(grad, maps=ctx.maps)


def _axis_map_op(name, op_name, summary, amp_policy=None):
    """One named ``AxisMap`` op class: its own name in traces and autocast's lists, one policy."""
    return type(name, (AxisMap,), {"__doc__": summary, "op_name": op_name, "amp_policy": amp_policy,
                                   "__module__": __name__})


ReflectionPad = _axis_map_op("ReflectionPad", "reflection_pad",
                             "Pad by reflecting the input at its edges (the edge element is not repeated).")
ReplicationPad = _axis_map_op("ReplicationPad", "replication_pad", "Pad by repeating the edge elements.")
CircularPad = _axis_map_op("CircularPad", "circular_pad", "Pad by wrapping the input around (periodic boundary).")
UpsampleNearestExact = _axis_map_op(
    "UpsampleNearestExact", "upsample_nearest_exact",
    "Nearest-neighbour interpolation with pixel centres ``floor((j + 0.5) * scale)`` (unlisted for autocast).")
# NOTE: PyTorch's autocast lists name the upsample ops per mode and dimension (all fp32)
UpsampleNearest1d = _axis_map_op("UpsampleNearest1d", "upsample_nearest1d", "1-D nearest-neighbour interpolation.",
                                 "fp32")
UpsampleNearest2d = _axis_map_op("UpsampleNearest2d", "upsample_nearest2d", "2-D nearest-neighbour interpolation.",
                                 "fp32")
UpsampleNearest3d = _axis_map_op("UpsampleNearest3d", "upsample_nearest3d", "3-D nearest-neighbour interpolation.",
                                 "fp32")
UpsampleLinear1d = _axis_map_op("UpsampleLinear1d", "upsample_linear1d", "1-D linear interpolation (two taps).",
                                "fp32")
UpsampleBilinear2d = _axis_map_op("UpsampleBilinear2d", "upsample_bilinear2d",
                                  "2-D bilinear interpolation (two taps per axis).", "fp32")
UpsampleTrilinear3d = _axis_map_op("UpsampleTrilinear3d", "upsample_trilinear3d",
                                   "3-D trilinear interpolation (two taps per axis).", "fp32")
UpsampleBicubic2d = _axis_map_op("UpsampleBicubic2d", "upsample_bicubic2d",
                                 "2-D bicubic interpolation (Keys' cubic convolution, A = -0.75).", "fp32")


_UPSAMPLE = {("nearest", 1): UpsampleNearest1d, ("nearest", 2): UpsampleNearest2d,
             ("nearest", 3): UpsampleNearest3d, ("linear", 1): UpsampleLinear1d,
             ("bilinear", 2): UpsampleBilinear2d, ("trilinear", 3): UpsampleTrilinear3d,
             ("bicubic", 2): UpsampleBicubic2d}


def _device_map(like, axis, index, weight, size):
    """A ``Tap`` with host index/weight arrays moved to ``like``'s device (weights in float64 until used)."""
    xp = xp_of(like)
    return Tap(axis, xp.asarray(numpy.atleast_2d(index).astype(numpy.int64)),
               None if weight is None else xp.asarray(numpy.atleast_2d(weight)), size)


# ----------------------------------------------------------------------------- pad


class ConstantPad(Function):
    """Pad with a constant value (negative pads crop); its own adjoint with the pads negated and value 0."""

    op_name = "constant_pad_nd"

    @staticmethod
    def forward(ctx, x, pads=(), value=0.0):
        ctx.pads = pads
        return _constant_pad_array(x.array, pads, value)

    @staticmethod
    def backward(ctx, grad):
        return ConstantPad.apply(grad, pads=tuple((-lo, -hi) for lo, hi in ctx.pads), value=0)


def _constant_pad_array(a, pads, value):
    """``pads``: one (lo, hi) per dim of ``a``, from the first; negative values crop."""
    xp = xp_of(a)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pads, a.shape))
    a = a[crop]
    grow = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    if not any(lo or hi for lo, hi in grow):
        return xp.ascontiguousarray(a)
    out = xp.full(tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, grow)), value, dtype=a.dtype)
    out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, grow))] = a
    return out


def _pad_pairs(pad, ndim):
    """Torch's flat ``pad`` (last dim first) as one (lo, hi) per dim of the input, from the first."""
    pairs = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        pairs[ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return tuple(pairs)


def _source_index(mode, size, lo, hi):
    """For each output position of one padded dim, the input position it reads (crop first, then pad)."""
    start, stop = max(-lo, 0), size - max(-hi, 0)
    n = stop - start
    j = numpy.arange(-max(lo, 0), n + max(hi, 0))
    if mode == "replicate":
        return start + numpy.clip(j, 0, n - 1)
    if mode == "circular":
        return start + numpy.mod(j, n)
    period = 2 * (n - 1)  # NOTE: reflect: 0 1 2 3 2 1 0 1 ... with period 2(n-1); n == 1 only pads nothing
    k = numpy.mod(j, period) if period else numpy.zeros_like(j)
    return start + numpy.where(k < n, k, period - k)


_PAD_MODES = {"constant": None, "reflect": ReflectionPad, "replicate": ReplicationPad, "circular": CircularPad}


def _check_pad_args(input, pad, mode, value):  # noqa: A002
    require_tensor("pad", input, "input")
    if not isinstance(pad, (tuple, list)) or not all(isinstance(p, int) and not isinstance(p, bool) for p in pad):
        raise TypeError(f"pad(): argument 'pad' must be tuple of ints, got {pad!r}")
    if len(pad) % 2:
        raise RuntimeError("pad: Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"pad: Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: Unrecognised padding mode {mode!r} (expected one of {sorted(_PAD_MODES)})")
    if mode != "constant" and value not in (None, 0, 0.0):
        raise RuntimeError(f"pad: Padding mode \"{mode}\" doesn't take in value argument")
    if value is not None and not isinstance(value, numbers.Number):
        raise TypeError(f"pad: value must be a number, got {type(value).__name__}")


def _check_mode_pad(input, pad, mode):  # noqa: A002
    nd = len(pad) // 2
    if input.ndim not in (nd + 1, nd + 2) or nd > 3:
        raise NotImplementedError(f"pad: Padding size {len(pad)} is not supported for {input.ndim}D input tensor.")
    require_floating(f"pad (mode={mode!r})", input)
    for i in range(nd):
        dim, (lo, hi), size = input.ndim - 1 - i, pad[2 * i:2 * i + 2], input.shape[input.ndim - 1 - i]
        if size == 0 or any(s == 0 for s in input.shape[-nd - 1 + (input.ndim == nd + 1):]):
            raise RuntimeError(f"pad: Expected a tensor with possibly 0 batch size and other non-zero dimensions "
                               f"for input (mode={mode!r}), but got: {list(input.shape)}")
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"pad: Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({lo}, {hi}) at dimension {dim} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("pad: Padding value causes wrapping around more than once.")
        if size + min(lo, 0) + min(hi, 0) < 1:
            raise RuntimeError(f"pad: input (size {size} at dimension {dim}) is too small for padding ({lo}, "
                               f"{hi}) in mode {mode!r}: calculated output size {size + lo + hi}")


def pad(input, pad, mode="constant", value=None):  # noqa: A002 - PyTorch's names
    """Pad (or, with negative values, crop) the trailing dims of ``input``.

    ``pad`` lists (left, right) for the last dim, then the one before it, and so on:
    ``pad(x, (1, 1, 2, 0))`` adds one column on each side and two rows on top.

    Args:
        input: the input Tensor.
        pad: an even-length tuple of ints, last dim first.
        mode: "constant" (any number of dims), "reflect", "replicate" or "circular" (the last 1, 2 or
            3 dims of a batched or unbatched input).
        value: the fill value of "constant" mode (default 0).
    """
    _check_pad_args(input, pad, mode, value)
    pairs = _pad_pairs(tuple(pad), input.ndim)
    if mode == "constant":
        for n, (lo, hi) in zip(input.shape, pairs):
            if n + lo + hi < 0:
                raise RuntimeError(f"pad: negative padding {tuple(pad)} removes more than the input's size "
                                   f"(input of shape {tuple(input.shape)})")
        return ConstantPad.apply(input, pads=pairs, value=0 if value is None else value)
    _check_mode_pad(input, pad, mode)
    maps = tuple(_device_map(input, d, _source_index(mode, n, lo, hi), None, n)
                 for d, (n, (lo, hi)) in enumerate(zip(input.shape, pairs)) if lo or hi)
    return _PAD_MODES[mode].apply(input, maps=maps) if maps else input + 0


# ----------------------------------------------------------------------------- interpolate


def _source_scale(size, out, scale_factor, align_corners):
    """The step in input coordinates per output step (PyTorch's area_pixel_compute_scale)."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / scale_factor if scale_factor is not None else size / out


def _nearest_taps(size, out, scale_factor, exact):
    scale = _source_scale(size, out, scale_factor, False)
    j = numpy.arange(out, dtype=numpy.float64)
    # NOTE: computed in float32 as PyTorch does, so that borderline indices (e.g. 0.5 * 3) round the same way
    src = numpy.floor(((j + 0.5) if exact else j).astype(numpy.float32) * numpy.float32(scale))
    return numpy.minimum(src.astype(numpy.int64), size - 1), None


def _linear_taps(size, out, scale_factor, align_corners):
    scale = _source_scale(size, out, scale_factor, align_corners)
    j = numpy.arange(out, dtype=numpy.float64)
    src = j * scale if align_corners else numpy.maximum((j + 0.5) * scale - 0.5, 0.0)
    i0 = numpy.minimum(numpy.floor(src).astype(numpy.int64), size - 1)
    i1 = numpy.minimum(i0 + 1, size - 1)
    lam = src - i0
    return numpy.stack([i0, i1]), numpy.stack([1.0 - lam, lam])


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights of the four taps at offsets -1, 0, 1, 2 for fraction ``t``."""
    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return numpy.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])


def _cubic_taps(size, out, scale_factor, align_corners):
    scale = _source_scale(size, out, scale_factor, align_corners)
    j = numpy.arange(out, dtype=numpy.float64)
    src = j * scale if align_corners else (j + 0.5) * scale - 0.5  # NOTE: not clamped at 0, unlike linear
    base = numpy.floor(src).astype(numpy.int64)
    index = numpy.clip(base[None] + numpy.arange(-1, 3)[:, None], 0, size - 1)
    return index, _cubic_weights(src - base)


_MODE_DIMS = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "linear": (1,), "bilinear": (2,),
              "trilinear": (3,), "bicubic": (2,), "area": (1, 2, 3)}


def _output_sizes(op, input, nd, size, scale_factor, recompute_scale_factor):  # noqa: A002
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op}: only one of size or scale_factor should be defined")
    spatial = tuple(input.shape[2:])
    if size is not None:
        sizes = ntuple(op, "size", size, nd, 1) if isinstance(size, (list, tuple)) else ntuple(op, "size", size,
                                                                                                nd, 1)
        return sizes, (None,) * nd
    factors = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) else (scale_factor,) * nd
    if len(factors) != nd or not all(isinstance(f, numbers.Real) and not isinstance(f, bool) and f > 0
                                     for f in factors):
        raise ValueError(f"{op}: scale_factor must be a positive number or a tuple of {nd} of them for "
                         f"{input.ndim}D input, got {scale_factor!r}")
    sizes = tuple(int(math.floor(n * float(f))) for n, f in zip(spatial, factors))
    if any(s < 1 for s in sizes):
        raise RuntimeError(f"{op}: computed output size {sizes} is too small (input {spatial}, scale_factor "
                           f"{scale_factor!r})")
    return sizes, (None,) * nd if recompute_scale_factor else tuple(float(f) for f in factors)


def _check_interpolate(input, mode, align_corners, antialias):  # noqa: A002
    require_tensor("interpolate", input, "input")
    if mode not in _MODE_DIMS:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (expected one of "
                                  f"{', '.join(_MODE_DIMS)})")
    nd = input.ndim - 2
    if nd not in _MODE_DIMS[mode]:
        want = " or ".join(f"{d + 2}D" for d in _MODE_DIMS[mode])
        raise NotImplementedError(f"interpolate: got {input.ndim}D input, but {mode} mode needs {want} input "
                                  f"(batch and channel dims first)")
    if align_corners is not None and mode not in ("linear", "bilinear", "trilinear", "bicubic"):
        raise ValueError("interpolate: align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by cupynet")
    require_floating("interpolate", input)
    return nd


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of an (N, C, *spatial) input (``torch.nn.functional.interpolate``).

    Args:
        input: the input Tensor, 3D, 4D or 5D.
        size: the output spatial size (int or tuple), or None when scale_factor is given.
        scale_factor: multiplier of the spatial size (number or tuple), or None when size is given.
        mode: "nearest", "nearest-exact", "linear" (3D), "bilinear" (4D), "bicubic" (4D), "trilinear" (5D)
            or "area" (adaptive average pooling).
        align_corners: for the interpolating modes: map corner pixel centres onto each other (default False).
        recompute_scale_factor: compute the sampling step from the output size rather than scale_factor.
        antialias: not supported (must be False).
    """
    nd = _check_interpolate(input, mode, align_corners, antialias)
    sizes, factors = _output_sizes("interpolate", input, nd, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1](input, sizes)
    maps = []
    for i, (n, out, factor) in enumerate(zip(input.shape[2:], sizes, factors)):
        if mode in ("nearest", "nearest-exact"):
            index, weight = _nearest_taps(n, out, factor, mode == "nearest-exact")
        elif mode == "bicubic":
            index, weight = _cubic_taps(n, out, factor, bool(align_corners))
        else:
            index, weight = _linear_taps(n, out, factor, bool(align_corners))
        maps.append(_device_map(input, 2 + i, index, weight, n))
    cls = UpsampleNearestExact if mode == "nearest-exact" else _UPSAMPLE[(mode, nd)]
    return cls.apply(input, maps=tuple(maps))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """``F.upsample``: the old name of ``interpolate``.

    Args:
        input: the input Tensor.
        size: the output spatial size.
        scale_factor: multiplier of the spatial size.
        mode: the interpolation mode.
        align_corners: see ``interpolate``.
    """
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """``F.upsample_nearest``: ``interpolate(mode="nearest")``.

    Args:
        input: the input Tensor.
        size: the output spatial size.
        scale_factor: multiplier of the spatial size.
    """
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """``F.upsample_bilinear``: ``interpolate(mode="bilinear", align_corners=True)``.

    Args:
        input: a 4D Tensor.
        size: the output spatial size.
        scale_factor: multiplier of the spatial size.
    """
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------------- pixel shuffle


def _check_factor(op, input, factor, what):  # noqa: A002
    require_tensor(op, input, "input")
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise RuntimeError(f"{op}: {what} must be greater than 0, but got: {factor!r}")
    if input.ndim < 3:
        raise RuntimeError(f"{op}: expected input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    return tuple(input.shape[-3:])


def _rearrange(input, split, order, out):  # noqa: A002
    """Reshape the last three dims (C, H, W) to the five ``split``, permute those by ``order``, reshape to ``out``."""
    lead = tuple(input.shape[:-3])
    k = len(lead)
    x = permute(reshape(input, lead + split), tuple(range(k)) + tuple(k + i for i in order))
    return reshape(x, lead + out)


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r): depth to space (a reshape and a permute).

    Args:
        input: a Tensor with at least 3 dims.
        upscale_factor: r.
    """
    r = upscale_factor
    c, h, w = _check_factor("pixel_shuffle", input, r, "upscale_factor")
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    return _rearrange(input, (c // (r * r), r, r, h, w), (0, 3, 1, 4, 2), (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W): space to depth, the inverse of ``pixel_shuffle``.

    Args:
        input: as in ``pixel_shuffle``.
        downscale_factor: r.
    """
    r = downscale_factor
    c, h, w = _check_factor("pixel_unshuffle", input, r, "downscale_factor")
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} and input.size(-1)={w} are not divisible by {r}")
    return _rearrange(input, (c, h // r, r, w // r, r), (0, 2, 4, 1, 3), (c * r * r, h // r, w // r))


# ----------------------------------------------------------------------------- unfold / fold


def _im2col_array(x, geoms):
    """(N, C, *size) -> (N, C * prod(kernel), prod(out)), PyTorch's unfold layout."""
    n, c, nd = x.shape[0], x.shape[1], len(geoms)
    win = windows(x, geoms)  # (N, C, *out, *kernel)
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return xp_of(x).ascontiguousarray(win.transpose(perm)).reshape(
        n, c * math.prod(g.kernel for g in geoms), math.prod(g.out for g in geoms))


def _col2im_array(cols, geoms, dtype):
    """The adjoint of ``_im2col_array``: (N, C * prod(kernel), L) -> (N, C, *size), overlaps summed."""
    nd, kernel, out = len(geoms), tuple(g.kernel for g in geoms), tuple(g.out for g in geoms)
    n, c = cols.shape[0], cols.shape[1] // math.prod(kernel)
    blocks = cols.reshape((n, c) + kernel + out)
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return col2im(blocks.transpose(perm), geoms, dtype)


class Im2Col(Function):
    """``unfold``: every sliding block of a batched input as a column (unlisted for autocast)."""

    op_name = "im2col"

    @staticmethod
    def forward(ctx, x, geoms=()):
        ctx.geoms, ctx.dtype = geoms, x.dtype
        return _im2col_array(x.array, geoms)

    @staticmethod
    def backward(ctx, grad):
        return Col2Im.apply(grad, geoms=ctx.geoms)


class Col2Im(Function):
    """``fold``: sum columns of sliding blocks back into a batched image (unlisted for autocast)."""

    op_name = "col2im"

    @staticmethod
    def forward(ctx, cols, geoms=()):
        ctx.geoms = geoms
        return _col2im_array(cols.array, geoms, cols.dtype)

    @staticmethod
    def backward(ctx, grad):
        return Im2Col.apply(grad, geoms=ctx.geoms)


def _block_args(op, kernel_size, dilation, padding, stride):
    nd = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else 2
    if nd != 2:
        raise NotImplementedError(f"{op}: only 4-D input tensors (batched image-like tensors) are supported, so "
                                  f"kernel_size must have 2 entries, got {kernel_size!r}")
    return (ntuple(op, "kernel_size", kernel_size, 2, 1), ntuple(op, "dilation", dilation, 2, 1),
            ntuple(op, "padding", padding, 2, 0), ntuple(op, "stride", stride, 2, 1))


def _block_geoms(op, sizes, kernel, dilation, padding, stride):
    geoms = []
    for n, k, d, p, s in zip(sizes, kernel, dilation, padding, stride):
        out = output_length(n, k, s, d, p, p)
        if out < 1:
            raise RuntimeError(f"{op}: Given input with spatial size {tuple(sizes)}, kernel_size={kernel}, "
                               f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
                               f"blocks is non-positive")
        geoms.append(Geometry(k, s, d, p, n, out))
    return tuple(geoms)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Extract sliding blocks: (N, C, H, W) -> (N, C * kH * kW, L), L the number of blocks (im2col).

    Args:
        input: a 4D (or unbatched 3D) floating Tensor.
        kernel_size: block size, int or pair.
        dilation: spacing between block elements.
        padding: implicit zero padding on both sides.
        stride: step between blocks.
    """
    kernel, dilation, padding, stride = _block_args("unfold", kernel_size, dilation, padding, stride)
    if not isinstance(input, Tensor) or input.ndim not in (3, 4):
        shape = tuple(input.shape) if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"unfold: Expected 3D or 4D (batch mode) tensor for input, but got: {shape}")
    require_floating("unfold", input)
    x = reshape(input, (1,) + tuple(input.shape)) if input.ndim == 3 else input
    geoms = _block_geoms("unfold", x.shape[2:], kernel, dilation, padding, stride)
    out = Im2Col.apply(x, geoms=geoms)
    return reshape(out, tuple(out.shape[1:])) if input.ndim == 3 else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Sum sliding blocks back into an image: (N, C * kH * kW, L) -> (N, C, *output_size) (col2im).

    Args:
        input: a 3D (or unbatched 2D) floating Tensor of columns.
        output_size: the spatial size of the output, int or pair.
        kernel_size: block size, int or pair.
        dilation: spacing between block elements.
        padding: implicit zero padding on both sides.
        stride: step between blocks.
    """
    kernel, dilation, padding, stride = _block_args("fold", kernel_size, dilation, padding, stride)
    sizes = ntuple("fold", "output_size", output_size, 2, 1)
    if not isinstance(input, Tensor) or input.ndim not in (2, 3):
        shape = tuple(input.shape) if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input, but got: {shape}")
    require_floating("fold", input)
    cols = reshape(input, (1,) + tuple(input.shape)) if input.ndim == 2 else input
    taps = math.prod(kernel)
    if cols.shape[1] % taps:
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={cols.shape[1]} and kernel_size={kernel}")
    geoms = _block_geoms("fold", sizes, kernel, dilation, padding, stride)
    blocks = math.prod(g.out for g in geoms)
    if cols.shape[2] != blocks:
        raise RuntimeError(f"fold: Given output_size={sizes}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {blocks}, but got input.size(2)="
                           f"{cols.shape[2]}.")
    out = Col2Im.apply(cols, geoms=geoms)
    return reshape(out, tuple(out.shape[1:])) if input.ndim == 2 else out


METHODS = {}

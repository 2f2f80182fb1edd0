"""Pooling: max and average pooling (1-D, 2-D, 3-D), adaptive average and max pooling, max unpooling.

Every pooling op is linear in its input once the window choice is fixed, so each
comes with its adjoint op and the two are each other's backward (double backward
for free): max pooling gathers at the argmax of each window and scatters back;
average pooling sums windows times ``1/divisor`` and spreads back; adaptive
average pooling multiplies by an averaging matrix per spatial dimension; adaptive
max pooling and max unpooling move values between planes at flat indices
(scatter-add and gather, each the other's backward).

NOTE (numerics): max pooling runs natively in half precision (no accumulation);
window sums and averaging matrices accumulate in fp32 and round once.
"""

from __future__ import annotations

import math

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._conv_args import check_input, ntuple
from ._im2col import Geometry, col2im, output_length, pad_input, tap_windows
from ._util import check_same_device, compute_in_fp32, host_check_range, xp_of
from .indexing import GetItem, IndexAddZeros
from .linalg import matmul_arrays
from .shape import squeeze, unsqueeze

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _tap_slices(geoms):
    """For each kernel tap (in C order), the strided slice of the padded input that this tap reads in every window."""
    for _, slices in tap_windows(geoms):
        yield (Ellipsis,) + slices


def _tap_dtype(geoms):
    """The smallest unsigned dtype that numbers every tap of a window (uint8 up to 256 taps)."""
    taps = math.prod(g.kernel for g in geoms)
    return dtypes.uint8 if taps <= 256 else dtypes.int32


def _window_max(x, geoms):
    """Max over each window and the winning tap (its index in the window, C order), as PyTorch picks it.

    NOTE: one strided slice per tap, no window copy, three array ops per tap (compare, tap select,
    running maximum). The tap select is ``where`` into a new array: NumPy's masked ``copyto`` into
    the same one is ~2x slower on these strided operands (measured on the CPU). Among equal maxima the first
    tap wins (strict ``>``). NaN propagates through ``maximum``; PyTorch's rule
    (``val > max || isnan(val)``) then points the index at the window's last NaN tap, which a second
    pass does only when a NaN is present (on NumPy; CuPy always runs it rather than ask the device
    whether there is one).
    """
    xp = xp_of(x)
    if type(x) is numpy.ndarray and x.dtype in dtypes.LOW_PRECISION:
        best, arg = _window_max(x.astype(dtypes.float32), geoms)
        return _narrow_exact(best, x.dtype), arg
    if _is_2x2_stride_2(x, geoms):
        return _window_max_2x2(x, geoms)
    padded = pad_input(x, geoms, -numpy.inf)
    slices = list(_tap_slices(geoms))
    tap_dtype = _tap_dtype(geoms)
    best = padded[slices[0]].copy(order="K")  # NOTE: "K": keep the input's memory layout
    arg = xp.zeros_like(best, dtype=tap_dtype)
    for tap, index in enumerate(slices[1:], start=1):
        v = padded[index]
        arg = xp.where(xp.greater(v, best), tap_dtype.type(tap), arg)
        xp.maximum(best, v, out=best)
    if xp is not numpy or xp.isnan(best).any():
        for tap, index in enumerate(slices):
            arg = xp.where(xp.isnan(padded[index]), tap_dtype.type(tap), arg)
    return best, arg


def _narrow_exact(a, dtype):
    """A float32 array whose values all came from ``dtype`` (float16 / bfloat16) back in ``dtype``, exactly.

    NOTE (CPU speed): NumPy compares half and bfloat16 values element by element in software (ml_dtypes),
    ~3x slower than float32, so max pooling widens (exact), runs in float32 and narrows its output:
    bfloat16 is the upper half of float32's bits (the lower half is zero for these values: a shift,
    not ml_dtypes' slower rounding cast); float16 rounds exactly through ``astype``.
    """
    if dtype == dtypes.bfloat16:
        return (a.view(numpy.uint32) >> 16).astype(numpy.uint16).view(dtype)
    return a.astype(dtype)


def _is_2x2_stride_2(x, geoms):
    """The usual 2x2, stride-2 max pooling without padding on NumPy: ``_window_max_2x2``'s case."""
    return (type(x) is numpy.ndarray and len(geoms) == 2 and x.dtype.kind == "f"
            and all(g.kernel == 2 and g.stride == 2 and g.dilation == 1 and g.lo == 0 and g.padded <= g.size
                    for g in geoms))


def _window_max_2x2(x, geoms):
    """``_window_max`` for 2x2 windows at stride 2: rows first, then columns, the winning tap as uint8.

    NOTE (CPU speed): the first pass compares whole row pairs (contiguous runs) into a half-size
    array, the second the column pairs of that: ~40% faster than four strided taps. The tap rule is
    the same (the first maximum in C order, ``2 * row + column``): the right column wins when
    strictly greater, or on a tie when the left column's maximum sits in the lower row and the right
    one's in the upper (index 2 against 1). NaN: as ``_window_max``, the window's last NaN tap.
    """
    ho, wo = geoms[0].out, geoms[1].out
    top, bottom = x[:, :, 0:2 * ho:2, :2 * wo], x[:, :, 1:2 * ho:2, :2 * wo]
    rows_max = numpy.maximum(top, bottom)
    lower = numpy.greater(bottom, top)                      # per column: does the lower row win?
    left, right = rows_max[..., 0::2], rows_max[..., 1::2]
    lower_left, lower_right = lower[..., 0::2], lower[..., 1::2]
    best = numpy.maximum(left, right)
    take_right = numpy.greater(right, left)
    take_right |= numpy.equal(right, left) & lower_left & ~lower_right
    row = numpy.where(take_right, lower_right, lower_left)
    arg = (row.view(numpy.uint8) << 1) | take_right.view(numpy.uint8)
    if numpy.isnan(best).any():
        for tap, index in enumerate(_tap_slices(geoms)):
            arg = numpy.where(numpy.isnan(x[index]), numpy.uint8(tap), arg)
    return best, arg


def _padded_index(arg, geoms):
    """Flat index, into a C-contiguous (N, C, *padded) buffer, of the input element each window's ``arg`` names.

    NOTE: built on the arrays' device from ``arange``s (nothing uploaded): the window start plus the
    tap's offset inside its window plus the (n, c) plane's start.
    """
    xp, nd = xp_of(arg), len(geoms)
    padded = tuple(g.padded for g in geoms)
    steps = [math.prod(padded[i + 1:]) for i in range(nd)]
    taps = xp.zeros((), dtype=dtypes.int64)
    starts = xp.zeros((), dtype=dtypes.int64)
    for g, step in zip(geoms, steps):
        taps = taps[..., None] + xp.arange(g.kernel, dtype=dtypes.int64) * (g.dilation * step)
        starts = starts[..., None] + xp.arange(g.out, dtype=dtypes.int64) * (g.stride * step)
    planes = xp.arange(arg.shape[0] * arg.shape[1], dtype=dtypes.int64) * math.prod(padded)
    index = taps.reshape(-1).take(arg)
    index += starts
    index += planes.reshape(arg.shape[:2] + (1,) * nd)
    return index


def _gather(x, geoms, arg):
    """The element of each window that ``arg`` names (max pooling with the argmax held fixed)."""
    xp = xp_of(x)
    padded = xp.ascontiguousarray(pad_input(x, geoms, 0.0))
    return padded.reshape(-1).take(_padded_index(arg, geoms))


def _scatter(g, geoms, arg, dtype):
    """Adjoint of ``_gather``: each value of ``g`` added back at the input position ``arg`` names.

    NOTE: windows that cannot overlap (stride >= kernel, the usual pooling) name distinct positions,
    so one indexed assignment writes them all; overlapping windows add tap by tap, in fp32 for half
    dtypes (one rounding), without a scatter-add (deterministic).
    """
    xp = xp_of(g)
    overlap = any(g_.stride < g_.extent for g_ in geoms)
    acc = dtypes.float32 if overlap and dtype in dtypes.LOW_PRECISION else dtype
    shape = g.shape[:2] + tuple(gm.padded for gm in geoms)
    if overlap:
        buf = xp.zeros(shape, dtype=acc)
        for tap, index in enumerate(_tap_slices(geoms)):
            buf[index] += xp.where(arg == tap, g, 0).astype(acc, copy=False)
    else:
        buf = xp.zeros(math.prod(shape), dtype=acc)
        buf[_padded_index(arg, geoms)] = g
        buf = buf.reshape(shape)
    crop = tuple(slice(gm.lo, gm.lo + gm.size) for gm in geoms)
    return buf[(Ellipsis,) + crop].astype(dtype, copy=False)


class MaxPool(Function):
    """Max over each window; with ``with_indices`` also the flat input index of each maximum (int64)."""

    op_name = "max_pool"

    @staticmethod
    def forward(ctx, x, geoms=(), with_indices=False):
        out, arg = _window_max(x.array, geoms)
        ctx.geoms, ctx.arg, ctx.dtype = geoms, arg, x.dtype
        return (out, _flat_indices(arg, geoms)) if with_indices else out

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        return _WindowScatter.apply(grad, geoms=ctx.geoms, arg=ctx.arg, dtype=ctx.dtype)


class _WindowScatter(Function):
    """Adjoint of gathering one element per window: add each value back at its chosen input position."""

    op_name = "max_pool_backward"

    @staticmethod
    def forward(ctx, g, geoms=(), arg=None, dtype=None):
        ctx.geoms, ctx.arg = geoms, arg
        return _scatter(g.array, geoms, arg, dtype)

    @staticmethod
    def backward(ctx, grad):
        return _WindowGather.apply(grad, geoms=ctx.geoms, arg=ctx.arg)


class _WindowGather(Function):
    """Take one element per window (the one ``arg`` names): max pooling with the argmax held fixed."""

    op_name = "max_pool_gather"

    @staticmethod
    def forward(ctx, x, geoms=(), arg=None):
        ctx.geoms, ctx.arg, ctx.dtype = geoms, arg, x.dtype
        return _gather(x.array, geoms, arg)

    @staticmethod
    def backward(ctx, grad):
        return _WindowScatter.apply(grad, geoms=ctx.geoms, arg=ctx.arg, dtype=ctx.dtype)


def _flat_indices(arg, geoms):
    """Flat index into each (unpadded) input plane of every window's maximum, as PyTorch returns it."""
    xp = xp_of(arg)
    taps = xp.unravel_index(arg.astype(dtypes.int64), tuple(g.kernel for g in geoms))
    nd, flat = len(geoms), 0
    for i, (tap, g) in enumerate(zip(taps, geoms)):
        start = xp.arange(g.out).reshape((g.out,) + (1,) * (nd - 1 - i)) * g.stride - g.lo
        flat = flat * g.size + start + tap * g.dilation
    return flat.astype(dtypes.int64)


def _window_sum(x, geoms):
    """Sum over each window, one strided slice-add per tap (fp32 accumulation for half dtypes)."""
    padded = pad_input(x, geoms, 0.0)
    slices = _tap_slices(geoms)
    total = padded[next(slices)].astype(dtypes.float32 if x.dtype in dtypes.LOW_PRECISION else x.dtype)
    for index in slices:
        total += padded[index]
    return total


class AvgPool(Function):
    """Window sums times ``1/divisor`` (a per-window array)."""

    op_name = "avg_pool"

    @staticmethod
    def forward(ctx, x, geoms=(), inv_divisor=None):
        ctx.geoms, ctx.inv_divisor, ctx.dtype = geoms, inv_divisor, x.dtype
        return (_window_sum(x.array, geoms) * inv_divisor).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return _AvgSpread.apply(grad, geoms=ctx.geoms, inv_divisor=ctx.inv_divisor, dtype=ctx.dtype)


class _AvgSpread(Function):
    """Adjoint of ``AvgPool``: each output value times ``1/divisor`` added to every element of its window."""

    op_name = "avg_pool_backward"

    @staticmethod
    def forward(ctx, g, geoms=(), inv_divisor=None, dtype=None):
        ctx.geoms, ctx.inv_divisor = geoms, inv_divisor
        scaled = compute_in_fp32(g.array) * inv_divisor
        kernel = tuple(gm.kernel for gm in geoms)
        cols = xp_of(g).broadcast_to(scaled.reshape(scaled.shape + (1,) * len(kernel)), scaled.shape + kernel)
        return col2im(cols, geoms, dtype)

    @staticmethod
    def backward(ctx, grad):
        return AvgPool.apply(grad, geoms=ctx.geoms, inv_divisor=ctx.inv_divisor)


class AdaptiveAvgPool(Function):
    """Multiply each spatial dimension by an averaging matrix (or, ``transposed``, by its transpose)."""

    op_name = "adaptive_avg_pool"

    @staticmethod
    def forward(ctx, x, mats=(), transposed=False):
        ctx.mats, ctx.transposed = mats, transposed
        y = compute_in_fp32(x.array)
        nd = len(mats)
        for i, m in enumerate(mats):
            axis = x.ndim - nd + i
            m = m.astype(y.dtype, copy=False)
            y = matmul_arrays(y.swapaxes(axis, -1), m if transposed else m.T).swapaxes(axis, -1)
        return xp_of(y).ascontiguousarray(y).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return AdaptiveAvgPool.apply(grad, mats=ctx.mats, transposed=not ctx.transposed)


def _plane_offsets(xp, lead, plane, nd):
    """Flat start of each (n, c) plane of ``plane`` elements, shaped ``lead`` + nd ones (broadcasts over a plane).

    Args:
        xp: the array module.
        lead: the leading (batch, channel) shape.
        plane: elements per plane.
        nd: number of spatial dimensions.
    """
    planes = xp.arange(math.prod(lead), dtype=dtypes.int64) * plane
    return planes.reshape(tuple(lead) + (1,) * nd)


class MaxUnpool(Function):
    """Put each value at its flat plane index in a zero output (the partial inverse of max pooling).

    A repeated index is written, not added (the last write wins, as in PyTorch); the backward gathers
    the gradient at the same positions (``GetItem``), whose own backward is the scatter-add.
    """

    op_name = "max_unpool"

    @staticmethod
    def forward(ctx, values, index=(), shape=()):
        ctx.index = index
        out = xp_of(values).zeros(shape, dtype=values.dtype)
        out[index] = values.array
        return out

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, index=ctx.index)


def _adaptive_windows(xp, sizes, outs):
    """Flat plane index of every tap of every adaptive window, shaped (*outs, taps).

    NOTE: windows have different lengths; each is padded to the longest by repeating its last element,
    which changes neither the maximum nor which element is first to reach it.
    """
    nd, flat = len(sizes), xp.zeros((), dtype=dtypes.int64)
    for size, out in zip(sizes, outs):
        lo, hi = _adaptive_bounds(xp, size, out)
        taps = max(-(-((i + 1) * size) // out) - (i * size) // out for i in range(out))
        pos = xp.minimum(lo[:, None] + xp.arange(taps, dtype=dtypes.int64), hi[:, None] - 1)
        flat = flat[..., None, None] * size + pos  # NOTE: (o_1, k_1, ..., o_d, k_d)
    order = tuple(range(0, 2 * nd, 2)) + tuple(range(1, 2 * nd, 2))
    flat = flat.transpose(order)
    return flat.reshape(tuple(outs) + (-1,))


def _adaptive_argmax(x, nd, outs):
    """Flat plane index (int64, output-shaped) of each adaptive window's maximum, as PyTorch picks it.

    NOTE: the first maximum in C order wins ties; a NaN wins over numbers and, as in PyTorch
    (``val > max || isnan(val)``), the window's last NaN is the one named.
    """
    xp = xp_of(x)
    table = _adaptive_windows(xp, x.shape[-nd:], outs)
    lead = x.shape[:-nd]
    windows = xp.ascontiguousarray(x).reshape(lead + (math.prod(x.shape[-nd:]),)).take(table, axis=-1)
    tap = windows.argmax(axis=-1)
    nan = xp.isnan(windows)
    if xp is not numpy or nan.any():
        last = nan.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
        tap = xp.where(nan.any(axis=-1), last, tap)
    return xp.take_along_axis(xp.broadcast_to(table, windows.shape), tap[..., None], axis=-1)[..., 0]


class AdaptiveMaxPool(Function):
    """Max over each adaptive window; with ``with_indices`` also the flat plane index of each maximum (int64)."""

    op_name = "adaptive_max_pool"

    @staticmethod
    def forward(ctx, x, outs=(), with_indices=False):
        nd = len(outs)
        xp = xp_of(x)
        arg = _adaptive_argmax(x.array, nd, outs)
        flat = arg + _plane_offsets(xp, x.shape[:-nd], math.prod(x.shape[-nd:]), nd)
        ctx.index, ctx.shape = xp.unravel_index(flat, x.shape), x.shape
        out = x.array[ctx.index]
        return (out, arg) if with_indices else out

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        # NOTE: overlapping adaptive windows can share a maximum: the scatter-add accumulates (fp32 for halves)
        return IndexAddZeros.apply(grad, index=ctx.index, shape=ctx.shape)


def _window_args(op_name, nd, kernel_size, stride, padding):
    """kernel, stride (the kernel when not given, as PyTorch) and padding as ``nd``-tuples, each checked."""
    kernel = ntuple(op_name, "kernel_size", kernel_size, nd, 1)
    stride = kernel if stride is None or stride == [] or stride == () else ntuple(op_name, "stride", stride, nd, 1)
    return kernel, stride, ntuple(op_name, "padding", padding, nd, 0)


def _pool_geoms(op_name, nd, input, kernel_size, stride, padding, dilation, ceil_mode):  # noqa: A002
    kernel, stride, padding = _window_args(op_name, nd, kernel_size, stride, padding)
    dilation = ntuple(op_name, "dilation", dilation, nd, 1)
    geoms = []
    for size, k, s, p, d in zip(input.shape[-nd:], kernel, stride, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise ValueError(f"{op_name}: pad should be at most half of effective kernel size, but got "
                             f"padding={padding}, kernel_size={kernel} and dilation={dilation}")
        out = output_length(size, k, s, d, p, p, ceil_mode)
        if out < 1:
            raise RuntimeError(f"{op_name}: output size {out} is too small for input of shape {tuple(input.shape)} "
                               f"(kernel_size={kernel}, stride={stride}, padding={padding}, dilation={dilation})")
        geoms.append(Geometry(k, s, d, p, size, out))
    return tuple(geoms)


def _batched(unbatched, fn, input):  # noqa: A002
    x = unsqueeze(input, 0) if unbatched else input
    out = fn(x)
    if isinstance(out, tuple):
        return tuple(squeeze(o, 0) for o in out) if unbatched else out
    return squeeze(out, 0) if unbatched else out


def _max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):  # noqa: A002
    op_name = f"max_pool{nd}d"
    unbatched = check_input(op_name, nd, input)
    geoms = _pool_geoms(op_name, nd, input, kernel_size, stride, padding, dilation, ceil_mode)
    return _batched(unbatched, lambda x: MaxPool.apply(x, geoms=geoms, with_indices=bool(return_indices)), input)


def _inv_divisor(xp, geoms, count_include_pad, divisor_override, dtype):
    """``1/divisor`` per window, PyTorch's rule for padding and ceil_mode windows.

    NOTE (no host-to-device copy): nothing is uploaded from host memory. When every window has the same divisor
    (no padding counted differently, no clipped ceil_mode window, or ``divisor_override``) it is a
    Python float; otherwise the per-window array is computed on the input's device (``xp.arange``
    and friends), in float32 (float64 for float64 inputs).

    Args:
        xp: the input's array module.
        geoms: one Geometry per spatial dimension.
        count_include_pad: count padded zeros in the divisor.
        divisor_override: a non-zero int to use instead, or None.
        dtype: the input's dtype.
    """
    if divisor_override is not None:
        if not isinstance(divisor_override, int) or divisor_override == 0:
            raise ValueError(f"avg_pool: divisor_override must be a non-zero int, got {divisor_override!r}")
        return 1.0 / divisor_override
    spans = [_window_spans(g, count_include_pad) for g in geoms]
    if all(lo_hi is None for lo_hi in spans):
        return 1.0 / math.prod(g.kernel for g in geoms)
    acc = dtypes.float64 if dtype == dtypes.float64 else dtypes.float32
    counts = xp.ones((), dtype=acc)
    for g, lo_hi in zip(geoms, spans):
        if lo_hi is None:
            count = xp.full((g.out,), g.kernel, dtype=acc)
        else:
            start = xp.arange(g.out, dtype=acc) * g.stride - g.lo
            end = xp.minimum(start + g.kernel, lo_hi[1])
            count = end - xp.maximum(start, lo_hi[0])
        counts = counts[..., None] * count
    return 1.0 / counts


def _window_spans(g, count_include_pad):
    """The range ``(low, high)`` a window is clipped to along ``g``, or None if no window is clipped."""
    low, high = (0, g.size) if not count_include_pad else (-g.lo, g.size + g.lo)
    first, last = -g.lo, (g.out - 1) * g.stride - g.lo
    return None if first >= low and last + g.kernel <= high else (low, high)


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):  # noqa: A002
    op_name = f"avg_pool{nd}d"
    unbatched = check_input(op_name, nd, input)
    geoms = _pool_geoms(op_name, nd, input, kernel_size, stride, padding, 1, ceil_mode)
    inv = _inv_divisor(xp_of(input), geoms, count_include_pad, divisor_override, input.dtype)
    return _batched(unbatched, lambda x: AvgPool.apply(x, geoms=geoms, inv_divisor=inv), input)


def _averaging_matrix(xp, size, out):
    """(out, size) float64 matrix whose row i averages input[floor(i*size/out) : ceil((i+1)*size/out)].

    NOTE (no host-to-device copy): computed on the input's device from ``arange``s, nothing uploaded from host memory.

    Args:
        xp: the input's array module.
        size: input length.
        out: output length.
    """
    lo, hi = _adaptive_bounds(xp, size, out)
    cols = xp.arange(size, dtype=dtypes.int64)[None, :]
    return ((cols >= lo[:, None]) & (cols < hi[:, None])) / (hi - lo)[:, None].astype(dtypes.float64)


def _adaptive_bounds(xp, size, out):
    """Start and end (exclusive) of each adaptive window: ``floor(i*size/out)`` to ``ceil((i+1)*size/out)``.

    Args:
        xp: the input's array module.
        size: input length.
        out: output length.
    """
    rows = xp.arange(out, dtype=dtypes.int64)
    return (rows * size) // out, -(-((rows + 1) * size) // out)


def _adaptive_sizes(op_name, nd, input, output_size):  # noqa: A002
    """Check an adaptive pooling call; return (unbatched, output sizes) with None sizes filled from the input."""
    unbatched = check_input(op_name, nd, input)
    if isinstance(output_size, (tuple, list)):
        output_size = tuple(s if s is not None else input.shape[-nd + i] for i, s in enumerate(output_size))
    return unbatched, ntuple(op_name, "output_size", output_size, nd, 1)


def _adaptive_avg_pool(nd, input, output_size):  # noqa: A002
    unbatched, sizes = _adaptive_sizes(f"adaptive_avg_pool{nd}d", nd, input, output_size)
    xp = xp_of(input)
    mats = tuple(_averaging_matrix(xp, n, o) for n, o in zip(input.shape[-nd:], sizes))
    return _batched(unbatched, lambda x: AdaptiveAvgPool.apply(x, mats=mats), input)


def _adaptive_max_pool(nd, input, output_size, return_indices):  # noqa: A002
    op_name = f"adaptive_max_pool{nd}d"
    unbatched, sizes = _adaptive_sizes(op_name, nd, input, output_size)
    if any(s == 0 for s in input.shape[-nd:]):
        raise RuntimeError(f"{op_name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                           f"has sizes {tuple(input.shape)}")
    return _batched(unbatched, lambda x: AdaptiveMaxPool.apply(x, outs=sizes, with_indices=bool(return_indices)),
                    input)


def _unpool_size(op_name, nd, input, kernel_size, stride, padding, output_size):  # noqa: A002
    """The spatial output size of max unpooling: ``output_size`` checked, or ``(in - 1)*stride - 2*pad + kernel``."""
    kernel, stride, padding = _window_args(op_name, nd, kernel_size, stride, padding)
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(input.shape[-nd:], stride, padding, kernel))
    if output_size is None:
        return default
    size = tuple(output_size)[-nd:] if isinstance(output_size, (tuple, list)) and len(output_size) in (nd, nd + 2) \
        else None
    if size is None or not all(isinstance(v, (int, numpy.integer)) and not isinstance(v, bool) for v in size):
        raise ValueError(f"{op_name}: output_size should be a sequence of {nd} or {nd + 2} ints, got {output_size!r}")
    for v, d, s in zip(size, default, stride):
        if not d - s < v < d + s:
            raise ValueError(f"{op_name}: invalid output_size {output_size!r} (dim {v} must be between {d - s + 1} "
                             f"and {d + s - 1})")
    return tuple(int(v) for v in size)


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    op_name = f"max_unpool{nd}d"
    check_input(op_name, nd, input)
    if not isinstance(indices, Tensor) or indices.dtype != dtypes.int64 or indices.shape != input.shape:
        got = f"{indices.dtype} {tuple(indices.shape)}" if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"{op_name}: expected indices to be an int64 Tensor of the input's shape "
                           f"{tuple(input.shape)}, got {got}")
    check_same_device(op_name, input=input, indices=indices)
    size = _unpool_size(op_name, nd, input, kernel_size, stride, padding, output_size)
    plane = math.prod(size)
    host_check_range(op_name, indices.array, 0, plane - 1, f"output volumes are of size {'x'.join(map(str, size))}")
    xp = xp_of(input)
    shape = tuple(input.shape[:-nd]) + size
    index = xp.unravel_index(indices.array + _plane_offsets(xp, input.shape[:-nd], plane, nd), shape)
    return MaxUnpool.apply(input, index=index, shape=shape)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """1-D max pooling over (N, C, L) or (C, L).

    Args:
        input: the input Tensor.
        kernel_size: window size.
        stride: step (default: kernel_size).
        padding: implicit -inf padding on both sides (at most half the effective kernel).
        dilation: spacing between window taps.
        ceil_mode: round the output length up (windows must start inside the input or left padding).
        return_indices: also return the flat index of each maximum.
    """
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); the gradient goes to each window's (first) maximum.

    Args:
        input: the input Tensor.
        kernel_size: window size, int or pair.
        stride: step, int or pair (default: kernel_size).
        padding: implicit -inf padding, int or pair (at most half the effective kernel).
        dilation: spacing between window taps.
        ceil_mode: round the output size up.
        return_indices: also return the flat index (into H*W) of each maximum, as int64.
    """
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W).

    Args:
        input: the input Tensor.
        kernel_size: window size, int or triple.
        stride: step (default: kernel_size).
        padding: implicit -inf padding.
        dilation: spacing between window taps.
        ceil_mode: round the output size up.
        return_indices: also return the flat index (into D*H*W) of each maximum.
    """
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    """1-D average pooling over (N, C, L) or (C, L).

    Args:
        input: the input Tensor.
        kernel_size: window size.
        stride: step (default: kernel_size).
        padding: implicit zero padding on both sides (at most half the kernel).
        ceil_mode: round the output length up.
        count_include_pad: count padded zeros in the divisor.
    """
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """2-D average pooling over (N, C, H, W) or (C, H, W).

    Args:
        input: the input Tensor.
        kernel_size: window size, int or pair.
        stride: step (default: kernel_size).
        padding: implicit zero padding (at most half the kernel).
        ceil_mode: round the output size up.
        count_include_pad: count padded zeros in the divisor.
        divisor_override: use this divisor for every window instead.
    """
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W).

    Args:
        input: the input Tensor.
        kernel_size: window size, int or triple.
        stride: step (default: kernel_size).
        padding: implicit zero padding.
        ceil_mode: round the output size up.
        count_include_pad: count padded zeros in the divisor.
        divisor_override: use this divisor for every window instead.
    """
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Average pooling to a fixed output length (window i covers floor(i*L/out) to ceil((i+1)*L/out)).

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length.
    """
    return _adaptive_avg_pool(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Average pooling to a fixed output size, e.g. ``(1, 1)`` for global average pooling.

    Args:
        input: (N, C, H, W) or (C, H, W).
        output_size: int or pair (None keeps that input size).
    """
    return _adaptive_avg_pool(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Average pooling to a fixed output size over three spatial dimensions.

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        output_size: int or triple (None keeps that input size).
    """
    return _adaptive_avg_pool(3, input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling to a fixed output length (window i covers floor(i*L/out) to ceil((i+1)*L/out)).

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length.
        return_indices: also return the flat index (into L) of each maximum, as int64.
    """
    return _adaptive_max_pool(1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling to a fixed output size; the gradient goes to each window's (first) maximum.

    Args:
        input: (N, C, H, W) or (C, H, W).
        output_size: int or pair (None keeps that input size).
        return_indices: also return the flat index (into H*W) of each maximum, as int64.
    """
    return _adaptive_max_pool(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling to a fixed output size over three spatial dimensions.

    Args:
        input: (N, C, D, H, W) or (C, D, H, W).
        output_size: int or triple (None keeps that input size).
        return_indices: also return the flat index (into D*H*W) of each maximum, as int64.
    """
    return _adaptive_max_pool(3, input, output_size, return_indices)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """Partial inverse of ``max_pool1d``: each value put at its index in a zero output.

    Args:
        input: (N, C, L) or (C, L), the pooled values.
        indices: the int64 indices ``max_pool1d(..., return_indices=True)`` returned.
        kernel_size: the pooling window.
        stride: the pooling step (default: kernel_size).
        padding: the pooling padding.
        output_size: the output length (default ``(L - 1)*stride - 2*padding + kernel_size``).
    """
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """Partial inverse of ``max_pool2d``: each value put at its index in a zero output, the rest zero.

    Args:
        input: (N, C, H, W) or (C, H, W), the pooled values.
        indices: the int64 indices ``max_pool2d(..., return_indices=True)`` returned.
        kernel_size: the pooling window, int or pair.
        stride: the pooling step (default: kernel_size).
        padding: the pooling padding.
        output_size: the output size (default ``(in - 1)*stride - 2*padding + kernel_size`` per dimension).
    """
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """Partial inverse of ``max_pool3d``: each value put at its index in a zero output.

    Args:
        input: (N, C, D, H, W) or (C, D, H, W), the pooled values.
        indices: the int64 indices ``max_pool3d(..., return_indices=True)`` returned.
        kernel_size: the pooling window, int or triple.
        stride: the pooling step (default: kernel_size).
        padding: the pooling padding.
        output_size: the output size (default ``(in - 1)*stride - 2*padding + kernel_size`` per dimension).
    """
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


METHODS = {}

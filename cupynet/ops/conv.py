"""Convolutions (1-D, 2-D, 3-D) and transposed convolutions: im2col + one GEMM per group.

Three ops describe the whole family, for the same window geometry (``_im2col.Geometry``):
``Conv`` maps input space to output space, ``ConvTranspose`` is its adjoint (output space
back to input space), and ``ConvWeight`` is the weight gradient. Each one's backward is
written with the other two, so gradients of any order come from the same three forwards:

    conv(x, w)            backward: dx = conv_transpose(g, w),  dw = conv_weight(x, g)
    conv_transpose(g, w)  backward: dg = conv(G, w),            dw = conv_weight(G, g)
    conv_weight(x, g)     backward: dx = conv_transpose(g, W),  dg = conv(x, W)

Column layout (speed): on NumPy the im2col matrix is built *channels last*: row ``(n, *o)``
holds the window as ``(*kernel, C/G)``, read from an ``(N, *padded, C)`` copy of the input through
``as_strided``, so the one copy that materializes the columns moves runs of ``kernel[-1] * C``
elements instead of ``kernel[-1]``. The GEMM result is then ``(N, *out, O)``, copied once to
``(N, O, *out)`` (the layout every other op expects, and the faster one for them). Conv keeps its
columns for the weight gradient instead of building them again. On CuPy the columns are channels
first, ``(C/G, *kernel)``, built and scattered back by the fused im2col/col2im kernels
(``ops/kernels``). The two layouts give the same values up to the order of the GEMM's fp32 sums.
The adjoint (``conv_transpose``, the input gradient) on NumPy runs one GEMM per kernel tap and adds
each tap's contiguous block into place (``_transpose_by_tap``), never building the columns.

NOTE (numerics): the GEMMs go through ``linalg.matmul_arrays`` (fp32 accumulation for
float16/bfloat16); the bias is added to the fp32 result and the sum rounded once; the
overlapping-window sums of conv_transpose accumulate in fp32 too (``col2im``).
"""

from __future__ import annotations

import math

from .. import dtypes
from ..autograd.function import Function
from . import kernels as fused
from ._conv_args import check_conv, check_conv_transpose, check_same_dtype
from ._im2col import pad_input, tap_windows
from ._util import xp_of
from .linalg import matmul_arrays
from .reduce import sum as _sum
from .shape import squeeze, unsqueeze

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


def _gemm(a, b, fp32_out=False):
    """Grouped GEMM ``(G, m, k) @ (G, k, n)``; one group is a plain 2-D GEMM (the fast BLAS path)."""
    if a.shape[0] == 1:
        return matmul_arrays(a[0], b[0], fp32_out=fp32_out)[None]
    return matmul_arrays(a, b, fp32_out=fp32_out)


def channels_last(x):
    """True when ``x``'s convolutions run on NumPy's channels-last path, False for the CuPy kernels.

    Args:
        x: the input array.
    """
    return not fused.kernels_enabled(x)


def _per_sample_columns(x, geoms, groups):
    """True when ``x``'s im2col runs per sample, by kernel tap: NumPy, and the taps' runs are the longer.

    NOTE (speed): the one copy that builds the columns moves contiguous runs of ``kernel[-1] * C/G``
    elements channels last, or of ``out[-1]`` elements per sample and tap (stride 1 in the last
    dimension); the longer runs win. First layers (1-3 channels) go per sample: their columns build
    4-8x faster, and the per-sample GEMMs write NCHW directly (no output transpose, which costs more
    than the GEMM itself at 16 output channels). CuPy's fused kernels take the matrix path.
    """
    if not channels_last(x):
        return False
    last = geoms[-1]
    run = last.out if last.stride == 1 else 1
    return x.shape[1] // groups * last.kernel < run


def padded_channels_last(x, geoms, value=0.0):
    """``x`` (N, C, *size) as a C-contiguous ``(N, *padded, C)`` array holding every window of ``geoms``.

    NOTE: the one pass over ``x`` that changes its layout (none for an unpadded input that is
    already channels last in memory).

    Args:
        x: the input array.
        geoms: one Geometry per spatial dimension.
        value: the padding value.
    """
    xp = xp_of(x)
    moved = xp.moveaxis(x, 1, -1)
    if all(g.padded == g.size and g.lo == 0 for g in geoms):
        return xp.ascontiguousarray(moved)
    buf = xp.full((x.shape[0],) + tuple(g.padded for g in geoms) + (x.shape[1],), value, dtype=x.dtype)
    buf[(slice(None),) + tuple(slice(g.lo, g.lo + g.size) for g in geoms)] = moved
    return buf


def windows_channels_last(buf, geoms, groups=1):
    """A strided view ``(N, *out, *kernel, G, C/G)`` of every window of a ``padded_channels_last`` buffer.

    Args:
        buf: (N, *padded, C) C-contiguous array.
        geoms: one Geometry per spatial dimension.
        groups: number of channel groups.
    """
    n, c, nd = buf.shape[0], buf.shape[-1], len(geoms)
    steps = buf.strides[1:1 + nd]
    shape = ((n,) + tuple(g.out for g in geoms) + tuple(g.kernel for g in geoms) + (groups, c // groups))
    strides = ((buf.strides[0],) + tuple(s * g.stride for s, g in zip(steps, geoms))
               + tuple(s * g.dilation for s, g in zip(steps, geoms)) + (buf.strides[-1] * (c // groups),
                                                                        buf.strides[-1]))
    return xp_of(buf).lib.stride_tricks.as_strided(buf, shape, strides)


def _cols(x, geoms, groups, last):
    """im2col: ``x`` (N, C, *size) -> (G, N * prod(out), C/G * prod(kernel)), one copy.

    Channels-last columns ``(*kernel, C/G)`` when ``last``, else channels-first ``(C/G, *kernel)``
    (the fused kernel on CuPy).
    """
    if not last:
        return fused.im2col(x, geoms, groups)
    nd = len(geoms)
    win = windows_channels_last(padded_channels_last(x, geoms), geoms, groups)
    win = win.transpose((1 + 2 * nd, 0) + tuple(range(1, 1 + 2 * nd)) + (2 + 2 * nd,))
    # NOTE: explicit sizes, never -1: NumPy cannot infer a dimension of an empty array (an empty batch)
    rows = x.shape[0] * math.prod(g.out for g in geoms)
    return win.reshape(groups, rows, x.shape[1] // groups * math.prod(g.kernel for g in geoms))


def _sample_cols(x, geoms, groups):
    """Per-sample columns on NumPy: (N, C, *size) -> (N, G, C/G * prod(kernel), prod(out)), one strided copy
    per kernel tap (rows in the weight's own ``(C/G, *kernel)`` order)."""
    xp = xp_of(x)
    n, c = x.shape[0], x.shape[1]
    kernel, out = tuple(g.kernel for g in geoms), tuple(g.out for g in geoms)
    padded = pad_input(x, geoms, 0.0)
    cols = xp.empty((n, c) + kernel + out, dtype=x.dtype)
    for tap, source in tap_windows(geoms):
        cols[(slice(None), slice(None)) + tap] = padded[(Ellipsis,) + source]
    return cols.reshape(n, groups, c // groups * math.prod(kernel), math.prod(out))


def _weight_matrix(w, groups, last):
    """(O, C/G, *kernel) -> (G, C/G * prod(kernel), O/G), rows in the columns' order."""
    o, cg, nd = w.shape[0], w.shape[1], w.ndim - 2
    w = w.reshape((groups, o // groups) + w.shape[1:])
    perm = (0,) + tuple(range(3, 3 + nd)) + (2, 1) if last else (0, 2) + tuple(range(3, 3 + nd)) + (1,)
    return w.transpose(perm).reshape(groups, cg * math.prod(w.shape[3:]), o // groups)


def _weight_from_matrix(m, cg, kernel, last):
    """(G, O/G, C/G * prod(kernel)) in the columns' order -> (O, C/G, *kernel)."""
    groups, og, nd = m.shape[0], m.shape[1], len(kernel)
    o = groups * og
    if not last:
        return m.reshape((o, cg) + kernel)
    w = m.reshape((o,) + kernel + (cg,)).transpose((0, 1 + nd) + tuple(range(1, 1 + nd)))
    return xp_of(m).ascontiguousarray(w)


def _out_matrix(g, groups):
    """(N, O, *out) -> (G, N * prod(out), O/G): no copy for one group and a channels-last ``g``."""
    n, o, nd = g.shape[0], g.shape[1], g.ndim - 2
    g = xp_of(g).moveaxis(g, 1, -1).reshape((n,) + g.shape[2:] + (groups, o // groups))
    g = g.transpose((1 + nd,) + tuple(range(1 + nd)) + (2 + nd,))
    return g.reshape(groups, n * math.prod(g.shape[2:2 + nd]), o // groups)


def _rows_of(rows, g):
    """True when a caller's shared ``rows`` matrix can stand for ``g`` (autocast may have cast ``g`` since)."""
    return rows is not None and rows.dtype == g.dtype and rows.shape[1] == math.prod(g.shape) // g.shape[1]


def _from_out_matrix(y, n, out):
    """(G, N * prod(out), O/G) -> (N, O, *out), C-contiguous.

    NOTE: one transposing copy of the output; measured (bench_convnet, paired A/B) ~10% faster per step
    than handing the channels-last view on: NumPy's pooling, ReLU and BatchNorm run faster on NCHW.
    """
    groups, og, nd = y.shape[0], y.shape[2], len(out)
    y = y.reshape((groups, n) + out + (og,)).transpose((1,) + tuple(range(2, 2 + nd)) + (0, 2 + nd))
    y = y.reshape((n,) + out + (groups * og,))
    xp = xp_of(y)
    return xp.ascontiguousarray(xp.moveaxis(y, -1, 1))


def _col2im(dcols, n, geoms, out_dtype):
    """Adjoint of the CuPy (channels-first) ``_cols``: (G, N * prod(out), K) -> (N, C, *size), windows summed."""
    nd, groups = len(geoms), dcols.shape[0]
    out, kernel = tuple(g.out for g in geoms), tuple(g.kernel for g in geoms)
    cg = dcols.shape[2] // math.prod(kernel)
    cols = dcols.reshape((groups, n) + out + (cg,) + kernel)
    perm = (1, 0, 2 + nd) + tuple(range(2, 2 + nd)) + tuple(range(3 + nd, 3 + 2 * nd))
    cols = cols.transpose(perm).reshape((n, groups * cg) + out + kernel)
    return fused.col2im(cols, geoms, out_dtype)  # NOTE: the CUDA launcher makes its input contiguous itself


def _add_bias(y, bias, dtype):
    """``y + bias`` over the channel axis 1 (in y's dtype, fp32 for half GEMMs), rounded once to ``dtype``."""
    if bias is not None:
        # NOTE: y is always a fresh array here (a GEMM's or col2im's result): the bias goes in in place
        y += bias.reshape((1, -1) + (1,) * (y.ndim - 2)).astype(y.dtype, copy=False)
    return y.astype(dtype, copy=False)


def _conv_unrounded(x, w, geoms, groups, fp32_out):
    """im2col + GEMM: ``(y, cols)`` with ``y`` (N, O, *out) in fp32 for half inputs when ``fp32_out``."""
    out = tuple(g.out for g in geoms)
    if _per_sample_columns(x, geoms, groups):
        cols = _sample_cols(x, geoms, groups)
        wmat = w.reshape(groups, w.shape[0] // groups, cols.shape[2])          # (G, O/G, C/G * prod(kernel))
        y = matmul_arrays(wmat, cols, fp32_out=fp32_out)                       # (N, G, O/G, prod(out)): NCHW
        return y.reshape((x.shape[0], w.shape[0]) + out), cols
    last = channels_last(x)
    cols = _cols(x, geoms, groups, last)
    y = _gemm(cols, _weight_matrix(w, groups, last), fp32_out=fp32_out)
    return _from_out_matrix(y, x.shape[0], out), cols


def conv_arrays(x, w, bias, geoms, groups, keep_cols=False):
    """``conv(x, w) + bias`` on arrays; with ``keep_cols``, also the im2col columns (for the weight gradient).

    Args:
        x: input (N, C, *size).
        w: weight (O, C/groups, *kernel).
        bias: (O,) or None.
        geoms: one Geometry per spatial dimension.
        groups: number of groups.
        keep_cols: return ``(y, cols)`` instead of ``y``.
    """
    y, cols = _conv_unrounded(x, w, geoms, groups, fp32_out=bias is not None)
    y = _add_bias(y, bias, x.dtype)
    return (y, cols) if keep_cols else y


def _transpose_by_tap(g, w, geoms, groups, rows=None):
    """The adjoint of channels-last im2col + GEMM, one small GEMM per kernel tap: (N, O, *out) -> (N, C, *size).

    For each tap, ``g``'s rows times that tap's ``(O/G, C/G)`` slice of the weight is a contiguous
    ``(N, *out, C/G)`` block, added into an ``(N, *padded, G, C/G)`` buffer at the positions the tap
    reads. NOTE (speed): against one GEMM to ``(rows, kernel * C)`` columns and a col2im, the adds
    read contiguous blocks (runs of ``out[-1] * C`` elements, not ``C``), and no columns the size of
    ``kernel`` inputs are built; measured 2x faster for 3x3 kernels with 16-32 channels. The sums run
    in fp32 for half dtypes (the GEMMs return fp32) and are rounded once by the caller.
    """
    xp, nd = xp_of(g), len(geoms)
    n, o, c = g.shape[0], w.shape[0], w.shape[1] * groups
    og, cg = o // groups, c // groups
    out = tuple(gm.out for gm in geoms)
    rows = rows if _rows_of(rows, g) else _out_matrix(g, groups)              # (G, N * prod(out), O/G)
    taps = w.reshape((groups, og, cg, math.prod(gm.kernel for gm in geoms)))  # (G, O/G, C/G, taps)
    acc = dtypes.float32 if g.dtype in dtypes.LOW_PRECISION else g.dtype
    buf = xp.zeros((n,) + tuple(gm.padded for gm in geoms) + (groups, cg), dtype=acc)
    for t, (_, target) in enumerate(tap_windows(geoms)):
        block = _gemm(rows, xp.ascontiguousarray(taps[..., t]), fp32_out=True)  # (G, N * prod(out), C/G)
        block = block.reshape((groups, n) + out + (cg,))
        buf[(slice(None),) + target] += xp.moveaxis(block, 0, -2) if groups > 1 else block[0][..., None, :]
    buf = buf[(slice(None),) + tuple(slice(gm.lo, gm.lo + gm.size) for gm in geoms)]
    buf = buf.reshape(buf.shape[:1 + nd] + (c,))
    return xp.moveaxis(buf, -1, 1)


def conv_transpose_arrays(g, w, bias, geoms, groups, rows=None):
    """The adjoint of ``conv_arrays`` in its input: (N, O, *out) -> (N, C, *size), plus bias over C.

    On the channels-last path (NumPy) one GEMM per kernel tap (``_transpose_by_tap``); on CuPy one
    GEMM to columns and the fused ``col2im``.

    Args:
        g: array in output space (N, O, *out).
        w: weight (O, C/groups, *kernel).
        bias: (C,) or None.
        geoms: one Geometry per spatial dimension.
        groups: number of groups.
        rows: ``_out_matrix(g, groups)`` when the caller has it (NumPy; shared with the weight gradient).
    """
    xp = xp_of(g)
    if channels_last(g):
        # NOTE: NCHW and C-contiguous out, as _from_out_matrix (the layout the following ops run fastest on)
        return xp.ascontiguousarray(_add_bias(_transpose_by_tap(g, w, geoms, groups, rows), bias, g.dtype))
    # NOTE: the transposed weight matrix made contiguous (it is small): BLAS runs this GEMM faster so
    wmat_t = xp.ascontiguousarray(_weight_matrix(w, groups, False).transpose(0, 2, 1))
    dcols = _gemm(_out_matrix(g, groups), wmat_t, fp32_out=True)
    return _add_bias(_col2im(dcols, g.shape[0], geoms, dcols.dtype), bias, g.dtype)


def conv_weight_arrays(x, g, geoms, groups, cols=None, rows=None):
    """The weight gradient: ``sum over batch and windows of g * window(x)`` -> (O, C/groups, *kernel).

    Args:
        x: input (N, C, *size).
        g: array in output space (N, O, *out).
        geoms: one Geometry per spatial dimension.
        groups: number of groups.
        cols: ``x``'s im2col columns when the forward kept them (else they are built here).
        rows: ``_out_matrix(g, groups)`` when the caller has it (shared with the input gradient).
    """
    kernel = tuple(gm.kernel for gm in geoms)
    if (cols is None and _per_sample_columns(x, geoms, groups)) or (cols is not None and cols.ndim == 4):
        cols = _sample_cols(x, geoms, groups) if cols is None else cols
        n, o = g.shape[0], g.shape[1]
        per_sample = matmul_arrays(g.reshape(n, groups, o // groups, cols.shape[3]), cols.swapaxes(2, 3),
                                   fp32_out=True)                              # (N, G, O/G, C/G * prod(kernel))
        return per_sample.sum(axis=0).astype(g.dtype, copy=False).reshape((o, x.shape[1] // groups) + kernel)
    last = channels_last(x)
    cols = _cols(x, geoms, groups, last) if cols is None else cols
    rows = rows if _rows_of(rows, g) else _out_matrix(g, groups)
    wg = _gemm(rows.transpose(0, 2, 1), cols)
    return _weight_from_matrix(wg, x.shape[1] // groups, kernel, last)


def _bias_grad(grad):
    return _sum(grad, dim=(0,) + tuple(range(2, grad.ndim)))


def _apply(table, a, weight, bias, ctx, **extra):
    cls = table[len(ctx.geoms)]
    args = (a, weight) if bias is None else (a, weight, bias)
    return cls.apply(*args, geoms=ctx.geoms, groups=ctx.groups, **extra)


class Conv(Function):
    """Convolution (cross-correlation) of ``x`` with ``weight`` plus an optional bias."""

    op_name = "convolution"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, x, weight, bias=None, geoms=(), groups=1):
        check_same_dtype(ctx.fn.op_name, x, weight, bias)
        ctx.save_for_backward(x, weight)
        ctx.geoms, ctx.groups = geoms, groups
        y, cols = conv_arrays(x.array, weight.array, None if bias is None else bias.array, geoms, groups,
                              keep_cols=True)
        # NOTE: the columns are kept for the weight gradient only when it is wanted (they are
        # prod(kernel) times the input's size); they are read, never written, so no version check
        ctx.cols = cols if ctx.needs_input_grad[1] else None
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        # NOTE: both gradients read grad as a (rows, O) matrix on NumPy's matrix path: one transposing copy
        share = need[0] and need[1] and ctx.cols is not None and ctx.cols.ndim == 3 and channels_last(grad.array)
        rows = _out_matrix(grad.array, ctx.groups) if share else None
        gx = _apply(TRANSPOSE, grad, weight, None, ctx, rows=rows) if need[0] else None
        gw = ConvWeight.apply(x, grad, geoms=ctx.geoms, groups=ctx.groups, cols=ctx.cols, rows=rows) if need[1] \
            else None
        gb = _bias_grad(grad) if len(need) > 2 and need[2] else None
        ctx.cols = None
        return gx, gw, gb


class ConvTranspose(Function):
    """Transposed convolution: the adjoint of ``Conv`` in its input, plus an optional bias."""

    op_name = "conv_transpose"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, g, weight, bias=None, geoms=(), groups=1, rows=None):
        check_same_dtype(ctx.fn.op_name, g, weight, bias)
        ctx.save_for_backward(g, weight)
        ctx.geoms, ctx.groups = geoms, groups
        return conv_transpose_arrays(g.array, weight.array, None if bias is None else bias.array, geoms, groups,
                                     rows=rows)

    @staticmethod
    def backward(ctx, grad):
        g, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        gg = _apply(CONV, grad, weight, None, ctx) if need[0] else None
        gw = ConvWeight.apply(grad, g, geoms=ctx.geoms, groups=ctx.groups) if need[1] else None
        gb = _bias_grad(grad) if len(need) > 2 and need[2] else None
        return gg, gw, gb


class ConvWeight(Function):
    """Weight gradient of a convolution, as an op of its own so that it can be differentiated again."""

    op_name = "convolution_backward_weight"

    @staticmethod
    def forward(ctx, x, g, geoms=(), groups=1, cols=None, rows=None):
        ctx.save_for_backward(x, g)
        ctx.geoms, ctx.groups = geoms, groups
        return conv_weight_arrays(x.array, g.array, geoms, groups, cols=cols, rows=rows)

    @staticmethod
    def backward(ctx, grad):
        x, g = ctx.saved_tensors
        gx = _apply(TRANSPOSE, g, grad, None, ctx) if ctx.needs_input_grad[0] else None
        gg = _apply(CONV, x, grad, None, ctx) if ctx.needs_input_grad[1] else None
        return gx, gg


def _run(table, nd, input, weight, bias, geoms, groups, unbatched):  # noqa: A002
    x = unsqueeze(input, 0) if unbatched else input
    args = (x, weight) if bias is None else (x, weight, bias)
    y = table[nd].apply(*args, geoms=geoms, groups=groups)
    return squeeze(y, 0) if unbatched else y


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002
    geoms, unbatched = check_conv(f"conv{nd}d", nd, input, weight, bias, stride, padding, dilation, groups)
    return _run(CONV, nd, input, weight, bias, geoms, groups, unbatched)


class Conv1d(Conv):
    """1-D convolution."""

    op_name = "conv1d"


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-D convolution over (N, C_in, L) (or unbatched (C_in, L)).

    Args:
        input: the input Tensor.
        weight: (C_out, C_in / groups, kW).
        bias: optional (C_out,).
        stride: int or 1-tuple.
        padding: int, 1-tuple, 'valid' or 'same' (stride 1 only).
        dilation: int or 1-tuple.
        groups: split input and output channels into this many groups.
    """
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


class Conv2d(Conv):
    """2-D convolution."""

    op_name = "conv2d"


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-D convolution over (N, C_in, H, W) (or unbatched (C_in, H, W)): im2col + GEMM.

    Args:
        input: the input Tensor.
        weight: (C_out, C_in / groups, kH, kW).
        bias: optional (C_out,).
        stride: int or pair.
        padding: int, pair, 'valid' or 'same' (stride 1 only; extra padding goes after, as in PyTorch).
        dilation: int or pair.
        groups: split input and output channels into this many groups.
    """
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


class Conv3d(Conv):
    """3-D convolution."""

    op_name = "conv3d"


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-D convolution over (N, C_in, D, H, W) (or unbatched).

    Args:
        input: the input Tensor.
        weight: (C_out, C_in / groups, kD, kH, kW).
        bias: optional (C_out,).
        stride: int or triple.
        padding: int, triple, 'valid' or 'same' (stride 1 only).
        dilation: int or triple.
        groups: split input and output channels into this many groups.
    """
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):  # noqa: A002
    geoms, unbatched = check_conv_transpose(f"conv_transpose{nd}d", nd, input, weight, bias, stride, padding,
                                            output_padding, dilation, groups)
    return _run(TRANSPOSE, nd, input, weight, bias, geoms, groups, unbatched)


class ConvTranspose1d(ConvTranspose):
    """1-D transposed convolution."""

    op_name = "conv_transpose1d"


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """1-D transposed convolution ("deconvolution") over (N, C_in, L).

    Args:
        input: the input Tensor.
        weight: (C_in, C_out / groups, kW).
        bias: optional (C_out,).
        stride: int or 1-tuple.
        padding: int or 1-tuple: ``dilation * (k - 1) - padding`` zeros are implicitly added to the input.
        output_padding: extra size added to one side of the output (smaller than stride or dilation).
        groups: channel groups.
        dilation: int or 1-tuple.
    """
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


class ConvTranspose2d(ConvTranspose):
    """2-D transposed convolution."""

    op_name = "conv_transpose2d"


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """2-D transposed convolution over (N, C_in, H, W): the gradient of conv2d with respect to its input.

    Args:
        input: the input Tensor.
        weight: (C_in, C_out / groups, kH, kW).
        bias: optional (C_out,).
        stride: int or pair.
        padding: int or pair.
        output_padding: extra size added to one side of each output dimension.
        groups: channel groups.
        dilation: int or pair.
    """
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


class ConvTranspose3d(ConvTranspose):
    """3-D transposed convolution."""

    op_name = "conv_transpose3d"


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """3-D transposed convolution over (N, C_in, D, H, W).

    Args:
        input: the input Tensor.
        weight: (C_in, C_out / groups, kD, kH, kW).
        bias: optional (C_out,).
        stride: int or triple.
        padding: int or triple.
        output_padding: extra size added to one side of each output dimension.
        groups: channel groups.
        dilation: int or triple.
    """
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


CONV = {1: Conv1d, 2: Conv2d, 3: Conv3d}
TRANSPOSE = {1: ConvTranspose1d, 2: ConvTranspose2d, 3: ConvTranspose3d}


METHODS = {}

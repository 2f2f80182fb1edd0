"""Convolutions (1-D, 2-D, 3-D) and transposed convolutions: im2col + one GEMM per group.

Three ops describe the whole family, for the same window geometry (``_im2col.Geometry``):
``Conv`` maps input space to output space, ``ConvTranspose`` is its adjoint (output space
back to input space), and ``ConvWeight`` is the weight gradient. Each one's backward is
written with the other two, so gradients of any order come from the same three forwards:

    conv(x, w)            backward: dx = conv_transpose(g, w),  dw = conv_weight(x, g)
    conv_transpose(g, w)  backward: dg = conv(G, w),            dw = conv_weight(G, g)
    conv_weight(x, g)     backward: dx = conv_transpose(g, W),  dg = conv(x, W)

NOTE (numerics): the GEMMs go through ``linalg.matmul_arrays`` (fp32 accumulation for
float16/bfloat16); the bias is added to the fp32 result and the sum rounded once; the
overlapping-window sums of conv_transpose accumulate in fp32 too (``col2im``).
"""

from __future__ import annotations

import math

from ..autograd.function import Function
from ._conv_args import check_conv, check_conv_transpose, check_same_dtype
from ._im2col import col2im, windows
from ._util import xp_of
from .linalg import matmul_arrays
from .reduce import sum as _sum
from .shape import squeeze, unsqueeze

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


def _gemm(a, b, fp32_out=False):
    """Grouped GEMM ``(G, m, k) @ (G, k, n)``; one group is a plain 2-D GEMM (the fast cuBLAS path)."""
    if a.shape[0] == 1:
        return matmul_arrays(a[0], b[0], fp32_out=fp32_out)[None]
    return matmul_arrays(a, b, fp32_out=fp32_out)


def _cols(x, geoms, groups):
    """im2col: ``x`` (N, C, *size) -> (G, N * prod(out), C/G * prod(kernel)), one copy."""
    n, c, nd = x.shape[0], x.shape[1], len(geoms)
    win = windows(x, geoms)
    win = win.reshape((n, groups, c // groups) + win.shape[2:])
    perm = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
    # NOTE: explicit sizes, never -1: NumPy cannot infer a dimension of an empty array (an empty batch)
    k = c // groups * math.prod(g.kernel for g in geoms)
    return win.transpose(perm).reshape(groups, n * math.prod(g.out for g in geoms), k)


def _channels_last(g, groups, nd):
    """(N, O, *out) -> (G, N * prod(out), O/G)."""
    n, o = g.shape[:2]
    spatial = g.shape[2:]
    g = g.reshape((n, groups, o // groups) + spatial)
    return g.transpose((1, 0) + tuple(range(3, 3 + nd)) + (2,)).reshape(groups, n * math.prod(spatial), o // groups)


def _add_bias(y, bias, channel_axis, dtype):
    if bias is not None:
        shape = [1] * y.ndim
        shape[channel_axis] = -1
        y = y + bias.reshape(shape).astype(y.dtype, copy=False)
    return y.astype(dtype, copy=False)


def conv_arrays(x, w, bias, geoms, groups):
    """``conv(x, w) + bias`` on arrays.

    Args:
        x: input (N, C, *size).
        w: weight (O, C/groups, *kernel).
        bias: (O,) or None.
        geoms: one Geometry per spatial dimension.
        groups: number of groups.
    """
    n, o, nd = x.shape[0], w.shape[0], len(geoms)
    wmat = w.reshape(groups, o // groups, math.prod(w.shape[1:])).transpose(0, 2, 1)
    y = _gemm(_cols(x, geoms, groups), wmat, fp32_out=bias is not None)
    out = tuple(g.out for g in geoms)
    y = y.reshape((groups, n) + out + (o // groups,)).transpose((1, 0, nd + 2) + tuple(range(2, 2 + nd)))
    y = xp_of(y).ascontiguousarray(y).reshape((n, o) + out)
    return _add_bias(y, bias, 1, x.dtype)


def conv_transpose_arrays(g, w, bias, geoms, groups):
    """The adjoint of ``conv_arrays`` in its input: (N, O, *out) -> (N, C, *size), plus bias over C.

    Args:
        g: array in output space (N, O, *out).
        w: weight (O, C/groups, *kernel).
        bias: (C,) or None.
        geoms: one Geometry per spatial dimension.
        groups: number of groups.
    """
    n, nd, cg = g.shape[0], len(geoms), w.shape[1]
    out, kernel = tuple(gm.out for gm in geoms), tuple(gm.kernel for gm in geoms)
    wmat = w.reshape(groups, w.shape[0] // groups, math.prod(w.shape[1:]))
    cols = _gemm(_channels_last(g, groups, nd), wmat, fp32_out=True)
    cols = cols.reshape((groups, n) + out + (cg,) + kernel)
    perm = (1, 0, 2 + nd) + tuple(range(2, 2 + nd)) + tuple(range(3 + nd, 3 + 2 * nd))
    cols = cols.transpose(perm).reshape((n, groups * cg) + out + kernel)
    return _add_bias(col2im(cols, geoms, cols.dtype), bias, 1, g.dtype)


def conv_weight_arrays(x, g, geoms, groups):
    """The weight gradient: ``sum over batch and windows of g * window(x)`` -> (O, C/groups, *kernel).

    Args:
        x: input (N, C, *size).
        g: array in output space (N, O, *out).
        geoms: one Geometry per spatial dimension.
        groups: number of groups.
    """
    o, c, nd = g.shape[1], x.shape[1], len(geoms)
    gmat = _channels_last(g, groups, nd).transpose(0, 2, 1)
    wg = _gemm(gmat, _cols(x, geoms, groups))
    return wg.reshape((o, c // groups) + tuple(gm.kernel for gm in geoms))


def _bias_grad(grad):
    return _sum(grad, dim=(0,) + tuple(range(2, grad.ndim)))


class Conv(Function):
    """Convolution (cross-correlation) of ``x`` with ``weight`` plus an optional bias."""

    op_name = "convolution"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, x, weight, bias=None, geoms=(), groups=1):
        check_same_dtype(ctx.fn.op_name, x, weight, bias)
        ctx.save_for_backward(x, weight)
        ctx.geoms, ctx.groups = geoms, groups
        return conv_arrays(x.array, weight.array, None if bias is None else bias.array, geoms, groups)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = _apply(TRANSPOSE, grad, weight, None, ctx) if need[0] else None
        gw = ConvWeight.apply(x, grad, geoms=ctx.geoms, groups=ctx.groups) if need[1] else None
        gb = _bias_grad(grad) if len(need) > 2 and need[2] else None
        return gx, gw, gb


class ConvTranspose(Function):
    """Transposed convolution: the adjoint of ``Conv`` in its input, plus an optional bias."""

    op_name = "conv_transpose"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, g, weight, bias=None, geoms=(), groups=1):
        check_same_dtype(ctx.fn.op_name, g, weight, bias)
        ctx.save_for_backward(g, weight)
        ctx.geoms, ctx.groups = geoms, groups
        return conv_transpose_arrays(g.array, weight.array, None if bias is None else bias.array, geoms, groups)

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
    def forward(ctx, x, g, geoms=(), groups=1):
        ctx.save_for_backward(x, g)
        ctx.geoms, ctx.groups = geoms, groups
        return conv_weight_arrays(x.array, g.array, geoms, groups)

    @staticmethod
    def backward(ctx, grad):
        x, g = ctx.saved_tensors
        gx = _apply(TRANSPOSE, g, grad, None, ctx) if ctx.needs_input_grad[0] else None
        gg = _apply(CONV, x, grad, None, ctx) if ctx.needs_input_grad[1] else None
        return gx, gg


class Conv1d(Conv):
    """1-D convolution."""

    op_name = "conv1d"


class Conv2d(Conv):
    """2-D convolution."""

    op_name = "conv2d"


class Conv3d(Conv):
    """3-D convolution."""

    op_name = "conv3d"


class ConvTranspose1d(ConvTranspose):
    """1-D transposed convolution."""

    op_name = "conv_transpose1d"


class ConvTranspose2d(ConvTranspose):
    """2-D transposed convolution."""

    op_name = "conv_transpose2d"


class ConvTranspose3d(ConvTranspose):
    """3-D transposed convolution."""

    op_name = "conv_transpose3d"


CONV = {1: Conv1d, 2: Conv2d, 3: Conv3d}
TRANSPOSE = {1: ConvTranspose1d, 2: ConvTranspose2d, 3: ConvTranspose3d}


def _apply(table, a, weight, bias, ctx):
    cls = table[len(ctx.geoms)]
    args = (a, weight) if bias is None else (a, weight, bias)
    return cls.apply(*args, geoms=ctx.geoms, groups=ctx.groups)


def _run(table, nd, input, weight, bias, geoms, groups, unbatched):  # noqa: A002
    x = unsqueeze(input, 0) if unbatched else input
    args = (x, weight) if bias is None else (x, weight, bias)
    y = table[nd].apply(*args, geoms=geoms, groups=groups)
    return squeeze(y, 0) if unbatched else y


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002
    geoms, unbatched = check_conv(f"conv{nd}d", nd, input, weight, bias, stride, padding, dilation, groups)
    return _run(CONV, nd, input, weight, bias, geoms, groups, unbatched)


def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):  # noqa: A002
    geoms, unbatched = check_conv_transpose(f"conv_transpose{nd}d", nd, input, weight, bias, stride, padding,
                                            output_padding, dilation, groups)
    return _run(TRANSPOSE, nd, input, weight, bias, geoms, groups, unbatched)


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


METHODS = {}

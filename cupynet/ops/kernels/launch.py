"""CuPy launchers of the fused hot-op kernels: one launch per op, no host sync.

Only ``cupynet.ops.kernels`` calls these, after checking the arguments; every array argument here
is a CuPy array of a dtype in ``KERNEL_DTYPES`` (or an int64 target / fp32 statistics). Nothing
here reads a device value on the host (no ``.get()``, ``.item()``, ``float()``, ``bool()``).
Scalar arguments carry their C type (``cupynet.cuda.args``).
"""

from __future__ import annotations

import math
import pathlib

import numpy

from ... import dtypes
from ...cuda import device
from ...cuda.args import c_float, c_int, c_long_long
from ...cuda.compile import KernelLibrary, per_dtype
from ...cuda.multi_tensor import BLOCK_THREADS

__all__ = ["KERNELS", "softmax_xent_forward", "softmax_xent_backward", "softmax_xent_mean", "layer_norm_forward",
           "layer_norm_backward", "bias_gelu_forward", "bias_gelu_backward", "bias_relu_forward",
           "bias_relu_backward", "bias_add", "im2col_2d", "col2im_2d", "batched_matmul_half"]

f32 = numpy.float32
MAX_GRID = 65535 * 8
"""Upper bound on blocks of a grid-stride kernel (enough to fill any current GPU many times)."""

KERNELS = KernelLibrary(pathlib.Path(__file__).parent, {
    "softmax_xent.cu": per_dtype("softmax_xent_forward_kernel", "softmax_xent_backward_kernel",
                                 "softmax_xent_mean_kernel"),
    "layer_norm.cu": per_dtype("layer_norm_forward_kernel", "layer_norm_backward_kernel",
                               "layer_norm_param_grad_kernel"),
    "bias_act.cu": per_dtype("bias_gelu_forward_kernel", "bias_gelu_backward_kernel", "bias_relu_forward_kernel",
                             "bias_relu_backward_kernel", "bias_add_kernel"),
    "im2col.cu": per_dtype("im2col_2d_kernel", "col2im_2d_kernel"),
})
"""The ``.cu`` files of this package and every kernel the launchers fetch from them."""


def _row_threads(length: int) -> int:
    """Threads for a one-block-per-row kernel: a multiple of 32 up to 1024, about one per element."""
    return int(min(1024, max(32, 32 * math.ceil(length / 32))))


def _grid(n: int) -> tuple:
    return (int(max(1, min(MAX_GRID, math.ceil(n / BLOCK_THREADS)))),)


def _f32(cupy, a):
    return None if a is None else cupy.ascontiguousarray(a, dtype=f32)


def softmax_xent_forward(logits, target, weight, ignore_index, label_smoothing):
    """Launch the fused forward: returns ``(loss_rows fp32 (N,), lse fp32 (N,))``.

    Args:
        logits: (N, C) CuPy array.
        target: (N,) integer class indices.
        weight: (C,) or None.
        ignore_index: ignored target value.
        label_smoothing: s in [0, 1].
    """
    cupy = device.cupy()
    logits = cupy.ascontiguousarray(logits)
    n_rows, n_classes = logits.shape
    loss, lse = cupy.empty((n_rows,), f32), cupy.empty((n_rows,), f32)
    if n_rows:
        kernel = KERNELS.get_kernel("softmax_xent.cu", "softmax_xent_forward_kernel", logits.dtype)
        kernel((n_rows,), (_row_threads(n_classes),),
               (logits, cupy.ascontiguousarray(target, dtype=numpy.int64), _f32(cupy, weight), c_int(n_classes),
                c_long_long(ignore_index), c_float(label_smoothing), loss, lse))
    return loss, lse


def softmax_xent_backward(logits, target, weight, lse, grad_rows, ignore_index, label_smoothing, divisor=None):
    """Launch the fused backward: returns the (N, C) gradient in the logits' dtype.

    Args:
        logits: (N, C) CuPy array.
        target: (N,) integer class indices.
        weight: (C,) or None.
        lse: (N,) fp32 from the forward.
        grad_rows: (N,) or 0-d upstream gradient per row.
        ignore_index: ignored target value.
        label_smoothing: s in [0, 1].
        divisor: fp32 one-element 'mean' divisor the kernel divides grad_rows by (0 taken as 1), or None.
    """
    cupy = device.cupy()
    logits = cupy.ascontiguousarray(logits)
    n_rows, n_classes = logits.shape
    grad = cupy.empty(logits.shape, logits.dtype)
    grad_rows = cupy.ascontiguousarray(grad_rows, dtype=f32).reshape(-1)
    if n_rows and n_classes:
        kernel = KERNELS.get_kernel("softmax_xent.cu", "softmax_xent_backward_kernel", logits.dtype)
        kernel((n_rows,), (_row_threads(n_classes),),
               (logits, cupy.ascontiguousarray(target, dtype=numpy.int64), _f32(cupy, weight), _f32(cupy, lse),
                grad_rows, c_int(1 if grad_rows.size > 1 else 0), grad_rows if divisor is None else divisor,
                c_int(divisor is not None), c_int(n_classes), c_long_long(ignore_index),
                c_float(label_smoothing), grad))
    return grad


def softmax_xent_mean(loss_rows, target, weight, n_classes, ignore_index, out_dtype):
    """Launch the one-block 'mean' reduction: returns ``(mean 0-d in out_dtype, divisor fp32 0-d)``.

    Args:
        loss_rows: (N,) fp32 row losses from the forward.
        target: (N,) integer class indices.
        weight: (C,) or None.
        n_classes: C.
        ignore_index: ignored target value.
        out_dtype: float32 / float16 / bfloat16, the mean's dtype.
    """
    cupy = device.cupy()
    divisor, out = cupy.empty((), f32), cupy.empty((), out_dtype)
    KERNELS.get_kernel("softmax_xent.cu", "softmax_xent_mean_kernel", out_dtype)(
        (1,), (BLOCK_THREADS,),
        (_f32(cupy, loss_rows), cupy.ascontiguousarray(target, dtype=numpy.int64), _f32(cupy, weight),
         c_long_long(loss_rows.shape[0]), c_int(n_classes), c_long_long(ignore_index), divisor, out))
    return out, divisor


def layer_norm_forward(x2, weight, bias, eps):
    """Launch layer norm over the last axis of a 2-D array: ``(y, mean fp32, rstd fp32)``.

    Args:
        x2, weight, bias, eps: as in ``reference.layer_norm_forward`` (its semantics), as CuPy arrays.
    """
    cupy = device.cupy()
    x2 = cupy.ascontiguousarray(x2)
    rows, d = x2.shape
    y, mean, rstd = cupy.empty_like(x2), cupy.empty((rows,), f32), cupy.empty((rows,), f32)
    if rows:
        kernel = KERNELS.get_kernel("layer_norm.cu", "layer_norm_forward_kernel", x2.dtype)
        kernel((rows,), (_row_threads(d),),
               (x2, _f32(cupy, weight), _f32(cupy, bias), c_int(d), c_float(eps), y, mean, rstd))
    return y, mean, rstd


def layer_norm_backward(grad2, x2, mean, rstd, weight):
    """Launch the layer-norm backward: ``(dx, dweight fp32, dbias fp32)``.

    Args:
        grad2: (rows, D) upstream gradient, x2's dtype.
        x2: (rows, D) the forward input.
        mean: (rows,) fp32.
        rstd: (rows,) fp32.
        weight: (D,) or None.
    """
    cupy = device.cupy()
    grad2, x2 = cupy.ascontiguousarray(grad2), cupy.ascontiguousarray(x2)
    mean, rstd = _f32(cupy, mean), _f32(cupy, rstd)
    rows, d = x2.shape
    dx = cupy.empty_like(x2)
    if rows == 0:
        return dx, cupy.zeros((d,), f32), cupy.zeros((d,), f32)
    KERNELS.get_kernel("layer_norm.cu", "layer_norm_backward_kernel", x2.dtype)(
        (rows,), (_row_threads(d),), (grad2, x2, mean, rstd, _f32(cupy, weight), c_int(d), dx))
    # NOTE: about 128 row chunks: enough blocks to fill the GPU, few partials to add up
    rows_per_chunk = max(8, math.ceil(rows / 128))
    chunks = math.ceil(rows / rows_per_chunk)
    # NOTE: both partial sums in one buffer, added up by one reduction (each column over the chunks, as
    # two separate sums over axis 0 would): one launch fewer per backward
    partials = cupy.empty((2, chunks, d), f32)
    KERNELS.get_kernel("layer_norm.cu", "layer_norm_param_grad_kernel", x2.dtype)(
        (math.ceil(d / 32), chunks), (32, 8),
        (grad2, x2, mean, rstd, c_long_long(rows), c_int(d), c_int(rows_per_chunk), partials[0], partials[1]))
    sums = partials.sum(axis=1)
    return dx, sums[0], sums[1]


def _elementwise(filename, kernel, like, *args):
    cupy = device.cupy()
    out = cupy.empty(like.shape, like.dtype)
    if like.size:
        KERNELS.get_kernel(filename, kernel, like.dtype)(_grid(like.size), (BLOCK_THREADS,), (*args, out))
    return out


def bias_gelu_forward(x, bias, approximate):
    """Launch ``gelu(x + bias)``.

    Args:
        x: (..., D) CuPy array.
        bias: (D,).
        approximate: "none" or "tanh".
    """
    cupy = device.cupy()
    x = cupy.ascontiguousarray(x)
    return _elementwise("bias_act.cu", "bias_gelu_forward_kernel", x, x, _f32(cupy, bias), c_long_long(x.size),
                        c_int(x.shape[-1]), c_int(approximate == "tanh"))


def bias_gelu_backward(grad, x, bias, approximate):
    """Launch the backward of ``gelu(x + bias)``: ``(dx, dbias fp32)``.

    Args:
        grad: upstream gradient.
        x: the forward input.
        bias: (D,).
        approximate: "none" or "tanh".
    """
    cupy = device.cupy()
    grad, x = cupy.ascontiguousarray(grad), cupy.ascontiguousarray(x)
    dx = _elementwise("bias_act.cu", "bias_gelu_backward_kernel", x, grad, x, _f32(cupy, bias), c_long_long(x.size),
                      c_int(x.shape[-1]), c_int(approximate == "tanh"))
    return dx, _column_sum(cupy, dx)


def bias_relu_forward(x, bias):
    """Launch ``relu(x + bias)``.

    Args:
        x: (..., D) CuPy array.
        bias: (D,).
    """
    cupy = device.cupy()
    x = cupy.ascontiguousarray(x)
    return _elementwise("bias_act.cu", "bias_relu_forward_kernel", x, x, _f32(cupy, bias), c_long_long(x.size),
                        c_int(x.shape[-1]))


def bias_relu_backward(grad, y):
    """Launch the backward of ``relu(x + bias)`` from its output: ``(dx, dbias fp32)``.

    Args:
        grad: upstream gradient.
        y: the forward output.
    """
    cupy = device.cupy()
    grad, y = cupy.ascontiguousarray(grad), cupy.ascontiguousarray(y)
    dx = _elementwise("bias_act.cu", "bias_relu_backward_kernel", y, grad, y, c_long_long(y.size))
    return dx, _column_sum(cupy, dx)


def bias_add(x, bias):
    """Launch ``x + bias`` (bias in x's dtype), rounded once.

    Args:
        x: (..., D) CuPy array.
        bias: (D,) of x's dtype.
    """
    cupy = device.cupy()
    x = cupy.ascontiguousarray(x)
    return _elementwise("bias_act.cu", "bias_add_kernel", x, x, cupy.ascontiguousarray(bias), c_long_long(x.size),
                        c_int(x.shape[-1]))


def _column_sum(cupy, dx):
    # NOTE: dtype=float32 so CuPy's reduction accumulates in fp32 even for float16 input
    return dx.reshape(-1, dx.shape[-1]).sum(axis=0, dtype=f32)


def _geometry_args(geoms):
    (gh, gw) = geoms
    return tuple(c_int(v) for v in (gh.kernel, gw.kernel, gh.stride, gw.stride, gh.dilation, gw.dilation, gh.lo,
                                    gw.lo, gh.out, gw.out))


def im2col_2d(x, geoms, groups):
    """Launch im2col for a 2-D convolution: ``(G, N * OH * OW, C/G * KH * KW)``.

    Args:
        x: (N, C, H, W) CuPy array.
        geoms: two ``_im2col.Geometry`` (height, width).
        groups: number of groups.
    """
    cupy = device.cupy()
    x = cupy.ascontiguousarray(x)
    n, c, h, w = x.shape
    gh, gw = geoms
    cols = cupy.empty((groups, n * gh.out * gw.out, (c // groups) * gh.kernel * gw.kernel), x.dtype)
    if cols.size:
        KERNELS.get_kernel("im2col.cu", "im2col_2d_kernel", x.dtype)(
            _grid(cols.size), (BLOCK_THREADS,),
            (x, c_long_long(cols.size), c_int(n), c_int(c), c_int(h), c_int(w), c_int(groups), *_geometry_args(geoms),
             cols))
    return cols


def col2im_2d(cols, geoms):
    """Launch col2im for a 2-D convolution: cols (N, C, OH, OW, KH, KW) -> (N, C, H, W) in cols' dtype.

    Args:
        cols: CuPy array.
        geoms: two ``_im2col.Geometry`` (height, width).
    """
    cupy = device.cupy()
    cols = cupy.ascontiguousarray(cols)
    gh, gw = geoms
    out = cupy.empty(cols.shape[:2] + (gh.size, gw.size), cols.dtype)
    if out.size:
        KERNELS.get_kernel("im2col.cu", "col2im_2d_kernel", cols.dtype)(
            _grid(out.size), (BLOCK_THREADS,),
            (cols, c_long_long(out.size), c_int(cols.shape[1]), c_int(gh.size), c_int(gw.size),
             *_geometry_args(geoms), out))
    return out


def _gemm_operand(a):
    """``(contiguous matrix stack, transposed?)``: a transposed view is passed as op T, not copied."""
    if a.flags.c_contiguous:
        return a, False
    swapped = a.swapaxes(-1, -2)
    if swapped.flags.c_contiguous:
        return swapped, True
    return device.cupy().ascontiguousarray(a), False


def _cuda_data_type(runtime, dtype):
    # NOTE: CUDA_R_16F = 2 and CUDA_R_16BF = 14 in library_types.h; older CuPy lacks the bf16 name
    return runtime.CUDA_R_16F if dtype == numpy.float16 else getattr(runtime, "CUDA_R_16BF", 14)


BF16_GEMM_MIN_CAPABILITY = (8, 0)
"""cuBLAS runs bfloat16 GemmEx only from Ampere (sm_80) on; older GPUs get the fp32 path."""


def _gemm_ex_supports(cupy, dtype) -> bool:
    if numpy.dtype(dtype) != dtypes.bfloat16:
        return True  # NOTE: fp16 GemmEx with fp32 compute runs on every GPU CuPy supports
    return device.get_device_capability(cupy.cuda.runtime.getDevice()) >= BF16_GEMM_MIN_CAPABILITY


def batched_matmul_half(a, b):
    """``a @ b`` for float16/bfloat16 stacks through ``cublasGemmStridedBatchedEx`` with fp32 compute.

    NOTE: CuPy's own batched matmul of float16 upcasts to fp32 (a copy of both operands and
    an fp32 GEMM); this call keeps half inputs and outputs and accumulates in fp32 on the
    tensor cores, which is what PyTorch does. A 2-D operand is broadcast over the batch
    with stride 0 (no copy).

    Args:
        a: (..., m, k) CuPy array.
        b: (..., k, n) CuPy array of a's dtype; batch dims equal to a's, or b (or a) 2-D.
    """
    cupy = device.cupy()
    if not _gemm_ex_supports(cupy, a.dtype):
        # NOTE: the same numerics without tensor cores: fp32 products and sums, one rounding at the end
        return cupy.matmul(a.astype(f32), b.astype(f32)).astype(a.dtype)
    cublas = device.cublas()

    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    lead = a.shape[:-2] if a.ndim > 2 else b.shape[:-2]
    out = cupy.empty(lead + (m, n), a.dtype)
    batch = math.prod(lead)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    a, a_t = _gemm_operand(a)
    b, b_t = _gemm_operand(b)
    # NOTE: cuBLAS is column-major: a row-major (r, c) matrix is its (c, r) transpose there, so
    # out = a @ b is computed as out^T = b^T a^T; a transposed view is op T with ld = its rows.
    op_b, ld_b = (cublas.CUBLAS_OP_T, k) if b_t else (cublas.CUBLAS_OP_N, n)
    op_a, ld_a = (cublas.CUBLAS_OP_T, m) if a_t else (cublas.CUBLAS_OP_N, k)
    stride_a = m * k if a.ndim > 2 else 0
    stride_b = k * n if b.ndim > 2 else 0
    alpha, beta = numpy.ones(1, f32), numpy.zeros(1, f32)
    dtype = _cuda_data_type(cupy.cuda.runtime, a.dtype)
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.gemmStridedBatchedEx(
        handle, op_b, op_a, n, m, k, alpha.ctypes.data,
        b.data.ptr, dtype, ld_b, stride_b,
        a.data.ptr, dtype, ld_a, stride_a,
        beta.ctypes.data,
        out.data.ptr, dtype, n, m * n,
        batch, cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT_TENSOR_OP)
    return out

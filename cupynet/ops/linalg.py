"""Matrix products: matmul, linear, mm/bmm/mv, the add-product family, dot, outer, einsum, tensordot.

NOTE (numerics): half-precision products accumulate in fp32 and round once.
On the GPU a 2-D float16 ``cupy.matmul`` is cublasGemmEx with fp32 compute
(tensor cores); CuPy upcasts *batched* float16 matmul to fp32 internally, so a
batched product whose right side is a plain matrix is reshaped to 2-D first, and
other stacks go through ``fused.batched_matmul_half`` (strided-batched GemmEx).
On the CPU the product is computed in fp32 and rounded, which is the same math.
``matmul_arrays`` is the single place where this rule lives; every product in
this module, in conv.py and in pool.py goes through it (or through
``einsum_arrays``, which computes in fp32 the same way).
"""

from __future__ import annotations

import math

import numpy

from .. import dtypes
from ..autograd.function import Cast, Function
from ..autograd.state import STATE
from ..tensor import Tensor
from . import kernels as fused
from ._linalg_checks import (
    _batch_shapes,
    _check,
    _check_linear,
    _check_vectors,
    _require_broadcastable,
    _require_inner,
    _require_ndim,
    _same_dtype,
)
from ._rows import leading_sum
from ._util import xp_of
from .out import write_out
from .shape import broadcast_to, reshape, squeeze, sum_to, unsqueeze

__all__ = ["matmul", "linear", "mm", "bmm", "mv", "addmm", "addmv", "addr", "baddbmm", "addbmm", "dot", "vdot",
           "outer"]


def _strided_batch(a, b):
    """True when ``a @ b`` is a stack ``fused.batched_matmul_half`` takes: equal batch dims, or ``a`` 2-D."""
    return a.ndim >= 2 and b.ndim > 2 and (a.ndim == 2 or a.shape[:-2] == b.shape[:-2])


def _rows(shape):
    """The number of rows of ``shape`` seen as a matrix ``(rows, shape[-1])``.

    NOTE: explicit, never -1 in a reshape: NumPy cannot infer a dimension when the array is empty.
    """
    return math.prod(shape[:-1])


def matmul_arrays(a, b, fp32_out=False):
    """``a @ b`` on raw arrays with fp32 accumulation for half dtypes (see the module note).

    Args:
        a: left array.
        b: right array (same dtype as ``a``).
        fp32_out: for half inputs, return the float32 result instead of rounding it to the input dtype (callers
            that add a bias or accumulate further round once at their end).
    """
    if type(a) is numpy.ndarray and a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        return numpy.matmul(a, b)  # NOTE: the common CPU case (float32/float64): nothing to widen or round
    xp = xp_of(a, b)
    low = a.dtype in dtypes.LOW_PRECISION
    if low and not fp32_out and _strided_batch(a, b) and fused.kernels_enabled(a):
        # NOTE: one strided-batched GemmEx with half operands and fp32 compute (no fp32 copies);
        # it rounds once to half, so callers wanting the fp32 result (fp32_out) take xp.matmul
        return fused.batched_matmul_half(a, b)
    if xp.__name__ == "numpy" and low:
        out = xp.matmul(a.astype(dtypes.float32), b.astype(dtypes.float32))
        return out if fp32_out else out.astype(a.dtype)
    if low and a.ndim > 2 and b.ndim == 2:
        lead = a.shape[:-1]
        out = xp.matmul(a.reshape(_rows(a.shape), a.shape[-1]), b).reshape(lead + (b.shape[-1],))
    else:
        out = xp.matmul(a, b)
    return out.astype(dtypes.float32) if (low and fp32_out) else out


class Matmul(Function):
    """``a @ b`` with NumPy's rules for 1-D and batched operands."""

    op_name = "matmul"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, a, b, op_name="matmul"):
        _check(a, b, op_name)  # NOTE: op_name: the public function (mm, bmm, mv run as this op), for messages
        ctx.save_for_backward(a, b)
        return matmul_arrays(a.array, b.array)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        a2 = unsqueeze(a, 0) if a.ndim == 1 else a
        b2 = unsqueeze(b, -1) if b.ndim == 1 else b
        g = grad
        if b.ndim == 1:  # NOTE: this order also serves 1-D @ 1-D, whose gradient is 0-d
            g = unsqueeze(g, -1)
        if a.ndim == 1:
            g = unsqueeze(g, -2)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sum_to(matmul(g, b2.mT), a2.shape)
            ga = squeeze(ga, 0) if a.ndim == 1 else ga
            ga = reshape(ga, a.shape)
        if ctx.needs_input_grad[1]:
            gb = sum_to(matmul(a2.mT, g), b2.shape)
            gb = reshape(gb, b.shape)
        return ga, gb


def matmul(input, other, *, out=None):  # noqa: A002
    """Matrix product with broadcasting batch dimensions (``input @ other``).

    Args:
        input: a Tensor with at least 1 dimension.
        other: a Tensor with at least 1 dimension.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    if input.array.dtype.kind == "c" or other.array.dtype.kind == "c":  # NOTE: complex_math.py, loaded on first use
        from .complex_math import complex_matmul  # noqa: PLC0415
        result = complex_matmul(input, other)
    else:
        result = Matmul.apply(input, other)
    return result if out is None else write_out("matmul", result, out)


_BIAS_ADD_DTYPES = (dtypes.float32, dtypes.float16)
"""Where Linear's GEMM gives x's dtype on the GPU, so its bias add is one kernel (bfloat16 GEMMs may give fp32)."""


class Linear(Function):
    """``x @ W^T + b`` over any leading dimensions, as one 2-D GEMM on ``x`` viewed as ``(-1, in_features)``."""

    op_name = "linear"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        _check_linear(x, weight, bias)  # NOTE: here, after autocast's casts: dtypes are compared as the GEMM sees them
        ctx.save_for_backward(x, weight)
        if bias is not None and bias.ndim == 0:
            ctx.bias_shape = ()  # NOTE: one value added to every output; its gradient is the total sum
        if bias is not None and bias.ndim == 1 and x.dtype in _BIAS_ADD_DTYPES and fused.kernels_enabled(x.array):
            # NOTE: on the GPU the GEMM (rounded to x's dtype, as linear_array's half GEMM is) and the bias add
            # in one kernel: fp32 add, one rounding, as linear_array's two passes
            y = linear_array(x.array, weight.array, None)
            if y.dtype == x.dtype:
                return fused.bias_add(y, bias.array)
        return linear_array(x.array, weight.array, bias.array if bias is not None else None)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return linear_backward(ctx, grad, x, weight)


def linear(input, weight, bias=None):  # noqa: A002
    """``y = input @ weight^T + bias`` over any leading dimensions (one 2-D GEMM).

    Args:
        input: a Tensor of shape ``(*, in_features)``.
        weight: a Tensor of shape ``(out_features, in_features)``.
        bias: an optional Tensor of shape ``(out_features,)`` or ``()`` (one value added to every output).
    """
    return Linear.apply(input, weight, bias) if bias is not None else Linear.apply(input, weight)


def linear_array(x, weight, bias=None):
    """``x @ weight.T + bias`` on raw arrays: one 2-D GEMM, the bias added before the one rounding.

    Args:
        x: array of shape ``(*, in_features)``.
        weight: array of shape ``(out_features, in_features)``, same dtype.
        bias: optional array of shape ``(out_features,)`` or ``()``.
    """
    x2 = x.reshape(_rows(x.shape), x.shape[-1])
    # NOTE: with a bias, the fp32 GEMM result gets the bias before the one rounding to half
    y = matmul_arrays(x2, weight.T, fp32_out=bias is not None)
    if bias is not None:
        y += bias  # NOTE: y is a fresh array; a half bias widens exactly
        y = y.astype(x.dtype, copy=False)
    return y.reshape(x.shape[:-1] + (weight.shape[0],))


def _linear_backward_arrays(ctx, grad, x, weight):
    # NOTE: no graph of the backward is being recorded (create_graph=False), so the
    # same three formulas run on raw arrays: two GEMMs and a column sum, no op dispatch.
    out_features, in_features = weight.shape
    rows = _rows(x.shape)
    g2 = grad.array.reshape(rows, out_features)
    need = ctx.needs_input_grad
    g, product = g2, matmul_arrays
    if type(g2) is numpy.ndarray and g2.dtype in dtypes.LOW_PRECISION:
        # NOTE: a half GEMM on the CPU is an fp32 GEMM rounded once (matmul_arrays): widen the
        # gradient once for both products and the column sum instead of once each (same values)
        g = g2.astype(dtypes.float32)
        product = lambda a, b: numpy.matmul(a, b.astype(dtypes.float32)).astype(g2.dtype)  # noqa: E731
    gx = Tensor(product(g, weight.array).reshape(x.shape)) if need[0] else None
    gw = Tensor(product(g.T, x.array.reshape(rows, in_features))) if need[1] else None
    gb = None
    if len(need) > 2 and need[2]:
        acc = dtypes.float32 if g2.dtype in dtypes.LOW_PRECISION else None  # NOTE: fp32 accumulation for halves
        column_sum = numpy.add.reduce if type(g2) is numpy.ndarray else type(g2).sum  # NOTE: no Python wrapper
        if getattr(ctx, "bias_shape", None) == ():  # NOTE: a 0-d bias: the total sum (an array, not a NumPy scalar)
            total = xp_of(g2).asarray(column_sum(g2, axis=None, dtype=acc))
        elif g.dtype.itemsize >= 4:
            total = leading_sum(g, 1)  # NOTE: fp32/fp64 (or the widened copy): one GEMV on NumPy, see _rows
        else:
            total = column_sum(g, axis=0, dtype=acc)
        gb = Tensor(total.astype(g2.dtype, copy=False))
    return gx, gw, gb


def linear_backward(ctx, grad, x, weight):
    """The gradients of ``linear`` that ``ctx.needs_input_grad`` asks for (on raw arrays when no graph is recorded).

    Args:
        ctx: the node (its ``needs_input_grad`` says which of input, weight, bias need a gradient).
        grad: the gradient of the output (a Tensor).
        x: the input Tensor.
        weight: the weight Tensor.
    """
    if not STATE.grad_enabled:
        return _linear_backward_arrays(ctx, grad, x, weight)
    out_features, in_features = weight.shape
    gx = matmul(grad, weight) if ctx.needs_input_grad[0] else None
    gw = gb = None
    if ctx.needs_input_grad[1]:
        rows = _rows(x.shape)
        gw = matmul(reshape(grad, (rows, out_features)).mT, reshape(x, (rows, in_features)))
    if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2]:
        gb = sum_to(grad, getattr(ctx, "bias_shape", (out_features,)))
    return gx, gw, gb


class _AddProduct(Function):
    """``beta * input + alpha * P(a, b)`` where ``P`` is a matmul of reshaped ``a``, ``b`` (subclasses say how)."""

    amp_policy = "lower"
    arg_names = ("input", "mat1", "mat2")

    @staticmethod
    def lift(a, b):
        """The matmul operands for ``a`` and ``b`` (arrays or Tensors; only ``.reshape`` is used)."""
        return a, b

    @staticmethod
    def reduce(product):
        """Turn the matmul result array into the op's product (identity unless overridden)."""
        return product

    @staticmethod
    def expand(grad, product_shape):
        """The gradient of the matmul result from the gradient of the op's product."""
        return reshape(grad, product_shape)

    @staticmethod
    def forward(ctx, input, a, b, beta=1, alpha=1):  # noqa: A002
        cls = ctx.fn
        # NOTE: checked here, after autocast's casts, not before apply
        _same_dtype(cls.op_name, input, a, b, names=cls.arg_names)
        ctx.save_for_backward(a, b)
        ctx.in_shape, ctx.beta, ctx.alpha = input.shape, beta, alpha
        big_a, big_b = cls.lift(a.array, b.array)
        product = matmul_arrays(big_a, big_b, fp32_out=True)
        ctx.product_shape = product.shape
        # NOTE: alpha, beta and the add run on the fp32 product; the result is rounded once
        out = cls.reduce(product) * alpha
        if beta != 0:  # NOTE: PyTorch ignores input entirely (NaN included) when beta == 0
            out = out + input.array.astype(out.dtype, copy=False) * beta
        return out.astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        cls = ctx.fn
        a, b = ctx.saved_tensors
        big_a, big_b = cls.lift(a, b)
        g = cls.expand(grad, ctx.product_shape)
        g_in = ga = gb = None
        if ctx.needs_input_grad[0]:
            g_in = sum_to(grad * ctx.beta if ctx.beta != 1 else grad, ctx.in_shape)
        if ctx.needs_input_grad[1]:
            ga = reshape(sum_to(matmul(g, big_b.mT), big_a.shape), a.shape)
            ga = ga * ctx.alpha if ctx.alpha != 1 else ga
        if ctx.needs_input_grad[2]:
            gb = reshape(sum_to(matmul(big_a.mT, g), big_b.shape), b.shape)
            gb = gb * ctx.alpha if ctx.alpha != 1 else gb
        return g_in, ga, gb


def _add_product(cls, input, a, b, beta, alpha, shape):  # noqa: A002
    _require_broadcastable(cls.op_name, input, shape)
    return cls.apply(input, a, b, beta=beta, alpha=alpha)


class Addmm(_AddProduct):
    """``beta * input + alpha * (mat1 @ mat2)``."""

    op_name = "addmm"


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``.

    Args:
        input: a Tensor broadcastable to ``(n, p)``.
        mat1: a ``(n, m)`` Tensor.
        mat2: a ``(m, p)`` Tensor.
        beta: multiplier of ``input`` (0 ignores it, NaN included).
        alpha: multiplier of the product.
    """
    _require_ndim("addmm", "mat1", mat1, 2)
    _require_ndim("addmm", "mat2", mat2, 2)
    _require_inner("addmm", mat1, mat2, mat1.shape[1], mat2.shape[0])
    return _add_product(Addmm, input, mat1, mat2, beta, alpha, (mat1.shape[0], mat2.shape[1]))


class Baddbmm(_AddProduct):
    """``beta * input + alpha * bmm(batch1, batch2)``."""

    op_name = "baddbmm"
    arg_names = ("input", "batch1", "batch2")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``.

    Args:
        input: a Tensor broadcastable to ``(b, n, p)``.
        batch1: a ``(b, n, m)`` Tensor.
        batch2: a ``(b, m, p)`` Tensor.
        beta: multiplier of ``input``.
        alpha: multiplier of the product.
    """
    shape = _batch_shapes("baddbmm", batch1, batch2)
    return _add_product(Baddbmm, input, batch1, batch2, beta, alpha, shape)


class Addmv(_AddProduct):
    """``beta * input + alpha * (mat @ vec)``."""

    op_name = "addmv"
    arg_names = ("input", "mat", "vec")

    @staticmethod
    def lift(a, b):
        return a, b.reshape((b.shape[0], 1))

    @staticmethod
    def reduce(product):
        return product.reshape(product.shape[:1])


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``.

    Args:
        input: a Tensor broadcastable to ``(n,)``.
        mat: a ``(n, m)`` Tensor.
        vec: a ``(m,)`` Tensor.
        beta: multiplier of ``input``.
        alpha: multiplier of the product.
    """
    _require_ndim("addmv", "mat", mat, 2)
    _require_ndim("addmv", "vec", vec, 1)
    _require_inner("addmv", mat, vec, mat.shape[1], vec.shape[0])
    return _add_product(Addmv, input, mat, vec, beta, alpha, (mat.shape[0],))


def _promote_for_addr(input, vec1, vec2, beta, alpha):  # noqa: A002
    """The three operands cast (differentiably) to their promoted dtype, as PyTorch's ``addr`` does.

    NOTE: unlike the matrix products, PyTorch's ``addr`` is elementwise math on the
    expanded operands, so mixed dtypes promote (float32 with float64 gives float64,
    ints with floats give the float) instead of raising; each gradient comes back in
    its operand's own dtype through the cast. As in PyTorch, an integer result refuses
    a floating ``beta`` or ``alpha``.
    """
    target = dtypes.result_type(input.dtype, vec1.dtype, vec2.dtype)
    if target.kind in "iu":
        for name, value in (("beta", beta), ("alpha", alpha)):
            if isinstance(value, (float, numpy.floating)):
                raise RuntimeError(f"addr: For integral input tensors, argument {name} must not be a floating "
                                   f"point number.")
    return tuple(t if t.dtype == target else Cast.apply(t, dtype=target) for t in (input, vec1, vec2))


class Addr(_AddProduct):
    """``beta * input + alpha * outer(vec1, vec2)``."""

    op_name = "addr"
    arg_names = ("input", "vec1", "vec2")

    @staticmethod
    def lift(a, b):
        return a.reshape((a.shape[0], 1)), b.reshape((1, b.shape[0]))


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``.

    Args:
        input: a Tensor broadcastable to ``(n, m)``.
        vec1: a ``(n,)`` Tensor.
        vec2: a ``(m,)`` Tensor.
        beta: multiplier of ``input``.
        alpha: multiplier of the outer product.
    """
    _require_ndim("addr", "vec1", vec1, 1)
    _require_ndim("addr", "vec2", vec2, 1)
    input, vec1, vec2 = _promote_for_addr(input, vec1, vec2, beta, alpha)  # noqa: A001
    return _add_product(Addr, input, vec1, vec2, beta, alpha, (vec1.shape[0], vec2.shape[0]))


class Addbmm(_AddProduct):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""

    op_name = "addbmm"
    arg_names = ("input", "batch1", "batch2")

    @staticmethod
    def reduce(product):
        return product.sum(axis=0)

    @staticmethod
    def expand(grad, product_shape):
        return broadcast_to(unsqueeze(grad, 0), product_shape)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * sum over b of batch1[b] @ batch2[b]``.

    Args:
        input: a Tensor broadcastable to ``(n, p)``.
        batch1: a ``(b, n, m)`` Tensor.
        batch2: a ``(b, m, p)`` Tensor.
        beta: multiplier of ``input``.
        alpha: multiplier of the summed product.
    """
    shape = _batch_shapes("addbmm", batch1, batch2)
    return _add_product(Addbmm, input, batch1, batch2, beta, alpha, shape[1:])


class Dot(Function):
    """Inner product of two 1-D tensors of the same length."""

    op_name = "dot"
    amp_policy = "promote"

    @staticmethod
    def forward(ctx, a, b):
        _check_vectors(ctx.fn.op_name, a, b)
        ctx.save_for_backward(a, b)
        return matmul_arrays(a.array, b.array)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad * b if ctx.needs_input_grad[0] else None), (grad * a if ctx.needs_input_grad[1] else None)


def dot(input, tensor):  # noqa: A002
    """Inner product of two 1-D tensors (fp32 accumulation for half inputs).

    Args:
        input: a 1-D Tensor.
        tensor: a 1-D Tensor of the same length.
    """
    return Dot.apply(input, tensor)


class Vdot(Dot):
    """``dot`` of the conjugate of the first vector (the same as ``dot`` for real tensors)."""

    op_name = "vdot"


def vdot(input, other):  # noqa: A002
    """``dot`` with the first argument conjugated (identical to ``dot`` for the real dtypes cupynet has).

    Args:
        input: a 1-D Tensor.
        other: a 1-D Tensor of the same length.
    """
    return Vdot.apply(input, other)


def mm(input, mat2, *, out=None):  # noqa: A002
    """Product of two matrices ``(n, m) @ (m, p)``.

    Args:
        input: a 2-D Tensor.
        mat2: a 2-D Tensor.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    _require_ndim("mm", "input", input, 2)
    _require_ndim("mm", "mat2", mat2, 2)
    result = Matmul.apply(input, mat2, op_name="mm")
    return result if out is None else write_out("mm", result, out)


def bmm(input, mat2, *, out=None):  # noqa: A002
    """Batched product ``(b, n, m) @ (b, m, p)`` (no broadcasting of the batch).

    Args:
        input: a 3-D Tensor.
        mat2: a 3-D Tensor.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    _require_ndim("bmm", "input", input, 3)
    _require_ndim("bmm", "mat2", mat2, 3)
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: input {tuple(input.shape)} and mat2 {tuple(mat2.shape)}")
    result = Matmul.apply(input, mat2, op_name="bmm")
    return result if out is None else write_out("bmm", result, out)


def mv(input, vec):  # noqa: A002
    """Matrix-vector product ``(n, m) @ (m,)``.

    Args:
        input: a 2-D Tensor.
        vec: a 1-D Tensor.
    """
    _require_ndim("mv", "input", input, 2)
    _require_ndim("mv", "vec", vec, 1)
    return Matmul.apply(input, vec, op_name="mv")


def outer(input, vec2):  # noqa: A002
    """Outer product ``input[:, None] * vec2[None, :]`` (dtypes promote like ``mul``).

    Args:
        input: a 1-D Tensor.
        vec2: a 1-D Tensor.
    """
    _require_ndim("outer", "input", input, 1)
    _require_ndim("outer", "vec2", vec2, 1)
    return unsqueeze(input, 1) * unsqueeze(vec2, 0)


ger = outer
METHODS = {"matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "addmm": addmm, "addmv": addmv, "addr": addr,
           "baddbmm": baddbmm, "addbmm": addbmm, "dot": dot, "vdot": vdot, "outer": outer, "ger": ger}

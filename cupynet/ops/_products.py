"""Products and norms of the reduce family: prod, cumsum, cumprod, norm / linalg.vector_norm.

All are fp32 ops under autocast (AMP_REFERENCE.md: prod, cumprod, cumsum, sum,
norms), so a float16 input under autocast gives a float32 result. Kept in their
own file for size; ``cupynet.ops.reduce`` re-exports them and lists their
classes as part of the reduce family.

NOTE (gradients with zeros): the gradient of a product with respect to one
factor is the product of all the *other* factors, which ``out / x`` gets wrong
when ``x`` is 0. ``prod`` uses exclusive cumulative products from both sides
instead (exact with any number of zeros, and twice differentiable); ``cumprod``
treats the elements before and at the first zero of each slice separately.
"""

from __future__ import annotations

import math
import numbers

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._reduce_util import _axes, _check_reduced_nonempty, _keep
from ._util import compute_in_fp32, normalize_dim, require_floating, xp_of
from .arith import cast
from .indexing import cat, flip, getitem, stack
from .shape import reshape, unsqueeze

__all__ = ["prod", "cumsum", "cumprod", "norm", "linalg_vector_norm", "vector_norm"]


def _out_dtype(a, dtype):
    if dtype is not None:
        return dtype
    return a.dtype if dtypes.is_floating(a.dtype) else dtypes.int64


def _narrow(t, dim, start, stop):
    return getitem(t, (slice(None),) * dim + (slice(start, stop),))


# ---- cumulative sum and product ----------------------------------------------------------------------
class CumSum(Function):
    """Running sum along ``dim`` (from the end when ``reverse``); fp32 under autocast."""

    op_name = "cumsum"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, dim=0, dtype=None, reverse=False):
        ctx.dim, ctx.reverse = dim, reverse
        xp, out_dtype = xp_of(a), _out_dtype(a, dtype)
        x = a.data.astype(dtypes.compute_dtype(out_dtype), copy=False)
        x = xp.flip(x, dim) if reverse else x
        out = xp.cumsum(x, axis=dim)
        return (xp.flip(out, dim) if reverse else out).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        # NOTE: each input feeds every later running sum, so its gradient is the reversed running sum
        return CumSum.apply(grad, dim=ctx.dim, reverse=not ctx.reverse)


class CumProd(Function):
    """Running product along ``dim``; fp32 under autocast; exact gradients with zeros."""

    op_name = "cumprod"
    amp_policy = "fp32"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, dim=0, dtype=None):
        ctx.save_for_backward(a)
        ctx.dim, out_dtype = dim, _out_dtype(a, dtype)
        x = a.data.astype(dtypes.compute_dtype(out_dtype), copy=False)
        return xp_of(a).cumprod(x, axis=dim).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if is_grad_enabled():  # NOTE: create_graph: the differentiable O(n^2) form (PyTorch does the same)
            return _cumprod_grad_differentiable(a, grad, ctx.dim)
        return Tensor(_cumprod_grad_array(a.data, ctx.output(0).data, grad.data, ctx.dim))


def _cumprod_grad_array(x, y, g, dim):
    """``grad_i = sum_{k>=i} g_k prod_{j<=k, j!=i} x_j`` in O(n), exact with zeros (not recorded).

    Before the first zero of a slice ``grad_i = revcumsum(g * y)_i / x_i``; at the first zero the
    product skips it, which is the running product of x with that zero replaced by 1; after it every
    term contains the zero, so the gradient is 0.
    """
    xp, out_dtype = xp_of(x), g.dtype
    x, y, g = compute_in_fp32(x), compute_in_fp32(y), compute_in_fp32(g)
    zeros_so_far = xp.cumsum(x == 0, axis=dim)
    before = zeros_so_far == 0
    first = (x == 0) & (zeros_so_far == 1)

    def rev_cumsum(v):
        return xp.flip(xp.cumsum(xp.flip(v, dim), axis=dim), dim)

    part_before = xp.where(before, rev_cumsum(g * y) / xp.where(before, x, 1), 0)
    part_first = xp.where(first, rev_cumsum(g * xp.cumprod(xp.where(first, 1, x), axis=dim)), 0)
    return (part_before + part_first).astype(out_dtype, copy=False)


def _cumprod_grad_differentiable(x, g, dim):
    """The same gradient from recorded ops, one position at a time (O(n^2), twice differentiable at zeros).

    ``grad_i = prod(x[:i]) * (g_i + sum_{k>i} g_k * prod(x[i+1:k+1]))``.
    """
    from .reduce import sum as sum_op  # noqa: PLC0415 - reduce imports this module
    n, pieces = x.shape[dim], []
    for i in range(n):
        g_i = getitem(g, (slice(None),) * dim + (i,))
        tail = g_i
        if i + 1 < n:
            later = _narrow(g, dim, i + 1, n) * CumProd.apply(_narrow(x, dim, i + 1, n), dim=dim)
            tail = tail + sum_op(later, dim=dim)
        pieces.append(tail if i == 0 else Prod.apply(_narrow(x, dim, 0, i), dim=dim) * tail)
    return stack(pieces, dim)


def _cumulative(cls, input, dim, dtype):  # noqa: A002
    normalize_dim(cls.op_name, dim, input.ndim)  # NOTE: a 0-d tensor takes dim 0 or -1 only, as in PyTorch
    if input.ndim == 0:
        input = reshape(input, (1,))
        return reshape(cls.apply(input, dim=0, dtype=_dtype_arg(dtype)), ())
    return cls.apply(input, dim=normalize_dim(cls.op_name, dim, input.ndim), dtype=_dtype_arg(dtype))


def _dtype_arg(dtype):
    return dtypes.as_dtype(dtype) if dtype is not None else None


def cumsum(input, dim, *, dtype=None):  # noqa: A002 - PyTorch's name
    """Running sum along ``dim``; integer and bool inputs give int64.

    Args:
        input: a Tensor.
        dim: the dimension to accumulate along.
        dtype: the result dtype (the input is cast to it first).
    """
    return _cumulative(CumSum, input, dim, dtype)


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Running product along ``dim``; integer and bool inputs give int64; exact gradients with zeros.

    Args:
        input: a Tensor.
        dim: the dimension to accumulate along.
        dtype: the result dtype (the input is cast to it first).
    """
    return _cumulative(CumProd, input, dim, dtype)


# ---- product -----------------------------------------------------------------------------------------
class Prod(Function):
    """Product along one dimension; fp32 under autocast; exact gradients with zeros."""

    op_name = "prod"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, dim=0, keepdim=False, dtype=None):
        ctx.save_for_backward(a)
        ctx.dim, ctx.keepdim, out_dtype = dim, keepdim, _out_dtype(a, dtype)
        x = a.data.astype(dtypes.compute_dtype(out_dtype), copy=False)
        return x.prod(axis=dim, keepdims=keepdim).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        g = grad if ctx.keepdim else unsqueeze(grad, ctx.dim)
        if a.shape[ctx.dim] == 0:
            return Tensor(xp_of(a).zeros(a.shape, dtype=grad.dtype))
        # NOTE: prod of the other factors = (product of those before) * (product of those after)
        before = _exclusive_cumprod(a, ctx.dim)
        after = flip(_exclusive_cumprod(flip(a, ctx.dim), ctx.dim), ctx.dim)
        return g * before * after


def _exclusive_cumprod(t, dim):
    """``[1, x0, x0*x1, ...]``: the running product of the elements strictly before each position."""
    shape = tuple(1 if i == dim else s for i, s in enumerate(t.shape))
    ones = Tensor(xp_of(t).ones(shape, dtype=t.dtype))
    n = t.shape[dim]
    if n == 1:
        return ones
    return cat([ones, CumProd.apply(_narrow(t, dim, 0, n - 1), dim=dim)], dim)


def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """Product of the elements (all when dim is None, else along one ``dim``); int inputs give int64.

    Args:
        input: a Tensor.
        dim: one dimension, or None for all elements.
        keepdim: keep the reduced dimension with size 1 (only with a dim).
        dtype: the result dtype (the input is cast to it first).
    """
    if dim is None:
        if keepdim:
            raise TypeError("prod: keepdim=True needs a dim (the product of all elements is a 0-d tensor)")
        return Prod.apply(reshape(input, (-1,)), dim=0, keepdim=False, dtype=_dtype_arg(dtype))
    if not isinstance(dim, int):
        raise TypeError(f"prod: dim must be one int (PyTorch's prod reduces a single dimension), got {dim!r}")
    normalize_dim("prod", dim, input.ndim)
    if input.ndim == 0:
        return reshape(Prod.apply(reshape(input, (1,)), dim=0, keepdim=False, dtype=_dtype_arg(dtype)), ())
    d = normalize_dim("prod", dim, input.ndim)
    return Prod.apply(input, dim=d, keepdim=keepdim, dtype=_dtype_arg(dtype))


# ---- vector norms ------------------------------------------------------------------------------------
class Norm(Function):
    """Vector p-norm over ``axes`` (any real p, inf and -inf, as PyTorch); fp32 under autocast."""

    op_name = "norm"
    amp_policy = "fp32"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, ord=2.0, axes=(), keepdim=False):  # noqa: A002 - PyTorch's name
        ctx.save_for_backward(a)
        ctx.ord, ctx.axes, ctx.keepdim = ord, axes, keepdim
        return _norm_array(a.data, ord, axes, keepdim).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if ctx.ord == 0:
            return None  # NOTE: counting nonzeros is piecewise constant: no gradient
        g = _keep(grad, a.shape, ctx.axes, ctx.keepdim)
        sign = Tensor(xp_of(a).sign(a.data))
        if ctx.ord == 1:
            return g * sign
        out = _keep(ctx.output(0), a.shape, ctx.axes, ctx.keepdim)
        if math.isinf(ctx.ord):
            hit = (xp_of(a).abs(a.data) == out.data).astype(dtypes.float32)
            share = hit / hit.sum(axis=ctx.axes, keepdims=True)  # NOTE: ties share it, as PyTorch
            return g * sign * Tensor(share.astype(grad.dtype))
        # NOTE: a zero norm means x is all zeros there; dividing by 1 instead gives the 0 gradient PyTorch gives
        safe = out + Tensor((out.data == 0).astype(out.dtype))
        if ctx.ord == 2:
            return g * a / safe
        # NOTE: for p < 1, |x|^(p-1) is infinite at x == 0; PyTorch's gradient is 0 there (sign is 0),
        # and 0 wherever the norm is 0 (a negative p with a zero element): |x| + [x == 0] keeps it finite
        zero = Tensor((a.array == 0).astype(a.dtype))
        nonzero_norm = Tensor((out.array != 0).astype(out.dtype))
        return g * sign * (a * sign + zero) ** (ctx.ord - 1) / safe ** (ctx.ord - 1) * nonzero_norm


class VectorNorm(Norm):
    """``linalg.vector_norm``: the vector p-norm over ``dim`` (all elements by default); fp32 under autocast."""

    op_name = "linalg_vector_norm"


def _norm_array(array, ord, axes, keepdim):  # noqa: A002
    xp = xp_of(array)
    x = xp.abs(compute_in_fp32(array))
    if ord == math.inf:
        return x.max(axis=axes, keepdims=keepdim)
    if ord == -math.inf:
        return x.min(axis=axes, keepdims=keepdim)
    if ord == 0:
        return (x != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
    if ord == 1:
        return x.sum(axis=axes, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt((x * x).sum(axis=axes, keepdims=keepdim))
    if ord < 0:  # NOTE: 0 ** negative is inf, so the norm is 0 there; spelled out to avoid NumPy's warning
        powered = xp.where(x == 0, xp.inf, xp.where(x == 0, 1, x) ** ord)
        return powered.sum(axis=axes, keepdims=keepdim) ** (1.0 / ord)
    return ((x ** ord).sum(axis=axes, keepdims=keepdim)) ** (1.0 / ord)


def _norm_order(op_name, p):
    if p == "fro":
        return 2.0
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p):
        raise ValueError(f"{op_name}: unsupported norm order {p!r}; expected a real number, inf, -inf or 'fro'")
    return float(p)


def _vector_norm(cls, input, ord, dim, keepdim, dtype):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{cls.op_name}: expected a Tensor, got {type(input).__name__}")
    require_floating(cls.op_name, input)
    if dtype is not None:
        if dtypes.result_type(input.dtype, dtypes.as_dtype(dtype)) != dtypes.as_dtype(dtype):
            raise RuntimeError(f"{cls.op_name}: the dtype of the input ({input.dtype}) should be convertible "
                               f"without narrowing to the specified dtype ({dtypes.as_dtype(dtype)})")
        input = cast(input, dtype)
    axes = _axes(cls.op_name, dim, input.ndim)
    if math.isinf(ord):
        _check_reduced_nonempty(cls.op_name, input, axes)
    return cls.apply(input, ord=ord, axes=axes, keepdim=keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """The vector p-norm of ``input`` over ``dim`` (all elements when None), as ``torch.norm``.

    Args:
        input: a floating Tensor.
        p: 'fro' or 2 (default), 1, inf, -inf, 0 (number of nonzeros) or any number >= 1.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: cast the input to this dtype first.
    """
    return _vector_norm(Norm, input, _norm_order("norm", p), dim, keepdim, dtype)


def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``torch.linalg.vector_norm``: ``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements when None).

    Args:
        x: a floating Tensor.
        ord: 2 (default), 1, inf, -inf, 0 (number of nonzeros) or any number >= 1.
        dim: a dimension, a tuple of them, or None.
        keepdim: keep reduced dimensions with size 1.
        dtype: cast the input to this dtype first.
    """
    return _vector_norm(VectorNorm, x, _norm_order("linalg_vector_norm", ord), dim, keepdim, dtype)


vector_norm = linalg_vector_norm

"""Complex tensors (complex64, complex128): arithmetic, parts, polar form and their gradients.

Loaded on first use: ``+ - * /`` and ``matmul`` send complex operands here (one dtype test in
``arith._binary`` and ``linalg.matmul``), ``abs`` too, and the names (``polar``, ``view_as_complex``,
``conj``, ...) are in the lazy tables of ``cupynet`` and ``cupynet.ops``.

NOTE (gradients, PyTorch's convention): the gradient of a real loss L with respect to z = x + iy is
``dL/dx + i dL/dy`` (the conjugate Wirtinger derivative, doubled). So a holomorphic ``out = f(z)``
passes back ``grad * conj(f'(z))`` (``mul``: ``grad * conj(other)``); a real input of a complex op
gets the real part; a real function of z (``abs``, ``angle``, ``real``) gives ``g * (d/dx + i d/dy)``.
Autocast leaves complex tensors alone (its casts touch floating tensors only), as PyTorch's does.
"""

from __future__ import annotations

import math
import numbers

import numpy

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import data, xp_of
from .shape import sum_to

__all__ = ["complex", "polar", "view_as_complex", "view_as_real", "real", "imag", "conj", "conj_physical",
           "resolve_conj", "resolve_neg", "angle", "is_complex", "complex_abs", "complex_binary", "complex_matmul"]

# NOTE: the complex dtype that holds a real dtype's values (half types widen: no complex32 here)
_COMPLEX_OF = {dtypes.float16: dtypes.complex64, dtypes.bfloat16: dtypes.complex64,
               dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
_REAL_OF = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}


def is_complex(input) -> bool:  # noqa: A002 - PyTorch's name
    """Whether ``input`` has a complex dtype (complex64 or complex128).

    Args:
        input: a Tensor.
    """
    return input.array.dtype.kind == "c"


def _require_complex(op_name, input):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"{op_name}: expected a Tensor, got {type(input).__name__}")
    if not is_complex(input):
        raise RuntimeError(f"{op_name} is not implemented for tensors with non-complex dtypes (got {input.dtype}).")


def _wide(array):
    """A half-precision array as float32 (NumPy has no complex of them); others as they are."""
    return array.astype(dtypes.float32) if array.dtype in dtypes.LOW_PRECISION else array


def _back_to(grad, operand):
    """``grad`` (of a complex result) for ``operand``: summed to its shape; a real operand gets the real part."""
    if not isinstance(operand, Tensor):
        return None
    g = sum_to(grad, tuple(operand.shape))
    if not is_complex(operand) and is_complex(g):
        g = real(g)
    return g if g.dtype == operand.dtype else g.to(operand.dtype)


def _conj_of(value):
    if isinstance(value, Tensor):
        return conj(value)
    return value.conjugate() if isinstance(value, numbers.Number) else value


# ---- arithmetic ----------------------------------------------------------------------------------------------
class _ComplexBinary(Function):
    """A binary op with a complex operand: forward in NumPy/CuPy, gradients by the convention above."""

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a if isinstance(a, Tensor) else None, b if isinstance(b, Tensor) else None)
        ctx.scalars = (None if isinstance(a, Tensor) else a, None if isinstance(b, Tensor) else b)
        return cls.compute(_wide(data(a)) if isinstance(a, Tensor) else a,
                           _wide(data(b)) if isinstance(b, Tensor) else b)

    @classmethod
    def backward(cls, ctx, grad):
        saved = ctx.saved_tensors
        a, b = (s if s is not None else v for s, v in zip(saved, ctx.scalars))
        ga, gb = cls.grads(grad, a, b, ctx.needs_input_grad)
        return (_back_to(ga, a) if ga is not None else None), (_back_to(gb, b) if gb is not None else None)


class ComplexAdd(_ComplexBinary):
    """``a + b`` with a complex operand."""

    op_name = "complex_add"
    compute = staticmethod(lambda a, b: a + b)

    @staticmethod
    def grads(grad, a, b, need):
        return grad if need[0] else None, grad if need[1] else None


class ComplexSub(_ComplexBinary):
    """``a - b`` with a complex operand."""

    op_name = "complex_sub"
    compute = staticmethod(lambda a, b: a - b)

    @staticmethod
    def grads(grad, a, b, need):
        return grad if need[0] else None, -grad if need[1] else None


class ComplexMul(_ComplexBinary):
    """``a * b`` with a complex operand: gradients ``grad * conj(b)`` and ``grad * conj(a)``."""

    op_name = "complex_mul"
    compute = staticmethod(lambda a, b: a * b)

    @staticmethod
    def grads(grad, a, b, need):
        return grad * _conj_of(b) if need[0] else None, grad * _conj_of(a) if need[1] else None


class ComplexDiv(_ComplexBinary):
    """``a / b`` with a complex operand: gradients ``grad / conj(b)`` and ``-grad * conj(a / b^2)``."""

    op_name = "complex_div"
    compute = staticmethod(lambda a, b: a / b)

    @staticmethod
    def grads(grad, a, b, need):
        gb = -grad * _conj_of(a) / (_conj_of(b) * _conj_of(b)) if need[1] else None
        return grad / _conj_of(b) if need[0] else None, gb


_BINARY = {"add": ComplexAdd, "sub": ComplexSub, "mul": ComplexMul, "div": ComplexDiv}


def complex_binary(fn, a, b):
    """``fn``'s op (add, sub, mul, div) on operands one of which is complex (``arith._binary`` sends them here).

    Args:
        fn: the real op class (its ``op_name`` picks the complex one).
        a: a Tensor or number.
        b: a Tensor or number.
    """
    op = _BINARY.get(fn.op_name)
    if op is None:
        raise NotImplementedError(f"{fn.op_name}: complex tensors are not supported by this op in cupynet (complex "
                                  "tensors have + - * /, matmul, abs, angle, conj, real, imag, polar)")
    return op.apply(a, b)


def _adjoint(t):
    return conj(t).transpose(-1, -2)


class ComplexMatmul(Function):
    """``a @ b`` with a complex operand: gradients ``grad @ b^H`` and ``a^H @ grad``."""

    op_name = "complex_matmul"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return xp_of(a).matmul(_wide(a.array), _wide(b.array))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = _back_to(complex_matmul(grad, _adjoint(b)), a) if ctx.needs_input_grad[0] else None
        gb = _back_to(complex_matmul(_adjoint(a), grad), b) if ctx.needs_input_grad[1] else None
        return ga, gb


def complex_matmul(input, other):  # noqa: A002
    """Matrix product with a complex operand (``linalg.matmul`` sends them here); both at least 2-D.

    Args:
        input: a Tensor of shape (*, n, k).
        other: a Tensor of shape (*, k, m).
    """
    if input.ndim < 2 or other.ndim < 2:
        raise NotImplementedError(f"matmul: complex operands of shapes {tuple(input.shape)} and "
                                  f"{tuple(other.shape)}: cupynet's complex matmul takes matrices (at least 2-D)")
    return ComplexMatmul.apply(input, other)


# ---- parts and the polar form ----------------------------------------------------------------------------------
class Conj(Function):
    """The complex conjugate; its gradient is the conjugate of the incoming one."""

    op_name = "conj"

    @staticmethod
    def forward(ctx, z):
        return xp_of(z).conj(z.array)

    @staticmethod
    def backward(ctx, grad):
        return conj(grad)


def conj(input):  # noqa: A002
    """The complex conjugate (a real tensor is returned as it is, as PyTorch).

    Args:
        input: a Tensor.
    """
    return Conj.apply(input) if is_complex(input) else input


def conj_physical(input):  # noqa: A002
    """``conj``: cupynet's conjugates are always materialised.

    Args:
        input: a Tensor.
    """
    return conj(input)


def resolve_conj(input):  # noqa: A002
    """The tensor itself: cupynet has no lazy conjugate bit to resolve.

    Args:
        input: a Tensor.
    """
    return input


def resolve_neg(input):  # noqa: A002
    """The tensor itself: cupynet has no lazy negation bit to resolve.

    Args:
        input: a Tensor.
    """
    return input


class Real(Function):
    """The real part; the gradient goes to it unchanged (a zero imaginary part)."""

    op_name = "real"

    @staticmethod
    def forward(ctx, z):
        ctx.dtype = z.dtype
        return z.array.real.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype)


def real(input):  # noqa: A002
    """The real part of a complex tensor (a copy; PyTorch gives a view); a real tensor as it is.

    Args:
        input: a Tensor.
    """
    return Real.apply(input) if is_complex(input) else input


def zeros_like_real(t):
    """Zeros of ``t``'s shape, dtype and device (no history).

    Args:
        t: a Tensor.
    """
    return Tensor(xp_of(t).zeros(t.shape, dtype=t.dtype))


class Imag(Function):
    """The imaginary part; the gradient comes back as ``1j * grad``."""

    op_name = "imag"

    @staticmethod
    def forward(ctx, z):
        return z.array.imag.copy()

    @staticmethod
    def backward(ctx, grad):
        return complex(zeros_like_real(grad), grad)


def imag(input):  # noqa: A002
    """The imaginary part of a complex tensor (a copy; PyTorch gives a view).

    Args:
        input: a complex Tensor.
    """
    _require_complex("imag", input)
    return Imag.apply(input)


class Complex(Function):
    """``real + 1j * imag`` from two real tensors; the gradients are the parts of the incoming one."""

    op_name = "complex"

    @staticmethod
    def forward(ctx, re, im):
        ctx.shapes = (re.shape, im.shape)
        return re.array + 1j * im.array.astype(_COMPLEX_OF[im.dtype])

    @staticmethod
    def backward(ctx, grad):
        gr = sum_to(real(grad), ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gi = sum_to(imag(grad), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return gr, gi


def complex(real, imag):  # noqa: A001 - PyTorch's name (torch.complex)
    """The complex tensor ``real + 1j * imag`` (both float32, or both float64; they broadcast).

    Args:
        real: the real parts.
        imag: the imaginary parts.
    """
    for name, value in (("real", real), ("imag", imag)):
        if not isinstance(value, Tensor):
            raise TypeError(f"complex(): argument '{name}' must be Tensor, not {type(value).__name__}")
    if real.dtype != imag.dtype or real.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"complex(): expected both inputs to be float32 or both float64, got {real.dtype} and "
                           f"{imag.dtype}")
    return Complex.apply(real, imag)


class Polar(Function):
    """``abs * exp(1j * angle)``; gradients ``Re(conj(g) * sgn(out))`` and ``Re(conj(g) * 1j * out)``."""

    op_name = "polar"

    @staticmethod
    def forward(ctx, r, theta):
        xp = xp_of(r)
        out = r.array * (xp.cos(theta.array) + 1j * xp.sin(theta.array)).astype(_COMPLEX_OF[r.dtype])
        ctx.shapes = (r.shape, theta.shape)
        ctx.save_for_backward(r, theta)
        return out

    @staticmethod
    def backward(ctx, grad):
        r, theta = ctx.saved_tensors
        unit = polar(theta * 0 + 1, theta)  # NOTE: exp(1j * theta), differentiable for double backward
        g = conj(grad)
        gr = sum_to(real(g * unit), ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gt = sum_to(real(g * (unit * r) * 1j), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return gr, gt


def polar(abs, angle):  # noqa: A002 - PyTorch's names
    """The complex tensor ``abs * (cos(angle) + 1j * sin(angle))`` (both float32, or both float64).

    Args:
        abs: the magnitudes.
        angle: the angles in radians.
    """
    for name, value in (("abs", abs), ("angle", angle)):
        if not isinstance(value, Tensor):
            raise TypeError(f"polar(): argument '{name}' must be Tensor, not {type(value).__name__}")
    if abs.dtype != angle.dtype or abs.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"polar(): expected both inputs to be float32 or both float64, got {abs.dtype} and "
                           f"{angle.dtype}")
    return Polar.apply(abs, angle)


def _unit(z):
    """``z / |z|`` (PyTorch's ``sgn``), 0 where z is 0, with no history."""
    xp = xp_of(z)
    magnitude = xp.abs(z.array)
    with numpy.errstate(invalid="ignore", divide="ignore"):
        return Tensor(xp.where(magnitude == 0, 0, z.array / magnitude).astype(z.dtype))


class ComplexAbs(Function):
    """``|z|`` of a complex tensor (real); gradient ``grad * z / |z|`` (0 at z = 0)."""

    op_name = "complex_abs"

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return xp_of(z).abs(z.array)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return grad * _unit(z)


def complex_abs(input):  # noqa: A002
    """``|z|`` of a complex tensor (``abs`` sends complex tensors here).

    Args:
        input: a complex Tensor.
    """
    return ComplexAbs.apply(input)


class Angle(Function):
    """The argument of z in (-pi, pi] (real); gradient ``grad * 1j * z / |z|^2`` (0 at z = 0)."""

    op_name = "angle"

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return xp_of(z).angle(z.array)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        xp = xp_of(z)
        square = xp.abs(z.array) ** 2
        with numpy.errstate(invalid="ignore", divide="ignore"):
            factor = xp.where(square == 0, 0, 1j * z.array / square).astype(z.dtype)
        return grad * Tensor(factor)


def angle(input):  # noqa: A002
    """The argument (phase) of each element in radians; a real tensor gives 0, or pi for negatives (no gradient).

    Args:
        input: a Tensor.
    """
    if is_complex(input):
        return Angle.apply(input)
    xp = xp_of(input)
    values = _wide(input.array) if dtypes.is_floating(input.dtype) else input.array.astype(dtypes.get_default_dtype())
    result = xp.where(values < 0, math.pi, 0.0).astype(values.dtype)
    result = xp.where(xp.isnan(values), values, result)
    return Tensor(result.astype(input.dtype if dtypes.is_floating(input.dtype) else values.dtype))


# ---- views between complex and pairs of reals --------------------------------------------------------------------
class ViewAsComplex(Function):
    """(..., 2) real pairs as complex numbers; the gradient goes back as pairs."""

    op_name = "view_as_complex"

    @staticmethod
    def forward(ctx, x):
        pairs = xp_of(x).ascontiguousarray(x.array)
        return pairs.view(_COMPLEX_OF[x.dtype])[..., 0]

    @staticmethod
    def backward(ctx, grad):
        return view_as_real(grad)


def view_as_complex(input):  # noqa: A002
    """A float32/float64 tensor of shape (..., 2) read as complex numbers of shape (...) (a copy in cupynet).

    Args:
        input: a Tensor whose last dimension has size 2.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_complex(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {input.dtype}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2 (got shape {tuple(input.shape)})")
    return ViewAsComplex.apply(input)


class ViewAsReal(Function):
    """Complex numbers as (..., 2) real pairs; the gradient goes back as complex numbers."""

    op_name = "view_as_real"

    @staticmethod
    def forward(ctx, z):
        xp = xp_of(z)
        return xp.stack([z.array.real, z.array.imag], axis=-1)

    @staticmethod
    def backward(ctx, grad):
        return view_as_complex(grad)


def view_as_real(input):  # noqa: A002
    """A complex tensor of shape (...) as real pairs of shape (..., 2) (a copy in cupynet).

    Args:
        input: a complex Tensor.
    """
    _require_complex("view_as_real", input)
    return ViewAsReal.apply(input)

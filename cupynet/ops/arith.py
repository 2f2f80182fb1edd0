"""Elementwise arithmetic with broadcasting, casts, device moves and maximum/minimum.

Binary ops broadcast like NumPy; backward sums the gradient back to each
input's shape (``sum_to``). A Python number as an operand stays a Python
number, so ``half_tensor * 2.0`` stays float16 (NumPy 2's weak scalars, as in PyTorch).
"""

from __future__ import annotations

import math

import numpy

from .. import backend, dtypes
from ..autograd.function import Cast, Function
from ..autograd.state import STATE
from ..tensor import Tensor
from ._util import data, fix_float_dtype, lift, xp_of
from .out import write_out
from .shape import _sum_to_array, sum_to
from .unary import log

__all__ = ["add", "sub", "mul", "div", "neg", "pow", "cast", "to_device", "clone", "contiguous", "maximum",
           "minimum"]


def _grad_for(ctx, i, make_grad):
    """``make_grad()`` reduced to input i's shape, or None without computing it when input i needs no grad."""
    if not ctx.needs_input_grad[i]:
        return None
    return sum_to(make_grad(), ctx.shapes[i])


def _zero_dim_follows(a, b):
    """PyTorch's promotion for a 0-d float tensor meeting a dimensioned float tensor: the latter's dtype wins.

    NOTE: NumPy 2 promotes ``float16[N] * float32[]`` to float32; PyTorch keeps float16
    (0-d tensors do not take part in promotion within a category). The 0-d operand is
    cast (differentiably), so its gradient still comes back in its own dtype.
    """
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.dtype == b.dtype:
        return a, b
    if not (dtypes.is_floating(a.dtype) and dtypes.is_floating(b.dtype)):
        return a, b
    if a.ndim == 0 and b.ndim > 0:
        return Cast.apply(a, dtype=b.dtype), b
    if b.ndim == 0 and a.ndim > 0:
        return a, Cast.apply(b, dtype=a.dtype)
    return a, b


def _binary(fn, a, b):
    if type(b) in (float, int) and isinstance(a, Tensor):
        return fn.apply(a, b)  # NOTE: the common tensor-with-a-number case needs no lifting or promotion
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.array.dtype == b.array.dtype \
            and a.array.dtype.kind != "c":
        return fn.apply(a, b)  # NOTE: two tensors of one real dtype: nothing to lift, promote or make complex
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{fn.name()}: expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    if _complex_operand(a) or _complex_operand(b):  # NOTE: complex math lives in complex_math.py (first use)
        from .complex_math import complex_binary  # noqa: PLC0415
        return complex_binary(fn, a, b)
    like = a if isinstance(a, Tensor) else b
    a, b = _zero_dim_follows(lift(a, like), lift(b, like))
    return fn.apply(a, b)


def _complex_operand(value) -> bool:
    return type(value) is complex or (isinstance(value, Tensor) and value.array.dtype.kind == "c")


def _shape(value):
    """A Tensor's shape, ``()`` for a Python number."""
    return value.array.shape if isinstance(value, Tensor) else ()


def _summed_to(grad, shape):
    """``sum_to(grad, shape)``; the gradient itself when it has that shape already (the common case)."""
    if grad.array.shape == shape:
        return grad
    if not STATE.grad_enabled:  # NOTE (speed): no graph recorded: sum the array, no op dispatch
        return _array_grad(grad.array, shape)
    return sum_to(grad, shape)


class Add(Function):
    """``a + b`` with broadcasting."""

    op_name = "add"

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return fix_float_dtype(data(a) + data(b), a, b)

    @staticmethod
    def backward(ctx, grad):
        need = ctx.needs_input_grad
        return (_summed_to(grad, ctx.shapes[0]) if need[0] else None,
                _summed_to(grad, ctx.shapes[1]) if need[1] else None)


def add(input, other, alpha=1, *, out=None):  # noqa: A002 - PyTorch's argument name
    """Elementwise ``input + alpha * other`` with broadcasting.

    Args:
        input: a Tensor or number.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    result = _binary(Add, input, other if alpha == 1 else other * alpha)
    return result if out is None else write_out("add", result, out)


def _arrays_will_do(grad, *operands) -> bool:
    """Whether backward may run on raw arrays: no graph is recorded, and every Tensor has the gradient's dtype.

    NOTE: with mixed dtypes the op path applies PyTorch's promotion rules (``_zero_dim_follows``),
    which plain NumPy arithmetic would not; such rare cases keep the op path.
    """
    if STATE.grad_enabled:
        return False
    dtype = grad.array.dtype
    for v in operands:  # NOTE (speed): a plain loop, no generator: every product's backward asks
        if isinstance(v, Tensor) and v.array.dtype != dtype:
            return False
    return True


def _array_grad(g, shape):
    """The array gradient ``g`` as a Tensor of the input's ``shape`` (summed back over broadcast dimensions)."""
    if type(g) is not numpy.ndarray and isinstance(g, numpy.generic):
        g = numpy.asarray(g)  # NOTE: NumPy turns 0-d results into scalars; a Tensor holds an array
    return Tensor(g if g.shape == shape else _sum_to_array(g, shape))


class Sub(Function):
    """``a - b`` with broadcasting."""

    op_name = "sub"

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return fix_float_dtype(data(a) - data(b), a, b)

    @staticmethod
    def backward(ctx, grad):
        if _arrays_will_do(grad):
            g, need = grad.array, ctx.needs_input_grad
            return (_array_grad(g, ctx.shapes[0]) if need[0] else None,
                    _array_grad(-g, ctx.shapes[1]) if need[1] else None)
        ga = _summed_to(grad, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = _summed_to(-grad, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb


def sub(input, other, alpha=1, *, out=None):  # noqa: A002
    """Elementwise ``input - alpha * other`` with broadcasting.

    Args:
        input: a Tensor or number.
        other: a Tensor or number.
        alpha: multiplier of ``other``.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    result = _binary(Sub, input, other if alpha == 1 else other * alpha)
    return result if out is None else write_out("sub", result, out)


def _save_operands(ctx, a, b, both=False):
    """Save what backward needs: for a product only the *other* operand (d(ab)/da = b); Python numbers as is.

    NOTE (speed): runs in every product's forward; a tensor times a number (or a product no gradient
    flows through) saves no tensor at all, so the node needs no saved-tensor bookkeeping.
    """
    need = ctx.needs_input_grad
    keep_a, keep_b = (need[0] or need[1], need[0] or need[1]) if both else (need[1], need[0])
    a_is_tensor, b_is_tensor = isinstance(a, Tensor), isinstance(b, Tensor)
    saved_a = a if a_is_tensor and keep_a else None
    saved_b = b if b_is_tensor and keep_b else None
    if saved_a is not None or saved_b is not None:
        ctx.save_for_backward(saved_a, saved_b)
    ctx.scalars = (None if a_is_tensor else a, None if b_is_tensor else b)
    ctx.shapes = (a.array.shape if a_is_tensor else (), b.array.shape if b_is_tensor else ())


def _restore(ctx):
    """The two operands as backward needs them: the saved tensors (checked for in-place changes), else the numbers."""
    saved = ctx.saved_tensors or (None, None)  # NOTE: () when the forward saved no tensor
    first, second = ctx.scalars
    return (saved[0] if saved[0] is not None else first, saved[1] if saved[1] is not None else second)


class Mul(Function):
    """``a * b`` with broadcasting."""

    op_name = "mul"

    @staticmethod
    def forward(ctx, a, b):
        _save_operands(ctx, a, b)
        return fix_float_dtype(data(a) * data(b), a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = _restore(ctx)
        if _arrays_will_do(grad, a, b):
            g, a, b, need = grad.array, data(a), data(b), ctx.needs_input_grad
            return (_array_grad(g * b, ctx.shapes[0]) if need[0] else None,
                    _array_grad(g * a, ctx.shapes[1]) if need[1] else None)
        return _grad_for(ctx, 0, lambda: grad * b), _grad_for(ctx, 1, lambda: grad * a)


def mul(input, other, *, out=None):  # noqa: A002
    """Elementwise product with broadcasting.

    ``out = input * other``.

    Args:
        input: a Tensor or number.
        other: a Tensor or number.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    result = _binary(Mul, input, other)
    return result if out is None else write_out("mul", result, out)


class Div(Function):
    """``a / b`` with broadcasting (true division: integers give float32)."""

    op_name = "div"

    @staticmethod
    def forward(ctx, a, b):
        _save_operands(ctx, a, b, both=True)
        out = data(a) / data(b)
        return fix_float_dtype(out, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = _restore(ctx)
        if _arrays_will_do(grad, a, b):
            g, a, b, need = grad.array, data(a), data(b), ctx.needs_input_grad
            return (_array_grad(g / b, ctx.shapes[0]) if need[0] else None,
                    _array_grad(-g * a / (b * b), ctx.shapes[1]) if need[1] else None)
        ga = _grad_for(ctx, 0, lambda: grad / b)
        gb = _grad_for(ctx, 1, lambda: -grad * a / (b * b))
        return ga, gb


def div(input, other, *, out=None):  # noqa: A002
    """Elementwise true division with broadcasting.

    ``out = input / other``; integers give float32. (The operator ``number / tensor`` is
    ``reciprocal(tensor) * number`` instead, as PyTorch's ``Tensor.__rdiv__``; see ``Tensor.__rtruediv__``.)

    Args:
        input: a Tensor or number.
        other: a Tensor or number.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    result = _binary(Div, input, other)
    return result if out is None else write_out("div", result, out)


class Neg(Function):
    """``-a``."""

    op_name = "neg"

    @staticmethod
    def forward(ctx, a):
        return -a.array

    @staticmethod
    def backward(ctx, grad):
        return -grad


def neg(input):  # noqa: A002
    """Elementwise negation.

    ``out = -input``.

    Args:
        input: a Tensor.
    """
    return Neg.apply(input)


class Pow(Function):
    """``a ** b`` (either may be a Python number); fp32 under autocast, as in PyTorch."""

    op_name = "pow"
    amp_policy = "fp32"

    @staticmethod
    def forward(ctx, a, b):
        _save_operands(ctx, a, b, both=True)
        return fix_float_dtype(data(a) ** data(b), a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = _restore(ctx)
        ga = _grad_for(ctx, 0, lambda: grad * b * a ** (b - 1))
        gb = _grad_for(ctx, 1, lambda: grad * (log(a) if isinstance(a, Tensor) else math.log(a)) * a ** b)
        return ga, gb


def pow(input, exponent, *, out=None):  # noqa: A001, A002 - PyTorch's names
    """Elementwise ``input ** exponent``; either may be a number.

    Args:
        input: a Tensor or number.
        exponent: a Tensor or number.
        out: an optional Tensor the result is written into (and returned), as PyTorch's ``out=``.
    """
    result = _binary(Pow, input, exponent)
    return result if out is None else write_out("pow", result, out)


def _move(array, device):
    device = backend.device(device)
    if device.type == "cpu":
        return backend.to_numpy(array)
    cupy = device.xp
    with cupy.cuda.Device(device.index):
        return cupy.asarray(array)


class ToDevice(Function):
    """Copy to another device; the gradient goes back to the source device."""

    op_name = "to_device"

    @staticmethod
    def forward(ctx, a, device=None):
        ctx.source = a.device
        return _move(a.array, device)

    @staticmethod
    def backward(ctx, grad):
        return ToDevice.apply(grad, device=ctx.source)


def to_device(input, device):  # noqa: A002
    """Differentiable copy to ``device``.

    Args:
        input: a Tensor.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a Device.
    """
    return ToDevice.apply(input, device=backend.device(device))


def cast(input, dtype):  # noqa: A002
    """Differentiable dtype conversion (the gradient returns in the source dtype).

    Args:
        input: a Tensor.
        dtype: the target dtype.
    """
    return Cast.apply(input, dtype=dtypes.as_dtype(dtype))


class Clone(Function):
    """A C-contiguous copy."""

    op_name = "clone"

    @staticmethod
    def forward(ctx, a):
        return a.array.copy(order="C")  # NOTE: not ascontiguousarray, which turns a 0-d array into shape (1,)

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(input):  # noqa: A002
    """A copy with its own memory; differentiable.

    Args:
        input: a Tensor.
    """
    return Clone.apply(input)


def contiguous(input):  # noqa: A002
    """A C-contiguous tensor with the same values (self when already contiguous).

    Args:
        input: a Tensor.
    """
    return input if input.array.flags.c_contiguous else Clone.apply(input)


class _Extremum(Function):
    """Elementwise max or min of two tensors; not an op itself.

    ``kernel(xp, a, b)`` picks elementwise and ``a_wins(a, b)`` is the mask where ``a``
    is picked; the gradient goes all to the operand picked, half to each on a tie (as PyTorch).
    """

    @staticmethod
    def kernel(xp, a, b):
        """The pick on arrays.

        Args:
            xp: numpy or cupy.
            a: the first array.
            b: the second array.
        """
        raise NotImplementedError

    @staticmethod
    def a_wins(a, b):
        """The mask (a Tensor) where ``a`` is picked, ties excluded.

        Args:
            a: the first Tensor.
            b: the second Tensor.
        """
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, b):
        """Save both operands and pick.

        Args:
            ctx: the node.
            a: the first Tensor.
            b: the second Tensor.
        """
        ctx.save_for_backward(a, b)
        ctx.shapes = (a.shape, b.shape)
        return cls.kernel(xp_of(a, b), a.array, b.array)

    @classmethod
    def backward(cls, ctx, grad):
        """Send ``grad`` to the operand picked (half to each on a tie).

        Args:
            ctx: the node.
            grad: the output's gradient.
        """
        a, b = ctx.saved_tensors
        wa = cls.a_wins(a, b).to(grad.dtype) + (a == b).to(grad.dtype) * 0.5
        return _grad_for(ctx, 0, lambda: grad * wa), _grad_for(ctx, 1, lambda: grad * (1 - wa))


def _full_like_scalar(t, value):
    return Tensor(xp_of(t).asarray(value, dtype=t.dtype))


class Maximum(_Extremum):
    """Elementwise max of two tensors; the gradient goes to the larger (split evenly on ties)."""

    op_name = "maximum"

    @staticmethod
    def kernel(xp, a, b):
        return xp.maximum(a, b)

    @staticmethod
    def a_wins(a, b):
        return a > b


def maximum(input, other):  # noqa: A002
    """Elementwise maximum with broadcasting.

    ``out = max(input, other)``; on a tie each input gets half the gradient.

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    other = other if isinstance(other, Tensor) else _full_like_scalar(input, other)
    return _binary(Maximum, input, other)


class Minimum(_Extremum):
    """Elementwise min of two tensors; the gradient goes to the smaller (split evenly on ties)."""

    op_name = "minimum"

    @staticmethod
    def kernel(xp, a, b):
        return xp.minimum(a, b)

    @staticmethod
    def a_wins(a, b):
        return a < b


def minimum(input, other):  # noqa: A002
    """Elementwise minimum with broadcasting.

    ``out = min(input, other)``; on a tie each input gets half the gradient.

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    other = other if isinstance(other, Tensor) else _full_like_scalar(input, other)
    return _binary(Minimum, input, other)


METHODS = {name: globals()[name] for name in __all__ if name not in ("cast", "to_device")}

"""Three-input pointwise ops: lerp, addcmul, addcdiv (the optimizers' and EMA's fused updates).

Each computes in fp32 for half inputs and rounds once to the result dtype (as CUDA's opmath), and
broadcasts its inputs; the backward sums each gradient back to its input's shape.
Under autocast addcmul/addcdiv ``promote`` (PyTorch's list); lerp is unlisted.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import compute_in_fp32, data, lift, xp_of
from .shape import sum_to

__all__ = ["lerp", "addcmul", "addcdiv"]


def _grads(ctx, *grads):
    """Each gradient summed to its input's shape (None where not needed or for a number)."""
    return tuple(sum_to(g, t.shape) if needed and isinstance(t, Tensor) else None
                 for g, t, needed in zip(grads, ctx.inputs, ctx.needs_input_grad))


def _out_dtype(*values):
    return dtypes.result_type(*(v.dtype for v in values if isinstance(v, Tensor)))


def _check_float_same(op_name, named):
    first_name, first = named[0]
    for name, t in named[1:]:
        if isinstance(t, Tensor) and t.dtype != first.dtype:
            raise RuntimeError(f"{op_name}: expected dtype {first.dtype} for `{name}` but got dtype {t.dtype}")


class Lerp(Function):
    """``start + weight * (end - start)``: linear interpolation."""

    op_name = "lerp"

    @staticmethod
    def forward(ctx, start, end, weight):
        ctx.save_for_backward(start, end, weight if isinstance(weight, Tensor) else None)
        ctx.inputs, ctx.weight = (start, end, weight), weight
        a, b, w = compute_in_fp32(start.array), compute_in_fp32(end.array), data(weight)
        w = compute_in_fp32(w) if isinstance(weight, Tensor) else w
        # NOTE: PyTorch's two-sided formula: exact at weight 0 (start) and weight 1 (end)
        out = xp_of(start).where(abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))
        return out.astype(start.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        start, end, weight_t = ctx.saved_tensors
        w = weight_t if weight_t is not None else ctx.weight
        return _grads(ctx, grad * (1 - w), grad * w, grad * (end - start) if weight_t is not None else None)


def lerp(input, end, weight):  # noqa: A002 - PyTorch's names
    """``input + weight * (end - input)``, broadcast.

    Args:
        input: the start Tensor.
        end: the end Tensor (same dtype).
        weight: a number or a Tensor (same dtype).
    """
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise TypeError("lerp: expected input and end to be Tensors")
    _check_float_same("lerp", [("input", input), ("end", end), ("weight", weight)])
    if not dtypes.is_floating(input.dtype):
        raise RuntimeError(f"lerp: expected a floating point input, got {input.dtype}")
    return Lerp.apply(input, end, lift(weight, input))


class _AddCombined(Function):
    """``input + value * combine(tensor1, tensor2)``: the shared body of addcmul and addcdiv."""

    amp_policy = "promote"

    @staticmethod
    def combine(y, z):
        """The arrays' product (addcmul) or quotient (addcdiv).

        Args:
            y: tensor1's array.
            z: tensor2's array.
        """
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a, t1, t2, value=1):
        ctx.save_for_backward(t1, t2)
        ctx.inputs, ctx.value = (a, t1, t2), value
        x, y, z = (compute_in_fp32(t.array) for t in (a, t1, t2))
        return (x + value * cls.combine(y, z)).astype(_out_dtype(a, t1, t2), copy=False)


def _check_three(op_name, input, tensor1, tensor2):  # noqa: A002
    for name, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        require_tensor(op_name, t, name)


class Addcmul(_AddCombined):
    """``input + value * tensor1 * tensor2``."""

    op_name = "addcmul"
    combine = staticmethod(lambda y, z: y * z)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        return _grads(ctx, grad, grad * t2 * v, grad * t1 * v)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """``input + value * tensor1 * tensor2``, broadcast.

    Args:
        input: a Tensor.
        tensor1: a Tensor.
        tensor2: a Tensor.
        value: a number multiplying the product.
    """
    _check_three("addcmul", input, tensor1, tensor2)
    return Addcmul.apply(input, tensor1, tensor2, value=value)


class Addcdiv(_AddCombined):
    """``input + value * tensor1 / tensor2``."""

    op_name = "addcdiv"
    combine = staticmethod(lambda y, z: y / z)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        return _grads(ctx, grad, grad * v / t2, -grad * v * t1 / (t2 * t2))


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """``input + value * tensor1 / tensor2``, broadcast.

    Args:
        input, tensor1, tensor2: as in ``addcmul``.
        value: a number multiplying the quotient.
    """
    _check_three("addcdiv", input, tensor1, tensor2)
    if all(not dtypes.is_floating(t.dtype) for t in (tensor1, tensor2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    return Addcdiv.apply(input, tensor1, tensor2, value=value)


METHODS = {"lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv}

"""Einstein summation (``einsum``, ``lower`` under autocast) and ``tensordot`` (``promote``).

The gradient of each operand is itself an einsum of the output gradient with the
other operands, so double backward works.
"""

from __future__ import annotations

import string

from ..autograd.function import Function
from ..tensor import Tensor
from ._einsum_parse import einsum_equation_for_tensordot, parse_einsum
from ._linalg_checks import _same_dtype
from ._util import compute_in_fp32, xp_of
from .shape import broadcast_to, reshape, sum_to

__all__ = ["einsum", "tensordot", "bilinear"]


def einsum_arrays(equation, *arrays):
    """``xp.einsum`` with the module's numerics: half inputs are contracted in fp32 and rounded once.

    Args:
        equation: an explicit equation with no ellipsis (``"ij,jk->ik"``).
        *arrays: the operands, already broadcast to agree on every letter's size.
    """
    xp = xp_of(*arrays)
    out = xp.einsum(equation, *(compute_in_fp32(a) for a in arrays), optimize=len(arrays) > 2)
    return out.astype(arrays[0].dtype, copy=False)


def _split_repeats(ctx, i, grad, others):
    """Operand ``i``'s letters with each repeat renamed, adding an identity matrix per repeat to ``others``.

    NOTE: forward read a diagonal (``"ii"``); its gradient is zero off the diagonal:
    ``d/dx[i, j] = g[i] * delta(i, j)``, an einsum with ``eye`` (so double backward works too).
    """
    term, sizes = ctx.terms[i], dict(ctx.sizes)
    if len(set(term)) == len(term):
        return term, sizes
    used = set("".join(ctx.terms) + ctx.out_term)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    renamed, kept = "", set()
    for c in term:
        if c not in kept:
            kept.add(c)
            renamed += c
            continue
        d = next(fresh)
        renamed, sizes[d] = renamed + d, sizes[c]
        others.append((Tensor(xp_of(grad).eye(sizes[c], dtype=grad.dtype)), c + d))
    return renamed, sizes


def _einsum_apply(operands, terms, out_term, sizes):
    return Einsum.apply(*operands, terms=tuple(terms), out_term=out_term,
                        sizes={c: sizes[c] for c in "".join(terms)})


def _einsum_grad(ctx, operands, i, grad):
    """Gradient of operand ``i``: an einsum of the output gradient with the other operands."""
    others = [(grad, ctx.out_term)] + [(t, s) for j, (t, s) in enumerate(zip(operands, ctx.terms)) if j != i]
    term, sizes = _split_repeats(ctx, i, grad, others)
    seen = set("".join(s for _, s in others))
    target = "".join(c for c in term if c in seen)
    g = _einsum_apply([t for t, _ in others], [s for _, s in others], target, sizes)
    if target != term:  # NOTE: a letter only operand i has was summed in forward: its gradient is broadcast
        g = reshape(g, tuple(sizes[c] if c in seen else 1 for c in term))
        g = broadcast_to(g, tuple(sizes[c] for c in term))
    return sum_to(g, operands[i].shape)


class Einsum(Function):
    """Einstein summation over an explicit equation (ellipses already expanded by ``einsum``)."""

    op_name = "einsum"
    amp_policy = "lower"

    @staticmethod
    def forward(ctx, *operands, terms=(), out_term="", sizes=None):
        _same_dtype(ctx.fn.op_name, *operands)
        ctx.save_for_backward(*operands)
        ctx.terms, ctx.out_term, ctx.sizes = terms, out_term, sizes
        xp = xp_of(*operands)
        arrays = [xp.broadcast_to(t.array, tuple(sizes[c] for c in term)) for t, term in zip(operands, terms)]
        return einsum_arrays(",".join(terms) + "->" + out_term, *arrays)

    @staticmethod
    def backward(ctx, grad):
        operands = ctx.saved_tensors
        return tuple(_einsum_grad(ctx, operands, i, grad) if ctx.needs_input_grad[i] else None
                     for i in range(len(operands)))


def einsum(equation, *operands):
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)``; ellipsis and implicit output are supported.

    Gradients are einsums themselves, so double backward works, also for a letter repeated inside one
    operand (a diagonal or trace, ``"ii->i"``, ``"ii->"``).

    Args:
        equation: the subscripts, ``"ij,jk->ik"`` style.
        *operands: the tensors (or one list of them).
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out_term, sizes = parse_einsum(equation, [tuple(t.shape) for t in operands])
    return Einsum.apply(*operands, terms=tuple(terms), out_term=out_term, sizes=sizes)


class Tensordot(Einsum):
    """``tensordot``: contraction of chosen dimension pairs, run as an einsum (``promote`` under autocast)."""

    op_name = "tensordot"
    amp_policy = "promote"


def tensordot(a, b, dims=2):
    """Sum of products over ``dims`` pairs of dimensions of ``a`` and ``b``.

    Args:
        a: left tensor.
        b: right tensor.
        dims: an int n (last n of ``a`` with first n of ``b``) or a pair of dimension lists.
    """
    terms, out_term = einsum_equation_for_tensordot(tuple(a.shape), tuple(b.shape), dims)
    sizes = dict(zip(terms[0], a.shape)) | dict(zip(terms[1], b.shape))
    return Tensordot.apply(a, b, terms=terms, out_term=out_term, sizes=sizes)


METHODS = {}


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``: one einsum.

    NOTE: a composite (the einsum's policy applies under autocast, ``lower``); PyTorch's bilinear is a
    composite too.

    Args:
        input1: a Tensor of shape ``(*, in1_features)``.
        input2: a Tensor of shape ``(*, in2_features)`` with the same leading dimensions.
        weight: a Tensor of shape ``(out_features, in1_features, in2_features)``.
        bias: an optional Tensor of shape ``(out_features,)``.
    """
    _check_bilinear(input1, input2, weight, bias)
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out


def _check_bilinear(input1, input2, weight, bias):
    for name, value in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(value, Tensor):
            raise TypeError(f"bilinear(): expected {name} to be a Tensor, got {type(value).__name__}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got shape {tuple(weight.shape)}")
    if input1.ndim != input2.ndim or input1.ndim == 0:
        raise RuntimeError(f"bilinear(): input1 and input2 must have the same number of dimensions (at least 1), "
                           f"got shapes {tuple(input1.shape)} and {tuple(input2.shape)}")
    for k, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {k}: got {a} and {b}")
    for name, value, axis in (("input1", input1, 1), ("input2", input2, 2)):
        if value.shape[-1] != weight.shape[axis]:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {value.shape[-1]} but "
                               f"expected {weight.shape[axis]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {tuple(bias.shape)} but expected "
                           f"({weight.shape[0]},)")

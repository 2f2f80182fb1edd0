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

__all__ = ["einsum", "tensordot"]


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

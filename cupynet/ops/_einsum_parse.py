"""Equation handling for ``einsum`` and ``tensordot`` (pure Python on shapes; no arrays, no ops)."""

from __future__ import annotations

import string
from collections import Counter


def parse_einsum(equation, shapes):
    """Expand an einsum equation into explicit per-operand letter strings, output letters and letter sizes.

    Ellipses become fresh letters (right-aligned, broadcast like NumPy); an implicit output is the
    ellipsis letters followed by the letters used exactly once, sorted.

    Args:
        equation: e.g. ``"bij,bjk->bik"``, ``"...ij,...jk"``.
        shapes: the operand shapes, in order.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a string, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: equation '{equation}' has {len(terms)} operand(s) but {len(shapes)} tensor(s) "
                         f"were given")
    ellipsis = _ellipsis_letters(equation, terms, shapes)
    expanded = [_expand_term(equation, term, shape, ellipsis) for term, shape in zip(terms, shapes)]
    out = _output_term(equation, expanded, rhs, arrow, ellipsis)
    return expanded, out, _letter_sizes(equation, expanded, shapes)


def _ellipsis_letters(equation, terms, shapes):
    used = {c for c in equation if c.isalpha()}
    free = [c for c in string.ascii_letters if c not in used]
    widths = [len(shape) - (len(term) - 3) for term, shape in zip(terms, shapes) if "..." in term]
    return "".join(free[:max(widths, default=0)])


def _expand_term(equation, term, shape, ellipsis):
    if "..." in term:
        width = len(shape) - (len(term) - 3)
        if width < 0:
            raise ValueError(f"einsum: operand subscripts '{term}' in '{equation}' need more dimensions than "
                             f"the operand's shape {shape}")
        term = term.replace("...", ellipsis[len(ellipsis) - width:])
    if not all(c.isalpha() for c in term):
        raise ValueError(f"einsum: invalid subscript in '{equation}' (only letters and '...' are allowed)")
    if len(term) != len(shape):
        raise ValueError(f"einsum: operand subscripts '{term}' in '{equation}' name {len(term)} dimensions but "
                         f"the operand has shape {shape}")
    return term


def _output_term(equation, expanded, rhs, arrow, ellipsis):
    if not arrow:
        counts = Counter("".join(expanded))
        return ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis))
    out = rhs.replace("...", ellipsis)
    known = set("".join(expanded))
    if not all(c.isalpha() for c in out) or len(set(out)) != len(out) or not set(out) <= known:
        raise ValueError(f"einsum: output subscripts '{rhs}' in '{equation}' must be distinct letters that "
                         f"appear in the operands")
    return out


def _letter_sizes(equation, expanded, shapes):
    sizes = {}
    for term, shape in zip(expanded, shapes):
        for c, n in zip(term, shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: subscript '{c}' in '{equation}' has size {n} in one operand and "
                                 f"{sizes[c]} in another (shapes {list(shapes)})")
            if sizes.get(c, 1) == 1:  # NOTE: not max(): a size-1 letter broadcasts to 0 as to any size
                sizes[c] = n
    return sizes


def einsum_equation_for_tensordot(a_shape, b_shape, dims):
    """Operand letter strings and output letters of ``tensordot(a, b, dims)``.

    Args:
        a_shape: shape of the left operand.
        b_shape: shape of the right operand.
        dims: an int n (last n dims of a with first n of b) or a pair of dimension lists.
    """
    dims_a, dims_b = _tensordot_dims(a_shape, b_shape, dims)
    letters = iter(string.ascii_letters)
    a_term = [next(letters) for _ in a_shape]
    b_term = [next(letters) for _ in b_shape]
    for da, db in zip(dims_a, dims_b):
        if a_shape[da] != b_shape[db]:
            raise RuntimeError(f"tensordot: contracted dimensions need the same size, but dimension {da} of "
                               f"{a_shape} has {a_shape[da]} and dimension {db} of {b_shape} has {b_shape[db]}")
        b_term[db] = a_term[da]
    out = [c for i, c in enumerate(a_term) if i not in dims_a] + [c for i, c in enumerate(b_term) if i not in dims_b]
    return ("".join(a_term), "".join(b_term)), "".join(out)


def _tensordot_dims(a_shape, b_shape, dims):
    if isinstance(dims, int):
        if dims < 0 or dims > min(len(a_shape), len(b_shape)):
            raise RuntimeError(f"tensordot: dims={dims} must be between 0 and the smaller rank of {a_shape} and "
                               f"{b_shape}")
        return list(range(len(a_shape) - dims, len(a_shape))), list(range(dims))
    try:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    except (TypeError, ValueError):
        raise RuntimeError(f"tensordot: dims must be an int or a pair of dimension lists, got {dims!r}") from None
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"tensordot: both dimension lists should have the same length, got {dims_a} and {dims_b}")
    norm_a = [_norm(d, len(a_shape), a_shape) for d in dims_a]
    norm_b = [_norm(d, len(b_shape), b_shape) for d in dims_b]
    if len(set(norm_a)) != len(norm_a) or len(set(norm_b)) != len(norm_b):
        raise RuntimeError(f"tensordot: a dimension is repeated in dims {dims!r}")
    return norm_a, norm_b


def _norm(d, ndim, shape):
    if not isinstance(d, int) or not -ndim <= d < ndim:
        raise IndexError(f"tensordot: dimension {d!r} out of range for a tensor of shape {shape}")
    return d % ndim

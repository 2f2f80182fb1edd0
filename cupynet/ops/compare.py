"""Comparisons and logical ops: elementwise, broadcasting, bool results, no gradient."""

from __future__ import annotations

from ..tensor import Tensor
from ._util import data, lift, xp_of

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or"]


def _compare(name, a, b):
    like = a if isinstance(a, Tensor) else b
    ua, ub = data(lift(a, like)), data(lift(b, like))
    xp = xp_of(like)
    return Tensor(getattr(xp, name)(ua, ub))


def eq(input, other):  # noqa: A002
    """Elementwise ``==`` (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    return _compare("equal", input, other)


def ne(input, other):  # noqa: A002
    """Elementwise ``!=`` (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    return _compare("not_equal", input, other)


def lt(input, other):  # noqa: A002
    """Elementwise ``<`` (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    return _compare("less", input, other)


def le(input, other):  # noqa: A002
    """Elementwise ``<=`` (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    return _compare("less_equal", input, other)


def gt(input, other):  # noqa: A002
    """Elementwise ``>`` (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    return _compare("greater", input, other)


def ge(input, other):  # noqa: A002
    """Elementwise ``>=`` (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor or number.
    """
    return _compare("greater_equal", input, other)


def logical_not(input):  # noqa: A002
    """Elementwise logical not (bool tensor).

    Args:
        input: a Tensor.
    """
    return Tensor(xp_of(input).logical_not(input.array))


def logical_and(input, other):  # noqa: A002
    """Elementwise logical and (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor.
    """
    return _compare("logical_and", input, other)


def logical_or(input, other):  # noqa: A002
    """Elementwise logical or (bool tensor).

    Args:
        input: a Tensor.
        other: a Tensor.
    """
    return _compare("logical_or", input, other)


METHODS = {name: globals()[name] for name in __all__}

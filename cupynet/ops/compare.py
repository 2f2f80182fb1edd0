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


def _comparison(name, xp_name, what, other_doc="a Tensor or number"):
    """The public op ``name(input, other)``: ``xp.<xp_name>`` with broadcasting, a bool Tensor.

    Args:
        name: its public name.
        xp_name: the NumPy/CuPy function.
        what: the operation, for the docstring.
        other_doc: what ``other`` may be, for the docstring.
    """

    def op(input, other):  # noqa: A002 - PyTorch's argument name
        return _compare(xp_name, input, other)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"""Elementwise {what} (bool tensor).

    Args:
        input: a Tensor.
        other: {other_doc}.
    """
    return op


eq = _comparison("eq", "equal", "``==``")
ne = _comparison("ne", "not_equal", "``!=``")
lt = _comparison("lt", "less", "``<``")
le = _comparison("le", "less_equal", "``<=``")
gt = _comparison("gt", "greater", "``>``")
ge = _comparison("ge", "greater_equal", "``>=``")
logical_and = _comparison("logical_and", "logical_and", "logical and", "a Tensor")
logical_or = _comparison("logical_or", "logical_or", "logical or", "a Tensor")


def logical_not(input):  # noqa: A002
    """Elementwise logical not (bool tensor).

    Args:
        input: a Tensor.
    """
    return Tensor(xp_of(input).logical_not(input.array))


METHODS = {name: globals()[name] for name in __all__}

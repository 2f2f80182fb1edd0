"""Comparisons and logical ops: elementwise, broadcasting, bool results, no gradient.

``isclose`` / ``allclose`` / ``equal`` compare two tensors as a whole; ``allclose`` and ``equal``
answer with a Python bool, so on the GPU each is one host read (as in PyTorch).
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..tensor import Tensor
from ._util import data, lift, xp_of

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or", "isclose", "allclose",
           "equal"]


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


def _check_close_args(op_name, input, other, rtol, atol):  # noqa: A002
    for what, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op_name}(): argument '{what}' must be Tensor, not {type(value).__name__}")
    if input.dtype != other.dtype:
        name = dtypes.TORCH_SCALAR_NAMES
        raise RuntimeError(f"{op_name}(): {name.get(input.dtype, input.dtype)} did not match "
                           f"{name.get(other.dtype, other.dtype)} (both tensors must have the same dtype)")
    for what, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{what} must be greater than or equal to zero, but got {value}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (bool tensor), with broadcasting.

    NOTE: as PyTorch, the error and the allowed error are computed in the inputs' dtype (an integer
    ``other`` is taken in the default float dtype for the allowed error); equal values, infinities
    included, are always close; NaN is close to NaN only with ``equal_nan``.

    Args:
        input: a Tensor.
        other: a Tensor of the same dtype, broadcastable with ``input``.
        rtol: relative tolerance (>= 0).
        atol: absolute tolerance (>= 0).
        equal_nan: count two NaNs as close.
    """
    _check_close_args("isclose", input, other, rtol, atol)
    xp, a, b = xp_of(input), input.array, other.array
    close = a == b
    if equal_nan and dtypes.is_floating(a.dtype):
        close = close | (xp.isnan(a) & xp.isnan(b))
    if a.dtype == bool or (rtol == 0 and atol == 0):
        return Tensor(close)
    wide = b if dtypes.is_floating(b.dtype) else b.astype(dtypes.get_default_dtype())
    # NOTE: each step rounded to the dtype as PyTorch's ops do: a half dtype computes in fp32, then rounds
    compute = dtypes.float32 if wide.dtype in dtypes.LOW_PRECISION else wide.dtype
    with numpy.errstate(invalid="ignore", over="ignore"):  # NOTE: inf - inf and 0 * inf are NaN: not close
        scaled = xp.abs((wide.astype(compute) * compute.type(rtol)).astype(wide.dtype))
        allowed = (scaled.astype(compute) + compute.type(atol)).astype(wide.dtype)
        actual = xp.abs(a - b) if dtypes.is_floating(a.dtype) else xp.abs(a.astype(numpy.int64) - b)
        return Tensor(close | (xp.isfinite(actual) & (actual <= allowed)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Whether every element of ``isclose(input, other, ...)`` holds (a Python bool: one host read).

    Args:
        input: a Tensor.
        other: a Tensor of the same dtype, broadcastable with ``input``.
        rtol: relative tolerance (>= 0).
        atol: absolute tolerance (>= 0).
        equal_nan: count two NaNs as close.
    """
    _check_close_args("allclose", input, other, rtol, atol)
    return bool(isclose(input, other, rtol, atol, equal_nan).array.all())


def equal(input, other):  # noqa: A002
    """Whether two tensors have the same shape and the same values (a Python bool: one host read).

    NOTE: as PyTorch, dtypes may differ (values are compared after promotion); NaN is never equal.

    Args:
        input: a Tensor.
        other: a Tensor.
    """
    for what, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"equal(): argument '{what}' must be Tensor, not {type(value).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input.array == other.array).all())


METHODS = {name: globals()[name] for name in __all__}

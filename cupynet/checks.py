"""The argument checks that ops, layers and optimizers share: one message shape for one mistake.

Each check names the caller (``owner``: an op, a layer or an optimizer) and the argument, says what was
expected and what came, and returns the value (normalized where that is useful), so a constructor reads
``self.p = check_probability("Dropout", "p", p)``. Checks look only at Python values and tensor metadata:
nothing here reads a device array, so a check never synchronizes with the GPU.

Checks that belong to one op alone (a conv's padding, a loss's target shape) stay beside that op; the
array-level checks of the CUDA kernels' public functions are ``cupynet/cuda/checks.py``.
"""

from __future__ import annotations

import math
import numbers

from cupynet import dtypes
from cupynet.tensor import Tensor

__all__ = ["require_tensor", "require_floating", "check_int", "positive_int", "check_bool", "check_number",
           "check_finite", "check_pair", "check_probability", "check_choice"]


def require_tensor(owner: str, value, what: str = "input"):
    """``value`` itself; TypeError unless it is a Tensor.

    Args:
        owner: the op or layer, for the message.
        value: the value given.
        what: which argument it is (``"input"``, ``"index"``).
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: expected {what} to be a Tensor, got {type(value).__name__}")
    return value


def require_floating(owner: str, t: Tensor, what: str = "input"):
    """``t`` itself; TypeError when a float-only op gets an integer or bool tensor.

    Args:
        owner: the op, for the message.
        t: the tensor to check.
        what: which argument it is, for the message.
    """
    if not dtypes.is_floating(t.dtype):
        raise TypeError(f"{owner}: expected a floating point {what} (float16, bfloat16, float32 or float64), "
                        f"got {t.dtype}")
    return t


def check_int(owner: str, name: str, value, minimum=None) -> int:
    """``value`` as an int; TypeError unless it is an integer (bool is not), ValueError if below ``minimum``.

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name.
        value: the value given.
        minimum: the smallest value allowed (None for no bound).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{owner}: {name} must be at least {minimum}, got {value!r}")
    return int(value)


def positive_int(owner: str, name: str, value) -> int:
    """``value`` as an int; ValueError naming ``owner`` and ``name`` unless it is a positive integer.

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name.
        value: the value given.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return int(value)


def check_bool(owner: str, name: str, value) -> bool:
    """``value`` itself; TypeError unless it is a bool.

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name.
        value: the value given.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be True or False, got {value!r}")
    return value


def check_number(owner: str, name: str, value, low=0.0, low_inclusive=True, high=None, high_inclusive=False,
                 label=None):
    """``value`` itself; ValueError unless it is a real number (not NaN, not bool) within the bounds.

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name.
        value: the value given.
        low: lower bound (None for none).
        low_inclusive: whether ``value == low`` is allowed.
        high: upper bound (None for none).
        high_inclusive: whether ``value == high`` is allowed.
        label: PyTorch's wording for an optimizer's hyper-parameter ("learning rate"): the message is then
            torch's ``Invalid learning rate: -1.0``, which programs moved from PyTorch may look for.
    """
    lo = "(-inf" if low is None else ("[" if low_inclusive else "(") + f"{low}"
    hi = "inf)" if high is None else f"{high}" + ("]" if high_inclusive else ")")
    real = not isinstance(value, bool) and isinstance(value, numbers.Real) and value == value
    below = real and low is not None and (value < low or (value == low and not low_inclusive))
    above = real and high is not None and (value > high or (value == high and not high_inclusive))
    if real and not below and not above:
        return value
    if label is not None:
        expected = "a real number" if not real else f"a value in {lo}, {hi}"
        raise ValueError(f"{owner}: Invalid {label}: {value!r} (expected {expected})")
    raise ValueError(f"{owner}: {name} must be a number in {lo}, {hi}, got {value!r}")


def check_finite(owner: str, name: str, value):
    """``value`` itself; ValueError unless it is a finite real number (not bool).

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name.
        value: the value given.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{owner}: {name} must be a finite number, got {value!r}")
    return value


def check_pair(owner: str, name: str, value, label: str, **bounds):
    """``value`` itself; ValueError unless it is a pair of reals (``betas``, ``etas``), each within ``bounds``.

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name (``"betas"``).
        value: the value given.
        label: PyTorch's wording for one element ("beta parameter" gives "... at index 0").
        **bounds: ``check_number``'s bounds for each element.
    """
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{owner}: {name} must be a pair, got {value!r}")
    for i, item in enumerate(value):
        check_number(owner, name, item, label=f"{label} at index {i}", **bounds)
    return value


def check_probability(owner: str, name: str, value):
    """``value`` itself; ValueError unless it is a real number in [0, 1].

    Args:
        owner: the op or layer, for the message.
        name: the argument's name (``"p"``).
        value: the value given.
    """
    return check_number(owner, name, value, low=0, high=1, high_inclusive=True)


def check_choice(owner: str, name: str, value, choices):
    """``value`` itself; ValueError unless it is one of ``choices``.

    Args:
        owner: the op, layer or optimizer, for the message.
        name: the argument's name.
        value: the value given.
        choices: the allowed values, in the order the message lists them.
    """
    if not any(value == choice and type(value) is type(choice) for choice in choices):
        allowed = ", ".join(repr(choice) for choice in choices)
        raise ValueError(f"{owner}: {name} must be one of {allowed}, got {value!r}")
    return value

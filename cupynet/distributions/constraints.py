"""Constraints: where a distribution's parameters and values may lie (``torch.distributions.constraints``).

Each constraint checks an array elementwise (no graph: it only decides whether an
argument is valid) and prints as torch prints it, since the names appear in the
``validate_args`` errors.
"""

from __future__ import annotations

from ..backend import get_array_module

__all__ = ["Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean", "simplex",
           "real_vector", "positive_definite", "lower_cholesky",
           "greater_than", "less_than", "interval", "half_open_interval", "integer_interval"]


class Constraint:
    """A set of allowed values; ``check(array)`` is True where an element (or event) is inside it.

    Args:
        event_dim: how many rightmost dimensions make up one checked event (0: elementwise).
    """

    def __init__(self, event_dim=0):
        self.event_dim = event_dim

    def check(self, array):
        """A bool array, True where ``array`` satisfies the constraint (reduced over the event dims).

        Args:
            array: a NumPy/CuPy array.
        """
        return self._check(array)

    def _check(self, array):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class _Real(Constraint):
    """Every real number (NaN is not)."""

    def _check(self, array):
        return array == array

    def __repr__(self):
        return "Real()"



class _Boolean(Constraint):
    """0 or 1."""

    def _check(self, array):
        return (array == 0) | (array == 1)

    def __repr__(self):
        return "Boolean()"


class _Bounded(Constraint):
    """``lower <(=) x <(=) upper``; a missing bound is open.

    Args:
        name: the name torch prints (``GreaterThan``, ``Interval``, ...).
        lower: lower bound or None.
        upper: upper bound or None.
        closed_lower: lower bound included.
        closed_upper: upper bound included.
        integer: values must also be whole numbers.
    """

    def __init__(self, name, lower=None, upper=None, closed_lower=False, closed_upper=False, integer=False):
        super().__init__()
        self.name, self.lower_bound, self.upper_bound = name, lower, upper
        self.closed_lower, self.closed_upper, self.integer = closed_lower, closed_upper, integer

    def _check(self, array):
        ok = array == array
        if self.lower_bound is not None:
            ok &= (array >= self.lower_bound) if self.closed_lower else (array > self.lower_bound)
        if self.upper_bound is not None:
            ok &= (array <= self.upper_bound) if self.closed_upper else (array < self.upper_bound)
        if self.integer:
            ok &= array % 1 == 0
        return ok

    def __repr__(self):
        bounds = [f"{label}={value}" for label, value in (("lower_bound", self.lower_bound),
                                                            ("upper_bound", self.upper_bound)) if value is not None]
        return f"{self.name}({', '.join(bounds)})"


class _Simplex(Constraint):
    """Nonnegative vectors (last dimension) that sum to 1 within 1e-6, as torch checks."""

    def __init__(self):
        super().__init__(event_dim=1)

    def _check(self, array):
        xp = get_array_module(array)
        return (array >= 0).all(axis=-1) & (xp.abs(array.sum(axis=-1) - 1) < 1e-6)

    def __repr__(self):
        return "Simplex()"


class _Independent(Constraint):
    """``base`` checked on whole events of ``event_dim`` rightmost dimensions.

    Args:
        base: the elementwise constraint.
        event_dim: how many dimensions one event has.
    """

    def __init__(self, base, event_dim):
        super().__init__(event_dim)
        self.base = base

    def _check(self, array):
        ok = self.base.check(array)
        for _ in range(self.event_dim):
            ok = ok.all(axis=-1)
        return ok

    def __repr__(self):
        return f"IndependentConstraint({self.base!r}, {self.event_dim})"


class _PositiveDefinite(Constraint):
    """Symmetric matrices (last two dimensions, within 1e-6 as torch checks) with every eigenvalue > 0."""

    def __init__(self):
        super().__init__(event_dim=2)

    def _check(self, array):
        xp = get_array_module(array)
        symmetric = (xp.abs(array - array.swapaxes(-1, -2)) <= 1e-6).all(axis=(-2, -1))
        # NOTE: eigenvalues of the symmetric part: Cholesky's success, without an exception per matrix
        low = xp.linalg.eigvalsh((array + array.swapaxes(-1, -2)) / 2).min(axis=-1) if array.shape[-1] else 1
        return symmetric & (low > 0)

    def __repr__(self):
        return "PositiveDefinite()"


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""

    def __init__(self):
        super().__init__(event_dim=2)

    def _check(self, array):
        xp = get_array_module(array)
        lower = (xp.triu(array, 1) == 0).all(axis=(-2, -1))
        return lower & (xp.diagonal(array, 0, -2, -1) > 0).all(axis=-1)

    def __repr__(self):
        return "LowerCholesky()"


def greater_than(lower):
    """``x > lower``.

    Args:
        lower: the bound.
    """
    return _Bounded("GreaterThan", lower=lower)


def less_than(upper):
    """``x < upper``.

    Args:
        upper: the bound.
    """
    return _Bounded("LessThan", upper=upper)


def interval(lower, upper):
    """``lower <= x <= upper``.

    Args:
        lower: the lower bound.
        upper: the upper bound.
    """
    return _Bounded("Interval", lower, upper, closed_lower=True, closed_upper=True)


def half_open_interval(lower, upper):
    """``lower <= x < upper``.

    Args:
        lower: the lower bound.
        upper: the upper bound.
    """
    return _Bounded("HalfOpenInterval", lower, upper, closed_lower=True)


def integer_interval(lower, upper):
    """Whole numbers ``lower <= x <= upper``.

    Args:
        lower: the lower bound.
        upper: the upper bound.
    """
    return _Bounded("IntegerInterval", lower, upper, closed_lower=True, closed_upper=True, integer=True)


real = _Real()
positive = greater_than(0.0)
nonnegative = _Bounded("GreaterThanEq", lower=0.0, closed_lower=True)
unit_interval = interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()
real_vector = _Independent(real, 1)
positive_definite = _PositiveDefinite()
lower_cholesky = _LowerCholesky()

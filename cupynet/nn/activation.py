"""Activation layers and ``Dropout``: thin modules over ``cupynet.nn.functional``.

NOTE: ``inplace=True`` is accepted and shown in ``repr`` (so printed models read
like PyTorch's) but the computation is out of place: cupynet's autograd does not
record in-place ops on graph tensors.
"""

from __future__ import annotations

import numbers
import warnings

from . import functional as F
from .linear import check_input
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout"]


class ReLU(Module):
    """max(x, 0).

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.relu(input)

    def extra_repr(self) -> str:
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x.

    Args:
        negative_slope: the slope for negative inputs.
        inplace: accepted for compatibility (computed out of place).
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, numbers.Real):
            raise TypeError(f"LeakyReLU: negative_slope must be a number, got {negative_slope!r}")
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        """``negative_slope=..``."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """Gaussian error linear unit, exact ("none") or the tanh approximation.

    Args:
        approximate: "none" or "tanh".
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``approximate='none'``."""
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (a.k.a. swish).

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.silu(input)

    def extra_repr(self) -> str:
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.sigmoid(input)


def _implicit_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _AlongDim(Module):
    """Shared body of Softmax and LogSoftmax: apply ``F.<function>`` along ``dim``."""

    _function = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        dim = self.dim if self.dim is not None else _implicit_dim(self._function, input.ndim)
        return getattr(F, self._function)(input, dim)

    def extra_repr(self) -> str:
        """``dim=..``."""
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """exp(x) / sum(exp(x)) along ``dim``.

    Args:
        dim: the dimension to normalise (None picks PyTorch's legacy default, with a warning).
    """

    _function = "softmax"


class LogSoftmax(_AlongDim):
    """log(softmax(x)) along ``dim``, computed stably.

    Args:
        dim: the dimension to normalise (None picks PyTorch's legacy default, with a warning).
    """

    _function = "log_softmax"


class Dropout(Module):
    """Zero each element with probability ``p`` in training, scaling the rest by 1/(1-p); identity in eval.

    Args:
        p: the drop probability, in [0, 1].
        inplace: accepted for compatibility (computed out of place).
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        """Apply (only in training mode).

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        """``p=.., inplace=..``."""
        return f"p={self.p}, inplace={self.inplace}"

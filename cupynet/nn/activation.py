"""Activation layers: thin modules over ``cupynet.nn.functional``.

Most are a ``FunctionalLayer``: the class names the function (``function``) and its constructor's
arguments as PyTorch's ``(name, default)`` pairs (``signature``); ``repr_options`` is what ``repr``
shows, as PyTorch's ``extra_repr``.

NOTE: ``inplace=True`` is accepted and shown in ``repr`` (so printed models read
like PyTorch's) but the computation is out of place: cupynet's autograd does not
record in-place ops on graph tensors.
"""

from __future__ import annotations

import inspect

from .. import creation
from ..checks import check_choice
from . import functional as F
from .linear import check_input
from .module import FunctionalLayer, Module
from .parameter import Parameter

__all__ = ["ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Mish",
           "Hardswish", "Hardsigmoid", "ELU", "ReLU6", "Hardtanh", "Softplus", "GLU", "PReLU", "SELU", "CELU",
           "Softsign", "LogSigmoid", "Tanhshrink", "Threshold", "Softshrink", "Hardshrink", "RReLU", "Softmin",
           "Softmax2d"]

_REQUIRED = inspect.Parameter.empty  # NOTE: a signature entry without a default


class ReLU(FunctionalLayer):
    """max(x, 0).

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "relu"
    signature = (("inplace", False),)
    repr_options = ("inplace",)


class SiLU(FunctionalLayer):
    """x * sigmoid(x) (a.k.a. swish).

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "silu"
    signature = (("inplace", False),)
    repr_options = ("inplace",)


class Mish(FunctionalLayer):
    """x * tanh(softplus(x)).

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "mish"
    signature = (("inplace", False),)
    repr_options = ("inplace",)


class Hardswish(FunctionalLayer):
    """x * relu6(x + 3) / 6.

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "hardswish"
    signature = (("inplace", False),)
    repr_options = ()  # NOTE: PyTorch's repr of Hardswish does not show inplace


class Hardsigmoid(FunctionalLayer):
    """relu6(x + 3) / 6.

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "hardsigmoid"
    signature = (("inplace", False),)
    repr_options = ()  # NOTE: nor does its repr of Hardsigmoid


class ReLU6(FunctionalLayer):
    """min(max(x, 0), 6).

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "relu6"
    signature = (("inplace", False),)
    repr_options = ("inplace",)


class Tanh(FunctionalLayer):
    """Hyperbolic tangent."""

    function = "tanh"


class Sigmoid(FunctionalLayer):
    """1 / (1 + exp(-x))."""

    function = "sigmoid"


class LeakyReLU(FunctionalLayer):
    """x if x > 0 else negative_slope * x.

    Args:
        negative_slope: the slope for negative inputs.
        inplace: accepted for compatibility (computed out of place).
    """

    function = "leaky_relu"
    signature = (("negative_slope", 0.01), ("inplace", False))
    repr_options = ("negative_slope", "inplace")


class ELU(FunctionalLayer):
    """x if x > 0 else alpha * (exp(x) - 1).

    Args:
        alpha: the value the output approaches for large negative inputs is -alpha.
        inplace: accepted for compatibility (computed out of place).
    """

    function = "elu"
    signature = (("alpha", 1.0), ("inplace", False))
    repr_options = ("alpha", "inplace")


class Hardtanh(FunctionalLayer):
    """x clamped to [min_val, max_val].

    Args:
        min_val: the lower end of the linear region.
        max_val: the upper end of the linear region.
        inplace: accepted for compatibility (computed out of place).
    """

    function = "hardtanh"
    signature = (("min_val", -1.0), ("max_val", 1.0), ("inplace", False))
    repr_options = ("min_val", "max_val", "inplace")


class Softplus(FunctionalLayer):
    """log(1 + exp(beta * x)) / beta, exactly x where beta * x > threshold.

    Args:
        beta: the sharpness: the result is log(1 + exp(beta * x)) / beta.
        threshold: above this value of beta * x the result is x.
    """

    function = "softplus"
    signature = (("beta", 1.0), ("threshold", 20.0))
    repr_options = ("beta", "threshold")


class GELU(FunctionalLayer):
    """Gaussian error linear unit, exact ("none") or the tanh approximation.

    Args:
        approximate: "none" (exact, with erf) or "tanh".
    """

    function = "gelu"
    signature = (("approximate", "none"),)
    repr_options = ("approximate",)

    def check_options(self, approximate) -> None:
        """Refuse an unknown approximation.

        Args:
            approximate: the constructor's argument.
        """
        check_choice("GELU", "approximate", approximate, ("none", "tanh"))


class GLU(FunctionalLayer):
    """a * sigmoid(b), where a and b are the halves of the input along dim.

    Args:
        dim: the dimension halved: its first half is gated by the sigmoid of the second.
    """

    function = "glu"
    signature = (("dim", -1),)
    repr_options = ("dim",)


class PReLU(Module):
    """max(0, x) + weight * min(0, x), with a learnt ``weight`` (one slope, or one per channel: dim 1).

    Args:
        num_parameters: 1, or the number of channels.
        init: the initial slope.
        device: where the weight lives (default device when None).
        dtype: the weight's dtype (default dtype when None).
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, got {num_parameters!r}")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(creation.full((num_parameters,), float(init), dtype=dtype, device=device))

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a Tensor (channels on dim 1 when num_parameters > 1).
        """
        check_input(self, input)
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        """``num_parameters=..``."""
        return f"num_parameters={self.num_parameters}"


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
        # NOTE: dim None is F's legacy choice, with its warning
        return getattr(F, self._function)(input, self.dim)

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


class SELU(FunctionalLayer):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), alpha = 1.6733, scale = 1.0507.

    Args:
        inplace: accepted for compatibility (computed out of place).
    """

    function = "selu"
    signature = (("inplace", False),)
    repr_options = ("inplace",)


class CELU(FunctionalLayer):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Args:
        alpha: the value the output approaches for large negative inputs is -alpha.
        inplace: accepted for compatibility (computed out of place).
    """

    function = "celu"
    signature = (("alpha", 1.0), ("inplace", False))
    repr_options = ("alpha", "inplace")


class Softsign(FunctionalLayer):
    """x / (1 + |x|)."""

    function = "softsign"


class LogSigmoid(FunctionalLayer):
    """log(1 / (1 + exp(-x))), computed stably."""

    function = "logsigmoid"


class Tanhshrink(FunctionalLayer):
    """x - tanh(x)."""

    function = "tanhshrink"


class Threshold(FunctionalLayer):
    """x where x > threshold, value elsewhere.

    Args:
        threshold: inputs at or below it become value.
        value: the value that replaces inputs at or below the threshold.
        inplace: accepted for compatibility (computed out of place).
    """

    function = "threshold"
    signature = (("threshold", _REQUIRED), ("value", _REQUIRED), ("inplace", False))
    repr_options = ("threshold", "value", "inplace")


class _Shrink(FunctionalLayer):
    """Shared body of Softshrink and Hardshrink: one ``lambd`` >= 0, shown bare in ``repr`` (not public)."""

    signature = (("lambd", 0.5),)

    def check_options(self, lambd) -> None:
        """Refuse a negative ``lambd``.

        Args:
            lambd: the constructor's argument.
        """
        if lambd < 0:
            raise RuntimeError(f"{type(self).__name__}: lambda must be greater or equal to 0, but found to be "
                               f"{lambd}.")

    def extra_repr(self) -> str:
        """The bare ``lambd``, as PyTorch's repr shows it (``Softshrink(0.5)``)."""
        return str(self.lambd)


class Softshrink(_Shrink):
    """x - lambd * sign(x) where |x| > lambd, 0 elsewhere.

    Args:
        lambd: the half-width (>= 0) of the band around 0 that is zeroed.
    """

    function = "softshrink"


class Hardshrink(_Shrink):
    """x where |x| > lambd, 0 elsewhere.

    Args:
        lambd: the half-width (>= 0) of the band around 0 that is zeroed.
    """

    function = "hardshrink"


class RReLU(Module):
    """Randomized leaky relu: slopes from U(lower, upper) for negative inputs in training, their mean in eval.

    Args:
        lower: the smallest random slope.
        upper: the largest random slope.
        inplace: accepted for compatibility (computed out of place when autograd records the input).
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        if lower > upper:
            raise ValueError(f"RReLU: Lower bound should be less than or equal to the upper bound, got "
                             f"lower={lower} and upper={upper}")
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):  # noqa: A002
        """Apply (random slopes only in training mode).

        Args:
            input: a Tensor.
        """
        check_input(self, input)
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        """``lower=.., upper=..`` (and ``inplace=True`` when set), as PyTorch."""
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmin(_AlongDim):
    """softmax(-x) along ``dim``.

    Args:
        dim: the dimension to normalise (None picks PyTorch's legacy default, with a warning).
    """

    _function = "softmin"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a (C, H, W) or (N, C, H, W) input."""

    def forward(self, input):  # noqa: A002
        """Apply.

        Args:
            input: a 3-D or 4-D Tensor.
        """
        check_input(self, input)
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)

"""Activation layers and ``Dropout``: thin modules over ``cupynet.nn.functional``.

NOTE: ``inplace=True`` is accepted and shown in ``repr`` (so printed models read
like PyTorch's) but the computation is out of place: cupynet's autograd does not
record in-place ops on graph tensors.
"""

from __future__ import annotations

import inspect
import numbers

from .. import creation
from . import functional as F
from .linear import check_input
from .module import Module, functional_layer
from .parameter import Parameter

__all__ = ["ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "Mish",
           "Hardswish", "Hardsigmoid", "ELU", "ReLU6", "Hardtanh", "Softplus", "GLU", "PReLU"]

_INPLACE = (("inplace", False),)


def _layer(name, function, summary, signature=_INPLACE, repr_options=None, check=None):
    """An activation class: ``F.<function>`` with the options of ``signature`` (see ``FunctionalLayer``).

    Args:
        name: the class name (PyTorch's).
        function: the ``cupynet.nn.functional`` name.
        summary: the formula, the first line of the class docstring.
        signature: the constructor's ``(name, default)`` pairs, in PyTorch's order.
        repr_options: the options ``repr`` shows (PyTorch's ``extra_repr``); None: all of ``signature``.
        check: ``check(layer, **options)`` refuses bad options at construction, or None.
    """
    shown = tuple(option for option, _ in signature) if repr_options is None else repr_options
    checked = {} if check is None else {"check_options": check}
    return functional_layer(name, __name__, function, summary, signature, _OPTION_DOCS, repr_options=shown,
                            **checked)


_OPTION_DOCS = {
    "inplace": "accepted for compatibility (computed out of place).",
    "negative_slope": "the slope for negative inputs.",
    "approximate": '"none" (exact, with erf) or "tanh".',
    "alpha": "the value the output approaches for large negative inputs is -alpha.",
    "min_val": "the lower end of the linear region.",
    "max_val": "the upper end of the linear region.",
    "beta": "the sharpness: the result is log(1 + exp(beta * x)) / beta.",
    "threshold": "above this value of beta * x the result is x.",
    "dim": "the dimension halved: its first half is gated by the sigmoid of the second.",
}


def _check_gelu(self, approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")


ReLU = _layer("ReLU", "relu", "max(x, 0).")
SiLU = _layer("SiLU", "silu", "x * sigmoid(x) (a.k.a. swish).")
Mish = _layer("Mish", "mish", "x * tanh(softplus(x)).")
# NOTE: PyTorch's repr of Hardswish and Hardsigmoid does not show inplace.
Hardswish = _layer("Hardswish", "hardswish", "x * relu6(x + 3) / 6.", repr_options=())
Hardsigmoid = _layer("Hardsigmoid", "hardsigmoid", "relu6(x + 3) / 6.", repr_options=())
ReLU6 = _layer("ReLU6", "relu6", "min(max(x, 0), 6).")
Tanh = _layer("Tanh", "tanh", "Hyperbolic tangent.", signature=())
Sigmoid = _layer("Sigmoid", "sigmoid", "1 / (1 + exp(-x)).", signature=())
LeakyReLU = _layer("LeakyReLU", "leaky_relu", "x if x > 0 else negative_slope * x.",
                   (("negative_slope", 0.01),) + _INPLACE)
ELU = _layer("ELU", "elu", "x if x > 0 else alpha * (exp(x) - 1).", (("alpha", 1.0),) + _INPLACE)
Hardtanh = _layer("Hardtanh", "hardtanh", "x clamped to [min_val, max_val].",
                  (("min_val", -1.0), ("max_val", 1.0)) + _INPLACE)
Softplus = _layer("Softplus", "softplus", "log(1 + exp(beta * x)) / beta, exactly x where beta * x > threshold.",
                  (("beta", 1.0), ("threshold", 20.0)))
GELU = _layer("GELU", "gelu", "Gaussian error linear unit, exact (\"none\") or the tanh approximation.",
              (("approximate", "none"),), check=_check_gelu)
GLU = _layer("GLU", "glu", "a * sigmoid(b), where a and b are the halves of the input along dim.", (("dim", -1),))


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


# ---- the remaining activations of torch.nn ------------------------------------------------------
__all__ += ["SELU", "CELU", "Softsign", "LogSigmoid", "Tanhshrink", "Threshold", "Softshrink", "Hardshrink", "RReLU",
            "Softmin", "Softmax2d"]
_OPTION_DOCS.update({
    "value": "the value that replaces inputs at or below the threshold.",
    "lambd": "the half-width (>= 0) of the band around 0 that is zeroed.",
})


def _check_lambd(self, lambd):
    if lambd < 0:
        raise RuntimeError(f"{type(self).__name__}: lambda must be greater or equal to 0, but found to be {lambd}.")


def _check_bounds(self, lower, upper, inplace):
    if lower > upper:
        raise ValueError(f"RReLU: Lower bound should be less than or equal to the upper bound, got lower={lower} "
                         f"and upper={upper}")


SELU = _layer("SELU", "selu", "scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), alpha = 1.6733, scale = 1.0507.")
CELU = _layer("CELU", "celu", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).", (("alpha", 1.0),) + _INPLACE)
Softsign = _layer("Softsign", "softsign", "x / (1 + |x|).", signature=())
LogSigmoid = _layer("LogSigmoid", "logsigmoid", "log(1 / (1 + exp(-x))), computed stably.", signature=())
Tanhshrink = _layer("Tanhshrink", "tanhshrink", "x - tanh(x).", signature=())
Threshold = _layer("Threshold", "threshold", "x where x > threshold, value elsewhere.",
                   (("threshold", inspect.Parameter.empty), ("value", inspect.Parameter.empty)) + _INPLACE)
Threshold.__doc__ = Threshold.__doc__.replace(_OPTION_DOCS["threshold"], "inputs at or below it become value.")
Softshrink = _layer("Softshrink", "softshrink", "x - lambd * sign(x) where |x| > lambd, 0 elsewhere.",
                    (("lambd", 0.5),), check=_check_lambd)
Hardshrink = _layer("Hardshrink", "hardshrink", "x where |x| > lambd, 0 elsewhere.", (("lambd", 0.5),),
                    check=_check_lambd)


def _lambd_repr(self) -> str:
    """The bare ``lambd``, as PyTorch's repr shows it (``Softshrink(0.5)``)."""
    return str(self.lambd)


Softshrink.extra_repr = Hardshrink.extra_repr = _lambd_repr


class RReLU(Module):
    """Randomized leaky relu: slopes from U(lower, upper) for negative inputs in training, their mean in eval.

    Args:
        lower: the smallest random slope.
        upper: the largest random slope.
        inplace: accepted for compatibility (computed out of place when autograd records the input).
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        _check_bounds(self, lower, upper, inplace)
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

"""``Linear``, ``Bilinear``, ``Identity``; the helpers every layer file uses (``check_input``, ``new_parameter``)."""

from __future__ import annotations

import math

from .. import creation
from ..checks import check_int, require_tensor
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear", "check_input", "new_parameter"]


def check_input(layer, input, min_ndim: int = 0):  # noqa: A002 - PyTorch's name
    """Raise a clear error when ``input`` is not a Tensor with at least ``min_ndim`` dimensions.

    Args:
        layer: the layer (its repr names it in the message).
        input: the value given to forward.
        min_ndim: the fewest dimensions accepted.
    """
    if not isinstance(input, Tensor):  # NOTE: the layer's repr is built only for the message, never per call
        require_tensor(f"{layer!r}", input, "input")
    if input.ndim < min_ndim:
        raise ValueError(f"{layer!r}: expected an input with at least {min_ndim} dimension(s), "
                         f"got shape {tuple(input.shape)}")


def new_parameter(shape, device=None, dtype=None):
    """An uninitialised (zero) Parameter of ``shape`` (float32 unless ``dtype`` says otherwise).

    Args:
        shape: the shape.
        device: the device (default device when None).
        dtype: a floating dtype, default float32.
    """
    return Parameter(creation.empty(*shape, dtype=dtype, device=device))


def add_weight_and_bias(layer, weight_shape, bias_shape, device=None, dtype=None):
    """Register an uninitialised ``layer.weight`` and ``layer.bias`` (a None bias when ``bias_shape`` is None).

    Args:
        layer: the Module (Linear, a convolution, ...).
        weight_shape: the weight's shape.
        bias_shape: the bias's shape, or None for a layer without bias.
        device: where they live.
        dtype: their floating dtype (default float32).
    """
    layer.weight = new_parameter(weight_shape, device, dtype)
    if bias_shape is not None:
        layer.bias = new_parameter(bias_shape, device, dtype)
    else:
        layer.register_parameter("bias", None)


def reset_weight_and_bias(weight, bias):
    """PyTorch's default for Linear and convolutions: weight kaiming_uniform_(a=sqrt(5)), bias U(-b, b).

    ``b = 1 / sqrt(fan_in)`` (0 when fan_in is 0), fan_in the weight's ``shape[1] * prod(shape[2:])``.

    Args:
        weight: the weight Parameter.
        bias: the bias Parameter, or None.
    """
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored, as in PyTorch).

    Args:
        *args: ignored.
        **kwargs: ignored.
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002
        """Return ``input``.

        Args:
            input: anything.
        """
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last dimension.

    Init (PyTorch's): weight ~ kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)); bias the same bound.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: learn an additive bias.
        device: where the parameters live.
        dtype: their floating dtype (default float32).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = check_int("Linear", "in_features", in_features, minimum=0)
        self.out_features = check_int("Linear", "out_features", out_features, minimum=0)
        add_weight_and_bias(self, (out_features, in_features), (out_features,) if bias else None, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias with PyTorch's default scheme."""
        reset_weight_and_bias(self.weight, self.bias)

    def forward(self, input):  # noqa: A002
        """Apply the affine map.

        Args:
            input: a Tensor of shape (*, in_features).
        """
        return F.linear(input, *self._checked_params(input))

    def _forward_relu(self, input):  # noqa: A002
        """``relu(self(input))`` as one fused op (``nn.Sequential`` calls it for a Linear-ReLU pair).

        Args:
            input: a Tensor of shape (*, in_features).
        """
        from ..ops.linear_relu import linear_relu  # noqa: PLC0415 - ops import nn-free modules only
        return linear_relu(input, *self._checked_params(input))

    def _checked_params(self, input):  # noqa: A002
        params = self._parameters
        if not isinstance(input, Tensor) or not input.array.ndim or input.array.shape[-1] != self.in_features:
            check_input(self, input, 1)
            raise ValueError(f"{self!r}: expected input with last dimension {self.in_features} (in_features), "
                             f"got input of shape {tuple(input.shape)} (weight shape {tuple(self.weight.shape)})")
        # NOTE: read from the registry directly (no __getattr__); a weight deleted and replaced by a
        # plain attribute (as reparametrisations do) is still found through normal lookup
        weight = params["weight"] if "weight" in params else self.weight
        bias = params["bias"] if "bias" in params else self.bias
        return weight, bias

    def extra_repr(self) -> str:
        """``in_features=.., out_features=.., bias=..``."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` for each output feature (``F.bilinear``).

    Init (PyTorch's): weight and bias ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features)).

    Args:
        in1_features: size of each first input sample.
        in2_features: size of each second input sample.
        out_features: size of each output sample.
        bias: learn an additive bias.
        device: where the parameters live.
        dtype: their floating dtype (default float32).
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = check_int("Bilinear", "in1_features", in1_features, minimum=0)
        self.in2_features = check_int("Bilinear", "in2_features", in2_features, minimum=0)
        self.out_features = check_int("Bilinear", "out_features", out_features, minimum=0)
        add_weight_and_bias(self, (out_features, in1_features, in2_features), (out_features,) if bias else None,
                            device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """Apply the bilinear map.

        Args:
            input1: a Tensor of shape (*, in1_features).
            input2: a Tensor of shape (*, in2_features).
        """
        check_input(self, input1, 1)
        check_input(self, input2, 1)
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        """``in1_features=.., in2_features=.., out_features=.., bias=..``."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")

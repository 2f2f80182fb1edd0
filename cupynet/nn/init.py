"""``cupynet.nn.init``: in-place initialisers with PyTorch's names, formulas and defaults.

Every function writes into ``tensor.array`` directly (no graph is recorded, as
under ``no_grad``), bumps the tensor's version counter, and returns the tensor.
Random values come from ``generator=`` or the device's default generator, drawn
in float32 (float64 for float64 tensors) and rounded once to the tensor's dtype.
"""

from __future__ import annotations

import functools
import math
import numbers

from .. import backend, dtypes
from ..checks import require_floating, require_tensor
from ..random import normal_values, resolve_generator, uniform_values
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    Args:
        nonlinearity: "linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu", ...
        param: the negative slope for "leaky_relu" (default 0.01).
    """
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _check_init_target(fn: str, tensor):
    require_tensor(f"nn.init.{fn}", tensor, "tensor")
    require_floating(f"nn.init.{fn}", tensor, "tensor")


def _write(tensor, values):
    xp = backend.get_array_module(tensor.array)
    xp.copyto(tensor.array, values.astype(tensor.dtype, copy=False), casting="unsafe")
    tensor._bump_version()
    return tensor


def _draw_dtype(tensor):
    return dtypes.float64 if tensor.dtype == dtypes.float64 else dtypes.float32


def _on_device(tensor, draw, generator, fn):
    device = tensor.device
    gen = resolve_generator(generator, device, f"nn.init.{fn}")
    if device.type == "cuda":
        with device.xp.cuda.Device(device.index):
            return draw(gen)
    return draw(gen)


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with values drawn from U(a, b).

    Args:
        tensor: a floating Tensor.
        a: lower bound.
        b: upper bound.
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    _check_init_target("uniform_", tensor)
    if not a <= b:
        raise ValueError(f"nn.init.uniform_: expected a <= b, got a={a}, b={b}")
    draw = lambda gen: uniform_values(gen, tensor.shape, tensor.dtype, a, b, like=tensor.array)
    return _write(tensor, _on_device(tensor, draw, generator, "uniform_"))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with values drawn from N(mean, std^2).

    Args:
        tensor: a floating Tensor.
        mean: the mean.
        std: the standard deviation (>= 0).
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    _check_init_target("normal_", tensor)
    if std < 0:
        raise ValueError(f"nn.init.normal_: std must be >= 0, got {std}")
    draw = lambda gen: normal_values(gen, tensor.shape, tensor.dtype, mean, std, like=tensor.array)
    return _write(tensor, _on_device(tensor, draw, generator, "normal_"))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fill with N(mean, std^2) values redrawn until they fall in [a, b] (a and b are absolute bounds).

    NOTE: PyTorch uses the inverse CDF; rejection sampling gives the same
    distribution. Each round redraws only the rejected entries; after 100 rounds
    (acceptance below ~5% per round) the rest is clamped to [a, b].

    Args:
        tensor: a floating Tensor.
        mean: the mean of the untruncated normal.
        std: its standard deviation.
        a: the minimum value.
        b: the maximum value.
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    _check_init_target("trunc_normal_", tensor)
    if not a < b or std <= 0:
        raise ValueError(f"nn.init.trunc_normal_: expected a < b and std > 0, got a={a}, b={b}, std={std}")
    dt = _draw_dtype(tensor)

    def draw(gen):
        xp = backend.array_module_for(tensor.device)
        values = gen.standard_normal(tensor.shape, dtype=dt) * std + mean
        for _ in range(100):
            bad = (values < a) | (values > b)
            if not bool(bad.any()):  # NOTE: a host sync per round; init runs once
                break
            values = xp.where(bad, gen.standard_normal(tensor.shape, dtype=dt) * std + mean, values)
        return xp.clip(values, a, b)
    return _write(tensor, _on_device(tensor, draw, generator, "trunc_normal_"))


def constant_(tensor, val: float):
    """Fill with ``val``.

    Args:
        tensor: a Tensor.
        val: the value.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.constant_: expected a cupynet Tensor, got {type(tensor).__name__}")
    tensor.array[...] = val
    tensor._bump_version()
    return tensor


def ones_(tensor):
    """Fill with ones.

    Args:
        tensor: a Tensor.
    """
    return constant_(tensor, 1)


def zeros_(tensor):
    """Fill with zeros.

    Args:
        tensor: a Tensor.
    """
    return constant_(tensor, 0)


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                         f"(got shape {tuple(tensor.shape)})")
    receptive = math.prod(tensor.shape[2:]) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot uniform: U(-g*sqrt(6/(fan_in+fan_out)), +...).

    Args:
        tensor: a Tensor with at least 2 dimensions.
        gain: scaling factor.
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot normal: N(0, g^2 * 2/(fan_in+fan_out)).

    Args:
        tensor, gain, generator: as in ``xavier_uniform_``.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming(name, tensor, a, mode, nonlinearity, fill):
    """``fill(std)`` with He's ``std = gain(nonlinearity, a) / sqrt(fan)``; a zero-element tensor is returned as is."""
    _check_init_target(name, tensor)
    if tensor.numel() == 0:
        return tensor  # NOTE: PyTorch warns "Initializing zero-element tensors is a no-op"
    return fill(calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)))


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He uniform: U(-bound, bound) with bound = gain(nonlinearity, a) * sqrt(3 / fan).

    Args:
        tensor: a Tensor with at least 2 dimensions.
        a: negative slope of the following leaky_relu (Linear/Conv use sqrt(5)).
        mode: "fan_in" (default) or "fan_out".
        nonlinearity: "leaky_relu" (default) or "relu", ...
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    # NOTE: U(-b, b) has variance b^2 / 3, so b = sqrt(3) std
    return _kaiming("kaiming_uniform_", tensor, a, mode, nonlinearity,
                    lambda std: uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator))


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He normal: N(0, std^2) with std = gain(nonlinearity, a) / sqrt(fan).

    Args:
        tensor, a, mode, nonlinearity, generator: as in ``kaiming_uniform_``.
    """
    return _kaiming("kaiming_normal_", tensor, a, mode, nonlinearity,
                    lambda std: normal_(tensor, 0.0, std, generator))


def orthogonal_(tensor, gain: float = 1, generator=None):
    """Fill with a (semi-)orthogonal matrix times ``gain``, drawn uniformly (Haar) among them.

    The tensor is seen as a ``(size(0), numel // size(0))`` matrix; the shorter of its two sides gets
    orthonormal vectors (``W W^T = gain^2 I`` for a wide one, ``W^T W = gain^2 I`` for a tall one).
    A tall matrix ``A`` of N(0, 1) values is factored ``A = QR``, and each column of ``Q`` multiplied
    by the sign of the matching diagonal entry of ``R``.

    NOTE: the sign fix makes the factorisation unique, and with it ``Q`` is Haar-distributed; without
    it the QR routine's own sign convention would skew the distribution (Mezzadri, 2007).

    Args:
        tensor: a floating Tensor of at least 2 dimensions (a Linear or Conv weight).
        gain: the scale of the result.
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
    """
    _check_init_target("orthogonal_", tensor)
    if tensor.ndim < 2:
        raise ValueError(f"nn.init.orthogonal_: Only tensors with 2 or more dimensions are supported, got a "
                         f"{tensor.ndim}-D tensor of shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    wide = rows < cols

    def draw(gen):
        xp = backend.get_array_module(tensor.array)
        # NOTE: drawn as torch draws it, rows x cols with normal_ (the same values on the CPU stream), then
        # transposed when wide
        a = normal_values(gen, (rows, cols), _draw_dtype(tensor))
        a = a.T if wide else a
        q, r = xp.linalg.qr(a)
        q = q * xp.sign(xp.diagonal(r))
        return (q.T if wide else q).reshape(tensor.shape) * gain

    return _write(tensor, _on_device(tensor, draw, generator, "orthogonal_"))


def _skip_meta(fill):
    """``fill`` that leaves a meta tensor as it is: it has no values to fill (PyTorch does the same)."""
    @functools.wraps(fill)
    def wrapper(tensor, *args, **kwargs):
        if isinstance(tensor, Tensor) and tensor.device.type == "meta":
            return tensor
        return fill(tensor, *args, **kwargs)
    return wrapper


# NOTE: every in-place fill above skips meta tensors (meta.py): a module built under `with device("meta")`
for _name in [n for n in __all__ if n.endswith("_")]:
    globals()[_name] = _skip_meta(globals()[_name])
del _name

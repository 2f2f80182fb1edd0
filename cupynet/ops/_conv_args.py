"""Argument checks for convolution and pooling: clear errors, then the window ``Geometry`` per dimension."""

from __future__ import annotations

from ..checks import require_floating, require_tensor
from ..tensor import Tensor
from ._im2col import Geometry, output_length


def ntuple(op_name, name, value, nd, minimum):
    """``value`` as an ``nd``-tuple of ints, each at least ``minimum``, or a clear error.

    Args:
        op_name: the op, for messages.
        name: the argument name, for messages.
        value: an int or a sequence of ``nd`` ints.
        nd: number of spatial dimensions.
        minimum: smallest allowed value.
    """
    values = (value,) * nd if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else None
    if values is None or len(values) != nd or not all(isinstance(v, int) and not isinstance(v, bool)
                                                      for v in values):
        raise TypeError(f"{op_name}: {name} must be an int or a tuple of {nd} ints, got {value!r}")
    if any(v < minimum for v in values):
        raise ValueError(f"{op_name}: {name} must be >= {minimum}, got {value!r}")
    return values


def check_input(op_name, nd, input):  # noqa: A002
    """Check a conv/pool input is a floating Tensor of nd+1 (unbatched) or nd+2 dims; return ``unbatched``.

    Args:
        op_name: the op, for messages.
        nd: number of spatial dimensions.
        input: the input.
    """
    require_tensor(op_name, input, "input")
    require_floating(op_name, input)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op_name}: expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input, but got "
                           f"input of shape {tuple(input.shape)}")
    return input.ndim == nd + 1


def _check_weight_bias(op_name, nd, input, weight, bias, out_channels_of):  # noqa: A002
    if not isinstance(weight, Tensor) or weight.ndim != nd + 2:
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise RuntimeError(f"{op_name}: expected a {nd + 2}D weight, got {shape}")
    require_floating(op_name, weight, "weight")
    if bias is not None and (not isinstance(bias, Tensor) or tuple(bias.shape) != (out_channels_of(weight),)):
        shape = tuple(bias.shape) if isinstance(bias, Tensor) else type(bias).__name__
        raise RuntimeError(f"{op_name}: expected bias of shape ({out_channels_of(weight)},) for weight of shape "
                           f"{tuple(weight.shape)}, got {shape}")


def _check_groups(op_name, groups, channels, what):
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{op_name}: groups must be a positive int, got {groups!r}")
    if channels % groups:
        raise RuntimeError(f"{op_name}: {what} must be divisible by groups={groups}")


def _same_padding(op_name, stride, kernel, dilation):
    if any(s != 1 for s in stride):
        raise ValueError(f"{op_name}: padding='same' is not supported for strided convolutions (stride={stride})")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple((t // 2, t - t // 2) for t in totals)


def _conv_pads(op_name, nd, padding, stride, kernel, dilation):
    if padding == "same":
        return _same_padding(op_name, stride, kernel, dilation)
    if padding == "valid":
        return ((0, 0),) * nd
    if isinstance(padding, str):
        raise ValueError(f"{op_name}: padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
    return tuple((p, p) for p in ntuple(op_name, "padding", padding, nd, 0))


def check_conv(op_name, nd, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002
    """Validate conv arguments; return (geometries, unbatched).

    Args:
        op_name: the op, for messages.
        nd: number of spatial dimensions.
        input: (N, C_in, *size) or unbatched (C_in, *size).
        weight: (C_out, C_in / groups, *kernel).
        bias: (C_out,) or None.
        stride: int or tuple.
        padding: int, tuple, 'same' or 'valid'.
        dilation: int or tuple.
        groups: int.
    """
    unbatched = check_input(op_name, nd, input)
    _check_weight_bias(op_name, nd, input, weight, bias, lambda w: w.shape[0])
    _check_groups(op_name, groups, weight.shape[0], f"out_channels (weight.shape[0]={weight.shape[0]})")
    if weight.shape[0] < 1:
        raise RuntimeError(f"{op_name}: Given groups={groups}, expected weight to be at least 1 at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    channels = input.shape[0 if unbatched else 1]
    if channels != weight.shape[1] * groups:
        raise RuntimeError(f"{op_name}: expected input with {weight.shape[1] * groups} channels (weight shape "
                           f"{tuple(weight.shape)}, groups={groups}) but got input of shape {tuple(input.shape)}")
    stride = ntuple(op_name, "stride", stride, nd, 1)
    dilation = ntuple(op_name, "dilation", dilation, nd, 1)
    kernel, sizes = weight.shape[2:], input.shape[-nd:]
    pads = _conv_pads(op_name, nd, padding, stride, kernel, dilation)
    geoms = []
    for size, k, s, d, (lo, hi) in zip(sizes, kernel, stride, dilation, pads):
        if size + lo + hi < d * (k - 1) + 1:
            raise RuntimeError(f"{op_name}: padded input size {size + lo + hi} is smaller than the dilated kernel "
                               f"size {d * (k - 1) + 1} (input shape {tuple(input.shape)}, weight shape "
                               f"{tuple(weight.shape)}, padding={padding}, dilation={dilation})")
        geoms.append(Geometry(k, s, d, lo, size, output_length(size, k, s, d, lo, hi)))
    return tuple(geoms), unbatched


def check_conv_transpose(op_name, nd, input, weight, bias, stride, padding, output_padding, dilation,  # noqa: A002
                         groups):
    """Validate transposed-conv arguments; return (geometries, unbatched).

    Args:
        op_name: the op, for messages.
        nd: number of spatial dimensions.
        input: (N, C_in, *size) or unbatched.
        weight: (C_in, C_out / groups, *kernel).
        bias: (C_out,) or None.
        stride: int or tuple.
        padding: int or tuple.
        output_padding: int or tuple, each smaller than its stride or dilation.
        dilation: int or tuple.
        groups: int.
    """
    unbatched = check_input(op_name, nd, input)
    _check_weight_bias(op_name, nd, input, weight, bias, lambda w: w.shape[1] * groups)
    _check_groups(op_name, groups, weight.shape[0], f"in_channels (weight.shape[0]={weight.shape[0]})")
    channels = input.shape[0 if unbatched else 1]
    if channels != weight.shape[0]:
        raise RuntimeError(f"{op_name}: expected input with {weight.shape[0]} channels (weight shape "
                           f"{tuple(weight.shape)}, groups={groups}) but got input of shape {tuple(input.shape)}")
    stride = ntuple(op_name, "stride", stride, nd, 1)
    dilation = ntuple(op_name, "dilation", dilation, nd, 1)
    padding = ntuple(op_name, "padding", padding, nd, 0)
    output_padding = ntuple(op_name, "output_padding", output_padding, nd, 0)
    geoms = []
    for length, k, s, d, p, op in zip(input.shape[-nd:], weight.shape[2:], stride, dilation, padding,
                                      output_padding):
        if op >= s and op >= d:
            raise ValueError(f"{op_name}: output padding must be smaller than either stride or dilation, but got "
                             f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
        size = (length - 1) * s - 2 * p + d * (k - 1) + 1 + op
        if size < 1:
            raise RuntimeError(f"{op_name}: output size {size} is too small (input shape {tuple(input.shape)}, "
                               f"weight shape {tuple(weight.shape)}, padding={padding})")
        geoms.append(Geometry(k, s, d, p, size, length))
    return tuple(geoms), unbatched


def check_same_dtype(op_name, *tensors):
    """Input, weight and bias must share a dtype (checked inside forward, after autocast's casts).

    Args:
        op_name: the op, for messages.
        *tensors: Tensors or None.
    """
    kinds = [(name, t.dtype) for name, t in zip(("input", "weight", "bias"), tensors) if t is not None]
    if len({dtype for _, dtype in kinds}) > 1:
        # NOTE: as PyTorch outside autocast (or for what autocast leaves alone: float64): no promotion
        raise RuntimeError(f"{op_name}: input, weight and bias must have the same dtype, but got "
                           f"{', '.join(f'{name} {dtype}' for name, dtype in kinds)}")

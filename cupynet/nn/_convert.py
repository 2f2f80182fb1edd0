"""``Module.to``: move/cast parameters, their grads and buffers in place.

Parameters keep their identity (``param.data`` is replaced), so an optimizer
built before ``model.to(...)`` still holds the right objects, as in PyTorch.
NOTE: buffers named in a layer's ``_fp32_buffers`` (BatchNorm's running_mean /
running_var) stay float32 under ``.half()`` / ``.bfloat16()`` (``.double()`` makes them float64): running
statistics accumulated in half precision lose the small momentum updates
(0.1 * x rounds away next to a large mean). PyTorch casts them; cupynet does not.
"""

from __future__ import annotations

from .. import backend, dtypes
from ..tensor import Tensor

__all__ = ["parse_to_args", "convert", "move_array", "ConversionMixin"]


def _is_dtype_like(value) -> bool:
    if isinstance(value, backend.Device):
        return False
    try:
        dtypes.as_dtype(value)
        return True
    except TypeError:
        return False


def parse_to_args(owner: str, args, kwargs):
    """Split ``to()``'s arguments into (device or None, dtype or None), with clear errors.

    Args:
        owner: the module's class name, for messages.
        args: positional arguments (device, dtype, or a Tensor to match).
        kwargs: ``device=``, ``dtype=``, ``non_blocking=``.
    """
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"{owner}.to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, backend.Device)) and not _is_dtype_like(arg):
            device = arg
        elif _is_dtype_like(arg):
            dtype = arg
        else:
            raise TypeError(f"{owner}.to(): expected a device, a dtype or a Tensor, got {arg!r}")
    device = backend.device(device) if device is not None else None
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if not dtypes.is_floating(dtype):
            raise TypeError(f"{owner}.to() only accepts floating point dtypes, but got desired dtype={dtype}")
    return device, dtype


def move_array(array, device):
    """A copy of ``array`` on ``device`` (the array itself when already there).

    Args:
        array: a NumPy or CuPy array.
        device: the target Device.
    """
    if backend.device_of_array(array) == device:
        return array
    host = backend.to_numpy(array)
    if device.type == "cpu":
        return host
    cupy = device.xp
    with cupy.cuda.Device(device.index):
        return cupy.asarray(host)


def _converted(array, device, dtype):
    if dtype is not None and dtypes.is_floating(array.dtype) and array.dtype != dtype:
        array = array.astype(dtype)
    return move_array(array, device) if device is not None else array


def _convert_tensor(t, device, dtype):
    new = _converted(t.data, device, dtype)
    if new is not t.data:
        t.data = new
        t._bump_version()
    if t.grad is not None:
        t.grad.data = _converted(t.grad.data, device, dtype)


def _buffer_dtype(keep_fp32, dtype):
    # NOTE: "at least fp32": half/bfloat16 casts leave these buffers float32; float64 is honoured.
    return dtypes.float32 if keep_fp32 and dtype in dtypes.LOW_PRECISION else dtype


def convert(module, device, dtype):
    """Apply a device move and/or floating cast to every parameter, grad and buffer of ``module``.

    Args:
        module: the root Module.
        device: a Device or None.
        dtype: a floating dtype or None.
    """
    for sub in module.modules():
        for param in sub._parameters.values():
            if param is not None:
                _convert_tensor(param, device, dtype)
        keep_fp32 = getattr(sub, "_fp32_buffers", ())
        for name, buf in sub._buffers.items():
            if buf is not None:
                _convert_tensor(buf, device, _buffer_dtype(name in keep_fp32, dtype))
    return module


class ConversionMixin:
    """``to`` / ``cuda`` / ``cpu`` / ``half`` / ``float`` / ... for ``Module`` (kept here to keep module.py short)."""

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers in place (Parameter objects keep their identity).

        NOTE: a dtype applies only to floating parameters/buffers; buffers a layer
        lists in ``_fp32_buffers`` (BatchNorm's running stats) always stay float32.

        Args:
            *args: a device (``"cpu"``, ``"cuda"``, ``Device``) and/or a floating dtype.
            **kwargs: ``device=``, ``dtype=``, ``non_blocking=`` (ignored).
        """
        device, dtype = parse_to_args(type(self).__name__, args, kwargs)
        return convert(self, device, dtype)

    def cuda(self, device=None):
        """Move every parameter and buffer to the GPU.

        Args:
            device: GPU index or name; default cuda:0.
        """
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def cpu(self):
        """Move every parameter and buffer to the CPU."""
        return self.to("cpu")

    def half(self):
        """Cast floating parameters and buffers to float16."""
        return self.to("float16")

    def bfloat16(self):
        """Cast floating parameters and buffers to bfloat16."""
        return self.to("bfloat16")

    def float(self):
        """Cast floating parameters and buffers to float32."""
        return self.to("float32")

    def double(self):
        """Cast floating parameters and buffers to float64."""
        return self.to("float64")

"""netcl's AMP API (``netcl.amp``, an OpenCL framework) with netcl's semantics, on cupynet's functional core.

netcl's scaler differs from ``torch.amp.GradScaler`` in ways a port must keep, so it is a
class of its own here; ``cupynet.amp.GradScaler`` keeps PyTorch's semantics::

    scaler = GradScaler(init_scale=2.0**12)              # a dataclass: scaler.init_scale, ...
    for xb, yb in loader:
        with autocast(enabled=True, device_queue="cuda"):  # fp16; silently off where fp16 cannot run
            loss = loss_fn(model(xb), yb)
        scaler.scale_loss(loss).backward()
        scaler.step(optimizer, params)                   # unscale params, step unless inf, UPDATE THE SCALE
        scaler.update()                                  # a no-op, kept for API compatibility
        optimizer.zero_grad()

* ``step(optimizer, params)``: ``params`` are the parameters to unscale (PyTorch's ``step``
  would pass them to ``optimizer.step`` as a closure). The scale is updated inside ``step``,
  so ``step`` may be called every iteration without ``update()``.
* ``scale`` is a property (the current scale, a Python float: one host read), and
  ``scale_loss(loss)`` multiplies; ``unscale_grads(params)`` returns a Python bool (one read).
* ``autocast(enabled, device_queue)`` lowers to float16 on the queue's device, and silently
  runs in fp32 where that device cannot run fp16 (netcl checks ``cl_khr_fp16``; cupynet
  ``supports_fp16``).

The math is ``cupynet.amp.functional``'s: fused check + unscale, PyTorch's update rule (which
grows at the same steps as netcl's ``tracker % growth_interval``, but never to inf), the step
skipped on the device for built-in optimizers, so ``step`` makes no host sync. Differences
from netcl: overflowing gradients are unscaled too (netcl leaves them scaled; the step is
skipped either way), and the scale lives on the device (``scaler._scale`` is not a float).
"""

import dataclasses as _dataclasses

from cupynet import backend as _backend
from cupynet import dtypes as _dtypes
from cupynet.amp import functional as _F
from cupynet.amp import grad_scaler as _grad_scaler
from cupynet.amp.autocast import autocast as _autocast
from cupynet.amp.autocast import is_autocast_enabled
from cupynet.cuda import capability as _capability
from cupynet.tensor import Tensor as _Tensor

__all__ = ["GradScaler", "AMPGradScaler", "autocast", "is_autocast_enabled", "supports_fp16"]


def _device_of_queue(device_queue):
    """The cupynet Device a netcl ``device_queue`` stands for (None: the default device)."""
    if device_queue is None:
        return _backend.default_device()
    if isinstance(device_queue, int) and not isinstance(device_queue, bool):
        return _backend.device(f"cuda:{device_queue}")
    if isinstance(device_queue, (str, _backend.Device)):
        return _backend.device(device_queue)
    raise TypeError(f"netcl.autocast: device_queue must be a cupynet Device, a device name ('cpu', 'cuda', "
                    f"'cuda:N'), a GPU index or None, got {type(device_queue).__name__} {device_queue!r}")


def supports_fp16(queue) -> bool:
    """netcl's ``supports_fp16(queue)``: can the queue's device run float16 math.

    Args:
        queue: a Device, a device name, a GPU index, or None (the default device).
    """
    return _capability.supports_fp16(_device_of_queue(queue))


class autocast:  # noqa: N801 - netcl's name
    """netcl's autocast region: float16 on ``device_queue``'s device; off, silently, where fp16 cannot run.

    Args:
        enabled: False opens a region with autocast off.
        device_queue: the device (netcl: an OpenCL command queue): a Device, 'cpu', 'cuda', 'cuda:N', a GPU
            index, or None for the default device.
    """

    def __init__(self, enabled: bool = True, device_queue=None):
        self.enabled = enabled
        self.device_queue = device_queue
        device = _device_of_queue(device_queue)
        # NOTE: netcl's fallback: a device without fp16 runs the region in fp32, without a warning.
        self._capable = _capability.supports_fp16(device)
        self._region = _autocast(device.type, dtype=_dtypes.float16, enabled=bool(enabled) and self._capable)

    def __enter__(self):
        self._region.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        return self._region.__exit__(exc_type, exc, tb)


@_dataclasses.dataclass
class GradScaler:
    """netcl's loss scaler: the scale is updated inside ``step``; ``update()`` does nothing.

    Args:
        init_scale: the initial scale.
        growth_factor: multiplies the scale after ``growth_interval`` clean steps (> 1).
        backoff_factor: multiplies the scale after an overflow (in (0, 1)).
        growth_interval: clean steps between growths (int >= 1).
        enabled: False makes ``scale_loss`` return the loss and ``step`` a plain ``optimizer.step()``.
    """

    init_scale: float = 2.0**16
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    enabled: bool = True

    def __post_init__(self):
        where = "netcl.GradScaler"
        _grad_scaler.check_init_scale(where, self.init_scale)
        _grad_scaler.check_growth_factor(where, self.growth_factor)
        _grad_scaler.check_backoff_factor(where, self.backoff_factor)
        _grad_scaler.check_growth_interval(where, self.growth_interval)
        if not isinstance(self.enabled, bool):
            raise TypeError(f"{where}: enabled must be a bool, got {type(self.enabled).__name__} {self.enabled!r}")
        self._scale = None          # NOTE: device state, created on the device of the first loss or gradient
        self._growth_tracker = None

    def _state_on(self, device):
        if self._scale is None:
            self._scale = _Tensor(_F.device_array(float(self.init_scale), _dtypes.float32, device))
            self._growth_tracker = _Tensor(_F.device_array(0, _dtypes.int32, device))
        return self._scale

    @property
    def scale(self) -> float:
        """The current scale as a Python float (a host read; ``init_scale`` before first use)."""
        if self._scale is None:
            return float(self.init_scale)
        return float(_backend.to_numpy(self._scale.array).reshape(()))

    def scale_loss(self, loss):
        """``loss * scale`` (differentiable), on the loss's device; the loss itself when disabled.

        Args:
            loss: a Tensor (or an iterable of Tensors).
        """
        if not self.enabled:
            return loss
        return _F.apply_scale(loss, lambda output: _F.scale_tensor_for(self._state_on(output.device), output))

    def _unscale(self, params):
        params = [params] if isinstance(params, _Tensor) else list(params)
        device = next((p.grad.device for p in params if p.grad is not None), _backend.default_device())
        return _F.unscale(params, self._state_on(device))

    def unscale_grads(self, params) -> bool:
        """Divide the ``.grad`` of ``params`` by the scale; return whether any was inf/NaN (one host read).

        Does not update the scale (``step`` does). Do not call it before ``step``: ``step`` unscales.

        Args:
            params: an iterable of parameters.
        """
        if not self.enabled:
            return False
        found_inf = self._unscale(params)
        return bool(_backend.to_numpy(found_inf.array).reshape(()) != 0)

    def step(self, optimizer, params=None):
        """Unscale ``params``' gradients, step ``optimizer`` unless they overflowed, and update the scale.

        No host sync for built-in optimizers (the skip is decided on the device).

        Args:
            optimizer: the optimizer.
            params: the parameters whose gradients to unscale (default: all of the optimizer's).
        """
        if not self.enabled:
            return optimizer.step()
        if params is None:
            params = [p for group in optimizer.param_groups for p in group["params"]]
        found_inf = self._unscale(params)
        result = _F.step_after_unscale(optimizer, found_inf)
        _F.update_scale(self._scale, self._growth_tracker, found_inf, self.growth_factor, self.backoff_factor,
                        self.growth_interval)
        return result

    def update(self):
        """A no-op, kept for API compatibility (netcl updates the scale in ``step``)."""


AMPGradScaler = GradScaler
"""The name ``netcl.optim`` exports the scaler under."""

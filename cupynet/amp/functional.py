"""The functional core of loss scaling: stateless, the scale passed explicitly, no host sync.

``GradScaler`` is a thin stateful class on top of these functions; they are
also usable on their own (easy to checkpoint, easy to teach)::

    scaled = scale_outputs(loss, scale)           # loss * scale, differentiable
    scaled.backward()
    found_inf = unscale(model.parameters(), scale)   # grads *= 1/scale, found_inf = any inf/NaN
    step_after_unscale(optimizer, found_inf)      # skipped on the device when found_inf != 0
    update_scale(scale, growth_tracker, found_inf, 2.0, 0.5, 2000)   # GradScaler's rule, IN PLACE

or, the early torch.amp prototype's style, where each call returns a NEW recommended
scale and never changes the one it was given (so optimizers can share it)::

    _, found_inf, scale = unscale_and_step(optimizer, scale)   # recommend_scale: * 1.001 or * 0.5

Every value that lives on the device (scale, growth tracker, found_inf) stays
there: the functions return device scalars (cupynet Tensors of shape ``()``)
and never read them on the host. The one exception is documented on
:func:`step_after_unscale`: for an optimizer that cannot skip on the device,
deciding whether to call ``optimizer.step()`` needs one host read of found_inf.
"""

# NOTE: every import is bound to a private name, so that the module's public names are its API only
# (``dir(functional)`` lists ``__all__`` and nothing else).
import numbers as _numbers
from collections import abc as _abc

from cupynet import backend as _backend
from cupynet import creation as _creation
from cupynet import dtypes as _dtypes
from cupynet.amp import kernels as _kernels
from cupynet.autograd import no_grad as _no_grad
from cupynet.tensor import Tensor as _Tensor

__all__ = [
    "scale_outputs", "check_inf", "unscale", "update_scale", "step_after_unscale", "unscale_and_step",
    "recommend_scale", "collect_grads", "check_grad_arrays", "unscale_arrays", "inv_scale_of", "device_array",
    "to_device", "apply_scale", "scale_tensor_for", "start_unscale",
]

_F32, _I32 = _dtypes.float32, _dtypes.int32


# ---- small array helpers ------------------------------------------------------------------------
def device_array(value, dtype, device):
    """A new 0-d array holding ``value`` on ``device`` (a host-to-device write, never a sync).

    Args:
        value: a Python number.
        dtype: the NumPy dtype.
        device: a Device or device name.
    """
    return _creation.full((), value, dtype=dtype, device=device).array.reshape(())


def to_device(array, device):
    """``array`` itself when it is on ``device``, else a copy there (device to device, no sync on GPUs).

    Args:
        array: a NumPy or CuPy array.
        device: the target Device.
    """
    if _backend.device_of_array(array) == device:
        return array
    if device.type == "cpu":
        return _backend.to_numpy(array)  # NOTE: a sync, only when the user mixes devices
    cupy = device.xp
    with cupy.cuda.Device(device.index):
        return cupy.asarray(array)


def inv_scale_of(scale):
    """``1 / scale`` computed in float64 and stored as float32, on the scale's device (shape ``(1,)``).

    NOTE: a float32 division can be inexact under some compile options (and
    CuPy compiles with fast math flags), so like PyTorch the reciprocal is taken
    in float64 and rounded once to float32. For a power-of-two scale it is exact.

    Args:
        scale: a one-element float32 array.
    """
    return (1.0 / scale.reshape(1).astype(_dtypes.float64)).astype(_F32)


def _uninitialised(shape, dtype, device):
    """A new array of ``shape`` on ``device`` whose values a kernel writes next (an allocation, no launch)."""
    xp = device.xp
    if device.type == "cpu":
        return xp.empty(shape, dtype)
    with xp.cuda.Device(device.index):
        return xp.empty(shape, dtype)


def start_unscale(scale, device, tensor_stats=None):
    """``(found_inf, inv_scale)`` for an unscale on ``device``: a zeroed 0-d flag and ``1 / scale``; no sync.

    On the scale's device one launch (``kernels.begin_unscale_``) writes both and zeroes
    ``tensor_stats``; on another device (a model split across GPUs) the reciprocal is copied over.
    The values are :func:`inv_scale_of`'s and :func:`device_array`'s.

    Args:
        scale: the float32 one-element scale array.
        device: the Device of the gradients.
        tensor_stats: optional int32 ``(n, 2)`` array on ``device``, zeroed.
    """
    if _backend.device_of_array(scale) != device:
        if tensor_stats is not None:
            tensor_stats[...] = 0
        return device_array(0.0, _F32, device), to_device(inv_scale_of(scale), device)
    found, inv_scale = _uninitialised((), _F32, device), _uninitialised((1,), _F32, device)
    _kernels.begin_unscale_(scale, inv_scale, found, tensor_stats)
    return found, inv_scale


def _data(fn: str, name: str, value, dtype=None):
    """The xp array of a Tensor or array argument, checked to hold one element of ``dtype``."""
    array = value.array if isinstance(value, _Tensor) else value
    if not hasattr(array, "dtype") or not hasattr(array, "reshape") or isinstance(array, _numbers.Number):
        raise TypeError(f"{fn}: {name} must be a cupynet Tensor or an array with one element, "
                        f"got {type(value).__name__}")
    if array.size != 1 or array.ndim > 1 or (dtype is not None and array.dtype != dtype):
        want = f"{dtype} " if dtype is not None else ""
        raise ValueError(f"{fn}: {name} must hold one {want}value (shape () or (1,)), got {array.dtype} of shape "
                         f"{tuple(array.shape)}")
    return array


def _scale_array(fn: str, scale, device=None):
    """The scale as a float32 one-element array; a Python number becomes one on ``device``."""
    if isinstance(scale, _numbers.Real) and not isinstance(scale, bool):
        return device_array(float(scale), _F32, device or _backend.default_device())
    return _data(fn, "scale", scale, _F32)


# ---- outputs -------------------------------------------------------------------------------------
def scale_outputs(outputs, scale, scaling_enabled: bool = True):
    """Multiply a Tensor, or every Tensor of a (nested) iterable, by the loss scale (differentiable).

    Lists and tuples keep their type, other iterables come back as lazy ``map`` objects,
    as in ``torch.amp.GradScaler.scale``.

    Args:
        outputs: a Tensor or an iterable of Tensors (usually the loss).
        scale: the scale: a float32 device scalar (Tensor/array of one element) or a Python number.
        scaling_enabled: when False, ``outputs`` is returned unchanged.
    """
    if not scaling_enabled:
        return outputs
    return apply_scale(outputs, lambda output: scale_tensor_for(scale, output))


def scale_tensor_for(scale, output: _Tensor) -> _Tensor:
    """The scale as a 0-d float32 Tensor on ``output``'s device (a view when it is already there).

    NOTE: a 0-d view, so a 0-d loss stays 0-d (a (1,) scale would broadcast it to shape (1,)).

    Args:
        scale: a float32 one-element Tensor/array, or a Python number.
        output: the Tensor about to be scaled.
    """
    array = _scale_array("scale_outputs", scale, output.device)
    return _Tensor(to_device(array, output.device).reshape(()))


def apply_scale(outputs, scale_for):
    """``outputs * scale`` for a Tensor or a (nested) iterable of Tensors; one scale copy per device.

    Args:
        outputs: a Tensor or an iterable of Tensors.
        scale_for: ``scale_for(output) -> 0-d scale Tensor on output's device`` (called once per device,
            when the first Tensor on that device is met: lazily, for lazy iterables).
    """
    per_device: dict = {}

    def scaled(value):
        if isinstance(value, _Tensor):
            if value.device not in per_device:
                per_device[value.device] = scale_for(value)
            return value * per_device[value.device]
        if isinstance(value, _abc.Iterable) and not isinstance(value, (str, bytes)):
            mapped = map(scaled, value)
            return type(value)(mapped) if isinstance(value, (list, tuple)) else mapped
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    return scaled(outputs)


# ---- gradients -------------------------------------------------------------------------------------
def collect_grads(fn: str, params_or_grads) -> list:
    """The gradient arrays named by ``params_or_grads``, in order.

    A Tensor with ``requires_grad=True`` is a parameter: its ``.grad`` is used (and it is
    skipped when that is None). Any other Tensor, or a NumPy/CuPy array, is a gradient itself.

    Args:
        fn: the public function's name, for error messages.
        params_or_grads: a Tensor, an array, or an iterable of them.
    """
    if isinstance(params_or_grads, _Tensor) or hasattr(params_or_grads, "__array_interface__") \
            or hasattr(params_or_grads, "__cuda_array_interface__"):
        params_or_grads = [params_or_grads]
    if isinstance(params_or_grads, (str, bytes)) or not isinstance(params_or_grads, _abc.Iterable):
        raise TypeError(f"{fn}: expected a Tensor or an iterable of parameters/gradients, "
                        f"got {type(params_or_grads).__name__}")
    grads = []
    for i, item in enumerate(params_or_grads):
        if isinstance(item, _Tensor):
            if item.requires_grad:
                if item.grad is not None:
                    grads.append(item.grad.array)
                continue
            grads.append(item.array)
        elif hasattr(item, "dtype") and hasattr(item, "flags"):
            grads.append(item)
        else:
            raise TypeError(f"{fn}: element {i} must be a Tensor (parameter or gradient) or an array, "
                            f"got {type(item).__name__}")
    return grads


def check_grad_arrays(fn: str, arrays, device, allow_fp16: bool) -> None:
    """Metadata checks of every gradient before anything is written (state untouched on error).

    Args:
        fn: the public function's name, for error messages.
        arrays: the gradient arrays.
        device: the device they must be on.
        allow_fp16: whether float16 gradients are accepted (PyTorch's GradScaler refuses them).
    """
    for i, g in enumerate(arrays):
        if not _dtypes.is_floating(g.dtype):
            raise TypeError(f"{fn}: gradient {i} has dtype {g.dtype}; expected a floating dtype")
        if not allow_fp16 and g.dtype == _dtypes.float16:
            raise ValueError("Attempting to unscale FP16 gradients.")
        if _backend.device_of_array(g) != device:
            raise ValueError(f"{fn}: gradient {i} is on {_backend.device_of_array(g)} but the scale is on {device}; "
                             "expected every gradient on the scale's device")


def unscale_arrays(arrays, found_inf, inv_scale, tensor_stats=None) -> None:
    """Fused check + unscale of gradient arrays in place, any layout, any floating dtype; no host sync.

    Contiguous float32/float16/bfloat16 arrays go to the fused kernel as they are. A
    non-contiguous array (a transposed or sliced gradient) is unscaled in a contiguous
    copy that is written back. float64 arrays take a plain xp path with the same rule.

    Args:
        arrays: gradient arrays, all on one device.
        found_inf: float32 one-element array, set to 1 when any value is inf/NaN (never cleared).
        inv_scale: float32 one-element array.
        tensor_stats: optional int32 ``(len(arrays), 2)`` array; ``[inf_count, nan_count]`` added per array.
    """
    fused = [i for i, a in enumerate(arrays) if a.dtype in _kernels.SUPPORTED_DTYPES]
    work = [arrays[i] if arrays[i].flags.c_contiguous else arrays[i].copy(order="C") for i in fused]
    stats = tensor_stats
    if tensor_stats is not None and len(fused) != len(arrays):
        xp = _backend.get_array_module(tensor_stats)
        stats = xp.zeros((len(fused), 2), dtype=_I32)
    _kernels.non_finite_check_and_unscale_(work, found_inf, inv_scale, stats)
    for i, copy in zip(fused, work):
        if copy is not arrays[i]:
            arrays[i][...] = copy
    if stats is not tensor_stats:
        tensor_stats[fused] += stats
    for i, a in enumerate(arrays):
        if a.dtype not in _kernels.SUPPORTED_DTYPES:
            _unscale_wide(a, found_inf, inv_scale, None if tensor_stats is None else tensor_stats[i])


def _unscale_wide(a, found_inf, inv_scale, stats_row) -> None:
    """The kernel's rule for a float64 array, with xp operations (still no host sync)."""
    xp = _backend.get_array_module(a)
    n_inf = xp.isinf(a).sum(dtype=_I32)
    n_nan = xp.isnan(a).sum(dtype=_I32)
    flag = found_inf.reshape(1)
    flag[...] = xp.where((n_inf + n_nan) > 0, xp.ones(1, _F32), flag)
    if stats_row is not None:
        stats_row[0] += n_inf
        stats_row[1] += n_nan
    a *= inv_scale.reshape(1).astype(a.dtype)[0]


def _unscale_found(fn: str, params_or_grads, scale, found_inf, tensor_stats, rescale: bool, allow_fp16: bool):
    grads = collect_grads(fn, params_or_grads)
    # NOTE: a Python-number scale goes where the gradients are (the default device when there are none)
    scale_arr = _scale_array(fn, scale, _backend.device_of_array(grads[0]) if grads else None)
    device = _backend.device_of_array(scale_arr)
    check_grad_arrays(fn, grads, device, allow_fp16)
    found = device_array(0.0, _F32, device) if found_inf is None else _data(fn, "found_inf", found_inf, _F32)
    stats = None if tensor_stats is None else (tensor_stats.array if isinstance(tensor_stats, _Tensor)
                                                else tensor_stats)
    inv = inv_scale_of(scale_arr) if rescale else device_array(1.0, _F32, device).reshape(1)
    with _no_grad():
        unscale_arrays(grads, found, inv, stats)
    return found if isinstance(found_inf, _Tensor) else _Tensor(found.reshape(()))


def check_inf(params_or_grads, *, device=None, found_inf=None, tensor_stats=None) -> _Tensor:
    """Check gradients for inf/NaN without changing them; returns found_inf (1.0 if any), on the device.

    Args:
        params_or_grads: parameters (their ``.grad``) and/or gradient Tensors/arrays.
        device: the device of the result (default: the gradients', else the default device); the gradients
            must be there.
        found_inf: an existing float32 flag to set instead of a new one (it is only ever set).
        tensor_stats: optional int32 ``(n, 2)`` array that gets ``[inf_count, nan_count]`` per gradient added.
    """
    if device is not None:
        dev = _backend.device(device)
    else:
        grads = collect_grads("check_inf", params_or_grads)
        dev = _backend.device_of_array(grads[0]) if grads else _backend.default_device()
    return _unscale_found("check_inf", params_or_grads, device_array(1.0, _F32, dev), found_inf, tensor_stats,
                          rescale=False, allow_fp16=True)


def unscale(params_or_grads, scale, *, found_inf=None, tensor_stats=None, allow_fp16: bool = True) -> _Tensor:
    """Divide gradients by ``scale`` in place (fused) and return found_inf; no host sync.

    Each element ``g`` becomes ``fp32(g) * fp32(1/scale)`` rounded back to its dtype, and
    found_inf is set to 1.0 if any element was inf or NaN (before unscaling).

    Args:
        params_or_grads: parameters (their ``.grad``) and/or gradient Tensors/arrays, on the scale's device.
        scale: the loss scale: a float32 device scalar, or a Python number (made on the gradients' device).
        found_inf: an existing float32 flag to set instead of a new one.
        tensor_stats: optional int32 ``(n, 2)`` array that gets ``[inf_count, nan_count]`` per gradient added.
        allow_fp16: accept float16 gradients (``GradScaler`` passes False, as PyTorch).
    """
    return _unscale_found("unscale", params_or_grads, scale, found_inf, tensor_stats, rescale=True,
                          allow_fp16=allow_fp16)


# ---- the scale update -------------------------------------------------------------------------------
def update_scale(scale, growth_tracker, found_inf, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, *,
                 hysteresis=1, hysteresis_tracker=None, min_scale=None, max_scale=None, min_hit=None) -> _Tensor:
    """Update the scale (and trackers) in place on the device after a step; returns the scale.

    The rule is ``cupynet.amp.kernels.update_scale_``: back off by ``backoff_factor`` after
    ``hysteresis`` consecutive overflowing steps (never below ``min_scale``), grow by
    ``growth_factor`` after ``growth_interval`` clean steps (never to inf, never above
    ``max_scale``). With the defaults it is PyTorch's ``_amp_update_scale_`` bit for bit.

    Args:
        scale: float32 device scalar (Tensor or array), updated in place.
        growth_tracker: int32 device scalar, updated in place.
        found_inf: float32 device scalar; non-zero means the step overflowed.
        growth_factor: factor > 1.
        backoff_factor: factor in (0, 1).
        growth_interval: clean steps between growths (int >= 1).
        hysteresis: consecutive overflows needed to back off (int >= 1).
        hysteresis_tracker: int32 device scalar (needed when hysteresis > 1), updated in place.
        min_scale: lower bound after a back-off, or None.
        max_scale: upper bound after a growth, or None.
        min_hit: optional int32 device scalar, set to 1 when min_scale clamped a back-off.
    """
    fn = "update_scale"
    arrays = [_data(fn, "scale", scale, _F32), _data(fn, "growth_tracker", growth_tracker, _I32),
              _data(fn, "found_inf", found_inf, _F32)]
    hyst = None if hysteresis_tracker is None else _data(fn, "hysteresis_tracker", hysteresis_tracker, _I32)
    hit = None if min_hit is None else _data(fn, "min_hit", min_hit, _I32)
    _kernels.update_scale_(*arrays, growth_factor, backoff_factor, growth_interval, hysteresis, hyst, min_scale,
                          max_scale, hit)
    return scale if isinstance(scale, _Tensor) else _Tensor(arrays[0].reshape(()))


# ---- stepping ---------------------------------------------------------------------------------------
def _flag_is_set_on_host(found_inf) -> bool:
    """Read found_inf on the host: THE one documented host sync of a PyTorch-style skipped step."""
    return bool(_backend.to_numpy(found_inf.reshape(1))[0] != 0)


def step_after_unscale(optimizer, found_inf, skip_if_inf: bool = True, *args, on_device=None, **kwargs):
    """Run ``optimizer.step(*args, **kwargs)`` unless found_inf is set.

    Two ways to skip:

    * on the device (default for optimizers with ``_step_supports_amp_scaling = True``, i.e.
      every built-in cupynet optimizer): ``optimizer.step(found_inf=found_inf)`` is always
      called and leaves parameters and state bit-identical when found_inf != 0. No host sync;
      the optimizer's return value is returned.
    * on the host (any other optimizer, or ``on_device=False``): found_inf is read (one sync);
      when set, ``optimizer.step`` is not called and None is returned (PyTorch's behaviour).

    Args:
        optimizer: the optimizer.
        found_inf: the float32 device scalar from :func:`unscale`.
        skip_if_inf: when False, always step normally (nothing is read).
        *args: forwarded to ``optimizer.step``.
        on_device: force the device path (True) or the host path (False); None decides by the optimizer.
        **kwargs: forwarded to ``optimizer.step``.
    """
    if not skip_if_inf:
        return optimizer.step(*args, **kwargs)
    flag = _data("step_after_unscale", "found_inf", found_inf, _F32)
    supports = bool(getattr(optimizer, "_step_supports_amp_scaling", False))
    if on_device is None:
        on_device = supports
    if on_device and not supports:
        raise ValueError(f"step_after_unscale: {type(optimizer).__name__} cannot skip a step on the device "
                         "(it has no _step_supports_amp_scaling = True / step(found_inf=...)); use on_device=False")
    if on_device:
        return optimizer.step(*args, found_inf=flag, **kwargs)
    if _flag_is_set_on_host(flag):
        return None
    return optimizer.step(*args, **kwargs)


def _optimizer_params(optimizer) -> list:
    return [p for group in optimizer.param_groups for p in group["params"]]


def recommend_scale(scale, found_inf, growth_factor=1.001, backoff_factor=0.5, scale_scheduler=None) -> _Tensor:
    """The scale to use next iteration, as a NEW 0-d float32 device scalar; ``scale`` is left untouched.

    The early ``torch.amp`` prototype's rule, per call (no growth tracker)::

        recommended = fp32(scale * backoff_factor) if found_inf else fp32(scale * growth_factor)

    computed on the device by the same kernel as :func:`update_scale` (``growth_interval=1`` on a
    fresh tracker), so it never grows to inf. No host sync.

    NOTE: a new value rather than an in-place update, so that several optimizers sharing one
    scale each unscale with the scale that produced their gradients, and the caller combines
    their recommendations (``S = min(S0, S1)``).

    Args:
        scale: the scale the gradients were produced with (float32 device scalar or a Python number).
        found_inf: float32 device scalar; non-zero means the gradients overflowed.
        growth_factor: factor > 1 applied after a clean step.
        backoff_factor: factor in (0, 1) applied after an overflow.
        scale_scheduler: optional ``scale_scheduler(scale, found_inf) -> new scale`` (device scalars) replacing
            the rule; its result must hold one float32 value.
    """
    fn = "recommend_scale"
    current = _scale_array(fn, scale)
    found = _data(fn, "found_inf", found_inf, _F32)
    device = _backend.device_of_array(current)
    if scale_scheduler is not None:
        as_tensor = scale if isinstance(scale, _Tensor) else _Tensor(current.reshape(()))
        proposed = scale_scheduler(as_tensor, found_inf if isinstance(found_inf, _Tensor) else _Tensor(found))
        return _Tensor(_data(fn, "the scale_scheduler's result", proposed, _F32).reshape(()))
    new = current.reshape(1).copy()
    _kernels.update_scale_(new, device_array(0, _I32, device).reshape(1), to_device(found, device).reshape(1),
                          growth_factor, backoff_factor, 1)
    return _Tensor(new.reshape(()))


_CLOSURE_REFUSED = (
    "Closure use is not currently supported.  It's tricky, but not impossible: a closure re-runs the forward "
    "and backward passes inside step(), after the gradients were unscaled, so the gradients it makes would "
    "still be scaled.  Call your closure yourself (on scale_outputs(loss, S)), then unscale_and_step()."
)


def unscale_and_step(optimizer, scale, growth_factor=1.001, backoff_factor=0.5, *, scale_scheduler=None,
                     skip_if_inf=True, found_inf=None, scaling_enabled=True, closure=None, on_device=None):
    """Unscale the optimizer's gradients, step unless they overflowed, and recommend the next scale.

    The early ``torch.amp`` prototype's ``optimizer.unscale_and_step`` as a free function. ``scale``
    is never modified: the recommended scale is a new device scalar (:func:`recommend_scale`), so
    two optimizers can share one scale::

        _, found0, S0 = unscale_and_step(opt0, S)
        _, found1, S1 = unscale_and_step(opt1, S)
        S = min(S0, S1)          # comparing reads both on the host: your choice, not the step's

    No host sync when the optimizer skips on the device (every built-in cupynet optimizer).

    Args:
        optimizer: the optimizer whose parameters' ``.grad`` were produced from ``scale_outputs(loss, scale)``.
        scale: the scale used for those gradients (float32 device scalar or a Python number); not modified.
        growth_factor: factor > 1 for the recommendation after a clean step (the prototype's 1.001).
        backoff_factor: factor in (0, 1) for the recommendation after an overflow.
        scale_scheduler: optional ``scale_scheduler(scale, found_inf) -> new scale`` replacing the rule.
        skip_if_inf: False steps without looking at found_inf (batch replay: known to be clean).
        found_inf: a flag you already have (e.g. from :func:`check_inf`) to decide the skip; the gradients are
            still unscaled and checked, and that check drives the recommendation.
        scaling_enabled: False is a plain ``optimizer.step()`` returning ``(result, None, None)``.
        closure: refused with an explanation when scaling is enabled (passed to ``step`` otherwise).
        on_device: see :func:`step_after_unscale`.

    Returns:
        ``(step_result, found_inf, recommended_scale)``.
    """
    if not scaling_enabled:
        return (optimizer.step() if closure is None else optimizer.step(closure)), None, None
    if closure is not None:
        raise ValueError(_CLOSURE_REFUSED)
    found = unscale(_optimizer_params(optimizer), scale, allow_fp16=False)
    recommended = recommend_scale(scale, found, growth_factor, backoff_factor, scale_scheduler)
    flag = found if found_inf is None else found_inf
    result = step_after_unscale(optimizer, flag, skip_if_inf, on_device=on_device)
    return result, flag, recommended

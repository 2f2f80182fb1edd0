"""``cupynet.nn.utils``: gradient clipping, flattening parameters to one vector; ``rnn``: packed sequences.

Loaded on first use (the table at the end): weight norm and spectral norm (``parametrizations`` and the
older hook forms ``weight_norm`` / ``spectral_norm``) and ``parametrize``.

``clip_grad_norm_`` never syncs with the host (unless ``error_if_nonfinite``):
the total norm stays a 0-d array on the device and the grads are multiplied by
``min(1, max_norm / (norm + 1e-6))`` computed there, as PyTorch does.
"""

from __future__ import annotations

import math
import numbers

import numpy

from ... import _lazy, backend, dtypes
from ...tensor import Tensor
from ..module import move_array
from . import rnn

__all__ = ["rnn", "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters"]


def _param_list(fn: str, parameters) -> list:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{fn}: expected Tensors (or an iterable of them), got {type(p).__name__}")
    return params


def _real(fn: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a real number, got {value!r}")
    return float(value)


def _max_norm(fn: str, value):
    """``max_norm`` as a Python float, or as a 0-d array when it is a one-element Tensor (kept on the device).

    NOTE: a Tensor max_norm (e.g. ``max_norm * S`` with S a loss scale on the device) is used as is, as
    in PyTorch, so clipping scaled gradients needs no host read of the scale. An integer Tensor is
    taken as float32 (PyTorch's promotion with the fp32 norm).
    """
    if not isinstance(value, Tensor):
        return _real(fn, "max_norm", value)
    real = dtypes.is_floating(value.dtype) or numpy.issubdtype(value.dtype, numpy.integer)
    if value.array.size != 1 or not real:
        raise ValueError(f"{fn}: max_norm must be a real number or a one-element real Tensor, got a {value.dtype} "
                         f"Tensor of shape {tuple(value.shape)}")
    array = value.array.reshape(())
    return array if dtypes.is_floating(array.dtype) else array.astype(dtypes.float32)


def _l2norm_kernel():
    try:
        from ...amp.kernels import multi_tensor_l2norm  # noqa: PLC0415 - optional, written by the AMP engineer
    except ImportError:
        return None
    return multi_tensor_l2norm


def _clip_kernel():
    from ...amp.kernels import clip_by_total_norm_  # noqa: PLC0415 - loads the AMP kernels on first use
    return clip_by_total_norm_


_F32_MAX = float(numpy.finfo(numpy.float32).max)


def _clips_in_one_launch(grads, total, max_norm) -> bool:
    """True when ``clip_by_total_norm_`` gives exactly the per-gradient loop's values, in one launch.

    NOTE: the kernel computes ``min(max_norm / (norm + 1e-6), 1)`` in fp32 and multiplies each
    gradient by it rounded to the gradient's dtype: the loop's NumPy / CuPy promotion when the
    norm is fp32 (the l2 norm kernel's), max_norm is an fp32 device value or a host number
    (rounded once to fp32: NumPy's weak scalar), and every gradient is a contiguous
    fp32 / fp16 / bf16 device array on the norm's device.
    """
    if total.dtype != dtypes.float32 or not backend.is_device_array(total):
        return False
    if isinstance(max_norm, float):
        if not 0.0 <= max_norm <= _F32_MAX:
            return False
    elif max_norm.dtype != dtypes.float32 or not backend.is_device_array(max_norm):
        return False
    place = backend.device_of_array(total)
    return all(g.array.dtype in _KERNEL_GRAD_DTYPES and g.array.flags.c_contiguous and backend.is_device_array(g.array)
               and backend.device_of_array(g.array) == place for g in grads)


_KERNEL_GRAD_DTYPES = (dtypes.float32,) + tuple(dtypes.LOW_PRECISION)


def _device_norm(arrays, norm_type: float):
    """The norm of the concatenation of ``arrays`` (all on one device), as a 0-d fp32/fp64 array."""
    xp = backend.get_array_module(arrays[0])
    kernel = _l2norm_kernel() if xp.__name__ == "cupy" and norm_type == 2.0 else None
    if kernel is not None and all(a.dtype in (dtypes.float32,) + dtypes.LOW_PRECISION for a in arrays):
        return kernel([xp.ascontiguousarray(a) for a in arrays]).reshape(())
    acc = dtypes.float64 if any(a.dtype == dtypes.float64 for a in arrays) else dtypes.float32
    # NOTE: half grads are squared/summed in fp32 (a half sum of squares overflows at 256^2).
    parts = [xp.abs(a.astype(acc, copy=False)) for a in arrays]
    if math.isinf(norm_type):
        return xp.asarray(xp.max(xp.stack([p.max() if p.size else xp.zeros((), acc) for p in parts])))
    total = sum((p ** norm_type).sum(dtype=acc) for p in parts)
    return xp.asarray(total ** (1.0 / norm_type), dtype=acc)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The norm of all ``tensors`` together, as a 0-d Tensor on the first tensor's device (no host sync).

    Args:
        tensors: a Tensor or iterable of Tensors (typically gradients).
        norm_type: p of the p-norm, or ``math.inf``.
        error_if_nonfinite: raise when the norm is nan/inf (this check syncs with the host).
        foreach: accepted for PyTorch compatibility (a fused kernel is used when available).
    """
    norm_type = _real("get_total_norm", "norm_type", norm_type)
    if not norm_type > 0:
        raise ValueError(f"get_total_norm: norm_type must be positive or inf, got {norm_type}")
    arrays = [t.array for t in _param_list("get_total_norm", tensors)]
    if not arrays:
        return Tensor(numpy.zeros((), numpy.float32))
    first = backend.device_of_array(arrays[0])
    by_device = {}
    for a in arrays:
        by_device.setdefault(backend.device_of_array(a), []).append(a)
    norms = [move_array(_device_norm(group, norm_type), first) for group in by_device.values()]
    total = norms[0] if len(norms) == 1 else _device_norm(norms, norm_type)
    if error_if_nonfinite and not bool(backend.get_array_module(total).isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                            "so it cannot be clipped. To disable this error and scale the gradients by the "
                            "non-finite norm anyway, set `error_if_nonfinite=False`")
    return Tensor(total)


def clip_grad_norm_(parameters, max_norm, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Scale the gradients in place so their total norm is at most ``max_norm``; return the norm before.

    grads *= min(1, max_norm / (total_norm + 1e-6)), computed on the device.

    Args:
        parameters: a Tensor or iterable of Tensors whose ``.grad`` is clipped.
        max_norm: the largest allowed total norm: a number, or a one-element Tensor (e.g. ``max_norm * S``
            for gradients scaled by a device scale ``S``), used on the device without a host read.
        norm_type: p of the p-norm (default 2), or ``math.inf``.
        error_if_nonfinite: raise when the total norm is nan/inf (a host sync).
        foreach: accepted for PyTorch compatibility.
    """
    max_norm = _max_norm("clip_grad_norm_", max_norm)
    params = _param_list("clip_grad_norm_", parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if not grads:
        return total
    xp = backend.get_array_module(total.array)
    if not isinstance(max_norm, float):
        max_norm = move_array(max_norm, backend.device_of_array(total.array))
    if _clips_in_one_launch(grads, total.array, max_norm):
        # NOTE: one multi-tensor launch for every gradient, the coefficient computed in it
        _clip_kernel()([g.array for g in grads], total.array, max_norm)
        for g in grads:
            g._bump_version()
        return total
    coef = xp.asarray(xp.minimum(max_norm / (total.array + 1e-6), 1.0))
    for g in grads:
        gxp = backend.get_array_module(g.array)
        local = move_array(coef, backend.device_of_array(g.array))
        with numpy.errstate(invalid="ignore"):  # NOTE: an inf norm gives 0 * inf = nan grads, as in torch
            gxp.multiply(g.array, local.astype(g.dtype), out=g.array, casting="unsafe")
        g._bump_version()
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient in place to [-clip_value, clip_value].

    Args:
        parameters: a Tensor or iterable of Tensors.
        clip_value: the bound (a positive number).
        foreach: accepted for PyTorch compatibility.
    """
    clip_value = _real("clip_grad_value_", "clip_value", clip_value)
    for p in _param_list("clip_grad_value_", parameters):
        if p.grad is not None:
            backend.get_array_module(p.grad.array).clip(p.grad.array, -clip_value, clip_value, out=p.grad.array)
            p.grad._bump_version()


def parameters_to_vector(parameters):
    """One 1-D Tensor holding every parameter, flattened and concatenated (differentiable).

    Args:
        parameters: an iterable of Tensors.
    """
    from ...ops import cat, reshape  # noqa: PLC0415 - cat lives in the indexing family
    params = _param_list("parameters_to_vector", parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return cat([reshape(p, -1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copy slices of a 1-D Tensor into the parameters, in order (in place, not recorded).

    Args:
        vec: a 1-D Tensor with as many elements as all parameters together.
        parameters: an iterable of Tensors.
    """
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got {getattr(vec, 'shape', type(vec))}")
    params = _param_list("vector_to_parameters", parameters)
    total = sum(p.numel() for p in params)
    if total != vec.shape[0]:
        raise ValueError(f"vector_to_parameters: the vector has {vec.shape[0]} elements, the parameters {total}")
    offset = 0
    for p in params:
        chunk = move_array(vec.array[offset:offset + p.numel()], p.device).reshape(p.shape)
        backend.get_array_module(p.array).copyto(p.array, chunk.astype(p.dtype, copy=False))
        p._bump_version()
        offset += p.numel()


__getattr__, __dir__ = _lazy.lazy_names(__name__, {
    "parametrize": "cupynet.nn.utils.parametrize",
    "parametrizations": "cupynet.nn.utils.parametrizations",
    **{name: f"cupynet.nn.utils.norm_hooks:{name}" for name in ("weight_norm", "remove_weight_norm", "spectral_norm",
                                                                 "remove_spectral_norm")},
})

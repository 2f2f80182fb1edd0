"""The optimizers' fused multi-tensor kernels: one SGD or Adam step over many fp32 parameters.

``optim/sgd.py`` and ``optim/adam.py`` call these when they run fused. Every
function works on plain arrays and picks its backend from them: CuPy arrays
launch the CUDA kernels of this package (``sgd.cu``, ``adam.cu``, launched by
``launch.py``), NumPy arrays run ``reference.py``, which gives the same results
bit for bit. Both start from the same constants, rounded once here
(``sgd_coefficients``, ``adam_coefficients``).
The step is skipped on the device when ``found_inf`` is set: no host sync.
Arguments are checked on metadata only, before anything is written.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy

from cupynet import dtypes
from cupynet.cuda import checks as chk
from cupynet.cuda.compile import KERNEL_DTYPES
from cupynet.cuda.multi_tensor import group_by_dtype
from cupynet.optim.kernels import launch, reference

__all__ = ["fused_sgd_", "fused_adam_", "SgdCoefficients", "AdamCoefficients", "sgd_coefficients",
           "adam_coefficients"]

_F32 = (dtypes.float32,)
f32 = numpy.float32


def _flag(fn: str, name: str, value) -> bool:
    if not isinstance(value, (bool, numpy.bool_)):
        raise TypeError(f"{fn}: {name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _first_step(fn: str, first_step):
    if isinstance(first_step, (bool, numpy.bool_)):
        return bool(first_step)
    chk.scalar_array(fn, "first_step", first_step, dtypes.int32)
    return first_step


def _device_id(place: str) -> int:
    return int(place.partition(":")[2])


# ----------------------------------------------------------------------------- hyper-parameters, rounded once
# NOTE: both backends start from these very constants, or their results could not agree bit for bit;
# each is rounded once, the way PyTorch rounds it (a Python double, cast to the tensor's fp32 opmath).


class SgdCoefficients(NamedTuple):
    """Constants of one SGD step, each rounded once to the compute dtype (written for fp32 below).

    Args:
        neg_lr: ``fp32(-lr)``.
        momentum: ``fp32(momentum)``.
        one_minus_dampening: ``fp32(1 - dampening)`` (rounded once, from double).
        weight_decay: ``fp32(weight_decay)``.
        use_weight_decay: ``weight_decay != 0``.
        use_momentum: ``momentum != 0``.
        nesterov: Nesterov momentum.
        maximize: ascend instead of descend.
    """

    neg_lr: numpy.float32
    momentum: numpy.float32
    one_minus_dampening: numpy.float32
    weight_decay: numpy.float32
    use_weight_decay: bool
    use_momentum: bool
    nesterov: bool
    maximize: bool


def sgd_coefficients(lr, momentum, dampening, weight_decay, nesterov, maximize, dtype=dtypes.float32):
    """Round SGD's hyper-parameters to the constants the update uses (fp32 for the kernels).

    Args:
        lr: learning rate.
        momentum: momentum factor.
        dampening: dampening of the momentum.
        weight_decay: L2 penalty.
        nesterov: Nesterov momentum.
        maximize: ascend instead of descend.
        dtype: the compute dtype (``optim/sgd.py``'s unfused path passes float64 for float64 parameters).
    """
    t = numpy.dtype(dtype).type
    return SgdCoefficients(t(-lr), t(momentum), t(1.0 - dampening), t(weight_decay),
                           weight_decay != 0, momentum != 0, bool(nesterov), bool(maximize))


class AdamCoefficients(NamedTuple):
    """Constants of one Adam / AdamW step (the step-dependent ones are made on the device).

    Args:
        lr: learning rate (double; enters ``lr / bias_correction1`` in double).
        beta1: double, for ``beta1 ** step``.
        beta2: double, for ``beta2 ** step``.
        lerp_weight: ``fp32(1 - beta1)``, the weight of ``exp_avg.lerp_(grad, 1 - beta1)``.
        one_minus_lerp_weight: ``1 - lerp_weight`` computed in fp32 (torch.lerp's second branch).
        lerp_weight_is_small: ``|lerp_weight| < 0.5``: which branch torch.lerp takes.
        beta2_f32: ``fp32(beta2)``.
        one_minus_beta2: ``fp32(1 - beta2)``.
        eps: ``fp32(eps)``.
        weight_decay: ``fp32(weight_decay)``.
        decay_factor: ``fp32(1 - lr * weight_decay)`` (AdamW's decoupled decay).
        use_weight_decay: ``weight_decay != 0``.
        decoupled: AdamW.
        amsgrad: keep the running maximum of ``exp_avg_sq``.
        maximize: ascend instead of descend.
    """

    lr: float
    beta1: float
    beta2: float
    lerp_weight: numpy.float32
    one_minus_lerp_weight: numpy.float32
    lerp_weight_is_small: bool
    beta2_f32: numpy.float32
    one_minus_beta2: numpy.float32
    eps: numpy.float32
    weight_decay: numpy.float32
    decay_factor: numpy.float32
    use_weight_decay: bool
    decoupled: bool
    amsgrad: bool
    maximize: bool


def adam_coefficients(lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize) -> AdamCoefficients:
    """Round Adam's hyper-parameters the way torch.optim.Adam's single-tensor path does.

    Args:
        lr: learning rate.
        beta1: decay of the first moment.
        beta2: decay of the second moment.
        eps: added to the denominator.
        weight_decay: L2 penalty (Adam) or decoupled decay (AdamW).
        decoupled: AdamW's decoupled weight decay.
        amsgrad: AMSGrad variant.
        maximize: ascend instead of descend.
    """
    weight = f32(1.0 - beta1)
    return AdamCoefficients(
        float(lr), float(beta1), float(beta2), weight, f32(1.0) - weight, bool(abs(weight) < 0.5),
        f32(beta2), f32(1.0 - beta2), f32(eps), f32(weight_decay), f32(1.0 - lr * weight_decay),
        weight_decay != 0, bool(decoupled), bool(amsgrad), bool(maximize),
    )


def fused_sgd_(params, grads, momentum_bufs, *, lr, momentum, dampening, nesterov, weight_decay, maximize,
               first_step, found_inf=None, inv_scale=None) -> None:
    """One ``torch.optim.SGD`` step over many fp32 parameters, in place, skipped on the device on overflow.

    Per element, in fp32 (each operation rounded on its own)::

        g = grad * inv_scale                   (when inv_scale is given)
        g = -g                                 (maximize)
        g = g + weight_decay * p               (weight_decay != 0)
        if momentum != 0:
            buf = g if first step else buf * momentum + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p + (-lr) * g

    If ``found_inf`` is given and ``found_inf[0] != 0`` (read by the kernel, no sync),
    nothing is written at all. ``first_step`` is usually a Python bool: the optimizer
    knows on the host whether its momentum buffers are new (PyTorch: ``buf is None``).
    It may instead be an int32 device flag of shape (1,) (non-zero: first step), which
    is cleared on the device after a step that was not skipped: then a skipped first
    step leaves the buffers uninitialised *and* still marked so, which a host bool
    cannot express without a sync.

    Args:
        params: list/tuple of C-contiguous float32 arrays, updated in place.
        grads: float32 / float16 / bfloat16 arrays, one per param, same shapes.
        momentum_bufs: float32 arrays, one per param, updated in place; may be None when momentum == 0.
        lr: learning rate (>= 0).
        momentum: momentum factor (>= 0).
        dampening: dampening for momentum.
        nesterov: Nesterov momentum (needs momentum > 0 and dampening == 0).
        weight_decay: L2 penalty (>= 0).
        maximize: maximize the objective instead of minimizing.
        first_step: bool, or int32 device flag of shape (1,): initialise the buffers with the gradient.
        found_inf: optional float32 array of shape (1,); when non-zero the step is skipped.
        inv_scale: optional float32 array of shape (1,) the gradients are multiplied by.
    """
    fn = "fused_sgd_"
    params = chk.array_list(fn, "params", params, _F32)
    grads = chk.array_list(fn, "grads", grads, KERNEL_DTYPES)
    lr = chk.real_number(fn, "lr", lr, low=0.0)
    momentum = chk.real_number(fn, "momentum", momentum, low=0.0)
    dampening = chk.real_number(fn, "dampening", dampening)
    weight_decay = chk.real_number(fn, "weight_decay", weight_decay, low=0.0)
    nesterov, maximize = _flag(fn, "nesterov", nesterov), _flag(fn, "maximize", maximize)
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError(f"{fn}: Nesterov momentum requires a momentum and zero dampening "
                         f"(got momentum={momentum}, dampening={dampening})")
    bufs = chk.optional_array_list(fn, "momentum_bufs", momentum_bufs, _F32, momentum != 0, f"momentum={momentum}")
    first_step = _first_step(fn, first_step)
    chk.scalar_array(fn, "found_inf", found_inf, dtypes.float32, optional=True)
    chk.scalar_array(fn, "inv_scale", inv_scale, dtypes.float32, optional=True)
    chk.check_same_shapes(fn, "params", params, {"grads": grads, "momentum_bufs": bufs})
    flag = None if isinstance(first_step, bool) else first_step
    written = [*chk.named("params", params), *chk.named("momentum_bufs", bufs), ("first_step", flag)]
    place = chk.place_of(fn, [*written, *chk.named("grads", grads), ("found_inf", found_inf),
                              ("inv_scale", inv_scale)])
    chk.check_distinct(fn, written)
    c = sgd_coefficients(lr, momentum, dampening, weight_decay, nesterov, maximize)
    if place == "cpu":
        reference.fused_sgd_(params, grads, bufs, c, first_step, found_inf, inv_scale)
    else:
        launch.fused_sgd_(_device_id(place), group_by_dtype(grads), params, grads, bufs, c, first_step, found_inf,
                          inv_scale)


def _check_adam_hyper(fn, lr, beta1, beta2, eps, weight_decay):
    return (chk.real_number(fn, "lr", lr, low=0.0), chk.real_number(fn, "beta1", beta1, low=0.0, high=1.0),
            chk.real_number(fn, "beta2", beta2, low=0.0, high=1.0), chk.real_number(fn, "eps", eps, low=0.0),
            chk.real_number(fn, "weight_decay", weight_decay, low=0.0))


def fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, *, lr, beta1, beta2, eps,
                weight_decay, decoupled, amsgrad, maximize, found_inf=None, inv_scale=None) -> None:
    """One ``torch.optim.Adam`` / ``AdamW`` step over many fp32 parameters, in place, with a device step count.

    ``step`` holds the number of steps already taken; this step uses ``n = step + 1`` and
    then increments ``step`` on the device (unless skipped), so bias correction needs no
    sync. Per call, in double: ``bc1 = 1 - beta1**n``, ``bc2 = 1 - beta2**n`` (powers by
    repeated squaring), ``neg_step_size = fp32(-lr / bc1)``, ``bc2_sqrt = fp32(sqrt(bc2))``.
    Per element, in fp32 (each operation rounded on its own)::

        g = grad * inv_scale (if given);  g = -g (maximize)
        weight_decay != 0:  AdamW: p = p * fp32(1 - lr * weight_decay);  Adam: g = g + weight_decay * p
        m = lerp(m, g, 1 - beta1)                    (torch.lerp's formula)
        v = v * beta2 + ((1 - beta2) * g) * g
        amsgrad: vmax = maximum(vmax, v); v_used = vmax  (else v_used = v)
        p = p + (neg_step_size * m) / (sqrt(v_used) / bc2_sqrt + eps)

    If ``found_inf`` is given and non-zero (read by the kernel, no sync) nothing is
    written and ``step`` is not incremented. The step count is exact up to 2**24.

    Args:
        params: list/tuple of C-contiguous float32 arrays, updated in place.
        grads: float32 / float16 / bfloat16 arrays, one per param, same shapes.
        exp_avgs: float32 first-moment arrays, updated in place.
        exp_avg_sqs: float32 second-moment arrays, updated in place.
        max_exp_avg_sqs: float32 arrays (amsgrad), updated in place; may be None unless amsgrad.
        step: float32 array of shape (1,): steps already taken, incremented on the device.
        lr: learning rate (>= 0).
        beta1: first-moment decay, in [0, 1).
        beta2: second-moment decay, in [0, 1).
        eps: term added to the denominator (>= 0).
        weight_decay: weight decay (>= 0).
        decoupled: AdamW's decoupled weight decay.
        amsgrad: use the running maximum of the second moment.
        maximize: maximize the objective instead of minimizing.
        found_inf: optional float32 array of shape (1,); when non-zero the step is skipped.
        inv_scale: optional float32 array of shape (1,) the gradients are multiplied by.
    """
    fn = "fused_adam_"
    params = chk.array_list(fn, "params", params, _F32)
    grads = chk.array_list(fn, "grads", grads, KERNEL_DTYPES)
    exp_avgs = chk.array_list(fn, "exp_avgs", exp_avgs, _F32)
    exp_avg_sqs = chk.array_list(fn, "exp_avg_sqs", exp_avg_sqs, _F32)
    lr, beta1, beta2, eps, weight_decay = _check_adam_hyper(fn, lr, beta1, beta2, eps, weight_decay)
    decoupled, amsgrad = _flag(fn, "decoupled", decoupled), _flag(fn, "amsgrad", amsgrad)
    maximize = _flag(fn, "maximize", maximize)
    vmax = chk.optional_array_list(fn, "max_exp_avg_sqs", max_exp_avg_sqs, _F32, amsgrad, "amsgrad=True")
    chk.scalar_array(fn, "step", step, dtypes.float32)
    chk.scalar_array(fn, "found_inf", found_inf, dtypes.float32, optional=True)
    chk.scalar_array(fn, "inv_scale", inv_scale, dtypes.float32, optional=True)
    chk.check_same_shapes(fn, "params", params, {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs,
                                                 "max_exp_avg_sqs": vmax})
    written = [*chk.named("params", params), *chk.named("exp_avgs", exp_avgs),
               *chk.named("exp_avg_sqs", exp_avg_sqs), *chk.named("max_exp_avg_sqs", vmax), ("step", step)]
    place = chk.place_of(fn, [*written, *chk.named("grads", grads), ("found_inf", found_inf),
                              ("inv_scale", inv_scale)])
    chk.check_distinct(fn, written)
    c = adam_coefficients(lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize)
    if place == "cpu":
        reference.fused_adam_(params, grads, exp_avgs, exp_avg_sqs, vmax, step, c, found_inf, inv_scale)
    else:
        launch.fused_adam_(_device_id(place), group_by_dtype(grads), params, grads, exp_avgs, exp_avg_sqs, vmax,
                           step, c, found_inf, inv_scale)

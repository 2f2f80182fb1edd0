"""Host-side hyper-parameter preparation shared by the CUDA launcher and the NumPy reference.

Both backends must start from the very same fp32 / fp64 constants, or their
results could not agree bit for bit. Each constant is rounded here once, the
way PyTorch rounds it (a Python double, cast to the tensor's fp32 "opmath").
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy

__all__ = ["SgdCoefficients", "AdamCoefficients", "sgd_coefficients", "adam_coefficients",
           "pow_by_squaring", "next_step_count", "adam_step_coefficients", "STEP_COUNT_LIMIT"]

f32 = numpy.float32

STEP_COUNT_LIMIT = 16777216
"""2**24: the largest step count an fp32 counter holds exactly (step + 1 == step beyond it)."""


class SgdCoefficients(NamedTuple):
    """fp32 constants of one SGD step.

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


def sgd_coefficients(lr, momentum, dampening, weight_decay, nesterov, maximize) -> SgdCoefficients:
    """Round SGD's hyper-parameters to the fp32 constants the update uses.

    Args:
        lr: learning rate.
        momentum: momentum factor.
        dampening: dampening of the momentum.
        weight_decay: L2 penalty.
        nesterov: Nesterov momentum.
        maximize: ascend instead of descend.
    """
    return SgdCoefficients(f32(-lr), f32(momentum), f32(1.0 - dampening), f32(weight_decay),
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


def pow_by_squaring(base: float, n: int) -> float:
    """``base ** n`` by repeated squaring, each product a correctly rounded double (as adam.cu does).

    Args:
        base: the base (a Python float, i.e. an IEEE double).
        n: a non-negative integer exponent.
    """
    result = 1.0
    while n:
        if n & 1:
            result *= base
        base *= base
        n >>= 1
    return result


def next_step_count(step: numpy.float32) -> int:
    """The step number this update uses: ``step + 1``, with step clamped to ``[0, 2**24]`` (adam.cu's rule).

    Args:
        step: the fp32 count of steps already taken.
    """
    if step >= STEP_COUNT_LIMIT:
        return STEP_COUNT_LIMIT + 1
    if step >= 1.0:
        return int(step) + 1
    return 1  # NOTE: values below 1, and NaN, count as no step taken


def adam_step_coefficients(step: numpy.float32, lr: float, beta1: float, beta2: float):
    """``(fp32(-lr / bias_correction1), fp32(sqrt(bias_correction2)))`` for the next step.

    Args:
        step: the fp32 count of steps already taken.
        lr: learning rate.
        beta1: decay of the first moment.
        beta2: decay of the second moment.
    """
    n = next_step_count(step)
    bias_correction1 = 1.0 - pow_by_squaring(beta1, n)
    bias_correction2 = 1.0 - pow_by_squaring(beta2, n)
    return f32(-(lr / bias_correction1)), f32(math.sqrt(bias_correction2))

"""NumPy references of the fused SGD and Adam kernels (``sgd.cu``, ``adam.cu``), bit for bit.

Every line below is one fp32 operation of the kernel, in the kernel's order;
``store_f32`` applies the kernels' canonical NaN. The functions assume checked
arguments: call the public functions in ``cupynet.optim.kernels``.
"""

from __future__ import annotations

import math

import numpy

from cupynet import dtypes
from cupynet.backend import get_array_module
from cupynet.cuda.reference import is_set, load_f32, store_f32

__all__ = ["sgd_update_", "fused_sgd_", "fused_adam_", "pow_by_squaring", "next_step_count", "adam_step_coefficients",
           "STEP_COUNT_LIMIT"]

_F32 = dtypes.float32

STEP_COUNT_LIMIT = 16777216
"""2**24: the largest step count an fp32 counter holds exactly (step + 1 == step beyond it)."""


def _write(a, values) -> None:
    a.reshape(-1)[...] = store_f32(values, _F32)


def _scaled_grad(grad, inv, maximize) -> numpy.ndarray:
    g = load_f32(grad)
    if inv is not None:
        g = g * inv
    return numpy.negative(g) if maximize else g  # NOTE: negation only flips the sign bit


def _is_first_step(first_step) -> bool:
    return first_step if isinstance(first_step, bool) else bool(first_step.reshape(-1)[0] != 0)


def sgd_update_(p, g, buf, c, first) -> None:
    """SGD's update rule for one parameter, in place on ``p`` and ``buf``.

    sgd.cu's loop body on whole arrays, each operation one rounding in the arrays'
    dtype::

        g = g + weight_decay * p                              (use_weight_decay)
        buf = g if first else buf * momentum + (1 - dampening) * g   (use_momentum)
        g = g + momentum * buf if nesterov else buf           (use_momentum)
        p = p + (-lr) * g

    This is the one Python statement of the rule: the fused reference below calls it
    on fp32 views (then makes NaNs canonical, as the kernel's store does), and
    ``optim/sgd.py``'s unfused path on NumPy or CuPy arrays in fp32 or fp64.

    NOTE: in place, ``buf *= momentum`` then ``buf += ...`` and ``p += (-lr) * g``
    round exactly where the out-of-place formulas do: the same bits, fewer arrays.
    Multiplying by ``1 - dampening == 1`` is exact, so that product is skipped.

    Args:
        p: the parameter's values in the compute dtype, updated in place.
        g: the gradient in the compute dtype, already multiplied by inv_scale and negated to
            maximize; never written.
        buf: the momentum buffer, updated in place; None when momentum is 0.
        c: an ``SgdCoefficients`` whose constants have the compute dtype.
        first: a bool, or an int32 flag array (non-zero: first step), then chosen on the device.
    """
    if c.use_weight_decay:
        g = g + c.weight_decay * p
    if c.use_momentum:
        dampened = g if c.one_minus_dampening == 1 else c.one_minus_dampening * g
        if first is True:
            buf[...] = g
        elif first is False:
            buf *= c.momentum
            buf += dampened
        else:
            buf[...] = get_array_module(g).where(first != 0, g, buf * c.momentum + dampened)
        g = g + c.momentum * buf if c.nesterov else buf
    p += c.neg_lr * g


def _sgd_one(param, grad, buf, c, inv, first) -> None:
    g = _scaled_grad(grad, inv, c.maximize)
    p = param.reshape(-1)
    b = None if buf is None else buf.reshape(-1)
    sgd_update_(p, g, b, c, first)
    if b is not None:
        _write(b, b)
    _write(p, p)


def fused_sgd_(params, grads, momentum_bufs, coefficients, first_step, found_inf, inv_scale) -> None:
    """Reference of ``fused_sgd_`` (the contract is on the public function).

    Args:
        params: float32 arrays, updated in place.
        grads: float32 / float16 / bfloat16 arrays.
        momentum_bufs: float32 arrays (or None when momentum is 0), updated in place.
        coefficients: an ``SgdCoefficients`` from ``sgd_coefficients`` (``cupynet.optim.kernels``).
        first_step: a Python bool, or an int32 one-element flag array (cleared after a step taken).
        found_inf: float32 one-element array or None; when set, nothing changes.
        inv_scale: float32 one-element array or None; multiplies the gradients.
    """
    if found_inf is not None and is_set(found_inf):
        return
    inv = None if inv_scale is None else inv_scale.reshape(-1)[0]
    first = _is_first_step(first_step)
    with numpy.errstate(all="ignore"):
        for i, (param, grad) in enumerate(zip(params, grads)):
            buf = momentum_bufs[i] if coefficients.use_momentum else None
            _sgd_one(param, grad, buf, coefficients, inv, first)
    if not isinstance(first_step, bool):
        first_step[...] = 0


# ----------------------------------------------------------------------------- adam.cu's step coefficients


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
    return numpy.float32(-(lr / bias_correction1)), numpy.float32(math.sqrt(bias_correction2))


def _lerp_like_torch(start, end, c) -> numpy.ndarray:
    if c.lerp_weight_is_small:
        return start + c.lerp_weight * (end - start)
    return end - (end - start) * c.one_minus_lerp_weight


def _maximum_like_numpy_scalar(a, b) -> numpy.ndarray:
    # NOTE: (a >= b or isnan(a)) ? a : b -- spelled out, because numpy.maximum's
    # SIMD path and its scalar path may disagree on the sign of max(-0, +0)
    return numpy.where(numpy.isnan(a) | (a >= b), a, b)


def _adam_one(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, c, inv, neg_step_size, bc2_sqrt) -> None:
    g = _scaled_grad(grad, inv, c.maximize)
    p = param.reshape(-1)
    if c.use_weight_decay:
        if c.decoupled:
            p = p * c.decay_factor
        else:
            g = g + c.weight_decay * p
    m = _lerp_like_torch(exp_avg.reshape(-1), g, c)
    v = exp_avg_sq.reshape(-1) * c.beta2_f32 + (c.one_minus_beta2 * g) * g
    v_used = v
    if c.amsgrad:
        v_used = _maximum_like_numpy_scalar(max_exp_avg_sq.reshape(-1), v)
        _write(max_exp_avg_sq, v_used)
    denom = numpy.sqrt(v_used) / bc2_sqrt + c.eps
    _write(exp_avg, m)
    _write(exp_avg_sq, v)
    _write(param, p + (neg_step_size * m) / denom)  # NOTE: torch.addcdiv's order


def fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, coefficients,
                found_inf, inv_scale) -> None:
    """Reference of ``fused_adam_`` (the contract is on the public function).

    Args:
        params: float32 arrays, updated in place.
        grads: float32 / float16 / bfloat16 arrays.
        exp_avgs: float32 first moments, updated in place.
        exp_avg_sqs: float32 second moments, updated in place.
        max_exp_avg_sqs: float32 running maxima (None unless amsgrad), updated in place.
        step: float32 one-element array: steps already taken; incremented unless skipped.
        coefficients: an ``AdamCoefficients`` from ``adam_coefficients`` (``cupynet.optim.kernels``).
        found_inf: float32 one-element array or None; when set, nothing changes.
        inv_scale: float32 one-element array or None; multiplies the gradients.
    """
    if found_inf is not None and is_set(found_inf):
        return
    inv = None if inv_scale is None else inv_scale.reshape(-1)[0]
    c = coefficients
    neg_step_size, bc2_sqrt = adam_step_coefficients(step.reshape(-1)[0], c.lr, c.beta1, c.beta2)
    with numpy.errstate(all="ignore"):
        for i, (param, grad) in enumerate(zip(params, grads)):
            vmax = max_exp_avg_sqs[i] if c.amsgrad else None
            _adam_one(param, grad, exp_avgs[i], exp_avg_sqs[i], vmax, c, inv, neg_step_size, bc2_sqrt)
        step[...] = step + numpy.float32(1.0)

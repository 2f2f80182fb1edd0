"""CuPy launchers of the fused optimizer kernels: one launch per grad dtype group, no host sync.

Only ``cupynet.optim.kernels`` calls these, after checking the arguments; every
argument that is an array here is a CuPy array on one device, and nothing here
reads a device value on the host.
"""

from __future__ import annotations

import pathlib

import numpy

from cupynet.cuda import device
from cupynet.cuda.args import c_double, c_int
from cupynet.cuda.compile import KernelLibrary, per_dtype
from cupynet.cuda.multi_tensor import launch_chunked, pointers

__all__ = ["KERNELS", "fused_sgd_", "fused_adam_"]

KERNELS = KernelLibrary(pathlib.Path(__file__).parent, {
    "sgd.cu": per_dtype("fused_sgd_kernel") + ("clear_flag_kernel",),
    "adam.cu": per_dtype("fused_adam_kernel") + ("increment_step_kernel",),
})
"""The ``.cu`` files of this package and every kernel the launchers fetch from them."""


def _flags(found_inf, inv_scale):
    """``(found_inf, inv_scale, use_inv_scale)`` with device constants standing in for absent ones."""
    found = device.constant(numpy.float32, 0.0) if found_inf is None else found_inf
    inv = device.constant(numpy.float32, 1.0) if inv_scale is None else inv_scale
    return found, inv, c_int(inv_scale is not None)


def fused_sgd_(device_id, groups, params, grads, momentum_bufs, c, first_step, found_inf, inv_scale) -> None:
    """Launch ``fused_sgd_kernel`` once per grad dtype group (then clear a device first-step flag).

    Args:
        device_id: the CUDA device of the arrays.
        groups: ``[(dtype, indices)]`` of the grads.
        params: float32 device arrays.
        grads: float32 / float16 / bfloat16 device arrays.
        momentum_bufs: float32 device arrays, or None when momentum is 0.
        c: an ``SgdCoefficients``.
        first_step: a Python bool, or an int32 one-element device flag.
        found_inf: float32 one-element device array, or None.
        inv_scale: float32 one-element device array, or None.
    """
    with device.cupy().cuda.Device(device_id):
        found, inv, use_inv = _flags(found_inf, inv_scale)
        host_flag = isinstance(first_step, bool)
        flag = device.constant(numpy.int32, int(first_step)) if host_flag else first_step
        bufs = momentum_bufs if c.use_momentum else None
        for dtype, idx in groups:
            lists = [pointers(params, idx), pointers(grads, idx), pointers(bufs, idx)]
            launch_chunked(KERNELS, "sgd.cu", "fused_sgd_kernel", dtype, lists, [params[i].size for i in idx],
                           found, inv, use_inv, c.neg_lr, c.momentum, c.one_minus_dampening, c.weight_decay,
                           c_int(c.use_weight_decay), c_int(c.use_momentum), c_int(c.nesterov), c_int(c.maximize),
                           flag)
        if not host_flag:
            KERNELS.get_kernel("sgd.cu", "clear_flag_kernel")((1,), (1,), (first_step, found))


def fused_adam_(device_id, groups, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, c,
                found_inf, inv_scale) -> None:
    """Launch ``fused_adam_kernel`` once per grad dtype group, then ``increment_step_kernel``.

    Args:
        device_id: the CUDA device of the arrays.
        groups: ``[(dtype, indices)]`` of the grads.
        params: float32 device arrays.
        grads: float32 / float16 / bfloat16 device arrays.
        exp_avgs: float32 device arrays.
        exp_avg_sqs: float32 device arrays.
        max_exp_avg_sqs: float32 device arrays, or None unless amsgrad.
        step: float32 one-element device array (steps already taken).
        c: an ``AdamCoefficients``.
        found_inf: float32 one-element device array, or None.
        inv_scale: float32 one-element device array, or None.
    """
    with device.cupy().cuda.Device(device_id):
        found, inv, use_inv = _flags(found_inf, inv_scale)
        vmax = max_exp_avg_sqs if c.amsgrad else None
        for dtype, idx in groups:
            lists = [pointers(arrays, idx) for arrays in (params, grads, exp_avgs, exp_avg_sqs, vmax)]
            launch_chunked(KERNELS, "adam.cu", "fused_adam_kernel", dtype, lists, [params[i].size for i in idx],
                           step, found, inv, use_inv, c_double(c.lr), c_double(c.beta1), c_double(c.beta2),
                           c.lerp_weight, c.one_minus_lerp_weight, c_int(c.lerp_weight_is_small), c.beta2_f32,
                           c.one_minus_beta2, c.eps, c.weight_decay, c.decay_factor, c_int(c.use_weight_decay),
                           c_int(c.decoupled), c_int(c.amsgrad), c_int(c.maximize))
        # NOTE: after every group has read the old step (same stream, so in order)
        KERNELS.get_kernel("adam.cu", "increment_step_kernel")((1,), (1,), (step, found))

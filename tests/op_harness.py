"""The shared op test harness (tinygrad's ``helper_test_op``, Chainer's per-dtype tolerances).

``check_op(shapes, fn)`` runs the same lambda on cupynet tensors and on PyTorch
CPU tensors (the oracle, when installed) and checks:

1. forward values, for each dtype in ``dtypes`` (float16 inputs are rounded
   first, and the oracle computes in float32 from the rounded values);
2. gradients of ``sum(out * v)`` against the oracle's, for a random ``v``;
3. ``gradcheck`` and ``gradgradcheck`` in float64 (central differences),
   which need no oracle at all.

Pass ``torch_fn`` when the PyTorch spelling differs, ``np_fn`` to have a NumPy
oracle for the forward when PyTorch is absent, ``low/high`` for the input range.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np
import pytest

import cupynet as cn

try:
    import torch
except ImportError:  # the oracle is optional: gradcheck still runs
    torch = None

# forward (atol, rtol) and gradient (atol, rtol) per dtype
TOLERANCES = {
    "float64": ((1e-10, 1e-7), (1e-8, 1e-6)),
    "float32": ((1e-5, 1e-4), (1e-4, 1e-3)),
    "float16": ((2e-2, 2e-2), (5e-2, 5e-2)),
    "bfloat16": ((1e-1, 5e-2), (2e-1, 1e-1)),
}
# NOTE: conftest sets CUPYNET_TEST_DEVICES from `pytest --device`: the op checks run on the GPU (real or
# emulated) too only when asked
DEVICES = os.environ.get("CUPYNET_TEST_DEVICES", "cpu").split(",")
requires_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")


@contextlib.contextmanager
def torch_native_cpu():
    """Inside, the torch oracle computes with ATen's own CPU kernels, never oneDNN's.

    NOTE: oneDNN picks its kernels by the CPU's instruction set (up to ``ONEDNN_MAX_CPU_ISA``), and some exist
    only on AVX-512 machines: on an AVX2 CPU a bfloat16 LSTM raises "could not create a primitive descriptor".
    Where a test meets such a kernel, its oracle runs without oneDNN on every CPU, so that every machine
    compares against the same computation.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # NOTE: torch warns about TF32 when the flags are set
        with torch.backends.mkldnn.flags(enabled=False):
            yield


def host(t):
    """A float64 NumPy copy of a cupynet Tensor's values."""
    return np.asarray(cn.backend.to_numpy(t.array), dtype=np.float64)


def make_arrays(shapes, seed=0, low=-2.0, high=2.0):
    """Random float64 arrays of the given shapes, uniform in [low, high)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, size=s) for s in shapes]


def _on_device(fn, device):
    """``fn`` run with ``device`` as the default device, so tensors it makes itself (targets, indices) are there."""
    target = cn.device(device)

    def on_device(*args):
        with target:
            return fn(*args)

    return on_device


def _to_cn(arrays, dtype, device, requires_grad=True):
    return [cn.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad) for a in arrays]


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _rounded(arrays, dtype):
    return [np.asarray(a, dtype=cn.dtypes.as_dtype(dtype)).astype(np.float64) for a in arrays]


def check_op(shapes, fn, torch_fn=None, np_fn=None, dtypes=("float32", "float16"), devices=None, seed=0,
             low=-2.0, high=2.0, grad=True, gradgrad=True, arrays=None, tol=None):
    """Check forward, backward and double backward of ``fn`` on inputs of ``shapes``.

    Args:
        shapes: input shapes.
        fn: lambda over cupynet tensors (also used on torch tensors when torch_fn is None).
        torch_fn: the PyTorch spelling, if different.
        np_fn: a NumPy forward oracle on float64 arrays, used when PyTorch is absent.
        dtypes: dtypes to check forward and backward in.
        devices: devices to run on (default: cpu, and cuda when usable).
        seed: input seed.
        low: input range low.
        high: input range high.
        grad: check first derivatives.
        gradgrad: check second derivatives with gradgradcheck.
        arrays: explicit float64 input arrays instead of random ones.
        tol: override {dtype: ((fwd atol, rtol), (grad atol, rtol))}.
    """
    arrays = arrays if arrays is not None else make_arrays(shapes, seed, low, high)
    tolerances = {**TOLERANCES, **(tol or {})}
    torch_fn, given = torch_fn or fn, fn
    for device in devices or DEVICES:
        fn = _on_device(given, device)
        for dtype in dtypes:
            _check_dtype(arrays, fn, torch_fn, np_fn, dtype, device, tolerances[dtype], grad)
        if grad:
            inputs = _to_cn(arrays, "float64", device)
            cn.autograd.gradcheck(fn, inputs, atol=1e-5, rtol=1e-3)
            if gradgrad:
                cn.autograd.gradgradcheck(fn, inputs, atol=1e-4, rtol=1e-3)


def _check_dtype(arrays, fn, torch_fn, np_fn, dtype, device, tol, grad):
    (fa, fr), (ga, gr) = tol
    inputs = _to_cn(arrays, dtype, device, requires_grad=grad)
    outs = _as_tuple(fn(*inputs))
    rounded = _rounded(arrays, dtype)
    expected = _oracle_forward(rounded, torch_fn, np_fn)
    if expected is not None:
        for o, e in zip(outs, expected):
            np.testing.assert_allclose(host(o), e, atol=fa, rtol=fr, err_msg=f"forward {dtype} {device}")
    if not grad or torch is None:
        return
    rng = np.random.default_rng(123)
    float_outs = [o for o in outs if cn.dtypes.is_floating(o.dtype)]
    cots = [rng.standard_normal(o.shape) for o in float_outs]
    loss = None
    for o, c in zip(float_outs, cots):
        term = (o.float() * cn.tensor(c, device=device)).sum()
        loss = term if loss is None else loss + term
    got = cn.autograd.grad(loss, inputs, allow_unused=True)
    want = _torch_grads(rounded, torch_fn, cots)
    for g, w in zip(got, want):
        if w is None:
            continue
        g_host = np.zeros_like(w) if g is None else host(g)
        np.testing.assert_allclose(g_host, w, atol=ga, rtol=gr, err_msg=f"gradient {dtype} {device}")


def _oracle_forward(rounded, torch_fn, np_fn):
    if torch is not None:
        with torch.no_grad():
            outs = _as_tuple(torch_fn(*[torch.tensor(a, dtype=torch.float64) for a in rounded]))
        return [o.double().numpy() if o.is_floating_point() else o.numpy() for o in outs]
    if np_fn is not None:
        return [np.asarray(o) for o in _as_tuple(np_fn(*rounded))]
    return None


def _torch_grads(rounded, torch_fn, cots):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in rounded]
    outs = [o for o in _as_tuple(torch_fn(*ts)) if o.is_floating_point()]
    loss = sum((o * torch.tensor(c)).sum() for o, c in zip(outs, cots))
    gs = torch.autograd.grad(loss, ts, allow_unused=True)
    return [None if g is None else g.numpy() for g in gs]

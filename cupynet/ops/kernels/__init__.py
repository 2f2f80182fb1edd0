"""The fused hot-op kernels of cupynet: softmax + cross-entropy, layer norm, bias + activation, im2col.

The package has the shape of ``cupynet.amp.kernels`` and ``cupynet.optim.kernels``: ``*.cu`` (the
kernels), ``launch.py`` (their ``KernelLibrary`` and the CuPy launchers, compiled on first use) and
``reference.py`` (the NumPy references: the CPU path, the float64 path on the GPU, and the tests'
oracle); this file holds the public array-level functions, which check their arguments and dispatch.

Each function takes and returns xp arrays (no Tensor, no autograd): the ops in ``loss``,
``norm.py``, ``linear_relu.py``, ``linear_gelu.py``, ``conv.py`` and ``linalg.py`` call them inside
their forward / first-order backward. Dispatch: device arrays (CuPy's, or the emulated CUDA
device's) of float32 / float16 / bfloat16 launch the kernels; NumPy arrays, and float64 on either
backend, run ``reference.py``. Setting the environment
variable ``CUPYNET_FUSED_KERNELS=0`` forces the reference on the GPU too (for A/B benchmarks).

Numerics: inputs are read as fp32 (float64 stays float64), sums accumulate in fp32, every output
is rounded once to its dtype. Statistics (loss rows, log-sum-exp, mean, rstd) and parameter
gradients come back in the compute dtype (float32; float64 for float64 inputs): cast them to the
parameter's dtype if it differs. Arguments are checked on metadata only (shapes, dtypes, backend),
never on values, so nothing here makes the host wait for the GPU; the one value-dependent case, a
class index outside ``[0, C)``, gives NaN in that row's loss and gradient instead of an error.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy

from ... import backend, dtypes
from ...checks import check_choice, check_int, check_number
from ...cuda.compile import KERNEL_DTYPES
from . import reference

__all__ = ["kernels_enabled", "softmax_xent_forward", "softmax_xent_backward", "softmax_xent_mean",
           "layer_norm_forward",
           "layer_norm_backward", "bias_gelu_forward", "bias_gelu_backward", "bias_relu_forward",
           "bias_relu_backward", "bias_add", "im2col", "col2im", "batched_matmul_half"]

_FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
_INTS = (dtypes.int32, dtypes.int64)


# ----------------------------------------------------------------------------- dispatch and checks


def _backend_name(a) -> str:
    # NOTE: by type, not module name: the emulated CUDA device's arrays launch the kernels as CuPy's do,
    # so its launch counts are a GPU run's
    # NOTE (speed): a NumPy array is answered by one type test, without looking for CuPy
    return "numpy" if type(a) is numpy.ndarray or not backend.is_device_array(a) else "cupy"


def kernels_enabled(*arrays) -> bool:
    """True when these arrays take the CUDA-kernel path: CuPy arrays of a kernel dtype, kernels not disabled.

    Args:
        *arrays: the op's arrays (None entries are skipped); the first one's dtype decides.
    """
    if arrays and type(arrays[0]) is numpy.ndarray:  # NOTE (speed): the CPU's answer, asked once per op
        return False
    present = [a for a in arrays if a is not None]
    return (bool(present) and _backend_name(present[0]) == "cupy" and present[0].dtype in KERNEL_DTYPES
            and os.environ.get("CUPYNET_FUSED_KERNELS", "1") != "0")


def _launch():
    from . import launch  # noqa: PLC0415 - CuPy-only module, imported on the first GPU call

    return launch


def _check_array(fn, name, a, allowed=_FLOATS, ndim=None, optional=False):
    if a is None and optional:
        return
    if not hasattr(a, "dtype") or not hasattr(a, "shape") or isinstance(a, numbers.Number):
        raise TypeError(f"{fn}: {name} must be a NumPy or CuPy array, got {type(a).__name__}")
    if a.dtype not in allowed:
        raise TypeError(f"{fn}: {name} must have dtype in {[str(d) for d in allowed]}, got {a.dtype}")
    if ndim is not None and a.ndim not in ((ndim,) if isinstance(ndim, int) else ndim):
        raise ValueError(f"{fn}: {name} must be {ndim}-D, got shape {tuple(a.shape)}")


def _check_same_backend(fn, **arrays):
    named = {k: _backend_name(v) for k, v in arrays.items() if v is not None}
    if len(set(named.values())) > 1:
        raise TypeError(f"{fn}: arrays must all be NumPy or all CuPy, got {named}")


def _check_shape(fn, name, a, expected):
    if a is not None and tuple(a.shape) != tuple(expected):
        raise ValueError(f"{fn}: {name} must have shape {tuple(expected)}, got {tuple(a.shape)}")


def _check_same_dtype(fn, name, a, like_name, like):
    if a.dtype != like.dtype:
        raise TypeError(f"{fn}: {name} must have the dtype of {like_name} ({like.dtype}), got {a.dtype}")


def _check_approximate(fn, approximate):
    check_choice(fn, "approximate", approximate, ("none", "tanh"))


# ----------------------------------------------------------------------------- softmax + cross-entropy


def _check_xent(fn, logits, target, weight, ignore_index, label_smoothing):
    _check_array(fn, "logits", logits, ndim=2)
    _check_array(fn, "target", target, allowed=_INTS, ndim=1)
    _check_array(fn, "weight", weight, ndim=1, optional=True)
    _check_same_backend(fn, logits=logits, target=target, weight=weight)
    _check_shape(fn, "target", target, logits.shape[:1])
    _check_shape(fn, "weight", weight, logits.shape[1:])
    check_int(fn, "ignore_index", ignore_index)
    check_number(fn, "label_smoothing", label_smoothing, low=0.0, high=1.0, high_inclusive=True)
    if logits.shape[1] == 0:
        raise ValueError(f"{fn}: logits must have at least one class, got shape {tuple(logits.shape)}")


def softmax_xent_forward(logits, target, ignore_index=-100, label_smoothing=0.0, weight=None):
    """Per-row cross-entropy of (N, C) logits and class indices, plus the log-sum-exp backward needs.

    ``loss[r] = -(1 - s) w[t] (x[t] - lse[r]) - (s / C) sum_c w[c] (x[c] - lse[r])`` with
    ``lse[r] = log sum_c exp(x[r, c])`` (stable: taken relative to the row max), ``t =
    target[r]``; 0 where ``t == ignore_index``. One kernel launch, one block per row; the
    cache is ``lse`` (N floats), not an (N, C) softmax: backward recomputes it.
    ``reduction='mean'`` divides ``loss.sum()`` by ``sum of w[t]`` over rows not ignored.

    Args:
        logits: (N, C) float array (float16 / bfloat16 read as fp32).
        target: (N,) int32/int64 class indices.
        ignore_index: target value whose rows contribute nothing.
        label_smoothing: s in [0, 1].
        weight: optional (C,) float class weights.

    Returns:
        ``(loss_rows, lse)``, both (N,) in the compute dtype (float32; float64 for float64 logits).
    """
    fn = "softmax_xent_forward"
    _check_xent(fn, logits, target, weight, ignore_index, label_smoothing)
    if kernels_enabled(logits):
        return _launch().softmax_xent_forward(logits, target, weight, int(ignore_index), float(label_smoothing))
    return reference.softmax_xent_forward(logits, target, weight, ignore_index, label_smoothing)


def softmax_xent_backward(logits, target, lse, grad_rows, ignore_index=-100, label_smoothing=0.0, weight=None,
                          divisor=None):
    """Gradient of the per-row losses w.r.t. the logits: ``g[r] * (softmax * sum_q - q)``, in one pass.

    ``q[c] = (1 - s) w[t] [c == t] + (s / C) w[c]``; rows with ``t == ignore_index`` get 0.

    Args:
        logits: (N, C) float array, as given to the forward.
        target: (N,) int32/int64 class indices.
        lse: (N,) log-sum-exp returned by :func:`softmax_xent_forward`.
        grad_rows: upstream gradient of each row's loss: (N,) or 0-d (one value for every row, e.g.
            ``grad / divisor`` for ``reduction='mean'``).
        ignore_index: as in the forward.
        label_smoothing: as in the forward.
        weight: as in the forward.
        divisor: optional 0-d or (1,) 'mean' divisor (from :func:`softmax_xent_mean`): grad_rows is divided
            by it in the kernel, a zero divisor taken as 1 (every row then has weight 0: the gradient is 0).

    Returns:
        The (N, C) gradient in the logits' dtype.
    """
    fn = "softmax_xent_backward"
    _check_xent(fn, logits, target, weight, ignore_index, label_smoothing)
    _check_array(fn, "lse", lse, ndim=1)
    _check_array(fn, "grad_rows", grad_rows, ndim=(0, 1))
    _check_array(fn, "divisor", divisor, ndim=(0, 1), optional=True)
    if divisor is not None and divisor.size != 1:
        raise ValueError(f"{fn}: divisor must hold one value (shape () or (1,)), got shape {tuple(divisor.shape)}")
    _check_same_backend(fn, logits=logits, lse=lse, grad_rows=grad_rows, divisor=divisor)
    _check_shape(fn, "lse", lse, logits.shape[:1])
    if grad_rows.ndim == 1:
        _check_shape(fn, "grad_rows", grad_rows, logits.shape[:1])
    if kernels_enabled(logits):
        return _launch().softmax_xent_backward(logits, target, weight, lse, grad_rows, int(ignore_index),
                                               float(label_smoothing), divisor)
    return reference.softmax_xent_backward(logits, target, weight, lse, grad_rows, ignore_index, label_smoothing,
                                           divisor)


def softmax_xent_mean(loss_rows, target, n_classes, ignore_index=-100, weight=None, out_dtype=None):
    """The 'mean' cross-entropy of the forward's row losses, and its divisor, in one launch: ``(mean, divisor)``.

    ``divisor = sum of w[t]`` over rows whose target is not ``ignore_index`` (the row count without
    weights), ``mean = sum(loss_rows) / divisor`` (0 / 0 = NaN, as PyTorch). NOTE: both sums run in a
    fixed order (the kernel's block sum, replayed by the reference), not xp's ``sum()`` order: the mean
    can differ from ``loss_rows.sum() / divisor`` by rounding (docs/kernels.md gives the bound).

    Args:
        loss_rows: (N,) float32 (or float64) row losses from :func:`softmax_xent_forward`.
        target: (N,) int32/int64 class indices.
        n_classes: C, the number of classes.
        ignore_index: target value whose rows are left out of the divisor.
        weight: optional (C,) float class weights.
        out_dtype: the mean's dtype (float32, float16, bfloat16; float64 for float64 rows); default loss_rows'.

    Returns:
        ``(mean, divisor)``: 0-d arrays, the mean in ``out_dtype``, the divisor in loss_rows' dtype.
    """
    fn = "softmax_xent_mean"
    _check_array(fn, "loss_rows", loss_rows, allowed=(dtypes.float32, dtypes.float64), ndim=1)
    _check_array(fn, "target", target, allowed=_INTS, ndim=1)
    _check_array(fn, "weight", weight, ndim=1, optional=True)
    _check_same_backend(fn, loss_rows=loss_rows, target=target, weight=weight)
    _check_shape(fn, "target", target, loss_rows.shape)
    check_int(fn, "n_classes", n_classes)
    _check_shape(fn, "weight", weight, (n_classes,))
    check_int(fn, "ignore_index", ignore_index)
    out_dtype = loss_rows.dtype if out_dtype is None else numpy.dtype(out_dtype)
    if out_dtype not in _FLOATS:
        raise TypeError(f"{fn}: out_dtype must be one of {[str(d) for d in _FLOATS]}, got {out_dtype}")
    if kernels_enabled(loss_rows) and out_dtype in KERNEL_DTYPES:
        return _launch().softmax_xent_mean(loss_rows, target, weight, int(n_classes), int(ignore_index), out_dtype)
    return reference.softmax_xent_mean(loss_rows, target, weight, n_classes, ignore_index, out_dtype)


# ----------------------------------------------------------------------------- layer norm


def _check_layer_norm(fn, x, weight, normalized_ndim):
    _check_array(fn, "x", x)
    check_int(fn, "normalized_ndim", normalized_ndim)
    if not 1 <= normalized_ndim <= x.ndim:
        raise ValueError(f"{fn}: normalized_ndim must be in [1, {x.ndim}] for x of shape {tuple(x.shape)}, "
                         f"got {normalized_ndim}")
    _check_array(fn, "weight", weight, optional=True)
    _check_shape(fn, "weight", weight, x.shape[x.ndim - normalized_ndim:])
    rows = math.prod(x.shape[:x.ndim - normalized_ndim])
    return rows, math.prod(x.shape[x.ndim - normalized_ndim:])


def layer_norm_forward(x, weight, bias, eps=1e-5, normalized_ndim=1):
    """Layer norm over the trailing ``normalized_ndim`` dims: ``(y, mean, rstd)``, fp32 statistics.

    ``y = (x - mean) * rstd * weight + bias``, ``rstd = 1 / sqrt(var + eps)`` with the biased,
    two-pass (centred) variance; one kernel launch, one block per row.

    Args:
        x: float array (..., *normalized_shape).
        weight: normalized_shape array or None.
        bias: normalized_shape array or None.
        eps: added to the variance (> 0).
        normalized_ndim: how many trailing dims are normalized.

    Returns:
        ``y`` in x's dtype and shape; ``mean`` and ``rstd`` of shape ``x.shape[:-normalized_ndim]``
        in the compute dtype.
    """
    fn = "layer_norm_forward"
    rows, d = _check_layer_norm(fn, x, weight, normalized_ndim)
    _check_array(fn, "bias", bias, optional=True)
    _check_shape(fn, "bias", bias, x.shape[x.ndim - normalized_ndim:])
    _check_same_backend(fn, x=x, weight=weight, bias=bias)
    check_number(fn, "eps", eps, low=0.0, high=math.inf, high_inclusive=True)
    flat = lambda p: None if p is None else p.reshape(-1)  # noqa: E731
    impl = _launch() if kernels_enabled(x) else reference
    y, mean, rstd = impl.layer_norm_forward(x.reshape(rows, d), flat(weight), flat(bias), float(eps))
    stat_shape = x.shape[:x.ndim - normalized_ndim]
    return y.reshape(x.shape), mean.reshape(stat_shape), rstd.reshape(stat_shape)


def layer_norm_backward(grad, x, mean, rstd, weight, normalized_ndim=1):
    """Backward of :func:`layer_norm_forward`: ``(dx, dweight, dbias)``.

    ``dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`` with ``gw = grad * weight``;
    ``dweight = sum grad * xhat`` and ``dbias = sum grad`` over the leading dims (deterministic
    partial sums, no atomics). First order only: for double backward use the op's own formula.

    Args:
        grad: upstream gradient, x's shape and dtype.
        x: the forward input.
        mean: from the forward.
        rstd: from the forward.
        weight: normalized_shape array or None.
        normalized_ndim: as in the forward.

    Returns:
        ``dx`` in x's dtype; ``dweight`` and ``dbias`` of shape normalized_shape in the compute dtype.
    """
    fn = "layer_norm_backward"
    rows, d = _check_layer_norm(fn, x, weight, normalized_ndim)
    _check_array(fn, "grad", grad)
    _check_same_dtype(fn, "grad", grad, "x", x)
    _check_shape(fn, "grad", grad, x.shape)
    stat_shape = x.shape[:x.ndim - normalized_ndim]
    for name, stat in (("mean", mean), ("rstd", rstd)):
        _check_array(fn, name, stat)
        _check_shape(fn, name, stat, stat_shape)
    _check_same_backend(fn, grad=grad, x=x, mean=mean, rstd=rstd, weight=weight)
    impl = _launch() if kernels_enabled(x) else reference
    dx, dw, db = impl.layer_norm_backward(grad.reshape(rows, d), x.reshape(rows, d), mean.reshape(rows),
                                          rstd.reshape(rows), None if weight is None else weight.reshape(-1))
    param_shape = x.shape[x.ndim - normalized_ndim:]
    return dx.reshape(x.shape), dw.reshape(param_shape), db.reshape(param_shape)


# ----------------------------------------------------------------------------- bias + activation


def _check_bias_act(fn, x, bias):
    _check_array(fn, "x", x)
    if x.ndim < 1:
        raise ValueError(f"{fn}: x must have at least one dimension (the bias dimension), got a 0-d array")
    _check_array(fn, "bias", bias, ndim=1)
    _check_shape(fn, "bias", bias, x.shape[-1:])
    _check_same_backend(fn, x=x, bias=bias)


def _check_grad(fn, grad, like_name, like):
    _check_array(fn, "grad", grad)
    _check_shape(fn, "grad", grad, like.shape)
    _check_same_dtype(fn, "grad", grad, like_name, like)
    _check_same_backend(fn, grad=grad, **{like_name: like})


def bias_gelu_forward(x, bias, approximate="none"):
    """``gelu(x + bias)`` in one pass (the bias broadcasts over the last dim), fp32 math, one rounding.

    Args:
        x: (..., D) float array, e.g. a Linear output computed without its bias.
        bias: (D,) float array.
        approximate: "none" (erf) or "tanh", as ``torch.nn.functional.gelu``.

    Returns:
        An array of x's shape and dtype.
    """
    fn = "bias_gelu_forward"
    _check_bias_act(fn, x, bias)
    _check_approximate(fn, approximate)
    impl = _launch() if kernels_enabled(x) else reference
    return impl.bias_gelu_forward(x, bias, approximate)


def bias_gelu_backward(grad, x, bias, approximate="none"):
    """Backward of :func:`bias_gelu_forward`: ``(dx, dbias)``, recomputing ``x + bias`` (nothing else saved).

    Args:
        grad: upstream gradient, x's shape and dtype.
        x: the forward input.
        bias: (D,).
        approximate: as in the forward.

    Returns:
        ``dx`` in x's dtype; ``dbias`` (D,) = column sum of dx, in the compute dtype.
    """
    fn = "bias_gelu_backward"
    _check_bias_act(fn, x, bias)
    _check_grad(fn, grad, "x", x)
    _check_approximate(fn, approximate)
    impl = _launch() if kernels_enabled(x) else reference
    return impl.bias_gelu_backward(grad, x, bias, approximate)


def bias_relu_forward(x, bias):
    """``relu(x + bias)`` in one pass (the bias broadcasts over the last dim); NaN stays NaN.

    Args:
        x: (..., D) float array.
        bias: (D,) float array.

    Returns:
        An array of x's shape and dtype.
    """
    fn = "bias_relu_forward"
    _check_bias_act(fn, x, bias)
    impl = _launch() if kernels_enabled(x) else reference
    return impl.bias_relu_forward(x, bias)


def bias_relu_backward(grad, y):
    """Backward of :func:`bias_relu_forward` from its OUTPUT: ``(dx = grad * (y > 0), dbias)``.

    Args:
        grad: upstream gradient, y's shape and dtype.
        y: the forward output.

    Returns:
        ``dx`` in y's dtype; ``dbias`` (D,) in the compute dtype.
    """
    fn = "bias_relu_backward"
    _check_array(fn, "y", y)
    if y.ndim < 1:
        raise ValueError(f"{fn}: y must have at least one dimension, got a 0-d array")
    _check_grad(fn, grad, "y", y)
    impl = _launch() if kernels_enabled(y) else reference
    return impl.bias_relu_backward(grad, y)


def bias_add(x, bias):
    """``x + bias`` (the bias broadcast over the last dim, in x's dtype) in one pass: fp32 add, one rounding.

    What ``Linear`` adds after its GEMM: the same values as ``(fp32(x) + fp32(bias)).astype(x.dtype)``.

    Args:
        x: (..., D) float array.
        bias: (D,) array of x's dtype.

    Returns:
        An array of x's shape and dtype.
    """
    fn = "bias_add"
    _check_bias_act(fn, x, bias)
    _check_same_dtype(fn, "bias", bias, "x", x)
    impl = _launch() if kernels_enabled(x) else reference
    return impl.bias_add(x, bias)


# ----------------------------------------------------------------------------- convolution window maps


def _check_geoms(fn, geoms, spatial):
    if not isinstance(geoms, (tuple, list)) or len(geoms) != len(spatial) or \
            any(not all(hasattr(g, f) for f in ("kernel", "stride", "dilation", "lo", "size", "out")) for g in geoms):
        raise TypeError(f"{fn}: geoms must be {len(spatial)} cupynet.ops._im2col.Geometry values, got {geoms!r}")
    sizes = tuple(g.size for g in geoms)
    if sizes != tuple(spatial):
        raise ValueError(f"{fn}: geoms describe spatial size {sizes}, the array has {tuple(spatial)}")


def im2col(x, geoms, groups=1):
    """The im2col matrix of a convolution: ``x`` (N, C, *size) -> (G, N * prod(out), C/G * prod(kernel)).

    Row ``(n, *o)`` holds window ``o`` of sample ``n``: channels of group ``g`` times kernel taps,
    zero outside the input. Same layout as ``conv.py``'s ``_cols``. 2-D on CuPy: one gather kernel
    (each output element written once, coalesced); other cases: the ``sliding_window_view`` path.

    Args:
        x: (N, C, *size) float array.
        geoms: one ``cupynet.ops._im2col.Geometry`` per spatial dimension.
        groups: number of groups (divides C).
    """
    fn = "im2col"
    _check_array(fn, "x", x, ndim=(3, 4, 5))
    _check_geoms(fn, geoms, x.shape[2:])
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or x.shape[1] % groups:
        raise ValueError(f"{fn}: groups must be a positive int dividing the {x.shape[1]} channels, got {groups!r}")
    if kernels_enabled(x) and x.ndim == 4:
        return _launch().im2col_2d(x, tuple(geoms), groups)
    return reference.im2col(x, tuple(geoms), groups)


def col2im(cols, geoms, out_dtype):
    """Adjoint of the window map: add every window of cols (N, C, *out, *kernel) back onto (N, C, *size).

    Overlapping windows are summed in fp32 and rounded once. 2-D on CuPy: one gather kernel (each
    output element sums the taps that read it: no atomics, deterministic); otherwise ``_im2col.col2im``.

    Args:
        cols: (N, C, *out, *kernel) float array.
        geoms: one ``cupynet.ops._im2col.Geometry`` per spatial dimension.
        out_dtype: dtype of the result.
    """
    fn = "col2im"
    _check_array(fn, "cols", cols, ndim=(4, 6, 8))
    nd = (cols.ndim - 2) // 2
    if not isinstance(geoms, (tuple, list)) or len(geoms) != nd:
        raise TypeError(f"{fn}: geoms must be {nd} cupynet.ops._im2col.Geometry values, got {geoms!r}")
    _check_geoms(fn, geoms, tuple(g.size for g in geoms))
    expected = tuple(cols.shape[:2]) + tuple(g.out for g in geoms) + tuple(g.kernel for g in geoms)
    _check_shape(fn, "cols", cols, expected)
    if kernels_enabled(cols) and nd == 2:
        return _launch().col2im_2d(cols, tuple(geoms)).astype(out_dtype, copy=False)
    return reference.col2im(cols, tuple(geoms), out_dtype)


# ----------------------------------------------------------------------------- half-precision batched GEMM


def batched_matmul_half(a, b):
    """``a @ b`` for float16/bfloat16 stacks: half inputs and output, fp32 accumulation, one rounding.

    On CuPy: one ``cublasGemmStridedBatchedEx`` (CUBLAS_COMPUTE_32F, tensor cores) with no fp32
    copy of the operands (CuPy's own batched float16 matmul upcasts both to fp32). Reference:
    fp32 matmul, then round.

    Args:
        a: (..., m, k) float16 or bfloat16 array.
        b: (..., k, n) array of a's dtype; the batch dims must equal a's, or one of a, b is 2-D
            (it is shared by every batch entry).
    """
    fn = "batched_matmul_half"
    _check_array(fn, "a", a, allowed=dtypes.LOW_PRECISION)
    _check_array(fn, "b", b, allowed=dtypes.LOW_PRECISION)
    _check_same_dtype(fn, "b", b, "a", a)
    _check_same_backend(fn, a=a, b=b)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"{fn}: a and b must be at least 2-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{fn}: inner dimensions differ: a {tuple(a.shape)} @ b {tuple(b.shape)}")
    if a.ndim > 2 and b.ndim > 2 and a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"{fn}: batch dims must be equal (or one operand 2-D), got a {tuple(a.shape)} and "
                         f"b {tuple(b.shape)}")
    if kernels_enabled(a):
        return _launch().batched_matmul_half(a, b)
    return reference.batched_matmul_half(a, b)

"""cupynet.ops.kernels (the fused ops): every NumPy reference against PyTorch (CPU) math, bad inputs, and, on a GPU,
every CUDA kernel against its reference (that part is skipped without CuPy and a CUDA device).

Half-precision inputs are compared with PyTorch run in fp32 on the same (rounded) values: the
fused ops read halves as fp32 and round each result once, so the only difference allowed is that
final rounding.
"""


import ml_dtypes
import numpy as np
import pytest

from cupynet.backend import cupy_or_none
from cupynet.ops import kernels as fused
from cupynet.ops._im2col import Geometry, output_length

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
HALF_TOL = {F16: 2e-3, BF16: 1.6e-2, F32: 2e-6, F64: 1e-12}


def t32(a):
    torch = pytest.importorskip("torch")
    return torch.tensor(np.asarray(a, dtype=np.float64 if a.dtype == F64 else np.float32))


def close(ours, theirs, dtype, scale=1.0):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    tol = HALF_TOL[np.dtype(dtype)] * scale
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


def logits_case(dtype, n=7, c=5, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * 3).astype(dtype)
    target = rng.integers(0, c, n)
    target[1] = target[4] = -100
    return x, target, rng.random(c).astype(np.float32) + 0.5


# ----------------------------------------------------------------------------- softmax + cross-entropy


@pytest.mark.parametrize("dtype", [F32, F16, BF16, F64])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_xent_matches_torch_cross_entropy_forward_and_backward(dtype, smoothing, weighted):
    torch = pytest.importorskip("torch")
    x, target, weight = logits_case(dtype)
    weight = weight if weighted else None
    loss, lse = fused.softmax_xent_forward(x, target, -100, smoothing, weight)
    assert loss.dtype == lse.dtype == (F64 if dtype == F64 else F32) and loss.shape == lse.shape == (7,)
    xt = t32(x).requires_grad_()
    wt = None if weight is None else t32(weight).to(xt.dtype)
    kw = {"weight": wt, "ignore_index": -100, "label_smoothing": smoothing}
    F = torch.nn.functional
    close(loss, F.cross_entropy(xt, torch.tensor(target), reduction="none", **kw), F32 if dtype != F64 else F64, 2)
    assert loss[1] == loss[4] == 0.0
    mean = F.cross_entropy(xt, torch.tensor(target), reduction="mean", **kw)
    mean.backward()
    valid = target != -100
    divisor = (weight.astype(lse.dtype)[np.where(valid, target, 0)] * valid).sum() if weighted else valid.sum()
    close(loss.sum() / divisor, mean, F32 if dtype != F64 else F64, 2)
    scale = np.asarray(1.0 / divisor, lse.dtype)
    grad = fused.softmax_xent_backward(x, target, lse, scale, -100, smoothing, weight)
    assert grad.dtype == dtype and grad.shape == x.shape
    close(grad, xt.grad, dtype, 4)
    assert not np.any(grad[[1, 4]].astype(np.float32))


def test_softmax_xent_per_row_gradient_matches_reduction_none():
    torch = pytest.importorskip("torch")
    x, target, _ = logits_case(F32)
    g = np.linspace(-1, 2, 7).astype(np.float32)
    _, lse = fused.softmax_xent_forward(x, target)
    grad = fused.softmax_xent_backward(x, target, lse, g, label_smoothing=0.0)
    xt = t32(x).requires_grad_()
    torch.nn.functional.cross_entropy(xt, torch.tensor(target), reduction="none").backward(torch.tensor(g))
    close(grad, xt.grad, F32, 2)


def test_softmax_xent_all_ignored_batch_gives_zero_loss_and_zero_gradient():
    x, _, _ = logits_case(F32)
    target = np.full(7, 3)
    loss, lse = fused.softmax_xent_forward(x, target, ignore_index=3, label_smoothing=0.2)
    grad = fused.softmax_xent_backward(x, target, lse, np.asarray(1.0, np.float32), ignore_index=3,
                                       label_smoothing=0.2)
    assert np.all(loss == 0) and np.all(grad == 0) and np.all(np.isfinite(lse))


def test_softmax_xent_with_minus_inf_logits_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[0.0, -np.inf, 1.0, 2.0], [-np.inf, -np.inf, 5.0, -np.inf], [3.0, -np.inf, -1.0, 0.0]], np.float32)
    target = np.array([2, 2, 0])
    for smoothing in (0.0, 0.3):
        loss, lse = fused.softmax_xent_forward(x, target, label_smoothing=smoothing)
        xt = t32(x).requires_grad_()
        ref = torch.nn.functional.cross_entropy(xt, torch.tensor(target), reduction="none", label_smoothing=smoothing)
        ref.sum().backward()
        np.testing.assert_allclose(loss, ref.detach().numpy(), rtol=1e-6, atol=1e-6)  # inf == inf when smoothed
        assert np.all(np.isfinite(loss)) == (smoothing == 0.0)
        grad = fused.softmax_xent_backward(x, target, lse, np.ones(3, np.float32), label_smoothing=smoothing)
        np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-6, atol=1e-6)
        assert np.all(np.isfinite(grad))


def test_softmax_xent_target_on_minus_inf_logit_is_infinite_and_huge_logits_stay_finite():
    x = np.array([[0.0, -np.inf], [1e30, -1e30]], np.float32)
    loss, _ = fused.softmax_xent_forward(x, np.array([1, 1]))
    assert loss[0] == np.inf and loss[1] == np.float32(2e30)


def test_softmax_xent_out_of_range_target_gives_nan_row_not_an_error():
    x = logits_case(F32)[0][:3]
    target = np.array([0, 9, -1])
    loss, lse = fused.softmax_xent_forward(x, target)
    grad = fused.softmax_xent_backward(x, target, lse, np.asarray(1.0, np.float32))
    assert np.isfinite(loss[0]) and np.isnan(loss[1]) and np.isnan(loss[2])
    assert np.all(np.isfinite(grad[0])) and np.all(np.isnan(grad[1:]))


@pytest.mark.parametrize("call, error, match", [
    (lambda x, t: fused.softmax_xent_forward(x[0], t), ValueError, "softmax_xent_forward: logits must be 2-D"),
    (lambda x, t: fused.softmax_xent_forward(x, t.astype(np.float32)), TypeError, "target must have dtype"),
    (lambda x, t: fused.softmax_xent_forward(x, t[:3]), ValueError, r"target must have shape \(7,\), got \(3,\)"),
    (lambda x, t: fused.softmax_xent_forward(x, t, weight=np.ones(4, np.float32)), ValueError,
     r"weight must have shape \(5,\)"),
    (lambda x, t: fused.softmax_xent_forward(x, t, label_smoothing=1.5), ValueError,
     r"label_smoothing must be a number in \[0.0, 1.0\], got 1.5"),
    (lambda x, t: fused.softmax_xent_forward(x, t, ignore_index=1.0), TypeError, "ignore_index must be an int"),
    (lambda x, t: fused.softmax_xent_forward(x.astype(np.int32), t), TypeError, "logits must have dtype"),
    (lambda x, t: fused.softmax_xent_forward(x[:, :0], t), ValueError, "at least one class"),
    (lambda x, t: fused.softmax_xent_forward(x.tolist(), t), TypeError, "logits must be a NumPy or CuPy array"),
    (lambda x, t: fused.softmax_xent_backward(x, t, np.zeros(6, np.float32), np.asarray(1.0)), ValueError,
     "lse must have shape"),
    (lambda x, t: fused.softmax_xent_backward(x, t, np.zeros(7, np.float32), np.ones(3, np.float32)), ValueError,
     r"grad_rows must have shape \(7,\)"),
])
def test_softmax_xent_rejects_bad_input_clearly(call, error, match):
    x, t, _ = logits_case(F32)
    before = x.copy()
    with pytest.raises(error, match=match):
        call(x, t)
    np.testing.assert_array_equal(x, before)


# ----------------------------------------------------------------------------- layer norm


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("normalized_ndim, affine", [(1, True), (2, True), (1, False)])
def test_layer_norm_matches_torch_forward_and_backward(dtype, normalized_ndim, affine):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 4, 6)) * 2 + 1).astype(dtype)
    pshape = x.shape[3 - normalized_ndim:]
    w = (rng.random(pshape) + 0.5).astype(np.float32) if affine else None
    b = rng.standard_normal(pshape).astype(np.float32) if affine else None
    g = rng.standard_normal(x.shape).astype(dtype)
    y, mean, rstd = fused.layer_norm_forward(x, w, b, 1e-5, normalized_ndim)
    assert y.dtype == dtype and mean.dtype == rstd.dtype == F32 and mean.shape == x.shape[:3 - normalized_ndim]
    xt = t32(x).requires_grad_()
    wt = None if w is None else t32(w).requires_grad_()
    bt = None if b is None else t32(b).requires_grad_()
    ref = torch.nn.functional.layer_norm(xt, pshape, wt, bt, 1e-5)
    close(y, ref, dtype, 2)
    ref.backward(t32(g))
    dx, dw, db = fused.layer_norm_backward(g, x, mean, rstd, w, normalized_ndim)
    assert dx.dtype == dtype and dw.shape == db.shape == pshape
    close(dx, xt.grad, dtype, 4)
    if affine:
        close(dw, wt.grad, F32, 4)
        close(db, bt.grad, F32, 4)


def test_layer_norm_of_a_constant_row_is_the_bias():
    x = np.full((2, 8), 3.0, np.float32)
    b = np.arange(8, dtype=np.float32)
    y, mean, rstd = fused.layer_norm_forward(x, np.ones(8, np.float32), b)
    np.testing.assert_array_equal(y, np.broadcast_to(b, (2, 8)))
    assert np.all(mean == 3.0) and np.allclose(rstd, 1 / np.sqrt(1e-5))


@pytest.mark.parametrize("call, error, match", [
    (lambda x, w: fused.layer_norm_forward(x, w[:3], None), ValueError, r"layer_norm_forward: weight must have shape"),
    (lambda x, w: fused.layer_norm_forward(x, w, None, eps=-1.0), ValueError, "eps must be a number"),
    (lambda x, w: fused.layer_norm_forward(x, w, None, normalized_ndim=3), ValueError, "normalized_ndim must be in"),
    (lambda x, w: fused.layer_norm_forward(x.astype(np.int64), None, None), TypeError, "x must have dtype"),
    (lambda x, w: fused.layer_norm_backward(x.astype(np.float16), x, x[:, 0], x[:, 0], w), TypeError,
     "grad must have the dtype of x"),
    (lambda x, w: fused.layer_norm_backward(x, x, x[:1, 0], x[:, 0], w), ValueError, r"mean must have shape \(4,\)"),
])
def test_layer_norm_rejects_bad_input_clearly(call, error, match):
    x, w = np.ones((4, 6), np.float32), np.ones(6, np.float32)
    with pytest.raises(error, match=match):
        call(x, w)


# ----------------------------------------------------------------------------- bias + activation


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_bias_gelu_matches_torch(dtype, approximate):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 3, 8)) * 3).astype(dtype)
    b = rng.standard_normal(8).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(dtype)
    xt, bt = t32(x).requires_grad_(), t32(b).requires_grad_()
    ref = torch.nn.functional.gelu(xt + bt, approximate=approximate)
    ref.backward(t32(g))
    close(fused.bias_gelu_forward(x, b, approximate), ref, dtype, 2)
    dx, db = fused.bias_gelu_backward(g, x, b, approximate)
    assert dx.dtype == dtype and db.dtype == F32 and db.shape == (8,)
    close(dx, xt.grad, dtype, 4)
    close(db, bt.grad, F32 if dtype == F32 else dtype, 12)


@pytest.mark.parametrize("dtype", [F32, F16])
def test_bias_relu_matches_torch_and_keeps_nan(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4)).astype(dtype)
    x[0, 0] = np.nan
    b = rng.standard_normal(4).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(dtype)
    y = fused.bias_relu_forward(x, b)
    ref = torch.relu(t32(x) + t32(b))
    close(y, ref, dtype, 2)
    assert np.isnan(y[0, 0])
    dx, db = fused.bias_relu_backward(g, y)
    expected = np.where(y.astype(np.float32) > 0, g.astype(np.float32), 0)
    np.testing.assert_array_equal(dx.astype(np.float32), expected)
    np.testing.assert_allclose(db, expected.sum(axis=0), rtol=1e-6)


@pytest.mark.parametrize("call, error, match", [
    (lambda: fused.bias_gelu_forward(np.ones((2, 3), np.float32), np.ones(2, np.float32)), ValueError,
     r"bias_gelu_forward: bias must have shape \(3,\)"),
    (lambda: fused.bias_gelu_forward(np.ones((2, 3), np.float32), np.ones(3, np.float32), "fast"), ValueError,
     "approximate must be one of 'none', 'tanh'"),
    (lambda: fused.bias_gelu_backward(np.ones((2, 3), np.float16), np.ones((2, 3), np.float32),
                                      np.ones(3, np.float32)), TypeError, "grad must have the dtype of x"),
    (lambda: fused.bias_relu_forward(np.float32(1.0), np.ones(1, np.float32)), TypeError, "x must be a NumPy"),
    (lambda: fused.bias_relu_backward(np.ones((2, 2), np.float32), np.ones((2, 3), np.float32)), ValueError,
     r"grad must have shape \(2, 3\)"),
])
def test_bias_activation_rejects_bad_input_clearly(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- im2col / col2im


def geometry(size, kernel, stride, padding, dilation):
    out = output_length(size, kernel, stride, dilation, padding, padding)
    return Geometry(kernel, stride, dilation, padding, size, out)


CONV_CASES = [  # (H, W), kernel, stride, padding, dilation
    ((5, 6), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((7, 5), (3, 2), (2, 1), (0, 1), (1, 2)),
    ((6, 6), (2, 2), (2, 2), (0, 0), (1, 1)),
]


@pytest.mark.parametrize("size, kernel, stride, padding, dilation", CONV_CASES)
@pytest.mark.parametrize("dtype", [F32, F16])
def test_im2col_and_col2im_match_torch_unfold_and_fold(size, kernel, stride, padding, dilation, dtype):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4) + size).astype(dtype)
    geoms = tuple(geometry(*args) for args in zip(size, kernel, stride, padding, dilation))
    oh, ow = geoms[0].out, geoms[1].out
    kw = {"kernel_size": kernel, "dilation": dilation, "padding": padding, "stride": stride}
    cols = fused.im2col(x, geoms, groups=2)
    assert cols.shape == (2, 2 * oh * ow, 2 * kernel[0] * kernel[1]) and cols.dtype == dtype
    unfolded = F.unfold(t32(x), **kw).numpy()  # (N, C*KH*KW, OH*OW)
    ours = cols.reshape(2, 2, oh * ow, -1).transpose(1, 0, 3, 2).reshape(2, 4 * kernel[0] * kernel[1], oh * ow)
    np.testing.assert_array_equal(ours.astype(np.float32), unfolded)
    patches = rng.standard_normal((2, 4, oh, ow) + kernel).astype(dtype)
    folded = F.fold(t32(patches).permute(0, 1, 4, 5, 2, 3).reshape(2, -1, oh * ow), output_size=size, **kw)
    back = fused.col2im(patches, geoms, dtype)
    assert back.shape == x.shape and back.dtype == dtype
    close(back, folded, dtype, 2)


def test_im2col_and_col2im_reject_bad_input_clearly():
    x = np.ones((1, 4, 5, 5), np.float32)
    geoms = (geometry(5, 3, 1, 1, 1), geometry(5, 3, 1, 1, 1))
    with pytest.raises(ValueError, match="im2col: groups must be a positive int dividing the 4 channels, got 3"):
        fused.im2col(x, geoms, groups=3)
    with pytest.raises(ValueError, match=r"im2col: geoms describe spatial size \(5, 5\), the array has \(5, 6\)"):
        fused.im2col(np.ones((1, 4, 5, 6), np.float32), geoms)
    with pytest.raises(TypeError, match="im2col: geoms must be 2"):
        fused.im2col(x, geoms[:1])
    with pytest.raises(ValueError, match=r"col2im: cols must have shape \(1, 4, 5, 5, 3, 3\)"):
        fused.col2im(np.ones((1, 4, 5, 5, 3, 2), np.float32), geoms, F32)


# ----------------------------------------------------------------------------- batched half GEMM


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 4, 5), (3, 5, 2)), ((2, 3, 4, 8), (8, 6)), ((4, 8), (2, 8, 3))])
def test_batched_matmul_half_is_fp32_matmul_rounded_once(dtype, a_shape, b_shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)
    out = fused.batched_matmul_half(a, b)
    expected = torch.matmul(t32(a), t32(b)).numpy().astype(dtype)
    assert out.dtype == dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out.astype(np.float32), expected.astype(np.float32))


def test_batched_matmul_half_with_empty_inner_dimension_is_zero():
    out = fused.batched_matmul_half(np.ones((2, 3, 0), np.float16), np.ones((2, 0, 4), np.float16))
    assert out.shape == (2, 3, 4) and not out.any()


@pytest.mark.parametrize("a, b, error, match", [
    (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), TypeError, "a must have dtype in"),
    (np.ones((2, 3), np.float16), np.ones((3, 2), BF16), TypeError, "b must have the dtype of a"),
    (np.ones((2, 3), np.float16), np.ones((4, 2), np.float16), ValueError, "inner dimensions differ"),
    (np.ones((2, 2, 3), np.float16), np.ones((3, 3, 2), np.float16), ValueError, "batch dims must be equal"),
    (np.ones(3, np.float16), np.ones((3, 2), np.float16), ValueError, "a and b must be at least 2-D"),
])
def test_batched_matmul_half_rejects_bad_input_clearly(a, b, error, match):
    with pytest.raises(error, match=f"batched_matmul_half: {match}"):
        fused.batched_matmul_half(a, b)


def test_numpy_arrays_never_take_the_kernel_path():
    assert not fused.kernels_enabled(np.ones(3, np.float32))
    assert not fused.kernels_enabled(None)


# ----------------------------------------------------------------------------- on a GPU: kernels vs references

gpu = pytest.mark.cuda  # needs CuPy and a usable CUDA GPU: runs under `pytest --device cuda` (conftest)


def on_both(fn, *arrays, **kw):
    """(kernel result on the GPU, reference result on the CPU) of ``fn`` with the same arrays."""
    cp = cupy_or_none()
    dev = fn(*(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in arrays), **kw)
    host = fn(*arrays, **kw)
    to_host = lambda v: cp.asnumpy(v) if isinstance(v, cp.ndarray) else v  # noqa: E731
    return (tuple(map(to_host, dev)) if isinstance(dev, tuple) else to_host(dev)), host


def assert_pairs_close(dev, host, dtype, scale=4):
    for d, h in zip(dev if isinstance(dev, tuple) else (dev,), host if isinstance(host, tuple) else (host,)):
        assert d.dtype == h.dtype and d.shape == h.shape
        close(d, h.astype(np.float64), dtype if d.dtype == dtype else F32, scale)


@gpu
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("n_classes", [5, 1000, 3000])
def test_gpu_softmax_xent_kernels_match_reference(dtype, n_classes):
    x, target, weight = logits_case(dtype, n=33, c=n_classes)
    x[0, 1] = -np.inf
    for smoothing, w in ((0.0, None), (0.1, weight)):
        dev, host = on_both(fused.softmax_xent_forward, x, target, -100, smoothing, w)
        assert_pairs_close(dev, host, F32, 8)
        g = np.linspace(0.5, 1.5, 33).astype(np.float32)
        dev, host = on_both(fused.softmax_xent_backward, x, target, host[1], g, -100, smoothing, w)
        assert_pairs_close(dev, host, dtype, 4)


@gpu
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("shape", [(4, 7), (300, 512), (5, 3000)])
def test_gpu_layer_norm_kernels_match_reference(dtype, shape):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    w, b = rng.random(shape[-1]).astype(np.float32), rng.standard_normal(shape[-1]).astype(np.float32)
    dev, host = on_both(fused.layer_norm_forward, x, w, b)
    assert_pairs_close(dev, host, dtype)
    g = rng.standard_normal(shape).astype(dtype)
    dev, host = on_both(fused.layer_norm_backward, g, x, host[1], host[2], w)
    assert_pairs_close(dev, host, dtype, 16)


@gpu
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_gpu_bias_activation_kernels_match_reference(dtype):
    rng = np.random.default_rng(7)
    x, b = (rng.standard_normal((64, 96)) * 3).astype(dtype), rng.standard_normal(96).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(dtype)
    for approximate in ("none", "tanh"):
        assert_pairs_close(*on_both(fused.bias_gelu_forward, x, b, approximate), dtype)
        assert_grads_close(*on_both(fused.bias_gelu_backward, g, x, b, approximate), dtype)
    y = fused.bias_relu_forward(x, b)
    assert_pairs_close(*on_both(fused.bias_relu_forward, x, b), dtype)
    assert_grads_close(*on_both(fused.bias_relu_backward, g, y), dtype)


def assert_grads_close(dev, host, dtype):
    """(grad_input, grad_bias) of the kernel and of the reference: the input gradient elementwise, the bias
    gradient by the error bound of a sum.

    NOTE: grad_bias sums the rows of grad_input's fp32 terms, in the kernel's order on the GPU and in
    NumPy's on the CPU; two orders of an n-term fp32 sum differ by at most 2 (n - 1) u sum|terms| (u = 2^-24),
    which with cancellation is more than a few ulps of the result. One side may also sum the terms rounded
    to the gradient's dtype: at most one unit roundoff of that dtype per term more.
    """
    assert_pairs_close(dev[0], host[0], dtype, 16)
    rows = host[0].reshape(-1, host[1].size)
    rounding = {F32: 0.0, F16: 2.0 ** -11, BF16: 2.0 ** -8}[np.dtype(dtype)]
    bound = (2 * (rows.shape[0] - 1) * 2.0 ** -24 + rounding) * np.abs(rows.astype(np.float64)).sum(axis=0)
    assert dev[1].dtype == host[1].dtype and dev[1].shape == host[1].shape
    assert np.all(np.abs(dev[1].astype(np.float64) - host[1].astype(np.float64)) <= bound + 1e-30)


@gpu
@pytest.mark.parametrize("size, kernel, stride, padding, dilation", CONV_CASES)
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_gpu_im2col_col2im_kernels_match_reference(size, kernel, stride, padding, dilation, dtype):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4) + size).astype(dtype)
    geoms = tuple(geometry(*args) for args in zip(size, kernel, stride, padding, dilation))
    dev, host = on_both(fused.im2col, x, geoms, groups=2)
    np.testing.assert_array_equal(dev, host)
    cols = rng.standard_normal((3, 4, geoms[0].out, geoms[1].out) + kernel).astype(dtype)
    assert_pairs_close(*on_both(fused.col2im, cols, geoms, dtype), dtype)


@gpu
@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("a_shape, b_shape, transpose_b", [((8, 64, 32), (8, 32, 48), False),
                                                           ((4, 2, 16, 24), (24, 8), False),
                                                           ((6, 20, 12), (6, 30, 12), True)])
def test_gpu_batched_matmul_half_matches_reference(dtype, a_shape, b_shape, transpose_b):
    cp = cupy_or_none()
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)
    b_dev = cp.asarray(b)
    if transpose_b:  # a transposed view goes to cuBLAS as op T, without a copy
        b, b_dev = b.swapaxes(-1, -2), b_dev.swapaxes(-1, -2)
    out = cp.asnumpy(fused.batched_matmul_half(cp.asarray(a), b_dev))
    close(out, fused.batched_matmul_half(a, b).astype(np.float64), dtype, 2)

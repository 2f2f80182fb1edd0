"""Pooling: max/avg (1-D, 2-D, 3-D), adaptive average, indices, ceil_mode, bad inputs."""

import numpy as np
import pytest
from op_harness import check_op, make_arrays

import cupynet as cn
from cupynet import ops

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _distinct(shape, seed=0):
    # NOTE: distinct values keep max pooling's argmax (and so finite differences) well defined
    rng = np.random.default_rng(seed)
    return [rng.permutation(np.prod(shape)).reshape(shape) * 0.1 - 1.0]


@pytest.mark.parametrize("kw", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": (2, 3), "stride": (2, 1), "dilation": (2, 1)},
])
def test_max_pool2d(kw):
    check_op(None, lambda x: ops.max_pool2d(x, **kw), lambda x: F.max_pool2d(x, **kw), arrays=_distinct((2, 2, 7, 6)),
             dtypes=("float32",))


def test_max_pool2d_half_and_indices():
    x = _distinct((1, 2, 6, 6))[0]
    out, idx = ops.max_pool2d(cn.tensor(x, dtype=cn.float16), 3, 2, 1, return_indices=True)
    tout, tidx = F.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    assert out.dtype == cn.float16 and idx.dtype == cn.int64
    np.testing.assert_allclose(out.numpy().astype(np.float64), tout.numpy(), atol=1e-2)
    assert (idx.numpy() == tidx.numpy()).all()


def test_max_pool1d_and_3d():
    check_op(None, lambda x: ops.max_pool1d(x, 3, 2, 1), lambda x: F.max_pool1d(x, 3, 2, 1),
             arrays=_distinct((2, 2, 9)), dtypes=("float32",))
    check_op(None, lambda x: ops.max_pool3d(x, 2), lambda x: F.max_pool3d(x, 2), arrays=_distinct((1, 1, 4, 4, 4)),
             dtypes=("float32",))


@pytest.mark.parametrize("kw", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "divisor_override": 3},
])
def test_avg_pool2d(kw):
    check_op([(2, 2, 7, 6)], lambda x: ops.avg_pool2d(x, **kw), lambda x: F.avg_pool2d(x, **kw))


def test_avg_pool1d_unbatched_and_3d():
    check_op([(2, 8)], lambda x: ops.avg_pool1d(x, 3, 2, 1), lambda x: F.avg_pool1d(x, 3, 2, 1))
    check_op([(1, 1, 4, 4, 4)], lambda x: ops.avg_pool3d(x, 2), lambda x: F.avg_pool3d(x, 2), dtypes=("float32",))


@pytest.mark.parametrize("size", [(1, 1), (3, 2), 4, (None, 3)])
def test_adaptive_avg_pool2d(size):
    check_op([(2, 2, 7, 6)], lambda x: ops.adaptive_avg_pool2d(x, size), lambda x: F.adaptive_avg_pool2d(x, size))


def test_adaptive_avg_pool1d():
    check_op([(1, 2, 10)], lambda x: ops.adaptive_avg_pool1d(x, 3), lambda x: F.adaptive_avg_pool1d(x, 3))


def test_max_pool_gradient_goes_to_one_maximum_on_ties():
    x = cn.tensor(np.ones((1, 1, 2, 2)), requires_grad=True)
    ops.max_pool2d(x, 2).sum().backward()
    assert x.grad.numpy().sum() == 1.0 and x.grad.numpy()[0, 0, 0, 0] == 1.0


def test_half_avg_pool_accumulates_in_fp32():
    x = cn.tensor(make_arrays([(1, 1, 64, 64)], low=0.0, high=1.0)[0], dtype=cn.float16)
    y = ops.adaptive_avg_pool2d(x, 1)
    z = ops.avg_pool2d(x, 64)
    want = x.numpy().astype(np.float64).mean()
    assert y.dtype == z.dtype == cn.float16
    assert abs(float(y.item()) - want) < 1e-3 and abs(float(z.item()) - want) < 1e-3


@pytest.mark.parametrize("call, error, match", [
    (lambda: ops.max_pool2d(cn.randn(4, 4), 2), RuntimeError,
     r"max_pool2d: expected 3D \(unbatched\) or 4D \(batched\) input, but got input of shape \(4, 4\)"),
    (lambda: ops.max_pool2d(cn.randn(1, 1, 4, 4), 3, padding=2), ValueError,
     "max_pool2d: pad should be at most half of effective kernel size"),
    (lambda: ops.max_pool2d(cn.randn(1, 1, 2, 2), 3), RuntimeError, "max_pool2d: output size 0 is too small"),
    (lambda: ops.avg_pool2d(cn.randn(1, 1, 4, 4), 0), ValueError, "avg_pool2d: kernel_size must be >= 1"),
    (lambda: ops.avg_pool2d(cn.randn(1, 1, 4, 4), (2, 2, 2)), TypeError,
     "avg_pool2d: kernel_size must be an int or a tuple of 2 ints"),
    (lambda: ops.avg_pool2d(cn.randn(1, 1, 4, 4), 2, divisor_override=0), ValueError,
     "avg_pool: divisor_override must be a non-zero int"),
    (lambda: ops.adaptive_avg_pool2d(cn.randn(1, 1, 4, 4), 0), ValueError,
     "adaptive_avg_pool2d: output_size must be >= 1"),
    (lambda: ops.max_pool2d(cn.tensor(np.ones((1, 1, 4, 4), dtype=np.int64)), 2), TypeError,
     "max_pool2d: expected a floating point input"),
])
def test_pool_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_max_pool_propagates_nan_like_torch():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    out = ops.max_pool2d(cn.tensor(x), 2).numpy()
    want = F.max_pool2d(torch.tensor(x), 2).numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_allclose(out[~np.isnan(out)], want[~np.isnan(want)])


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=1), dict(kernel_size=2, padding=1, ceil_mode=True)])
def test_max_pool_nan_and_tie_indices_and_gradient_match_torch(kw):
    # NOTE: ties (the first maximum wins) and NaN windows (NaN propagates, the last NaN tap is the index)
    x = np.round(np.random.default_rng(3).standard_normal((2, 3, 6, 6)))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = x[1, 2, 3, 3] = np.nan
    ours = cn.tensor(x, requires_grad=True)
    out, idx = ops.max_pool2d(ours, return_indices=True, **kw)
    theirs = torch.tensor(x, requires_grad=True)
    want, want_idx = F.max_pool2d(theirs, return_indices=True, **kw)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), want_idx.numpy())
    g = np.random.default_rng(4).standard_normal(out.shape)
    out.backward(cn.tensor(g))
    want.backward(torch.tensor(g))
    # NOTE: overlapping windows sum up to 9 values per input in another order: a few float64 ulps
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=8 * np.finfo(np.float64).eps, atol=0)


class _NoUpload:
    """An array module that computes like NumPy but has no way to bring host data over (no asarray/array)."""

    arange, full, ones, minimum, maximum = np.arange, np.full, np.ones, np.minimum, np.maximum


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=2, ceil_mode=True)])
def test_avg_pool_divisor_is_computed_on_the_device_and_matches_torch(kw):
    from cupynet.ops.pool import _inv_divisor, _pool_geoms

    x = np.random.default_rng(6).standard_normal((2, 3, 7, 6))
    np.testing.assert_allclose(ops.avg_pool2d(cn.tensor(x), **kw).numpy(),
                               F.avg_pool2d(torch.tensor(x), **kw).numpy(), rtol=1e-12, atol=1e-12)
    geoms = _pool_geoms("avg_pool2d", 2, cn.tensor(x), kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), 1,
                        kw.get("ceil_mode", False))
    inv = _inv_divisor(_NoUpload, geoms, kw.get("count_include_pad", True), None, cn.float32)
    assert inv.dtype == np.float32 and inv.shape == tuple(g.out for g in geoms)
    ones = torch.ones((1, 1, 7, 6), dtype=torch.float64)
    want = (F.avg_pool2d(ones, **kw) / F.avg_pool2d(ones, **kw, divisor_override=1)).numpy()[0, 0]  # 1 / divisor
    np.testing.assert_allclose(inv, want, rtol=np.finfo(np.float32).eps)


def test_avg_pool_uniform_divisor_is_a_python_float():
    from cupynet.ops.pool import _inv_divisor, _pool_geoms

    geoms = _pool_geoms("avg_pool2d", 2, cn.randn(1, 1, 8, 8), 2, None, 0, 1, False)
    assert _inv_divisor(_NoUpload, geoms, True, None, cn.float32) == 0.25
    assert _inv_divisor(_NoUpload, geoms, True, 3, cn.float32) == 1 / 3


@pytest.mark.parametrize("kw", [dict(kernel_size=2, padding=1), dict(kernel_size=(2, 3), stride=(3, 3), dilation=2)])
def test_non_overlapping_max_pool_double_backward(kw):
    # NOTE: windows that cannot overlap take the indexed scatter/gather path, both ways
    check_op([(2, 2, 6, 7)], lambda x: ops.max_pool2d(x, **kw), lambda x: F.max_pool2d(x, **kw),
             arrays=_distinct((2, 2, 6, 7), seed=8))


def test_adaptive_averaging_matrix_is_computed_on_the_device():
    from cupynet.ops.pool import _averaging_matrix
    for size, out in ((7, 3), (5, 5), (4, 7), (1, 2)):
        m = _averaging_matrix(_NoUpload, size, out)
        want = F.adaptive_avg_pool1d(torch.eye(size, dtype=torch.float64)[None], out)[0].numpy().T
        np.testing.assert_allclose(m, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("seed", range(4))
def test_2x2_stride_2_fast_path_matches_torch_on_ties_nan_and_inf(seed, dtype):
    # NOTE: small integers make ties in most windows (the tap rule: the first maximum in C order);
    # NaN wins where present (the last NaN tap), inf ties too; odd sizes drop the last row/column
    rng = np.random.default_rng(seed)
    for _ in range(40):
        shape = (2, 3, int(rng.integers(2, 9)), int(rng.integers(2, 9)))
        x = rng.integers(-2, 3, size=shape).astype(np.float32)
        x[rng.random(shape) < 0.05 * seed] = np.nan
        x[rng.random(shape) < 0.05 * seed] = np.inf
        # NOTE: half inputs are widened to float32 (exact), pooled and narrowed back (exact): same bits
        out, idx = ops.max_pool2d(cn.tensor(x).to(getattr(cn, dtype)), 2, return_indices=True)
        t_out, t_idx = F.max_pool2d(torch.tensor(x).to(getattr(torch, dtype)), 2, return_indices=True)
        assert out.dtype == getattr(cn, dtype)
        np.testing.assert_array_equal(out.float().numpy(), t_out.float().numpy())
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())

# ---- adaptive max pooling and max unpooling (issue 13)
@pytest.mark.parametrize("nd, shape, size", [
    (1, (2, 3, 7), 3), (1, (3, 10), 4), (2, (2, 2, 7, 6), (3, 4)), (2, (2, 5, 5), (4, None)),
    (2, (1, 2, 4, 4), 1), (3, (1, 2, 5, 4, 3), (2, 3, 2)),
])
def test_adaptive_max_pool_matches_torch(nd, shape, size):
    # NOTE: 5 -> 4 and 7 -> 3 windows overlap, so one input can be the maximum of two windows (gradients add)
    name = f"adaptive_max_pool{nd}d"
    check_op(None, lambda x: getattr(ops, name)(x, size), lambda x: getattr(F, name)(x, size),
             arrays=_distinct(shape), dtypes=("float32", "float16"))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_max_pool_indices_ties_and_nan_match_torch(nd):
    rng = np.random.default_rng(nd)
    x = rng.integers(0, 3, size=(2, 2) + (5,) * nd).astype(np.float64)  # NOTE: many ties
    x.reshape(-1)[rng.choice(x.size, 6, replace=False)] = np.nan
    name = f"adaptive_max_pool{nd}d"
    for size in (1, 2, 3, 4, 5):
        got, gi = getattr(ops, name)(cn.tensor(x), size, return_indices=True)
        want, wi = getattr(F, name)(torch.tensor(x), size, return_indices=True)
        np.testing.assert_array_equal(gi.numpy(), wi.numpy())
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert gi.dtype == cn.int64


def test_adaptive_max_pool_gradient_adds_where_windows_share_a_maximum():
    x = cn.tensor([[[0.0, 1.0, 9.0, 2.0, 3.0]]], requires_grad=True)
    ops.adaptive_max_pool1d(x, 4).sum().backward()  # windows [0,2) [1,3) [2,4) [3,5): 9 wins twice
    xt = torch.tensor([[[0.0, 1.0, 9.0, 2.0, 3.0]]], requires_grad=True)
    F.adaptive_max_pool1d(xt, 4).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    assert x.grad.numpy().tolist() == [[[0.0, 1.0, 2.0, 0.0, 1.0]]]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_adaptive_max_pool_half_is_exact(dtype):
    x = make_arrays([(2, 3, 9, 7)])[0]
    got = ops.adaptive_max_pool2d(cn.tensor(x, dtype=dtype), (4, 3))
    want = F.adaptive_max_pool2d(torch.tensor(x).to(getattr(torch, dtype)), (4, 3))
    assert got.dtype == getattr(cn, dtype)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("nd, spatial, kw", [
    (1, (8,), {"kernel_size": 2}), (2, (8, 6), {"kernel_size": 2}),
    (2, (7, 5), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (7, 5), {"kernel_size": 2, "output_size": (7, 5)}),
    (2, (7, 5), {"kernel_size": 2, "output_size": (2, 2, 7, 5)}),
    (3, (4, 4, 2), {"kernel_size": 2}), (3, (5, 4, 3), {"kernel_size": 2, "stride": 1}),
])
def test_max_unpool_matches_torch(nd, spatial, kw):
    shape = (2, 2) + spatial
    pool_kw = {k: v for k, v in kw.items() if k != "output_size"}
    _, idx = getattr(F, f"max_pool{nd}d")(torch.tensor(_distinct(shape)[0]), return_indices=True, **pool_kw)
    pooled = make_arrays([tuple(idx.shape)])
    name = f"max_unpool{nd}d"
    index = idx.numpy()
    # NOTE: overlapping windows (stride < kernel) can repeat an index, and which value lands there is
    # then unspecified in both libraries: the gradient is checked only where windows do not overlap.
    # The lambda makes the index tensor, so check_op's device context puts it beside the input.
    check_op(None, lambda v: getattr(ops, name)(v, cn.tensor(index), **kw), lambda v: getattr(F, name)(v, idx, **kw),
             arrays=pooled, dtypes=("float32", "float16"), grad=kw.get("stride", 2) >= kw["kernel_size"])


def test_max_unpool_round_trip_and_unbatched():
    x = cn.tensor(_distinct((3, 6, 4))[0])
    y, i = ops.max_pool2d(x, 2, return_indices=True)
    back = ops.max_unpool2d(y, i, 2)
    want = F.max_unpool2d(*F.max_pool2d(torch.tensor(x.numpy()), 2, return_indices=True), 2)
    np.testing.assert_array_equal(back.numpy(), want.numpy())


@pytest.mark.parametrize("call, error, match", [
    (lambda: ops.adaptive_max_pool2d(cn.randn(1, 1, 0, 4), 2), RuntimeError,
     r"adaptive_max_pool2d\(\): Expected input to have non-zero size for non-batch dimensions"),
    (lambda: ops.adaptive_max_pool2d(cn.randn(1, 1, 4, 4), 0), ValueError,
     "adaptive_max_pool2d: output_size must be >= 1"),
    (lambda: ops.adaptive_max_pool1d(cn.randn(4), 2), RuntimeError, "adaptive_max_pool1d: expected 2D"),
    (lambda: ops.max_unpool2d(cn.randn(1, 1, 2, 2), cn.zeros(1, 1, 2, 2), 2), RuntimeError,
     "max_unpool2d: expected indices to be an int64 Tensor of the input's shape"),
    (lambda: ops.max_unpool2d(cn.randn(1, 1, 2, 2), cn.zeros(1, 1, 2, 3, dtype=cn.int64), 2), RuntimeError,
     "max_unpool2d: expected indices to be an int64 Tensor"),
    (lambda: ops.max_unpool2d(cn.randn(1, 1, 2, 2), cn.full((1, 1, 2, 2), 16, dtype=cn.int64), 2), IndexError,
     r"max_unpool2d: Target 16 is out of bounds \(output volumes are of size 4x4\)"),
    (lambda: ops.max_unpool2d(cn.randn(1, 1, 2, 2), cn.zeros(1, 1, 2, 2, dtype=cn.int64), 2, output_size=(9, 4)),
     ValueError, r"max_unpool2d: invalid output_size \(9, 4\)"),
    (lambda: ops.max_unpool2d(cn.randn(1, 1, 2, 2), cn.zeros(1, 1, 2, 2, dtype=cn.int64), 2, output_size=5),
     ValueError, "max_unpool2d: output_size should be a sequence of 2 or 4 ints"),
])
def test_adaptive_max_and_unpool_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_adaptive_max_and_unpool_layers_match_torch():
    x = _distinct((2, 3, 8, 6))[0]
    layer, ref = cn.nn.AdaptiveMaxPool2d((3, 2), return_indices=True), torch.nn.AdaptiveMaxPool2d((3, 2), True)
    (y, i), (yt, it) = layer(cn.tensor(x)), ref(torch.tensor(x))
    np.testing.assert_array_equal(y.numpy(), yt.numpy())
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    assert repr(layer) == repr(ref)
    p, pt = cn.nn.MaxPool2d(2, return_indices=True), torch.nn.MaxPool2d(2, return_indices=True)
    un, unt = cn.nn.MaxUnpool2d(2), torch.nn.MaxUnpool2d(2)
    np.testing.assert_array_equal(un(*p(cn.tensor(x))).numpy(), unt(*pt(torch.tensor(x))).numpy())
    assert repr(un) == repr(unt)
    for nd in (1, 3):
        assert repr(getattr(cn.nn, f"AdaptiveMaxPool{nd}d")(2)) == repr(getattr(torch.nn, f"AdaptiveMaxPool{nd}d")(2))
        assert repr(getattr(cn.nn, f"MaxUnpool{nd}d")(2)) == repr(getattr(torch.nn, f"MaxUnpool{nd}d")(2))


def test_max_unpool_takes_numpy_integer_output_sizes_as_torch():
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 4)).astype(np.float32)
    out, idx = ops.max_pool2d(cn.tensor(x), 2, return_indices=True)
    t_out, t_idx = F.max_pool2d(torch.tensor(x), 2, return_indices=True)
    size = (np.int64(5), np.int64(4))
    ours = ops.max_unpool2d(out, idx, 2, output_size=size)
    theirs = F.max_unpool2d(t_out, t_idx, 2, output_size=[int(s) for s in size])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

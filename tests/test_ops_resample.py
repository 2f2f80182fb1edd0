"""pad, interpolate, pixel_shuffle / pixel_unshuffle and unfold / fold against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
import cupynet.nn.functional as F
from tests.op_harness import check_op, requires_torch

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

pytestmark = requires_torch


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 5), (2, 1)), ((3, 5), (-1, 3)), ((2, 2, 4, 5), (1, 2, 3, 0)),
                                       ((2, 4, 5), (-1, 2, 1, -2)), ((1, 2, 3, 4, 3), (1, 1, 2, 0, 0, 2))])
def test_pad_modes_match_torch(mode, shape, pad):
    check_op([shape], lambda x: F.pad(x, pad, mode=mode), lambda x: TF.pad(x, pad, mode=mode))


@pytest.mark.parametrize("pad,value", [((1, 2), 0.0), ((1, 2, -1, 0, 2, 2), 3.0), ((0, 0, 0, 0, 0, 0, -1, 1), 0.5)])
def test_constant_pad_any_dims_and_negative(pad, value):
    check_op([(2, 3, 4, 5)], lambda x: F.pad(x, pad, value=value), lambda x: TF.pad(x, pad, value=value))


def test_constant_pad_keeps_integer_dtype():
    x = cn.tensor(np.arange(6).reshape(2, 3))
    got = F.pad(x, (1, 1), value=7)
    np.testing.assert_array_equal(got.numpy(), TF.pad(torch.arange(6).reshape(2, 3), (1, 1), value=7).numpy())
    assert got.dtype == cn.int64


@pytest.mark.parametrize("call,error,text", [
    (lambda x: F.pad(x, (1, 2, 3)), RuntimeError, "divisible by 2"),
    (lambda x: F.pad(x, (1,) * 10), RuntimeError, "less than or equal to two times"),
    (lambda x: F.pad(x, (1, 1), mode="reflect"), NotImplementedError, "Padding size 2 is not supported for 4D"),
    (lambda x: F.pad(x, (1, 1), mode="foo"), NotImplementedError, "Unrecognised padding mode"),
    (lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect", value=2.0), RuntimeError, "doesn't take in value"),
    (lambda x: F.pad(x, (1.5, 1)), TypeError, "tuple of ints"),
    (lambda x: F.pad(x, (5, 0, 0, 0), mode="reflect"), RuntimeError, "less than the corresponding input"),
    (lambda x: F.pad(x, (6, 0, 0, 0), mode="circular"), RuntimeError, "wrapping around more than once"),
    (lambda x: F.pad(x, (-3, -3, 0, 0), mode="replicate"), RuntimeError, "too small"),
    (lambda x: F.pad(x, (-4, -3)), RuntimeError, "negative padding"),
])
def test_pad_bad_inputs(call, error, text):
    x = cn.tensor(np.zeros((2, 3, 4, 5)), dtype=cn.float32, requires_grad=True)
    with pytest.raises(error, match=text):
        call(x)


MODES = [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True), ("bicubic", False),
         ("bicubic", True)]


@pytest.mark.parametrize("mode,align", MODES)
@pytest.mark.parametrize("kw", [{"size": (7, 4)}, {"scale_factor": 2}, {"scale_factor": (1.7, 0.6)},
                                {"scale_factor": 1.5, "recompute_scale_factor": True}])
def test_interpolate_2d_matches_torch(mode, align, kw):
    check_op([(2, 2, 5, 6)], lambda x: F.interpolate(x, mode=mode, align_corners=align, **kw),
             lambda x: TF.interpolate(x, mode=mode, align_corners=align, **kw), gradgrad=False)


@pytest.mark.parametrize("shape,mode,kw", [((2, 3, 5), "linear", {"size": 8}), ((2, 3, 5), "nearest", {"size": 3}),
                                           ((1, 2, 3, 4, 2), "trilinear", {"scale_factor": 2}),
                                           ((1, 2, 3, 4, 2), "nearest", {"size": (2, 5, 3)}),
                                           ((2, 2, 6, 5), "area", {"size": (3, 2)})])
def test_interpolate_1d_3d_and_area(shape, mode, kw):
    check_op([shape], lambda x: F.interpolate(x, mode=mode, **kw), lambda x: TF.interpolate(x, mode=mode, **kw))


def test_interpolate_double_backward():
    check_op([(1, 2, 3, 4)], lambda x: F.interpolate(x, scale_factor=2, mode="bilinear") ** 2,
             lambda x: TF.interpolate(x, scale_factor=2, mode="bilinear") ** 2, dtypes=("float32",))


@pytest.mark.parametrize("call,error,text", [
    (lambda x: F.interpolate(x), ValueError, "only one of size or scale_factor"),
    (lambda x: F.interpolate(x, size=3, scale_factor=2), ValueError, "only one of size or scale_factor"),
    (lambda x: F.interpolate(x, size=3, mode="linear"), NotImplementedError, "linear mode needs 3D"),
    (lambda x: F.interpolate(x, size=3, mode="nearest", align_corners=True), ValueError, "align_corners"),
    (lambda x: F.interpolate(x, size=3, mode="cubic"), NotImplementedError, "not supported"),
    (lambda x: F.interpolate(x, scale_factor=-1.0), ValueError, "positive"),
    (lambda x: F.interpolate(x, size=3, mode="bilinear", antialias=True), NotImplementedError, "antialias"),
])
def test_interpolate_bad_inputs(call, error, text):
    with pytest.raises(error, match=text):
        call(cn.zeros(1, 2, 4, 4))


def test_upsample_aliases():
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3))
    np.testing.assert_allclose(F.upsample_bilinear(cn.tensor(x), scale_factor=2).numpy(),
                               TF.interpolate(torch.tensor(x), scale_factor=2, mode="bilinear",
                                              align_corners=True).numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 1, 4, 2, 3), 1)])
def test_pixel_shuffle_matches_torch(shape, r):
    check_op([shape], lambda x: F.pixel_shuffle(x, r), lambda x: TF.pixel_shuffle(x, r))


@pytest.mark.parametrize("shape,r", [((2, 2, 6, 4), 2), ((1, 6, 3), 3)])
def test_pixel_unshuffle_matches_torch(shape, r):
    check_op([shape], lambda x: F.pixel_unshuffle(x, r), lambda x: TF.pixel_unshuffle(x, r))


def test_pixel_shuffle_bad_inputs():
    with pytest.raises(RuntimeError, match="divisible by the square"):
        F.pixel_shuffle(cn.zeros(1, 6, 2, 2), 2)
    with pytest.raises(RuntimeError, match="not divisible by 2"):
        F.pixel_unshuffle(cn.zeros(1, 1, 3, 2), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.pixel_shuffle(cn.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match="greater than 0"):
        F.pixel_shuffle(cn.zeros(1, 4, 2, 2), 0)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1,
                                                      "stride": (2, 1)}])
def test_unfold_matches_torch(kw):
    check_op([(2, 3, 5, 6)], lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw))
    check_op([(3, 5, 6)], lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw), dtypes=("float32",))


def test_fold_matches_torch_and_inverts_unfold_sums():
    kw = {"kernel_size": (2, 3), "padding": (1, 0), "stride": (2, 2)}
    check_op([(2, 12, 6)], lambda c: F.fold(c, (5, 6), **kw), lambda c: TF.fold(c, (5, 6), **kw))
    check_op([(12, 6)], lambda c: F.fold(c, (5, 6), **kw), lambda c: TF.fold(c, (5, 6), **kw), dtypes=("float32",))


def test_unfold_fold_bad_inputs():
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.unfold(cn.zeros(2, 3), 2)
    with pytest.raises(NotImplementedError, match="only 4-D input"):
        F.unfold(cn.zeros(1, 2, 3, 3, 3), (2, 2, 2))
    with pytest.raises(RuntimeError, match="non-positive"):
        F.unfold(cn.zeros(1, 2, 3, 3), 4)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(cn.zeros(1, 5, 4), (3, 3), 2)
    with pytest.raises(RuntimeError, match="number of sliding blocks 4"):
        F.fold(cn.zeros(1, 4, 5), (3, 3), 2)

"""``cupynet.ops._rows``: the last-axis reductions that softmax, layer norm and cross-entropy use on NumPy."""

import numpy as np
import pytest

from cupynet.ops import _rows

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5,), (3, 1), (2048, 32), (4, 3, 7, 64), (2, 1500)])
def test_row_max_equals_numpy_max(dtype, shape):
    a = RNG.standard_normal(shape).astype(dtype)
    got = _rows.row_max(a)
    assert got.dtype == a.dtype and got.shape == shape[:-1] + (1,)
    np.testing.assert_array_equal(got, a.max(axis=-1, keepdims=True))


def test_row_max_keeps_nan_and_infinities_as_max_does():
    a = np.array([[1.0, np.nan, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 2.0, np.nan], [-0.0, -5.0, -1.0]],
                 np.float32)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(_rows.row_max(a), a.max(axis=-1, keepdims=True))


def test_row_max_of_other_layouts_and_dtypes_is_numpy_max():
    a = RNG.standard_normal((6, 8)).astype(np.float32)
    for view in (a.T, a[:, ::2], a.astype(np.float16), (a * 10).astype(np.int32)):
        np.testing.assert_array_equal(_rows.row_max(view), view.max(axis=-1, keepdims=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 7, 64, 1024])
def test_row_sum_is_within_the_summation_bound(dtype, width):
    a = RNG.standard_normal((300, width)).astype(dtype)
    got = _rows.row_sum(a)
    exact = a.astype(np.longdouble).sum(axis=-1, keepdims=True)
    # NOTE: any order of n additions errs by at most (n - 1) u sum|x| (Higham, Accuracy and Stability, 4.2)
    u = np.finfo(dtype).eps / 2
    bound = (width - 1) * u * np.abs(a).astype(np.longdouble).sum(axis=-1, keepdims=True)
    assert got.dtype == a.dtype and got.shape == (300, 1)
    assert np.all(np.abs(got.astype(np.longdouble) - exact) <= bound)


def test_row_mean_divides_the_row_sum_by_the_width():
    a = RNG.standard_normal((9, 5, 40)).astype(np.float32)
    np.testing.assert_array_equal(_rows.row_mean(a), _rows.row_sum(a) / np.float32(40))
    # NOTE: both sums are within 39 u sum|x| of the exact one (see the bound above)
    bound = 2 * 39 * 6e-8 * np.abs(a).sum(axis=-1, keepdims=True) / 40
    assert np.all(np.abs(_rows.row_mean(a) - a.mean(axis=-1, keepdims=True)) <= bound)


def test_wide_rows_and_other_layouts_take_numpys_reduction():
    wide = RNG.standard_normal((3, _rows.GEMV_ROW_WIDTH + 1)).astype(np.float32)
    np.testing.assert_array_equal(_rows.row_sum(wide), wide.sum(axis=-1, keepdims=True))
    np.testing.assert_array_equal(_rows.row_mean(wide), wide.mean(axis=-1, keepdims=True))
    a = RNG.standard_normal((8, 6)).astype(np.float32)
    for view in (a.T, a.astype(np.float16), np.zeros((0, 4), np.float32)):
        np.testing.assert_array_equal(_rows.row_sum(view), view.sum(axis=-1, keepdims=True))


def test_softmax_layer_norm_and_cross_entropy_agree_with_the_plain_reductions():
    import cupynet as cn

    x = RNG.standard_normal((64, 48)).astype(np.float32)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    # NOTE: each probability: two sums of 48 terms (47 u each) and a few roundings
    np.testing.assert_allclose(cn.softmax(cn.tensor(x), dim=-1).numpy(), e / e.sum(axis=-1, keepdims=True),
                               rtol=100 * 6e-8, atol=0)
    mu = x.mean(axis=-1, keepdims=True)
    ln = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    # NOTE: the two 48-term sums err by at most 47 u relative each; a few more roundings per element
    np.testing.assert_allclose(cn.layer_norm(cn.tensor(x), 48).numpy(), ln, rtol=0, atol=64 * 6e-8 * np.abs(ln).max())

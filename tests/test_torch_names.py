"""torch names that real programs use, against torch: equal/allclose/isclose, take, mode, logspace, randint_like,
Embedding.from_pretrained, Tensor.byte/char/short, Bilinear, autograd.grad(only_inputs=...).

Forward values and gradients are compared with torch on the same inputs; the error cases check that cupynet
refuses what torch refuses, with a message naming what was wrong.
"""

import warnings

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(29)


def _pair(array, dtype="float64", grad=False):
    return (cn.tensor(array, dtype=getattr(cn, dtype), requires_grad=grad),
            torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=grad))


# ---- equal / allclose / isclose -------------------------------------------------------------------------------
CLOSE_VALUES = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, 0.0, 1e-9, 100.0])
CLOSE_OTHER = np.array([1.0 + 1e-6, 2.1, np.nan, np.inf, np.inf, 1e-8, 0.0, 100.001])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize(("rtol", "atol", "equal_nan"), [(1e-5, 1e-8, False), (1e-5, 1e-8, True), (0.1, 0.0, False),
                                                          (0.0, 0.2, True), (0.0, 0.0, False)])
def test_isclose_and_allclose_match_torch(dtype, rtol, atol, equal_nan):
    (ca, ta), (cb, tb) = _pair(CLOSE_VALUES, dtype), _pair(CLOSE_OTHER, dtype)
    want = torch.isclose(ta, tb, rtol, atol, equal_nan).numpy()
    np.testing.assert_array_equal(cn.isclose(ca, cb, rtol, atol, equal_nan).numpy(), want)
    np.testing.assert_array_equal(ca.isclose(cb, rtol=rtol, atol=atol, equal_nan=equal_nan).numpy(), want)
    for x, y, tx, ty in ((ca, cb, ta, tb), (ca, ca, ta, ta), (ca[:2], ca[:2] * 1.0, ta[:2], ta[:2] * 1.0)):
        assert cn.allclose(x, y, rtol, atol, equal_nan) is torch.allclose(tx, ty, rtol, atol, equal_nan)
        assert x.allclose(y, rtol, atol, equal_nan) is tx.allclose(ty, rtol, atol, equal_nan)


def test_isclose_of_integers_and_bools_matches_torch():
    a, b = np.array([1, 2, 3, -4, 100]), np.array([1, 3, 5, -4, 101])
    for atol, rtol in ((0, 0), (1, 0), (0, 0.01), (1.5, 0.5)):
        np.testing.assert_array_equal(cn.isclose(cn.tensor(a), cn.tensor(b), rtol, atol).numpy(),
                                      torch.isclose(torch.tensor(a), torch.tensor(b), rtol, atol).numpy())
    m, n = np.array([True, False, True]), np.array([True, True, False])
    np.testing.assert_array_equal(cn.isclose(cn.tensor(m), cn.tensor(n)).numpy(),
                                  torch.isclose(torch.tensor(m), torch.tensor(n)).numpy())


def test_isclose_broadcasts_as_torch():
    a, b = RNG.random((3, 1, 4)), RNG.random((5, 1))
    got = cn.isclose(cn.tensor(a), cn.tensor(b), rtol=0.5, atol=0.1).numpy()
    np.testing.assert_array_equal(got, torch.isclose(torch.tensor(a), torch.tensor(b), rtol=0.5, atol=0.1).numpy())
    with pytest.raises(ValueError, match="broadcast"):
        cn.allclose(cn.ones(2), cn.ones(3))


@pytest.mark.parametrize("fn", ["isclose", "allclose"])
def test_close_refuses_what_torch_refuses(fn):
    with pytest.raises(RuntimeError, match=f"{fn}\\(\\): Long did not match Float"):
        getattr(cn, fn)(cn.tensor([1, 2]), cn.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        getattr(cn, fn)(cn.ones(2), cn.ones(2), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        getattr(cn, fn)(cn.ones(2), cn.ones(2), atol=-0.5)
    with pytest.raises(TypeError, match="argument 'other' must be Tensor, not float"):
        getattr(cn, fn)(cn.ones(2), 1.0)


def test_equal_matches_torch():
    cases = [([1, 2], [1.0, 2.0]), ([1.0, 2.0], [1.0, 2.5]), ([np.nan], [np.nan]), ([[1.0], [2.0]], [1.0, 2.0]),
             ([], []), ([True, False], [True, False])]
    for a, b in cases:
        assert cn.equal(cn.tensor(a), cn.tensor(b)) is torch.equal(torch.tensor(a), torch.tensor(b)), (a, b)
        assert cn.tensor(a).equal(cn.tensor(b)) is torch.tensor(a).equal(torch.tensor(b))
    assert cn.equal(cn.ones(2, 1), cn.ones(1, 2)) is torch.equal(torch.ones(2, 1), torch.ones(1, 2)) is False
    with pytest.raises(TypeError, match="equal\\(\\): argument 'other' must be Tensor, not float"):
        cn.equal(cn.ones(2), 1.0)


# ---- take ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_take_forward_and_backward_match_torch(dtype):
    x = RNG.standard_normal((3, 4, 5))
    index = RNG.integers(-60, 60, size=(7, 3))  # NOTE: repeated and negative positions: the gradient accumulates
    (cx, tx) = _pair(x, dtype, grad=True)
    cy, ty = cn.take(cx, cn.tensor(index)), torch.take(tx, torch.tensor(index))
    np.testing.assert_array_equal(cy.detach().numpy(), ty.detach().numpy())
    cot = RNG.standard_normal(index.shape)
    cy.backward(cn.tensor(cot, dtype=cx.dtype))
    ty.backward(torch.tensor(cot, dtype=tx.dtype))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-6 if dtype == "float32" else 1e-14)
    np.testing.assert_array_equal(cx.detach().take(cn.tensor(index)).numpy(), cy.detach().numpy())


def test_take_refuses_what_torch_refuses():
    x = cn.arange(6.0)
    with pytest.raises(IndexError, match="take: index 6 is out of bounds"):
        cn.take(x, cn.tensor([6]))
    with pytest.raises(RuntimeError, match="take"):
        cn.take(x, cn.tensor([1.0]))
    with pytest.raises(RuntimeError, match="take\\(\\): Expected a long tensor for index, but got int32"):
        cn.take(x, cn.tensor([1], dtype=cn.int32))
    with pytest.raises(TypeError, match="take: expected index to be a Tensor"):
        cn.take(x, [1])


# ---- mode ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int64"])
@pytest.mark.parametrize(("shape", "dim", "keepdim"), [((3, 7), 1, False), ((3, 7), 0, True), ((2, 3, 5), 1, False),
                                                      ((6, 16), -1, True), ((5,), 0, False), ((), 0, False),
                                                      ((0, 4), 1, False)])
def test_mode_matches_torch_with_ties(dtype, shape, dim, keepdim):
    # NOTE: few distinct values, so ties of the count are frequent: the smallest value wins, as in torch
    a = RNG.integers(0, 4, size=shape).astype(np.float64)
    (cx, tx) = _pair(a, dtype)
    got, want = cn.mode(cx, dim, keepdim), torch.mode(tx, dim, keepdim)
    np.testing.assert_array_equal(got.values.double().numpy(), want.values.double().numpy())
    # NOTE: torch's CPU kernel picks the last position holding the mode in a row of up to 16 (its insertion sort)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    assert got.values.dtype == cx.dtype and got.indices.dtype == cn.int64


def test_mode_of_long_rows_has_torch_values_and_an_index_holding_the_value():
    a = RNG.integers(0, 5, size=(6, 50)).astype(np.float32)
    got, want = cn.mode(cn.tensor(a)), torch.mode(torch.tensor(a))
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    # NOTE: past 16 elements torch's index is wherever its unstable std::sort left the value: any holder is valid
    np.testing.assert_array_equal(a[np.arange(6), got.indices.numpy()], want.values.numpy())


def test_mode_backward_matches_torch():
    a = RNG.permutation(24).reshape(4, 6).astype(np.float64)
    a[:, 1] = a[:, 4]  # NOTE: one tie per row, with two positions of the same value (the index decides the grad)
    (cx, tx) = _pair(a, grad=True)
    cv, tv = cn.mode(cx, 1).values, torch.mode(tx, 1).values
    cot = RNG.standard_normal(4)
    cv.backward(cn.tensor(cot))
    tv.backward(torch.tensor(cot))
    np.testing.assert_array_equal(cx.grad.numpy(), tx.grad.numpy())
    assert cn.mode(cx, 1).values.grad_fn is not None


def test_mode_refuses_an_empty_reduced_dimension():
    with pytest.raises(IndexError, match="mode\\(\\): Expected reduction dim 1 to have non-zero size"):
        cn.mode(cn.zeros(2, 0))
    with pytest.raises(TypeError, match="mode: expected input to be a Tensor"):
        cn.mode([1, 2])


# ---- logspace, randint_like ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int64"])
@pytest.mark.parametrize(("start", "end", "steps", "base"), [(-2, 2, 5, 10.0), (0, 3, 4, 2), (1, 1, 1, 10.0),
                                                              (0, 1, 0, 10.0), (-3.5, 7.25, 33, 10.0),
                                                              (0.1, 5, 100, 2.5), (0.3, -4.7, 1001, 3.0)])
def test_logspace_matches_torch(dtype, start, end, steps, base):
    got = cn.logspace(start, end, steps, base=base, dtype=getattr(cn, dtype))
    want = torch.logspace(start, end, steps, base=base, dtype=getattr(torch, dtype))
    assert got.dtype == getattr(cn, dtype) and tuple(got.shape) == tuple(want.shape)
    g, w = got.double().numpy(), want.double().numpy()
    if dtype == "float64":
        # NOTE: both take one float64 pow per value; libm's pow and torch's may differ in its last bit
        np.testing.assert_allclose(g, w, rtol=2.0 ** -52, atol=0)
    else:
        np.testing.assert_array_equal(g, w)  # NOTE: the float64 value rounded once to the dtype: exact


def test_logspace_defaults_and_bad_steps():
    assert cn.logspace(0, 2, 3).dtype == cn.float32
    assert cn.logspace(0, 2, 3, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="number of steps must be a non-negative integer, got -1"):
        cn.logspace(0, 1, -1)


def test_randint_like_shape_dtype_and_range():
    x = cn.zeros(40, 50)
    y = cn.randint_like(x, 5)
    assert tuple(y.shape) == (40, 50) and y.dtype == cn.float32
    assert set(np.unique(y.numpy())) == {0.0, 1.0, 2.0, 3.0, 4.0}  # NOTE: 2000 draws: every value shows up
    z = cn.randint_like(x, 2, 5, dtype=cn.int64)
    assert z.dtype == cn.int64 and z.numpy().min() == 2 and z.numpy().max() == 4
    assert cn.randint_like(x, high=3, requires_grad=True).requires_grad
    assert cn.randint_like(cn.zeros(3, dtype=cn.int32), low=-2, high=0).dtype == cn.int32
    with pytest.raises(RuntimeError, match="from=5 >= to=2"):
        cn.randint_like(x, 5, 2)
    with pytest.raises(TypeError, match="randint_like: high is required"):
        cn.randint_like(x)


# ---- Embedding.from_pretrained, Tensor.byte/char/short ----------------------------------------------------------
@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_from_pretrained_matches_torch(freeze):
    table = RNG.standard_normal((6, 3))
    index = np.array([[0, 2, 2], [5, 1, 0]])
    layer = cn.nn.Embedding.from_pretrained(cn.tensor(table), freeze=freeze, padding_idx=2)
    ref = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze, padding_idx=2)
    assert layer.weight.requires_grad is ref.weight.requires_grad is (not freeze)
    assert layer.weight.dtype == cn.float64 and layer.padding_idx == ref.padding_idx == 2
    out, want = layer(cn.tensor(index)), ref(torch.tensor(index))
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())  # NOTE: padding row kept as given
    if not freeze:
        cot = RNG.standard_normal(want.shape)
        out.backward(cn.tensor(cot))
        want.backward(torch.tensor(cot))
        np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-14)
    with pytest.raises(ValueError, match="Embeddings parameter is expected to be 2-dimensional, got shape \\(6,\\)"):
        cn.nn.Embedding.from_pretrained(cn.ones(6))


def test_embedding_bag_from_pretrained_matches_torch():
    table = RNG.standard_normal((5, 2))
    layer = cn.nn.EmbeddingBag.from_pretrained(cn.tensor(table), mode="sum")
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), mode="sum")
    index, offsets = np.array([0, 3, 3, 1]), np.array([0, 2])
    np.testing.assert_allclose(layer(cn.tensor(index), cn.tensor(offsets)).numpy(),
                               ref(torch.tensor(index), torch.tensor(offsets)).numpy(), rtol=1e-14)


@pytest.mark.parametrize("method", ["byte", "char", "short"])
def test_integer_casts_match_torch(method):
    values = [-3.7, -1.2, 0.0, 0.5, 2.9, 100.6, 127.0, 200.0, 255.0, 300.0]
    got, want = getattr(cn.tensor(values), method)(), getattr(torch.tensor(values), method)()
    assert str(want.dtype) == f"torch.{got.dtype}"
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    ints = [-5, 0, 7, 120]
    np.testing.assert_array_equal(getattr(cn.tensor(ints), method)().numpy(),
                                  getattr(torch.tensor(ints), method)().numpy())


# ---- Bilinear ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_forward_and_backward_match_torch(bias):
    layer, ref = cn.nn.Bilinear(3, 4, 5, bias=bias, dtype=cn.float64), torch.nn.Bilinear(3, 4, 5, bias=bias,
                                                                                         dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.detach().numpy()))
        if bias:
            ref.bias.copy_(torch.tensor(layer.bias.detach().numpy()))
    a, b = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 4))
    (ca, ta), (cb, tb) = _pair(a, grad=True), _pair(b, grad=True)
    out, want = layer(ca, cb), ref(ta, tb)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-13, atol=1e-13)
    cot = RNG.standard_normal(want.shape)
    out.backward(cn.tensor(cot))
    want.backward(torch.tensor(cot))
    pairs = [(ca.grad, ta.grad), (cb.grad, tb.grad), (layer.weight.grad, ref.weight.grad)]
    if bias:
        pairs.append((layer.bias.grad, ref.bias.grad))
    for got, expected in pairs:
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    assert repr(layer) == repr(ref)


def test_bilinear_init_bound_and_errors():
    layer = cn.nn.Bilinear(16, 2, 300)
    bound = 1 / 4  # NOTE: 1/sqrt(in1_features), as torch
    assert tuple(layer.weight.shape) == (300, 16, 2) and np.abs(layer.weight.detach().numpy()).max() <= bound
    assert np.abs(layer.weight.detach().numpy()).max() > 0.9 * bound  # NOTE: 9600 draws reach near the bound
    assert np.abs(layer.bias.detach().numpy()).max() <= bound
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input2 size does not match weight size: got 5 but "
                                           "expected 2"):
        layer(cn.ones(3, 16), cn.ones(3, 5))
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 3 and 4"):
        layer(cn.ones(3, 16), cn.ones(4, 2))
    with pytest.raises(RuntimeError, match="bias size does not match weight size"):
        cn.nn.functional.bilinear(cn.ones(3, 16), cn.ones(3, 2), layer.weight, cn.ones(4))


# ---- autograd.grad(only_inputs=...) ---------------------------------------------------------------------------
def test_grad_accepts_only_inputs_as_torch():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NOTE: only_inputs=True is silent in torch
        (g,) = cn.autograd.grad((x * x).sum(), x, only_inputs=True, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [2.0, 4.0])
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated and is ignored now"):
        (g2,) = cn.autograd.grad((x * x).sum(), x, None, None, False, False)
    np.testing.assert_array_equal(g2.numpy(), [2.0, 4.0])
    assert x.grad is None

"""Activations (cupynet/ops/activation.py, smooth_activation.py, softmax_family.py) and dropout (ops/dropout.py)."""

import importlib

import numpy as np
import pytest
from op_harness import check_op, host

import cupynet as cn
from cupynet.ops import activation, smooth_activation, softmax_family

dropout_module = importlib.import_module("cupynet.ops.dropout")  # NOTE: cupynet.ops.dropout is the function
ACTIVATION_MODULES = (activation, smooth_activation, softmax_family)

# (cupynet call, torch.nn.functional call by name and kwargs, input range)
POINTWISE = [
    ("relu", {}, -2, 2), ("relu6", {}, -2, 8), ("leaky_relu", {"negative_slope": 0.2}, -2, 2),
    ("elu", {"alpha": 1.5}, -3, 3), ("gelu", {}, -3, 3), ("gelu", {"approximate": "tanh"}, -3, 3),
    ("silu", {}, -4, 4), ("mish", {}, -4, 4), ("sigmoid", {}, -5, 5), ("hardtanh", {"min_val": -0.5, "max_val": 1.5},
                                                                        -2, 2),
    ("hardsigmoid", {}, -5, 5), ("hardswish", {}, -5, 5), ("softplus", {}, -3, 3),
    ("softplus", {"beta": 2.0, "threshold": 3.0}, -3, 3),
]


@pytest.mark.parametrize("name,kwargs,low,high", POINTWISE)
def test_pointwise_activation_matches_torch(name, kwargs, low, high):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    check_op([(3, 5)], lambda a: getattr(cn, name)(a, **kwargs),
             torch_fn=lambda a: getattr(functional, name)(a, **kwargs), low=low, high=high)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_match_torch(dim):
    torch = pytest.importorskip("torch")
    check_op([(3, 4)], lambda a: cn.softmax(a, dim) * a, torch_fn=lambda a: torch.softmax(a, dim) * a)
    check_op([(3, 4)], lambda a: cn.log_softmax(a, dim) * a, torch_fn=lambda a: torch.log_softmax(a, dim) * a)


def test_softmax_dtype_argument_casts_first():
    x = cn.tensor([[1.0, 2.0, 3.0]], dtype=cn.float16, requires_grad=True)
    y = cn.softmax(x, dim=1, dtype=cn.float32)
    assert y.dtype == cn.float32
    (y * cn.tensor([[1.0, 0.0, 0.0]])).sum().backward()
    assert x.grad.dtype == cn.float16
    assert cn.log_softmax(x.detach(), 1, dtype="float64").dtype == cn.float64


def test_softmax_is_stable_for_huge_and_half_inputs():
    big = cn.tensor([[1000.0, 1001.0, 1002.0], [-1e4, 0.0, 1e4]])
    out = cn.softmax(big, dim=1).numpy()
    assert np.all(np.isfinite(out)) and np.allclose(out.sum(axis=1), 1.0)
    np.testing.assert_allclose(out[0], np.exp([-2, -1, 0]) / np.exp([-2, -1, 0]).sum(), rtol=1e-6)
    log_out = cn.log_softmax(big, dim=1).numpy()
    np.testing.assert_allclose(log_out[1], [-2e4, -1e4, 0.0], rtol=1e-6)
    half = cn.softmax(cn.tensor([60000.0, 65000.0], dtype=cn.float16), dim=0)
    assert half.dtype == cn.float16 and np.allclose(host(half), [0.0, 1.0])


def test_softmax_of_0d_tensor():
    assert cn.softmax(cn.tensor(3.0), dim=0).item() == 1.0
    assert cn.log_softmax(cn.tensor(3.0), dim=-1).item() == 0.0


def test_sigmoid_softplus_tails_keep_precision():
    x = cn.tensor([-40.0, 40.0, -800.0, 800.0], dtype=cn.float64)
    s = cn.sigmoid(x).numpy()
    np.testing.assert_allclose(s[0], np.exp(-40.0) / (1 + np.exp(-40.0)), rtol=1e-14)
    assert s[1] == 1.0 and s[2] == 0.0 and s[3] == 1.0
    sp = cn.softplus(x).numpy()
    np.testing.assert_allclose(sp[[0, 1, 3]], [np.log1p(np.exp(-40.0)), 40.0, 800.0], rtol=1e-14)
    xs = cn.tensor([100.0, 12.0, -100.0], dtype=cn.float16, requires_grad=True)
    cn.elu(xs).sum().backward()  # NOTE: exp(12) overflows float16; the gradient must still be finite
    assert np.all(np.isfinite(xs.grad.numpy()))


def test_prelu_matches_torch_single_and_per_channel():
    torch = pytest.importorskip("torch")
    prelu = torch.nn.functional.prelu
    check_op([(2, 3, 4), (3,)], lambda a, w: cn.prelu(a, w), torch_fn=lambda a, w: prelu(a, w))
    check_op([(2, 3), (1,)], lambda a, w: cn.prelu(a, w), torch_fn=lambda a, w: prelu(a, w))
    check_op([(4,), (1,)], lambda a, w: a.prelu(w), torch_fn=lambda a, w: prelu(a, w))


def test_prelu_bad_weights():
    x = cn.randn(2, 3, 4)
    with pytest.raises(ValueError, match="prelu: Mismatch of parameter numbers and input channel size. Found "
                                         "parameter numbers = 4 and channel size = 3."):
        cn.prelu(x, cn.ones(4))
    with pytest.raises(ValueError, match=r"prelu: weight must be 0-d or 1-D, got shape \(3, 1\)"):
        cn.prelu(x, cn.ones(3, 1))
    with pytest.raises(TypeError, match="prelu: expected weight to be a Tensor, got float"):
        cn.prelu(x, 0.25)


def test_glu_matches_torch():
    torch = pytest.importorskip("torch")
    glu = torch.nn.functional.glu
    check_op([(3, 4)], lambda a: cn.glu(a), torch_fn=lambda a: glu(a))
    check_op([(4, 3)], lambda a: cn.glu(a, dim=0), torch_fn=lambda a: glu(a, dim=0))


def test_glu_odd_dimension():
    with pytest.raises(RuntimeError, match="glu: Halving dimension must be even, but dimension 1 is size 3"):
        cn.glu(cn.randn(2, 3))


def test_bad_arguments_are_clear_errors():
    x = cn.randn(2, 3)
    with pytest.raises(ValueError, match="gelu: approximate must be one of 'none', 'tanh', got 'fast'"):
        cn.gelu(x, approximate="fast")
    with pytest.raises(IndexError, match=r"softmax: Dimension out of range \(expected to be in range of \[-2, 1\], "
                                         r"but got 2\)"):
        cn.softmax(x, dim=2)
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax has been deprecated"):
        cn.log_softmax(x, None)  # NOTE: F.log_softmax's legacy choice (dim 1 here), tested against torch elsewhere
    with pytest.raises(TypeError, match="softmax: dtype must be a floating dtype, got int64"):
        cn.softmax(x, 1, dtype=cn.int64)
    with pytest.raises(ValueError, match="softplus: beta must be non-zero"):
        cn.softplus(x, beta=0)
    with pytest.raises(ValueError, match=r"hardtanh: max_val \(-1.0\) must be greater than or equal to min_val"):
        cn.hardtanh(x, 0.0, -1.0)
    with pytest.raises(ValueError, match="leaky_relu: negative_slope must be a finite number, got 'a'"):
        cn.leaky_relu(x, "a")
    with pytest.raises(TypeError, match="relu: Boolean inputs not supported for relu"):
        cn.relu(cn.tensor([True, False]))
    with pytest.raises(TypeError, match="leaky_relu: expected a floating point input .* got int64"):
        cn.leaky_relu(cn.tensor([1, -2]))
    with pytest.raises(TypeError, match="sigmoid: expected input to be a Tensor, got list"):
        cn.sigmoid([1.0])


def test_inplace_writes_into_the_input_only_when_no_graph_is_recorded():
    x = cn.tensor([-1.0, 2.0])
    version = x._version
    assert cn.relu(x, inplace=True) is x and x.numpy().tolist() == [0.0, 2.0] and x._version == version + 1
    w = cn.tensor([-1.0, 2.0], requires_grad=True)
    out = cn.hardtanh(w, inplace=True)
    assert out is not w and w.detach().numpy().tolist() == [-1.0, 2.0] and out.grad_fn is not None
    with cn.no_grad():
        assert cn.leaky_relu(w, 0.5, inplace=True) is w
    assert w.detach().numpy().tolist() == [-0.5, 2.0]


def test_amp_policies_and_autocast_result_dtype():
    modules = {m.__name__ for m in ACTIVATION_MODULES}
    policies = {cls.op_name: cls.amp_policy for cls in cn.ops.OP_CLASSES if cls.__module__ in modules}
    assert policies["softmax"] == policies["log_softmax"] == policies["softplus"] == "fp32"
    assert policies["prelu"] == "lower"
    for name in ("relu", "gelu", "silu", "sigmoid", "elu", "leaky_relu", "hardtanh", "mish", "glu"):
        assert policies[name] is None, name
    assert dropout_module.Dropout.amp_policy is None
    amp = pytest.importorskip("cupynet.amp")
    x = cn.randn(2, 3, dtype=cn.float16)
    with amp.autocast("cpu", dtype=cn.float16):
        assert cn.softmax(x, 1).dtype == cn.float32
        assert cn.log_softmax(x, 1).dtype == cn.float32
        assert cn.relu(x).dtype == cn.float16
        assert cn.prelu(cn.randn(2, 3), cn.ones(3)).dtype == cn.float16


def test_public_functions_have_docstrings_and_methods():
    for module in (*ACTIVATION_MODULES, dropout_module):
        for name in module.__all__:
            doc = getattr(module, name).__doc__
            assert doc and "Args:" in doc, name
    for name in ("relu", "sigmoid", "softmax", "log_softmax", "prelu"):
        assert name in cn.ops.TENSOR_METHODS


# ---- dropout ---------------------------------------------------------------------------------
def test_dropout_zeroes_about_p_and_scales_the_rest():
    cn.manual_seed(0)
    x = cn.ones(200, 100)
    out = cn.dropout(x, p=0.3).numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - 0.3) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_gradient_is_the_same_mask():
    cn.manual_seed(1)
    x = cn.randn(6, 7, requires_grad=True)
    out = cn.dropout(x, p=0.5)
    out.sum().backward()
    scale = out.detach().numpy() / x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), scale, rtol=1e-5)
    assert set(np.round(np.unique(scale), 5)) <= {0.0, 2.0}


def test_dropout_gradcheck_with_a_reseeded_mask():
    def seeded(a):
        cn.manual_seed(3)
        return cn.dropout(a, p=0.4) * a
    check_op([(3, 4)], seeded, dtypes=())  # NOTE: no oracle: gradcheck and gradgradcheck in float64 only


def test_dropout_edge_probabilities_and_eval_mode():
    x = cn.randn(4, 5, requires_grad=True)
    assert cn.dropout(x, p=0.5, training=False) is x
    assert np.all(cn.dropout(x, p=1.0).detach().numpy() == 0)
    np.testing.assert_array_equal(cn.dropout(x, p=0.0).detach().numpy(), x.detach().numpy())
    half = cn.randn(4, 5, dtype=cn.float16)
    assert cn.dropout(half, 0.5).dtype == cn.float16


def test_dropout_is_reproducible_with_manual_seed():
    x = cn.ones(50)
    cn.manual_seed(42)
    first = cn.dropout(x, 0.5).numpy()
    cn.manual_seed(42)
    np.testing.assert_array_equal(cn.dropout(x, 0.5).numpy(), first)


def test_dropout_bad_arguments_leave_input_untouched():
    x = cn.ones(3)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"dropout: dropout probability has to be between 0 and 1, but got p={p}"):
            cn.dropout(x, p=p)
    with pytest.raises(TypeError, match="dropout: p must be a number in"):
        cn.dropout(x, p="0.5")
    with pytest.raises(TypeError, match="dropout: expected a floating point input"):
        cn.dropout(cn.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="dropout2d: Feature dropout requires at least 2 dimensions"):
        cn.dropout2d(cn.ones(3))
    with pytest.raises(ValueError, match=r"dropout1d: expected a 2-D \(C, L\) or 3-D"):
        cn.dropout1d(cn.ones(2, 3, 4, 5))
    assert x.numpy().tolist() == [1.0, 1.0, 1.0] and x._version == 0


def test_dropout_inplace_and_dropout2d_channels():
    cn.manual_seed(5)
    x = cn.ones(1000)
    assert cn.dropout(x, 0.5, inplace=True) is x and x._version == 1
    assert set(np.unique(x.numpy())) <= {0.0, 2.0} and 0 < (x.numpy() == 0).sum() < 1000
    images = cn.ones(8, 16, 3, 3)
    out = cn.dropout2d(images, p=0.5).numpy()
    per_channel = out.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(axis=2) | (per_channel == 2.0).all(axis=2))
    assert 0 < (per_channel[:, :, 0] == 0).sum() < 128


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_zero_where_not_keeps_bits_and_zeroes_inf_and_nan(dtype):
    from cupynet.ops._util import zero_where_not
    dt = cn.dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    grad = np.array([[1.5, -0.0, np.inf, np.nan], [-np.inf, 2.0, np.nan, -3.0]], dtype=np.float64).astype(dt)
    mask = np.array([[True, True, False, False], [True, False, True, False]])
    for g in (grad, np.asfortranarray(grad), grad.T.copy().T):  # contiguous, Fortran and strided views
        out = zero_where_not(mask, g, np)
        expected = np.where(mask, g, g.dtype.type(0))
        assert out.dtype == g.dtype and out.shape == g.shape
        assert out.tobytes() == np.ascontiguousarray(expected).tobytes()  # bit for bit: -0.0, NaN payloads, +0
    assert np.signbit(zero_where_not(mask, grad, np)[0, 2]) == np.False_  # masked inf becomes +0, not NaN


def test_relu_backward_zeroes_inf_gradient_where_the_output_is_not_positive():
    x = cn.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    cn.relu(x).backward(cn.tensor([np.inf, np.nan, np.inf]))
    assert x.grad.tolist() == [0.0, 0.0, np.inf]


# ---- integer and bool inputs, op by op against PyTorch (issue 16) ------------------------------------------------
_INT_VALUES = {"int64": [-7, -3, -1, 0, 1, 2, 5, 9], "int32": [-7, -3, -1, 0, 1, 2, 5, 9],
               "int8": [-128, -3, -1, 0, 1, 2, 7, 127], "uint8": [0, 1, 2, 5, 7, 100, 250, 255],
               "bool": [True, False, True, True, False, False, True, False]}
# NOTE: PyTorch computes relu/relu6/hardtanh in the integer dtype (bool refused), promotes sigmoid/tanh to the
# default float dtype, and has no integer kernel for the rest (cupynet refuses those too)
_INT_CALLS = {
    "relu": lambda f, x: f.relu(x), "relu-inplace": lambda f, x: f.relu(x, inplace=True),
    "relu6": lambda f, x: f.relu6(x), "relu6-inplace": lambda f, x: f.relu6(x, inplace=True),
    "hardtanh": lambda f, x: f.hardtanh(x), "hardtanh-truncated": lambda f, x: f.hardtanh(x, -1.5, 2.5),
    "hardtanh-positive": lambda f, x: f.hardtanh(x, 0.9, 6.7), "hardtanh-half": lambda f, x: f.hardtanh(x, -0.5, 3.0),
    "hardtanh-overflow": lambda f, x: f.hardtanh(x, -300.0, 3.0),
    "sigmoid": lambda f, x: f.sigmoid(x), "tanh": lambda f, x: f.tanh(x),
    "softmax-dtype": lambda f, x: f.softmax(x, 0, dtype="float64"),
    "log_softmax-dtype": lambda f, x: f.log_softmax(x, 0, dtype="float64"),
    "softmax": lambda f, x: f.softmax(x, 0), "log_softmax": lambda f, x: f.log_softmax(x, 0),
    "leaky_relu": lambda f, x: f.leaky_relu(x), "elu": lambda f, x: f.elu(x), "gelu": lambda f, x: f.gelu(x),
    "silu": lambda f, x: f.silu(x), "mish": lambda f, x: f.mish(x), "hardsigmoid": lambda f, x: f.hardsigmoid(x),
    "hardswish": lambda f, x: f.hardswish(x), "softplus": lambda f, x: f.softplus(x),
    "glu": lambda f, x: f.glu(x, 0), "prelu": lambda f, x: f.prelu(x, x[:1]),
}


class _TorchF:
    """``torch.nn.functional`` with a dtype given by name (``dtype="float64"``), as cupynet accepts it."""

    def __getattr__(self, name):
        torch = pytest.importorskip("torch")
        fn = getattr(torch.nn.functional, name)
        return lambda *a, dtype=None, **kw: fn(*a, **kw) if dtype is None else fn(*a, dtype=getattr(torch, dtype),
                                                                                 **kw)


@pytest.mark.parametrize("dtype", list(_INT_VALUES))
@pytest.mark.parametrize("name", list(_INT_CALLS))
def test_integer_and_bool_inputs_as_torch(name, dtype):
    torch = pytest.importorskip("torch")
    array = np.array(_INT_VALUES[dtype], dtype=dtype)
    call = _INT_CALLS[name]
    try:
        x = torch.tensor(array)
        want = call(_TorchF(), x)
    except Exception:  # noqa: BLE001 - torch refuses: cupynet must refuse too
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            call(cn.nn.functional, cn.tensor(array))
        return
    xc = cn.tensor(array)
    got = call(cn.nn.functional, xc)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    if want.is_floating_point():
        # NOTE: both compute in the result's float dtype from exactly converted inputs: a few ulps apart at most
        np.testing.assert_allclose(host(got), want.double().numpy(), rtol=4 * 2.0 ** -23, atol=0)
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    if name.endswith("-inplace"):  # NOTE: no graph to record on an integer tensor, so in place, as torch
        assert got is xc
        np.testing.assert_array_equal(xc.numpy(), x.numpy())


@pytest.mark.parametrize("shape", [(64, 32), (2, 8, 3, 2, 2)])
def test_dropout2d_of_other_ranks_warns_and_drops_per_sample_and_channel_as_torch(shape):
    # NOTE: PyTorch's deprecated path (pytorch/examples mnist_rnn calls dropout2d on (N, C) activations)
    x = cn.ones(*shape)
    with pytest.warns(UserWarning, match=f"Received a {len(shape)}-D input to dropout2d"):
        y = cn.dropout2d(x, p=0.5, training=True).numpy()
    per_channel = y.reshape(shape[0], shape[1], -1)
    assert np.all(per_channel == per_channel[..., :1])  # one draw per (N, C), broadcast over the rest
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.2 < (y == 0).mean() < 0.8
    with pytest.warns(UserWarning):
        assert cn.dropout2d(x, p=0.5, training=False) is x


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4), (2, 3, 2, 2)])
def test_implicit_dim_is_torch_legacy_choice_with_its_warning(name, shape):
    # NOTE: issue 13: the old tutorials call F.log_softmax(x) without dim (nlp/sequence_models_tutorial)
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(len(shape)).standard_normal(shape)
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated"):
        ours = getattr(cn.nn.functional, name)(cn.tensor(values))
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
        theirs = getattr(torch.nn.functional, name)(torch.tensor(values))
    # NOTE: float64, a max, an exp, a sum and a log: 16 ulps leaves room for another libm
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=16 * 2.0 ** -52, atol=16 * 2.0 ** -52)

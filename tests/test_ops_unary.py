"""One-input math ops (cupynet/ops/unary.py, trigonometric.py, rounding.py, clamping.py): values, gradients, double
backward, edge values, errors, AMP policies."""

import math
import warnings

import numpy as np
import pytest
from op_harness import check_op, host

import cupynet as cn
from cupynet.ops import _special, clamping, rounding, trigonometric, unary

UNARY_MODULES = (unary, trigonometric, rounding, clamping)

# (name, low, high): inputs are drawn inside each op's domain, away from kinks and poles
SMOOTH_OPS = [
    ("exp", -2, 2), ("log", 0.5, 3), ("sqrt", 0.5, 3), ("rsqrt", 0.5, 3), ("square", -2, 2),
    ("reciprocal", 0.5, 2), ("sin", -3, 3), ("cos", -3, 3), ("tan", -1.2, 1.2), ("sinh", -2, 2),
    ("cosh", -2, 2), ("asin", -0.9, 0.9), ("acos", -0.9, 0.9), ("atan", -3, 3), ("tanh", -3, 3),
    ("erf", -2.5, 2.5), ("erfinv", -0.9, 0.9), ("expm1", -2, 2), ("log2", 0.5, 3), ("log10", 0.5, 3),
    ("log1p", -0.5, 2), ("abs", -2, 2),
]


def _torch_name(name):
    return {"erfinv": "erfinv"}.get(name, name)


@pytest.mark.parametrize("name,low,high", SMOOTH_OPS)
def test_smooth_op_matches_torch_with_double_backward(name, low, high):
    torch = pytest.importorskip("torch")
    check_op([(3, 4)], lambda a: getattr(cn, name)(a), torch_fn=lambda a: getattr(torch, _torch_name(name))(a),
             low=low, high=high)


@pytest.mark.parametrize("name", ["sqrt", "erf", "tanh", "log1p", "sin"])
def test_bfloat16_inputs(name):
    torch = pytest.importorskip("torch")
    check_op([(2, 3)], lambda a: getattr(cn, name)(a), torch_fn=lambda a: getattr(torch, name)(a),
             dtypes=("bfloat16",), low=0.1, high=1.5, gradgrad=False)


def test_tensor_methods_and_operators():
    x = cn.tensor([[-1.5, 0.25], [2.0, -0.5]])
    assert np.allclose(x.abs().numpy(), np.abs(x.numpy()))
    assert np.allclose(abs(x).numpy(), np.abs(x.numpy()))
    assert np.allclose(x.abs().sqrt().numpy(), np.sqrt(np.abs(x.numpy())))
    assert np.allclose(x.clip(min=0).numpy(), np.clip(x.numpy(), 0, None))
    assert x.isfinite().dtype == cn.bool_ and bool(x.isfinite().numpy().all())


def test_half_is_computed_in_fp32_and_rounded_once():
    values = np.linspace(0.1, 3.0, 64, dtype=np.float32)
    half = cn.tensor(values, dtype=cn.float16)
    for name in ("exp", "log", "sqrt", "erf", "tanh", "sin"):
        out = getattr(cn, name)(half)
        assert out.dtype == cn.float16
        reference = getattr(cn, name)(half.float()).numpy().astype(np.float16)
        np.testing.assert_array_equal(out.numpy(), reference, err_msg=name)


def test_erf_reference_accuracy_float64():
    xs = np.concatenate([np.linspace(-7, 7, 20001), [0.0, -0.0, 1e-300, 2.5, -2.5, 30.0]])
    got = _special.erf_reference(np, xs)
    want = np.array([math.erf(v) for v in xs])
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    special = _special.erf_reference(np, np.array([np.inf, -np.inf, np.nan]))
    assert special[0] == 1.0 and special[1] == -1.0 and np.isnan(special[2])


def test_erf_reference_float32_keeps_dtype_and_accuracy():
    xs = np.linspace(-6, 6, 40001).astype(np.float32)
    got = _special.erf_reference(np, xs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [math.erf(v) for v in xs.astype(np.float64)],
                               atol=_special.ERF_FLOAT32_MAX_ABS_ERROR, rtol=0)


def test_erf_float32_rational_within_its_documented_bound_on_a_dense_float32_sweep():
    # NOTE: every 61st float32 in [2^-12, 4] (~550k values, all exponents), against the float64 path
    lo, hi = np.float32([2.0**-12, 4.0]).view(np.int32)
    xs = np.arange(lo, hi + 1, 61, dtype=np.int32).view(np.float32)
    got = _special.erf_reference(np, xs)
    err = np.abs(got.astype(np.float64) - _special.erf_reference(np, xs.astype(np.float64)))
    assert err.max() <= _special.ERF_FLOAT32_MAX_ABS_ERROR
    assert err.max() > 0.5 * _special.ERF_FLOAT32_MAX_ABS_ERROR  # NOTE: the bound is tight, not padded
    np.testing.assert_array_equal(_special.erf_reference(np, -xs), -got)  # odd
    assert np.abs(got).max() <= 1.0


def test_erf_float32_is_relatively_accurate_near_zero_and_exact_at_the_edges():
    tiny = np.float32([1e-30, 1e-20, 1e-10, 1e-5, 2.0**-13])
    want = np.array([math.erf(v) for v in tiny.astype(np.float64)])
    np.testing.assert_allclose(_special.erf_reference(np, tiny), want, rtol=2 * np.finfo(np.float32).eps)
    edge = _special.erf_reference(np, np.float32([0.0, -0.0, 4.0, 10.0, np.inf, -np.inf, np.nan]))
    assert edge.dtype == np.float32 and np.signbit(edge[1]) and list(edge[:6]) == [0, 0, 1, 1, 1, -1]
    assert np.isnan(edge[6])


def test_erfinv_reference_accuracy_and_tails():
    torch = pytest.importorskip("torch")
    ys = np.concatenate([np.linspace(-0.999999, 0.999999, 20001), 1 - np.logspace(-15, -1, 100), [0.0, 1e-300]])
    got = _special.erfinv_reference(np, ys)
    want = torch.special.erfinv(torch.tensor(ys)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    single = _special.erfinv_reference(np, ys[:20001].astype(np.float32))  # NOTE: within float32 rounding
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, torch.special.erfinv(torch.tensor(ys[:20001].astype(np.float32)).double()),
                               rtol=1.2e-7)
    edge = cn.erfinv(cn.tensor([1.0, -1.0, 1.5, -2.0, 0.0], dtype=cn.float64)).numpy()
    assert edge[0] == np.inf and edge[1] == -np.inf and np.isnan(edge[2]) and np.isnan(edge[3]) and edge[4] == 0


def test_erf_erfinv_round_trip():
    ys = np.linspace(-0.99, 0.99, 199)
    back = cn.erf(cn.erfinv(cn.tensor(ys, dtype=cn.float64))).numpy()
    np.testing.assert_allclose(back, ys, rtol=1e-13, atol=1e-15)


@pytest.mark.cuda  # compares CuPy's erf/erfinv with the NumPy reference
def test_cupy_erf_kernels_match_reference():
    cupy = pytest.importorskip("cupy")
    xs = np.linspace(-0.99, 0.99, 1001)
    np.testing.assert_allclose(cupy.asnumpy(_special.erf_kernel(cupy, cupy.asarray(xs))),
                               _special.erf_reference(np, xs), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(cupy.asnumpy(_special.erfinv_kernel(cupy, cupy.asarray(xs))),
                               _special.erfinv_reference(np, xs), rtol=1e-12)


def test_no_numpy_warnings_at_domain_edges():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = cn.log(cn.tensor([0.0, -1.0]))
        assert out.numpy()[0] == -np.inf and np.isnan(out.numpy()[1])
        assert np.isnan(cn.sqrt(cn.tensor([-1.0])).numpy()[0])
        assert cn.reciprocal(cn.tensor([0.0])).numpy()[0] == np.inf


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "sign"])
def test_piecewise_constant_ops_values_and_zero_gradient(name):
    torch = pytest.importorskip("torch")
    values = np.array([-2.5, -1.5, -0.7, -0.0, 0.3, 0.5, 1.5, 2.5, 3.7])
    x = cn.tensor(values, requires_grad=True)
    out = getattr(cn, name)(x)
    np.testing.assert_array_equal(host(out), getattr(torch, name)(torch.tensor(values, dtype=torch.float32)).numpy())
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(len(values), dtype=np.float32))


def test_rounding_integers_is_a_copy_with_the_same_dtype():
    ints = cn.tensor([-3, 0, 7])
    for name in ("floor", "ceil", "trunc", "round"):
        out = getattr(cn, name)(ints)
        assert out.dtype == cn.int64 and out.numpy().tolist() == [-3, 0, 7]
        assert out.array is not ints.array


def test_round_decimals_matches_torch():
    torch = pytest.importorskip("torch")
    values = np.array([1.2345, -2.5551, 123.456, 0.125])
    for decimals in (0, 1, 2, -1):
        got = cn.round(cn.tensor(values, dtype=cn.float64), decimals=decimals).numpy()
        want = torch.round(torch.tensor(values), decimals=decimals).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"decimals={decimals}")
    with pytest.raises(TypeError, match=r"round: decimals must be an int, got 1.5"):
        cn.round(cn.tensor([1.0]), decimals=1.5)


def test_clamp_scalar_bounds():
    torch = pytest.importorskip("torch")
    check_op([(3, 4)], lambda a: cn.clamp(a, -0.5, 0.7) * a, torch_fn=lambda a: torch.clamp(a, -0.5, 0.7) * a)
    check_op([(3, 4)], lambda a: cn.clamp(a, min=0.1) * a, torch_fn=lambda a: torch.clamp(a, min=0.1) * a)
    check_op([(3, 4)], lambda a: cn.clip(a, max=0.3) * a, torch_fn=lambda a: torch.clip(a, max=0.3) * a)


def test_clamp_gradient_is_one_inside_zero_outside():
    x = cn.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], requires_grad=True)
    cn.clamp(x, -1.0, 1.0).sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_clamp_tensor_bounds_broadcast_and_receive_gradients():
    torch = pytest.importorskip("torch")
    check_op([(3, 4), (4,), (3, 1)], lambda a, lo, hi: cn.clamp(a, lo - 1.0, hi + 1.0),
             torch_fn=lambda a, lo, hi: torch.clamp(a, lo - 1.0, hi + 1.0))
    # NOTE: min > max everywhere: the output is max, and max gets the whole gradient (PyTorch's rule)
    check_op([(3, 4), (3, 4), (3, 4)], lambda a, lo, hi: cn.clamp(a, lo + 3.0, hi - 3.0),
             torch_fn=lambda a, lo, hi: torch.clamp(a, lo + 3.0, hi - 3.0))


def test_clamp_keeps_nan_and_integer_dtypes():
    assert np.isnan(cn.clamp(cn.tensor([np.nan]), 0.0, 1.0).numpy()[0])
    ints = cn.clamp(cn.tensor([-5, 0, 5]), -1, 2)
    assert ints.dtype == cn.int64 and ints.numpy().tolist() == [-1, 0, 2]
    assert cn.clamp(cn.tensor([-5, 5]), min=0.5).dtype == cn.float32


def test_clamp_bad_arguments():
    x = cn.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="clamp: at least one of 'min' or 'max' must not be None"):
        cn.clamp(x)
    with pytest.raises(TypeError, match="clamp: min must be a number, a Tensor or None, got str"):
        cn.clamp(x, min="0")
    with pytest.raises(ValueError, match="clamp: max is nan"):
        cn.clamp(x, max=float("nan"))


def test_nan_to_num_values_and_gradient():
    torch = pytest.importorskip("torch")
    values = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0])
    for dtype, torch_dtype in ((cn.float32, torch.float32), (cn.float16, torch.float16), (cn.float64, torch.float64)):
        got = cn.nan_to_num(cn.tensor(values, dtype=dtype)).numpy()
        want = torch.nan_to_num(torch.tensor(values, dtype=torch_dtype)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=str(dtype))
    custom = cn.nan_to_num(cn.tensor(values), nan=7.0, posinf=8.0, neginf=-9.0).numpy()
    assert custom.tolist() == [7.0, 8.0, -9.0, 1.5, -2.0]
    x = cn.tensor(values, requires_grad=True)
    cn.nan_to_num(x).sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]


def test_nan_to_num_bfloat16_uses_its_own_largest_value():
    out = cn.nan_to_num(cn.tensor([np.inf, -np.inf, np.nan], dtype=cn.bfloat16))
    assert out.dtype == cn.bfloat16
    largest = float(np.finfo(np.float32).max)  # bfloat16 shares float32's exponent range
    np.testing.assert_allclose(host(out), [largest, -largest, 0.0], rtol=1e-2)
    with pytest.raises(TypeError, match="nan_to_num: posinf must be a number or None, got str"):
        cn.nan_to_num(out, posinf="big")


def test_finiteness_predicates():
    x = cn.tensor([1.0, np.nan, np.inf, -np.inf])
    assert cn.isfinite(x).numpy().tolist() == [True, False, False, False]
    assert cn.isnan(x).numpy().tolist() == [False, True, False, False]
    assert cn.isinf(x).numpy().tolist() == [False, False, True, True]
    assert cn.isfinite(cn.tensor([1, 2])).numpy().tolist() == [True, True]
    assert x.isnan().requires_grad is False


# ---- integer and bool inputs, op by op against PyTorch (issue 16) ------------------------------------------------
_FLOATING_OPS = ["exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos",
                 "atan", "tanh", "erf", "erfinv", "expm1", "log2", "log10", "log1p"]
_INTEGER_OPS = ["abs", "sign", "square", "floor", "ceil", "round", "trunc", "nan_to_num", "isfinite", "isnan",
                "isinf"]
_INT_VALUES = {"int64": [-3, -1, 0, 1, 2, 7, 2049], "int32": [-3, -1, 0, 1, 2, 7, 2049],
               "int16": [-3, -1, 0, 1, 2, 7, 300], "int8": [-128, -1, 0, 1, 2, 7, 127],
               "uint8": [0, 1, 2, 7, 100, 250, 255], "bool": [True, False, True, True, False, False, True]}


def _outcome(fn):
    """``("ok", result)`` or ``("raises", exception)``."""
    try:
        return "ok", fn()
    except Exception as error:  # noqa: BLE001 - the outcome itself is compared
        return "raises", error


def check_against_torch(name, call, dtype, values=None, rtol=4 * 2.0 ** -23):
    """Run ``call(lib, x)`` on an integer/bool tensor in torch and cupynet: same dtype and values, or both raise.

    NOTE (tolerance): the floating results are float32 computed from the same exactly converted inputs; each
    library rounds its own libm result, so they agree within a few ulps.
    """
    torch = pytest.importorskip("torch")
    values = values if values is not None else _INT_VALUES[dtype]
    array = np.array(values, dtype=dtype)
    kind, want = _outcome(lambda: call(torch, torch.tensor(array)))
    if kind == "raises":
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            call(cn, cn.tensor(array))
        return
    got = call(cn, cn.tensor(array))
    assert str(got.dtype) == str(want.dtype).removeprefix("torch."), f"{name} {dtype}: {got.dtype}, {want.dtype}"
    want_np = want.double().numpy() if want.is_floating_point() else want.numpy()
    if want.is_floating_point():
        np.testing.assert_allclose(host(got), want_np, rtol=rtol, atol=0, err_msg=f"{name} {dtype}")
    else:
        np.testing.assert_array_equal(got.numpy(), want_np, err_msg=f"{name} {dtype}")


@pytest.mark.parametrize("dtype", list(_INT_VALUES))
@pytest.mark.parametrize("name", _FLOATING_OPS + _INTEGER_OPS)
def test_integer_and_bool_inputs_as_torch(name, dtype):
    # NOTE: the floating ops promote to the default float dtype (torch.exp(int64) is float32); abs, sign, square
    # and the roundings stay in the integer dtype; bool: sign keeps it, square makes int64, abs/roundings refuse
    check_against_torch(name, lambda lib, x: getattr(lib, name)(x), dtype)


@pytest.mark.parametrize("name", ["exp", "sqrt", "log1p", "tanh", "erf"])
def test_integer_input_takes_the_default_dtype(name):
    torch = pytest.importorskip("torch")
    for dtype in ("float64", "float16", "bfloat16"):
        cn.set_default_dtype(dtype)
        torch.set_default_dtype(getattr(torch, dtype))
        try:
            # NOTE: the int is converted to the default dtype first (2049 rounds in float16), then computed in it
            # (in fp32 for the half types, rounded once: the two libraries agree within one ulp of the result)
            check_against_torch(name, lambda lib, x: getattr(lib, name)(x), "int32", values=[0, 1, 3, 2049],
                                rtol={"float64": 4 * 2.0 ** -52, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}[dtype])
        finally:
            cn.set_default_dtype("float32")
            torch.set_default_dtype(torch.float32)


def test_integer_input_of_a_floating_op_under_autocast():
    # NOTE: autocast leaves integer tensors alone (not eligible); the op then promotes them to the default dtype
    x = cn.tensor([1, 2, 3])
    with cn.amp.autocast("cpu", dtype=cn.float16):
        assert cn.exp(x).dtype == cn.float32  # exp is on the fp32 list; the promoted input is float32 already
        assert cn.sin(x).dtype == cn.float32
    np.testing.assert_array_equal(cn.sqrt(cn.tensor([4, 9])).numpy(), np.array([2.0, 3.0], dtype=np.float32))


def test_round_with_decimals_of_an_integer_tensor_refuses_as_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError):
        torch.round(torch.tensor([12, 17]), decimals=1)
    with pytest.raises(TypeError, match="round: decimals=1 is implemented for floating tensors only"):
        cn.round(cn.tensor([12, 17]), decimals=1)
    assert cn.round(cn.tensor([12, 17])).numpy().tolist() == [12, 17]
    with pytest.raises(TypeError, match="abs: not implemented for bool tensors"):
        cn.abs(cn.tensor([True, False]))


def test_non_tensor_input_is_a_clear_error():
    with pytest.raises(TypeError, match="sqrt: expected input to be a Tensor, got list"):
        cn.sqrt([1.0, 4.0])
    with pytest.raises(TypeError, match="isnan: expected input to be a Tensor, got float"):
        cn.isnan(1.0)


def test_amp_policies_follow_the_reference_lists():
    fp32 = {"exp", "log", "rsqrt", "reciprocal", "tan", "sinh", "cosh", "asin", "acos", "erfinv", "expm1",
            "log2", "log10", "log1p"}
    modules = {m.__name__ for m in UNARY_MODULES}
    for cls in cn.ops.OP_CLASSES:
        if cls.__module__ in modules:
            assert cls.amp_policy == ("fp32" if cls.op_name in fp32 else None), cls.op_name
    named = {cls.op_name for cls in cn.ops.OP_CLASSES if cls.__module__ in modules}
    assert fp32 | {"sqrt", "abs", "sin", "cos", "atan", "tanh", "erf", "clamp", "floor"} <= named


def test_every_public_function_has_summary_and_args():
    for module in UNARY_MODULES:
        for name in module.__all__:
            doc = getattr(module, name).__doc__
            assert doc and doc.strip().splitlines()[0] and "Args:" in doc, name
            assert name in cn.ops.TENSOR_METHODS

"""cupynet/checks.py: the argument checks ops, layers and optimizers share, and their one message per mistake."""

import ast
import math
import pathlib

import numpy
import pytest

import cupynet as cn
from cupynet import checks

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_require_tensor_names_the_owner_the_argument_and_the_type():
    t = cn.ones(2)
    assert checks.require_tensor("op", t) is t
    with pytest.raises(TypeError, match=r"^op: expected index to be a Tensor, got list$"):
        checks.require_tensor("op", [1], "index")


def test_require_floating_refuses_integer_and_bool_tensors():
    x = cn.ones(2)
    assert checks.require_floating("op", x) is x
    for dtype in (cn.int64, cn.bool):
        with pytest.raises(TypeError, match=r"op: expected a floating point input .* got"):
            checks.require_floating("op", cn.ones(2, dtype=dtype))


@pytest.mark.parametrize("value, error, match", [
    (2.0, TypeError, r"^op: n must be an int, got 2.0$"),
    (True, TypeError, r"^op: n must be an int, got True$"),
    ("3", TypeError, r"^op: n must be an int, got '3'$"),
    (-1, ValueError, r"^op: n must be at least 0, got -1$"),
])
def test_check_int_refuses(value, error, match):
    with pytest.raises(error, match=match):
        checks.check_int("op", "n", value, minimum=0)


def test_check_int_accepts_numpy_integers_as_ints():
    value = checks.check_int("op", "n", numpy.int32(3), minimum=0)
    assert value == 3 and type(value) is int


@pytest.mark.parametrize("value", [0, -2, 1.0, True, None])
def test_positive_int_refuses(value):
    with pytest.raises(ValueError, match=rf"^op: n must be a positive integer, got {value!r}$"):
        checks.positive_int("op", "n", value)


def test_check_bool():
    assert checks.check_bool("op", "flag", False) is False
    with pytest.raises(TypeError, match=r"^op: flag must be True or False, got 1$"):
        checks.check_bool("op", "flag", 1)


@pytest.mark.parametrize("value, match", [
    (float("nan"), r"^op: x must be a number in \[0, 1\], got nan$"),
    (1.5, r"^op: x must be a number in \[0, 1\], got 1.5$"),
    (-0.1, r"^op: x must be a number in \[0, 1\], got -0.1$"),
    (True, r"^op: x must be a number in \[0, 1\], got True$"),
    ("0.5", r"^op: x must be a number in \[0, 1\], got '0.5'$"),
])
def test_check_number_and_check_probability_refuse(value, match):
    with pytest.raises(ValueError, match=match):
        checks.check_number("op", "x", value, low=0, high=1, high_inclusive=True)
    with pytest.raises(ValueError, match=match):
        checks.check_probability("op", "x", value)


def test_check_number_bounds_are_open_or_closed_as_asked():
    assert checks.check_number("op", "x", 0.0, low=0.0) == 0.0
    with pytest.raises(ValueError, match=r"in \(0.0, inf\)"):
        checks.check_number("op", "x", 0.0, low=0.0, low_inclusive=False)
    assert checks.check_number("op", "x", -math.inf, low=None) == -math.inf


def test_check_number_with_torchs_label_speaks_torchs_words():
    with pytest.raises(ValueError, match=r"^SGD: Invalid learning rate: -1.0 \(expected a value in \[0.0, inf\)\)$"):
        checks.check_number("SGD", "lr", -1.0, label="learning rate")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, False, "1"])
def test_check_finite_refuses(value):
    with pytest.raises(ValueError, match=rf"^op: a must be a finite number, got {value!r}$"):
        checks.check_finite("op", "a", value)


def test_check_choice_compares_type_and_value():
    assert checks.check_choice("op", "mode", "sum", ("mean", "sum")) == "sum"
    with pytest.raises(ValueError, match=r"^op: mode must be one of 'mean', 'sum', got 'max'$"):
        checks.check_choice("op", "mode", "max", ("mean", "sum"))
    with pytest.raises(ValueError, match=r"must be one of 0, 1, got False"):
        checks.check_choice("op", "dim", False, (0, 1))


def test_check_pair():
    assert checks.check_pair("Adam", "betas", (0.9, 0.99), "beta parameter", high=1.0) == (0.9, 0.99)
    with pytest.raises(ValueError, match=r"Adam: betas must be a pair, got 0.9"):
        checks.check_pair("Adam", "betas", 0.9, "beta parameter", high=1.0)
    with pytest.raises(ValueError, match=r"Invalid beta parameter at index 1: 1.0"):
        checks.check_pair("Adam", "betas", (0.9, 1.0), "beta parameter", high=1.0)


def test_ops_layers_and_optimizers_give_the_shared_messages():
    with pytest.raises(TypeError, match=r"^sqrt: expected input to be a Tensor, got list$"):
        cn.sqrt([1.0])
    with pytest.raises(TypeError, match=r"^sort: expected input to be a Tensor, got float$"):
        cn.sort(1.0)
    with pytest.raises(TypeError, match=r"^Linear: in_features must be an int, got 2.5$"):
        cn.nn.Linear(2.5, 3)
    with pytest.raises(ValueError, match=r"^LayerNorm: normalized_shape must be a positive integer, got 0$"):
        cn.nn.LayerNorm(0)
    with pytest.raises(TypeError, match=r"^LSTM: batch_first must be True or False, got 1$"):
        cn.nn.LSTM(2, 3, batch_first=1)
    with pytest.raises(ValueError, match=r"^StepLR: step_size must be a positive integer, got 0$"):
        cn.optim.lr_scheduler.StepLR(cn.optim.SGD([cn.nn.Parameter(cn.ones(1))], lr=0.1), step_size=0)
    with pytest.raises(ValueError, match=r"^mse_loss: reduction must be one of 'none', 'mean', 'sum', got 'avg'$"):
        cn.nn.functional.mse_loss(cn.ones(2), cn.ones(2), reduction="avg")


# NOTE: the generic checks each had private copies in several modules; these names must not come back
RETIRED = {"_require_tensor", "_check_tensor", "_positive", "_positive_int", "_check_bool", "_check_number"}


# NOTE: cupynet.settings sits below the tensor layer that cupynet.checks imports, so it keeps its one bool check
BELOW_THE_CHECKS = {"cupynet/settings.py"}


def test_no_module_defines_its_own_copy_of_a_shared_check():
    copies = []
    for path in sorted((ROOT / "cupynet").rglob("*.py")):
        if str(path.relative_to(ROOT)) in BELOW_THE_CHECKS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        copies += [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}" for node in ast.walk(tree)
                   if isinstance(node, ast.FunctionDef) and node.name in RETIRED]
    assert not copies, copies

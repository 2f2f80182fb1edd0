"""The hot-path shortcuts of issue 19's speed fix give the same results as PyTorch.

Each shortcut (``fix_float_dtype``'s plain loops, ``_saves_an_output``, the loss divisions
that skip ``numpy.errstate`` and ``where`` for a nonzero host divisor) has a branch it takes
in the benchmark and a branch it does not; both are compared here with torch.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cupynet as cn
from cupynet.autograd.function import _saves_an_output
from cupynet.ops.loss.classification import _grad_divisor
from cupynet.ops.loss.reduction import _quiet_divide

torch = pytest.importorskip("torch")

# (left dtype, right dtype or a Python number) for tensor-with-tensor and tensor-with-number arithmetic
CASES = [("float32", 1.5), ("bfloat16", 1.5), ("bfloat16", "bfloat16"), ("bfloat16", "float32"),
         ("float32", "bfloat16"), ("int64", 1.5), ("int32", 2.5), ("float64", 1.5), ("float64", "int64"),
         ("int64", "float64"), ("float16", 1.5), ("int64", 3)]


def _operand(lib, dtype):
    if not isinstance(dtype, str):
        return dtype
    values = np.array([1.0, -2.0, 3.0])
    return lib.tensor(values, dtype=getattr(lib, dtype))


@pytest.mark.parametrize("left, right", CASES, ids=[f"{a}-{b}" for a, b in CASES])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_result_dtype_of_binary_ops_is_torchs(op, left, right):
    for a, b in ((left, right), (right, left)):
        if not isinstance(a, str):
            continue  # NOTE: number op tensor goes through the reflected operators, tested below
        got = getattr(cn, op)(_operand(cn, a), _operand(cn, b))
        want = getattr(torch, op)(_operand(torch, a), _operand(torch, b))
        assert str(got.dtype) == str(want.dtype).removeprefix("torch."), (op, a, b)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.double().numpy(), rtol=1e-2)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "float64"])
def test_number_with_a_tensor_keeps_torchs_dtype(dtype):
    for fn in (lambda t: 2.5 * t, lambda t: 2.5 + t, lambda t: 2.5 - t):
        got, want = fn(_operand(cn, dtype)), fn(_operand(torch, dtype))
        assert str(got.dtype) == str(want.dtype).removeprefix("torch.")


def test_saves_an_output_checks_identity_only():
    a, b = cn.ones(3), cn.ones(3)  # NOTE: equal values, different tensors: == must not be used
    assert not _saves_an_output(((a, 0), (None, 0)), (b,))
    assert _saves_an_output(((None, 0), (b, 0)), (a, b))
    assert not _saves_an_output((), (a,))


def test_ops_that_save_their_output_or_not_still_backpropagate():
    x = cn.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (cn.exp(x) * x + 1.0).sum().backward()  # NOTE: exp keeps its output; mul keeps its inputs
    (torch.exp(tx) * tx + 1.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("divisor, total", [(4.0, 2.0), (0.0, 0.0), (0.0, 1.0), (float("inf"), float("inf")),
                                            (float("nan"), 1.0)])
def test_quiet_divide_is_silent_and_ieee(divisor, total):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for d in (divisor, np.asarray(divisor, dtype=np.float32)):
            got = _quiet_divide(np.float32(total), d)
            want = torch.tensor(total) / torch.tensor(divisor)
            np.testing.assert_equal(np.float64(got), want.item())


def test_grad_divisor_replaces_zero_only():
    for value, want in ((0.0, 1.0), (5.0, 5.0), (-0.0, 1.0)):
        got = _grad_divisor(np.asarray(value, dtype=np.float32))
        assert got.dtype == np.float32 and got.shape == () and got.item() == want


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("case", ["plain", "some-ignored", "all-ignored", "empty-batch"])
def test_mean_class_losses_match_torch_without_warnings(name, case):
    rng = np.random.default_rng(0)
    n = 0 if case == "empty-batch" else 4
    x = rng.standard_normal((n, 3))
    target = np.array([0, 2, 1, 2][:n], dtype=np.int64)
    ignore = {"plain": -100, "some-ignored": 2, "all-ignored": -100, "empty-batch": -100}[case]
    if case == "all-ignored":
        target[:], ignore = 1, 1
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for lib in (cn, torch):
            xt = lib.tensor(x, requires_grad=True)
            loss = getattr(lib.nn.functional, name)(xt, lib.tensor(target), ignore_index=ignore)
            loss.backward()
            results.append((loss.item(), xt.grad.numpy()))
    (got, got_grad), (want, want_grad) = results
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_gelu_backward_on_arrays_matches_the_op_path_bit_for_bit(dtype):
    # NOTE: create_graph=True runs Gelu.backward's op formula; without it the array formula runs
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(300) * 4, [0.0, -0.0, 1e-30, -1e-30, 8.0, -8.0, 40.0, -40.0,
                                                           np.inf, -np.inf, np.nan]]).astype(dtype)
    upstream = rng.standard_normal(values.shape).astype(dtype)
    grads = []
    for create_graph in (False, True):
        x = cn.tensor(values.copy(), requires_grad=True)
        (g,) = cn.autograd.grad(cn.nn.functional.gelu(x), x, cn.tensor(upstream), create_graph=create_graph)
        grads.append(g.detach().numpy())
    np.testing.assert_array_equal(grads[0].view(np.uint8), grads[1].view(np.uint8))


@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), (1, True), ((0, 2), False), ((0, 2), True)])
def test_sum_backward_on_arrays_matches_the_op_path(dim, keepdim):
    # NOTE: create_graph=True runs Sum.backward's ops (reshape, broadcast_to); without it the array path runs
    rng = np.random.default_rng(1)
    values = rng.standard_normal((2, 3, 4)).astype(np.float32)
    upstream = None
    grads = []
    for create_graph in (False, True):
        x = cn.tensor(values, requires_grad=True)
        out = x.sum() if dim is None else x.sum(dim=dim, keepdim=keepdim)
        if upstream is None:
            upstream = rng.standard_normal(out.shape).astype(np.float32)
        (g,) = cn.autograd.grad(out, x, cn.tensor(upstream), create_graph=create_graph)
        grads.append(g.detach().numpy())
    assert grads[0].shape == values.shape
    np.testing.assert_array_equal(grads[0], grads[1])
    x = torch.tensor(values, requires_grad=True)
    out = x.sum() if dim is None else x.sum(dim=dim, keepdim=keepdim)
    (want,) = torch.autograd.grad(out, x, torch.tensor(upstream))
    np.testing.assert_array_equal(grads[0], want.numpy())


def test_gelu_backward_twice_with_retain_graph_gives_the_same_gradient():
    # NOTE: the first array backward uses the erf kept by the forward and drops it; the second recomputes it
    x = cn.tensor(np.linspace(-5, 5, 101, dtype=np.float32), requires_grad=True)
    y = cn.nn.functional.gelu(x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    x.grad = None
    y.backward()
    np.testing.assert_array_equal(first, x.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_flat_scatter_is_the_row_scatter_bit_for_bit(dtype):
    from cupynet.ops._util import scatter_at
    from cupynet.ops.embedding import scatter_rows_flat
    rng = np.random.default_rng(2)
    flat = rng.integers(0, 7, 300)  # NOTE: many repeats, so each row gets a long sum whose order matters
    values = (rng.standard_normal((300, 5)) * 10.0 ** rng.integers(-8, 8, (300, 5))).astype(dtype)
    values[:4, 0] = [-0.0, np.inf, -np.inf, np.nan]  # NOTE: signed zero, infinities and NaN take the same path
    values[10, 0] = -0.0
    want = scatter_at("sum", np.zeros((7, 5), dtype), flat, values)
    got = scatter_rows_flat(flat, values, 7)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))

"""PyTorch's ``out=`` argument (``torch.add(x, y, out=result)``, the blitz tensor tutorial): same values, same
object returned, the same refusals with PyTorch's messages, and nothing written when refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")

# (name, cupynet call, torch call, input shapes): each writes the result into `out`
CASES = [
    ("add", lambda a, b, out: cn.add(a, b, alpha=2, out=out), lambda a, b, out: torch.add(a, b, alpha=2, out=out),
     [(5, 3), (3,)]),
    ("sub", lambda a, b, out: cn.sub(a, b, out=out), lambda a, b, out: torch.sub(a, b, out=out), [(5, 3), (5, 3)]),
    ("mul", lambda a, b, out: cn.mul(a, b, out=out), lambda a, b, out: torch.mul(a, b, out=out), [(5, 3), (5, 1)]),
    ("div", lambda a, b, out: cn.div(a, b, out=out), lambda a, b, out: torch.div(a, b, out=out), [(5, 3), (5, 3)]),
    ("pow", lambda a, b, out: cn.pow(a.abs(), b, out=out), lambda a, b, out: torch.pow(a.abs(), b, out=out),
     [(5, 3), (3,)]),
    ("matmul", lambda a, b, out: cn.matmul(a, b, out=out), lambda a, b, out: torch.matmul(a, b, out=out),
     [(2, 5, 3), (3, 4)]),
    ("mm", lambda a, b, out: cn.mm(a, b, out=out), lambda a, b, out: torch.mm(a, b, out=out), [(5, 3), (3, 4)]),
    ("bmm", lambda a, b, out: cn.bmm(a, b, out=out), lambda a, b, out: torch.bmm(a, b, out=out),
     [(2, 5, 3), (2, 3, 4)]),
    ("cat", lambda a, b, out: cn.cat([a, b], 1, out=out), lambda a, b, out: torch.cat([a, b], 1, out=out),
     [(5, 3), (5, 2)]),
    ("stack", lambda a, b, out: cn.stack([a, b], out=out), lambda a, b, out: torch.stack([a, b], out=out),
     [(5, 3), (5, 3)]),
]


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("name,cn_fn,torch_fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_out_gets_the_result_and_is_returned(name, cn_fn, torch_fn, shapes):
    arrays = _inputs(shapes)
    want = torch_fn(*[torch.from_numpy(a) for a in arrays], out=torch.empty(0))
    out = cn.empty(0)
    got = cn_fn(*[cn.tensor(a) for a in arrays], out=out)
    assert got is out and tuple(out.shape) == tuple(want.shape)
    # NOTE: the same float32 ops on the same values; only summation order in matmul may differ (a few ulps)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=4 * np.finfo(np.float32).eps, atol=1e-6)


def test_out_of_the_right_shape_is_written_in_place_and_its_version_bumps():
    a, b = cn.ones(2, 3), cn.full((2, 3), 2.0)
    out = cn.zeros(2, 3)
    memory, version = out.array, out._version
    cn.add(a, b, out=out)
    assert out.array is memory and out._version == version + 1 and out.tolist() == [[3.0] * 3] * 2


def test_out_of_another_shape_is_resized_with_pytorchs_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty = cn.empty(0)
        cn.mul(cn.ones(2), cn.ones(2), out=empty)  # no elements: resized silently
    assert empty.tolist() == [1.0, 1.0]
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape \[3\]"):
        cn.mul(cn.ones(2), cn.ones(2), out=cn.ones(3))


def test_out_keeps_its_dtype_and_rounds_into_it():
    out = cn.zeros(2, dtype=cn.float64)
    cn.add(cn.tensor([1, 2]), cn.tensor([3, 4]), out=out)  # an int result into a float out, as torch allows
    assert out.dtype == cn.float64 and out.tolist() == [4.0, 6.0]


def test_bad_out_is_refused_with_pytorchs_message_and_nothing_is_written():
    a, b = cn.ones(2), cn.ones(2)
    with pytest.raises(TypeError, match=r"add\(\): argument 'out' must be Tensor, not list"):
        cn.add(a, b, out=[0, 0])
    ints = cn.zeros(2, dtype=cn.int64)
    with pytest.raises(RuntimeError, match=r"add: result type Float can't be cast to the desired output type Long"):
        cn.add(a, b, out=ints)
    assert ints.tolist() == [0, 0]
    leaf = cn.ones(2, requires_grad=True)
    out = cn.zeros(2)
    for args in ((leaf, b, out), (a, b, cn.zeros(2, requires_grad=True))):  # an input, or out, needs grad
        with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments don't support automatic "
                                               r"differentiation, but one of the arguments requires grad"):
            cn.add(args[0], args[1], out=args[2])
    assert out.tolist() == [0.0, 0.0]
    with cn.no_grad():  # under no_grad nothing is recorded, so out= is allowed, as in torch
        assert cn.add(leaf, b, out=out).tolist() == [2.0, 2.0] and not out.requires_grad
    view = cn.zeros(4)[::2]
    with pytest.raises(RuntimeError, match=r"mul: out has shape \(2,\) but the result has shape \(3,\), and out is a "
                                           r"view"):
        cn.mul(cn.ones(3), 2.0, out=view)

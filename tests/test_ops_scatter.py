"""scatter / scatter_reduce / index_add / index_copy / index_fill against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from cupynet.ops._util import scatter_prod
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch

INDEX = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])  # rows of a (3, 4) input: column 0 is hit twice


def _ti(array):
    return cn.tensor(array), torch.tensor(array)


def test_scatter_src_and_value():
    idx = np.array([[0, 1, 2, 0], [1, 2, 0, 2]])         # each (row, column) target written once
    ci, ti = _ti(idx)
    # NOTE: the lambdas make their index tensors, so check_op's device context puts them beside the inputs
    check_op([(3, 4), (2, 4)], lambda a, s: cn.scatter(a, 0, cn.tensor(idx), s),
             torch_fn=lambda a, s: torch.scatter(a, 0, ti, s))
    # a src larger than index: only its leading block is read (torch's own backward of this case fails)
    src = cn.tensor(np.arange(10.0).reshape(2, 5), dtype=cn.float32, requires_grad=True)
    cn.ones(3, 4).scatter(0, ci, src).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), np.pad(np.ones((2, 4)), ((0, 0), (0, 1))))
    check_op([(3, 4)], lambda a: cn.scatter(a, 1, cn.tensor(idx[:, :2]), 1.5),
             torch_fn=lambda a: torch.scatter(a, 1, ti[:, :2], 1.5))
    check_op([(3, 4)], lambda a: cn.scatter(a, 0, cn.tensor(idx), value=-2.0),
             torch_fn=lambda a: torch.scatter(a, 0, ti, value=-2.0))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    ti = torch.tensor(INDEX)
    check_op([(3, 4), (2, 4)],
             lambda a, s: cn.scatter_reduce(a, 0, cn.tensor(INDEX), s, reduce, include_self=include_self),
             torch_fn=lambda a, s: torch.scatter_reduce(a, 0, ti, s, reduce, include_self=include_self),
             low=0.5, high=2.0, dtypes=("float32",))


def test_scatter_reduce_grads_with_ties_and_zeros_match_torch():
    ti = torch.tensor(INDEX)
    for reduce, a, s in (("amax", np.ones((3, 4)), np.ones((2, 4))),
                         ("prod", np.array([[0.0, 2, 3, 1], [1, 0, 2, 2], [3, 1, 0, 0]]), np.array(
                             [[2.0, 0, 1, 3], [0, 1, 2, 2]]))):
        check_op([a.shape, s.shape], lambda x, y: cn.scatter_reduce(x, 0, cn.tensor(INDEX), y, reduce),
                 torch_fn=lambda x, y: torch.scatter_reduce(x, 0, ti, y, reduce), arrays=[a, s],
                 dtypes=("float64",), gradgrad=False)


def test_scatter_legacy_reduce_and_integers():
    ci, ti = _ti(INDEX)
    a = np.arange(12).reshape(3, 4)
    got = cn.scatter(cn.tensor(a), 0, ci, cn.tensor(np.ones((2, 4), dtype=np.int64)), reduce="add")
    np.testing.assert_array_equal(got.numpy(), torch.tensor(a).scatter(0, ti, torch.ones(2, 4, dtype=torch.long),
                                                                       reduce="add").numpy())
    got = cn.scatter_reduce(cn.tensor(a), 0, ci, cn.tensor(a[:2] + 1), "amax", include_self=False)
    np.testing.assert_array_equal(got.numpy(), torch.scatter_reduce(torch.tensor(a), 0, ti, torch.tensor(a[:2] + 1),
                                                                    "amax", include_self=False).numpy())


def test_index_add_copy_fill():
    idx, ti = np.array([2, 0]), torch.tensor([2, 0])
    check_op([(3, 4), (2, 4)], lambda a, s: cn.index_add(a, 0, cn.tensor(idx), s, alpha=2.0),
             torch_fn=lambda a, s: torch.index_add(a, 0, ti, s, alpha=2.0))
    check_op([(2, 4), (2, 3)], lambda a, s: a.index_add(1, cn.tensor([1, 1, 3]), s),
             torch_fn=lambda a, s: a.index_add(1, torch.tensor([1, 1, 3]), s))
    check_op([(3, 4), (3, 2)], lambda a, s: cn.index_copy(a, 1, cn.tensor(idx), s),
             torch_fn=lambda a, s: torch.index_copy(a, 1, ti, s))
    check_op([(3, 4)], lambda a: a.index_fill(0, cn.tensor(idx), -1.0), torch_fn=lambda a: a.index_fill(0, ti, -1.0))


def test_bad_inputs_raise_torch_errors():
    a = cn.ones(2, 3)
    with pytest.raises(RuntimeError, match="index 2 is out of bounds for dimension 0 with size 2"):
        cn.scatter(a, 0, cn.tensor([[0, 1, 2]]), cn.ones(1, 3))
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        cn.scatter_reduce(a, 0, cn.tensor([[0, 1, 1]]), cn.ones(1, 3), "max2")
    with pytest.raises(RuntimeError, match=r"Number of indices \(3\) should be equal to source.size\(dim\) \(2\)"):
        cn.index_add(a, 0, cn.tensor([0, 1, 1]), cn.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        cn.scatter(a, 0, cn.tensor([[0]]), cn.ones(1, 1, dtype=cn.float64))
    with pytest.raises(RuntimeError, match="expected index to be an int32 or int64 tensor"):
        cn.index_fill(a, 0, cn.tensor([0.0]), 1.0)
    with pytest.raises(TypeError, match="exactly one of src"):
        cn.scatter(a, 0, cn.tensor([[0]]))
    before = a.numpy().copy()
    cn.scatter(a, 0, cn.tensor([[1, 0, 1]]), cn.zeros(1, 3))
    np.testing.assert_array_equal(a.numpy(), before)  # out of place: the input is untouched


# ---- the dtypes that reach a scatter kernel (CuPy's rules, checked on the CPU path) -------------------
# NOTE: CuPy 14's cupyx.scatter_add (add.at) takes only these dtypes; scatter_max / scatter_min (maximum.at /
# minimum.at) also refuse float16. The CPU path runs numpy.<ufunc>.at on the very arrays the GPU path hands to
# cupyx, so recording what reaches numpy's .at checks what would reach CuPy.
_CUPY_ADD = {np.dtype(n) for n in ("int32", "int64", "uint32", "uint64", "float16", "float32", "float64")}
_CUPY_ACCEPTS = {"add": _CUPY_ADD, "maximum": _CUPY_ADD - {np.dtype("float16")},
                 "minimum": _CUPY_ADD - {np.dtype("float16")}}
_ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_NARROW = ("bool", "int8", "uint8", "int16", "float16", "bfloat16")  # NOTE: the ones CuPy's scatters refuse


class _RecordingUfunc:
    """A NumPy ufunc whose ``.at`` records ``(name, out dtype, values dtype)`` before running."""

    def __init__(self, ufunc, seen):
        self._ufunc, self._seen = ufunc, seen

    def at(self, out, index, values):
        self._seen.append((self._ufunc.__name__, out.dtype, np.asarray(values).dtype))
        return self._ufunc.at(out, index, values)

    def __call__(self, *args, **kwargs):
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._ufunc, name)


@pytest.fixture
def scatter_calls(monkeypatch):
    """The ``(ufunc, out dtype, values dtype)`` of every numpy add/maximum/minimum/multiply ``.at`` in the test."""
    seen = []
    for name in ("add", "multiply", "maximum", "minimum"):
        monkeypatch.setattr(np, name, _RecordingUfunc(getattr(np, name), seen))
    return seen


def _scatter_inputs(dtype, seed=0):
    """(input (3, 5), src (12, 5), index (12, 5)) of ``dtype``, every row hit several times.

    NOTE: integers span their dtype's range, so sums and products wrap; floats are
    +-0.5, +-1, +-2, so every partial sum (at most 13 terms, multiples of 0.5 below
    32) and product (at most 2**13) is exact in float16 and bfloat16 and PyTorch's
    order of accumulation cannot change a bit.
    """
    rng = np.random.default_rng(seed)
    index = rng.integers(0, 3, size=(12, 5))
    if dtype == "bool":
        a, s = rng.random((3, 5)) < 0.5, rng.random((12, 5)) < 0.3
    elif dtype in ("float16", "bfloat16", "float32", "float64"):
        values = np.array([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])
        a, s = rng.choice(values, (3, 5)), rng.choice(values, (12, 5))
    else:
        info = np.iinfo(dtype)
        a, s = (rng.integers(info.min, info.max, size=n, endpoint=True) for n in ((3, 5), (12, 5)))
    return a, s, index


def _pair(array, dtype):
    """The same values as a cupynet tensor and a torch tensor of ``dtype``."""
    return cn.tensor(array).to(getattr(cn, dtype)), torch.tensor(array).to(getattr(torch, dtype))


def _scatter_cases(dtype):
    """(name, cupynet thunk, torch thunk or None) for every op that reaches a scatter kernel."""
    a, s, index = _scatter_inputs(dtype)
    (ca, ta), (cs, ts) = _pair(a, dtype), _pair(s, dtype)
    ci, ti = cn.tensor(index), torch.tensor(index)
    rows, trows = cn.tensor(index[:, 0]), torch.tensor(index[:, 0])
    cases = [("index_add", lambda: cn.index_add(ca, 0, rows, cs), lambda: torch.index_add(ta, 0, trows, ts)),
             ("index_add_", lambda: ca.clone().index_add_(0, rows, cs), lambda: ta.clone().index_add_(0, trows, ts)),
             ("scatter_add", lambda: cn.scatter_add(ca, 0, ci, cs), lambda: torch.scatter_add(ta, 0, ti, ts)),
             ("diag_embed", lambda: cn.diag_embed(cs), lambda: torch.diag_embed(ts))]
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            oracle = None if (dtype == "bool" and reduce == "mean") else (  # NOTE: torch has no bool mean
                lambda r=reduce, i=include_self: torch.scatter_reduce(ta, 0, ti, ts, r, include_self=i))
            cases.append((f"scatter_reduce {reduce} include_self={include_self}",
                          lambda r=reduce, i=include_self: cn.scatter_reduce(ca, 0, ci, cs, r, include_self=i),
                          oracle))
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        cases += [("embedding backward", lambda: _grad(ca, lambda w: cn.nn.functional.embedding(rows, w), cs),
                   lambda: _grad(ta, lambda w: torch.nn.functional.embedding(trows, w), ts)),
                  ("gather backward", lambda: _grad(ca, lambda x: cn.gather(x, 0, ci), cs),
                   lambda: _grad(ta, lambda x: torch.gather(x, 0, ti), ts))]
    return cases


def _grad(x, fn, cotangent):
    """The gradient of ``(fn(x) * cotangent).sum()`` with respect to ``x`` (cupynet or torch)."""
    x = x.detach().clone().requires_grad_(True)
    (fn(x) * cotangent).sum().backward()
    return x.grad


@pytest.mark.parametrize("dtype", _ALL_DTYPES)
def test_scatter_kernels_get_only_dtypes_cupy_accepts(dtype, scatter_calls):
    for name, run, _ in _scatter_cases(dtype):
        scatter_calls.clear()
        run()
        assert scatter_calls, f"{name} ({dtype}) reached no scatter kernel: the recording misses a path"
        for ufunc, out_dtype, values_dtype in scatter_calls:
            assert values_dtype == out_dtype, f"{name} ({dtype}): {ufunc}.at got {values_dtype} values into {out_dtype}"
            if ufunc in _CUPY_ACCEPTS:  # NOTE: multiply.at (prod) has no CuPy twin: the GPU path is scatter_prod
                assert out_dtype in _CUPY_ACCEPTS[ufunc], (
                    f"{name} ({dtype}): {ufunc}.at on {out_dtype}, which CuPy's scatter refuses")


@pytest.mark.parametrize("dtype", _NARROW)
def test_scatter_through_a_wider_dtype_matches_torch_bit_for_bit(dtype):
    # NOTE: exact comparison: integer wraparound and bool OR/AND are exact, and the float inputs keep every
    # partial result representable (see _scatter_inputs); mean divides an exact sum by an exact count in
    # float32 and rounds once to the half dtype, as PyTorch's half division does
    for name, run, oracle in _scatter_cases(dtype):
        if oracle is None:
            continue
        got, want = run(), oracle()
        assert got.dtype == getattr(cn, dtype), name
        np.testing.assert_array_equal(got.detach().float().numpy() if dtype == "bfloat16" else got.detach().numpy(),
                                      want.detach().float().numpy() if dtype == "bfloat16" else want.detach().numpy(),
                                      err_msg=f"{name} ({dtype})")


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_scatter_prod_the_gpu_path_of_prod_matches_multiply_at(dtype):
    # NOTE: CuPy has no multiply.at; scatter_prod (sort and a segmented scan) is run here on NumPy arrays. Every
    # row is hit many times; int32 products wrap, and the float64 ones (integers below 2**53) are exact
    rng = np.random.default_rng(0)
    acc = rng.integers(-9, 10, size=(3, 5)).astype(dtype)
    rows = rng.integers(0, 3, size=(40, 5))
    values = rng.integers(-9, 10, size=(40, 5)).astype(dtype)
    for index, vals in (((rows, np.arange(5)), values), (rows[:, 0], values[:, :1]), (np.zeros(0, int), values[:0])):
        want = acc.copy()
        np.multiply.at(want, index, vals)
        np.testing.assert_array_equal(scatter_prod(acc.copy(), index, vals), want)

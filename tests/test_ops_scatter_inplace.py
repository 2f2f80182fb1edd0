"""masked_scatter and the in-place twins of the scatter family (scatter_, scatter_add_, scatter_reduce_,
index_add_, index_copy_, index_fill_, masked_scatter_) against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch

MASK = np.array([[True, False, True, False], [False, True, True, True], [False, False, False, True]])  # 6 True


def test_masked_scatter_forward_backward_and_double_backward():
    # NOTE: the lambdas make their masks, so check_op's device context puts them beside the inputs
    tm = torch.tensor(MASK)
    check_op([(3, 4), (8,)], lambda a, s: cn.masked_scatter(a, cn.tensor(MASK), s),
             torch_fn=lambda a, s: torch.masked_scatter(a, tm, s))
    check_op([(3, 4), (2, 3)], lambda a, s: a.masked_scatter(cn.tensor(MASK), s),
             torch_fn=lambda a, s: a.masked_scatter(tm, s))
    row = np.array([True, False, False, True])  # NOTE: a mask broadcast over the rows
    check_op([(3, 4), (6,)], lambda a, s: cn.masked_scatter(a, cn.tensor(row), s),
             torch_fn=lambda a, s: torch.masked_scatter(a, torch.tensor(row), s))


# name, the method's arguments as a function of (library, is_torch) -> args; every case writes input (3, 4)
INDEX = np.array([[0, 1, 2, 0], [1, 2, 0, 2]])
CASES = [
    ("scatter_", lambda lib, src: (0, lib.tensor(INDEX), src(2, 4))),
    ("scatter_add_", lambda lib, src: (0, lib.tensor(np.array([[0, 1, 2, 0], [2, 0, 1, 0]])), src(2, 4))),
    ("scatter_reduce_", lambda lib, src: (1, lib.tensor(np.array([[0, 0], [1, 3], [2, 2]])), src(3, 2), "sum")),
    ("index_add_", lambda lib, src: (1, lib.tensor(np.array([3, 0, 3])), src(3, 3))),
    ("index_copy_", lambda lib, src: (0, lib.tensor(np.array([2, 0])), src(2, 4))),
    ("masked_scatter_", lambda lib, src: (lib.tensor(MASK), src(7))),
]


def _run(lib, name, make_args, rng_seed=0):
    """x = base * 1 (a graph tensor), x.<name>_(...), loss = (x * weights).sum(); returns values and grads."""
    rng = np.random.default_rng(rng_seed)
    base = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    sources = []

    def src(*shape):
        sources.append(lib.tensor(rng.standard_normal(shape), requires_grad=True))
        return sources[-1]

    x = base * 1
    out = getattr(x, name)(*make_args(lib, src))
    assert out is x
    (x * lib.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
    return [x.detach().numpy(), base.grad.numpy()] + [s.grad.numpy() for s in sources]


@pytest.mark.parametrize("name, make_args", CASES, ids=[c[0] for c in CASES])
def test_in_place_on_a_graph_tensor_rebases_history_as_torch(name, make_args):
    for ours, theirs in zip(_run(cn, name, make_args), _run(torch, name, make_args)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, make_args", CASES, ids=[c[0] for c in CASES])
def test_in_place_outside_a_graph_writes_and_bumps_the_version(name, make_args):
    rng = np.random.default_rng(1)
    start = rng.standard_normal((3, 4)).astype(np.float32)
    got, expected = cn.tensor(start.copy()), torch.tensor(start.copy())
    version = got._version
    storage = got.array
    for lib, t in ((cn, got), (torch, expected)):
        rng = np.random.default_rng(2)
        draw = lambda *s, lib=lib, rng=rng: lib.tensor(rng.standard_normal(s).astype(np.float32))  # noqa: E731
        getattr(t, name)(*make_args(lib, draw))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert got._version == version + 1 and got.array is storage  # NOTE: the same memory, written in place


def test_index_fill_and_scatter_value_in_place_through_a_view():
    for lib in (cn, torch):
        base = lib.zeros(3, 4)
        base[:, 1:].index_fill_(1, lib.tensor([0, 2]), 7.0)
        base[1:].scatter_(1, lib.tensor([[0], [3]]), -1.0)
        if lib is cn:
            ours = base.numpy()
        else:
            np.testing.assert_array_equal(ours, base.numpy())


def test_p_data_scatter_as_optimizers_and_initialisers_do():
    p = cn.nn.Parameter(cn.zeros(2, 3))
    p.data.index_copy_(0, cn.tensor([1]), cn.ones(1, 3))
    assert p.grad_fn is None and p.detach().numpy().tolist() == [[0, 0, 0], [1, 1, 1]]


def test_bad_arguments_are_refused_and_leave_the_tensor_untouched():
    x = cn.zeros(3, 4)
    cases = [
        (lambda: x.masked_scatter_(cn.tensor(MASK).float(), cn.ones(12)), RuntimeError, "boolean"),
        (lambda: x.masked_scatter_(cn.tensor(MASK), cn.ones(5)), RuntimeError,
         "Number of elements of source < number of ones in mask"),
        (lambda: x.masked_scatter_(cn.tensor(MASK), cn.ones(12, dtype=cn.float64)), RuntimeError,
         "expected self and source to have same dtypes"),
        (lambda: x.masked_scatter_(cn.ones(2, 3, 4, dtype=cn.bool_), cn.ones(24)), RuntimeError,
         "does not broadcast to the shape"),
        (lambda: x.masked_scatter_(cn.tensor(MASK), 1.0), TypeError, "argument 'source' must be Tensor"),
        (lambda: x.scatter_(0, cn.tensor([[3, 0, 0, 0]]), 1.0), RuntimeError, "index 3 is out of bounds"),
        (lambda: x.index_add_(0, cn.tensor([0, 1]), cn.ones(3, 4)), RuntimeError, "Number of indices"),
        (lambda: x.index_copy_(1, cn.tensor([0]), cn.ones(3, 1, dtype=cn.float64)), RuntimeError,
         "must have the same scalar type"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
        assert x._version == 0 and not x.numpy().any()
    leaf = cn.zeros(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.index_fill_(0, cn.tensor([0]), 1.0)


def test_a_tensor_saved_for_backward_then_scattered_into_raises_torchs_error():
    a = cn.randn(3, 4, requires_grad=True)
    x = a * 1
    y = x.exp()  # NOTE: exp saves its output
    y.index_fill_(0, cn.tensor([0]), 0.0)
    z = x.sin()  # sin saves its input x ...
    x.scatter_add_(0, cn.tensor([[0, 1, 2, 0]]), cn.ones(1, 4))  # ... which is then modified
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "prod"])
def test_scatter_reduce_along_a_later_dim_reads_all_of_src(reduce):
    # NOTE: a regression: along dim 1 only src's first column was read (the index's first array is (n, 1))
    idx = np.array([[0, 0], [1, 3], [2, 2]])
    ti = torch.tensor(idx)
    check_op([(3, 4), (3, 2)], lambda a, s: cn.scatter_reduce(a, 1, cn.tensor(idx), s, reduce),
             torch_fn=lambda a, s: torch.scatter_reduce(a, 1, ti, s, reduce), low=0.5, high=2.0,
             dtypes=("float32",))

"""``torch.sparse`` under ``cupynet run`` (tkipf/pygcn builds its adjacency matrix with
``torch.sparse.FloatTensor(indices, values, size)`` and multiplies with ``torch.spmm``): the legacy sparse
constructors, ``mm``, ``sum`` and ``addmm`` against torch's values and gradients, their refusals, and the
module name through the runner."""

import numpy
import pytest

import cupynet
from cupynet import run
from cupynet.compat import sparse

torch = pytest.importorskip("torch")

INDICES = [[0, 1, 1, 2, 0], [2, 0, 2, 1, 2]]  # (0, 2) twice: repeated indices add up
VALUES = [3.0, 4.0, 5.0, -1.5, 0.25]


def _close(ours, theirs, ulps=4):
    theirs = theirs.detach().double().numpy()
    # NOTE: float32 products of 3-term rows: a few ulps of the largest magnitude
    tol = ulps * numpy.finfo(numpy.float32).eps * max(1.0, float(numpy.abs(theirs).max()))
    numpy.testing.assert_allclose(ours.detach().array.astype(numpy.float64), theirs, rtol=0, atol=tol)


@pytest.mark.parametrize("name, size", [("FloatTensor", (3, 4)), ("FloatTensor", None), ("DoubleTensor", (3, 3))])
def test_legacy_constructor_matches_torch(name, size):
    torch_dtype = torch.float32 if name == "FloatTensor" else torch.float64
    args = (torch.tensor(INDICES), torch.tensor(VALUES, dtype=torch_dtype))
    ours_args = (cupynet.tensor(INDICES), cupynet.tensor(numpy.asarray(VALUES, dtype=args[1].numpy().dtype)))
    if size is not None:
        args, ours_args = args + (torch.Size(size),), ours_args + (size,)
    theirs = getattr(torch.sparse, name)(*args).to_dense()
    ours = getattr(sparse, name)(*ours_args)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    numpy.testing.assert_array_equal(ours.array, theirs.numpy())


@pytest.mark.parametrize("sizes", [(2, 3), (4,), ()])
def test_legacy_constructor_of_sizes_is_all_zero(sizes):
    theirs = torch.sparse.FloatTensor(*sizes).to_dense()
    ours = sparse.FloatTensor(*sizes)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == "float32"
    assert not ours.array.any()


def test_legacy_constructor_refuses_other_arguments_and_is_never_an_instance():
    with pytest.raises(TypeError, match=r"torch.sparse.FloatTensor: expected \(indices, values\)"):
        sparse.FloatTensor("a")
    with pytest.raises(TypeError, match="got \\(float\\)"):
        sparse.FloatTensor(2.5)
    with pytest.raises(TypeError):
        torch.sparse.FloatTensor((4, 1))
    with pytest.raises(TypeError, match="sizes as separate ints, got \\(tuple\\)"):
        sparse.FloatTensor((4, 1))
    assert not isinstance(cupynet.zeros(2, 2), sparse.FloatTensor)
    assert not isinstance(torch.zeros(2, 2), torch.sparse.FloatTensor)


def test_mm_values_and_gradients_match_torch():
    rng = numpy.random.default_rng(0)
    dense = rng.standard_normal((3, 2)).astype(numpy.float32)
    values_t = torch.tensor(VALUES, requires_grad=True)
    dense_t = torch.tensor(dense, requires_grad=True)
    out_t = torch.sparse.mm(torch.sparse_coo_tensor(torch.tensor(INDICES), values_t, (3, 3)), dense_t)
    (out_t * torch.arange(6.0).reshape(3, 2)).sum().backward()
    values = cupynet.tensor(VALUES, requires_grad=True)
    dense_c = cupynet.tensor(dense, requires_grad=True)
    out = sparse.mm(cupynet.sparse_coo_tensor(cupynet.tensor(INDICES), values, (3, 3)), dense_c)
    (out * cupynet.arange(6.0).reshape(3, 2)).sum().backward()
    _close(out, out_t)
    _close(values.grad, values_t.grad)
    _close(dense_c.grad, dense_t.grad)


def test_mm_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError):
        torch.sparse.mm(torch.ones(2, 3), torch.ones(2, 2))
    with pytest.raises((RuntimeError, ValueError)):
        sparse.mm(cupynet.ones(2, 3), cupynet.ones(2, 2))
    with pytest.raises((RuntimeError, ValueError), match="spmm"):
        sparse.mm(cupynet.ones(3), cupynet.ones(3, 2))


def test_sum_and_addmm_match_torch():
    s_t = torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES), (3, 3))
    s = cupynet.sparse_coo_tensor(cupynet.tensor(INDICES), cupynet.tensor(VALUES), (3, 3))
    _close(sparse.sum(s), torch.sparse.sum(s_t))
    _close(sparse.sum(s, 1), torch.sparse.sum(s_t, 1).to_dense())
    _close(sparse.sum(s, (0, 1), dtype=cupynet.float64), torch.sparse.sum(s_t, (0, 1), dtype=torch.float64))
    mat = numpy.arange(6.0, dtype=numpy.float32).reshape(3, 2)
    theirs = torch.sparse.addmm(torch.tensor(mat), s_t, torch.ones(3, 2), beta=2.0, alpha=-0.5)
    ours = sparse.addmm(cupynet.tensor(mat), s, cupynet.ones(3, 2), beta=2.0, alpha=-0.5)
    _close(ours, theirs)


def test_torch_sparse_is_mapped_for_scripts(tmp_path, capsys):
    path = tmp_path / "gcn.py"
    path.write_text(
        "import numpy as np\n"
        "import torch\n"
        "i = torch.from_numpy(np.array([[0, 1], [1, 0]], dtype=np.int64))\n"
        "adj = torch.sparse.FloatTensor(i, torch.ones(2), torch.Size((2, 2)))\n"
        "x = torch.ones(2, 3, requires_grad=True)\n"
        "torch.sparse.mm(adj, x).sum().backward()\n"
        "print(adj.to_dense().tolist(), x.grad.tolist())\n")
    rc = run.run_script(str(path), [])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.strip() == "[[0.0, 1.0], [1.0, 0.0]] [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]"

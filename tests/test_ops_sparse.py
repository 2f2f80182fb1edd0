"""Sparse COO tensors stored dense (issue 13: pytorch/examples gcn and gat): ``sparse_coo_tensor``,
``spmm``, ``to_sparse`` / ``to_dense``, against torch's sparse tensors (forward, backward, double backward
through ``tests/op_harness.check_op``), and the refusals."""

import numpy
import pytest
from op_harness import check_op

import cupynet

torch = pytest.importorskip("torch")

# NOTE: index (0, 1) twice: repeated indices add up, as PyTorch's coalesce sums them
INDICES = [[0, 1, 0, 2], [1, 2, 1, 0]]


def _coo(lib, values, size=(3, 4)):
    return lib.sparse_coo_tensor(lib.tensor(INDICES), values, size).to_dense()


def test_sparse_coo_tensor_matches_torch_with_gradients_to_values():
    check_op([(4,)], lambda v: _coo(cupynet, v), lambda v: _coo(torch, v))


def test_sparse_coo_tensor_with_dense_dims_and_inferred_size():
    check_op([(4, 2)], lambda v: cupynet.sparse_coo_tensor(cupynet.tensor(INDICES), v).to_dense(),
             lambda v: torch.sparse_coo_tensor(torch.tensor(INDICES), v).to_dense())
    assert cupynet.sparse_coo_tensor(INDICES, cupynet.ones(4, 2)).shape == (3, 3, 2)


def test_sparse_times_dense_as_gcn_uses_it():
    # NOTE: the (sparse) adjacency enters as data; the gradient flows to the dense operand and to values
    check_op([(4,), (4, 5)], lambda v, x: cupynet.spmm(_coo(cupynet, v), x),
             lambda v, x: torch.spmm(torch.sparse_coo_tensor(torch.tensor(INDICES), v, (3, 4)), x))
    check_op([(3, 4), (4, 2)], lambda a, x: cupynet.mm(a.to_sparse(), x), lambda a, x: torch.mm(a.to_sparse(), x))


def test_numpy_int32_indices_and_a_dtype_as_gcn_builds_its_adjacency():
    edges = numpy.array([[0, 1], [1, 2], [0, 1]], dtype=numpy.int32)
    ours = cupynet.sparse_coo_tensor(edges.T, cupynet.ones(3), (3, 3), dtype=cupynet.int64)
    theirs = torch.sparse_coo_tensor(edges.T, torch.ones(3), (3, 3), dtype=torch.int64).to_dense()
    assert ours.dtype == cupynet.int64
    numpy.testing.assert_array_equal(ours.array, theirs.numpy())
    numpy.testing.assert_array_equal((cupynet.eye(3) + ours).array, (torch.eye(3) + theirs).numpy())


def test_to_sparse_is_a_copy_and_to_dense_is_the_tensor_itself():
    x = cupynet.tensor([[1.0, 0.0], [0.0, 2.0]])
    copy = x.to_sparse()
    copy[0, 0] = 5.0
    assert x.array[0, 0] == 1.0 and not copy.is_sparse and not x.is_sparse
    assert x.to_dense() is x and x.to_dense(cupynet.float64).dtype == cupynet.float64


def test_requires_grad_makes_a_leaf():
    out = cupynet.sparse_coo_tensor(INDICES, cupynet.ones(4, requires_grad=True), (3, 4), requires_grad=True)
    assert out.is_leaf and out.requires_grad


@pytest.mark.parametrize("call, match", [
    (lambda: cupynet.sparse_coo_tensor(INDICES, cupynet.ones(3), (3, 4)),
     "indices and values must have same nnz, but got nnz from indices: 4, nnz from values: 3"),
    (lambda: cupynet.sparse_coo_tensor(INDICES, cupynet.ones(4), (2, 4)),
     "size is inconsistent with indices: for dim 0, size is 2 but found index 2"),
    (lambda: cupynet.sparse_coo_tensor([[0, -1]], cupynet.ones(2), (3,)), "found negative index -1 for dim 0"),
    (lambda: cupynet.sparse_coo_tensor(INDICES, cupynet.ones(4), (3, 4, 2)),
     r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied: len\(size\) = 3, sparse_dim = 2, dense_dim = 0"),
    (lambda: cupynet.sparse_coo_tensor([0, 1], cupynet.ones(2), (3,)),
     r"indices must be sparse_dim x nnz, but got: \[2\]"),
    (lambda: cupynet.sparse_coo_tensor([[0.5, 1.0]], cupynet.ones(2)), "indices must be integers, got dtype float64"),
    (lambda: cupynet.sparse_coo_tensor([[0, 1]], cupynet.ones(2, 3), (3, 2)),
     r"values of shape \(2, 3\) do not fit size \(3, 2\): expected values of shape \(nnz, 2\)"),
    (lambda: cupynet.spmm(cupynet.ones(3), cupynet.ones(3, 2)), "spmm: input must be a 2D tensor, got shape"),
    (lambda: cupynet.ones(2, 2).to_sparse(sparse_dim=3), r"sparse_dim must be in \[0, 2\]"),
    (lambda: cupynet.ones(2, 2).to_sparse(blocksize=(1, 1)), "has only the COO form"),
    (lambda: cupynet.sparse_coo_tensor(INDICES, cupynet.ones(4), "ab"),
     "size must be a sequence of non-negative ints, got 'ab'"),
    (lambda: cupynet.sparse_coo_tensor(INDICES, cupynet.ones(4), (3, -4)),
     r"size must be a sequence of non-negative ints, got \(3, -4\)"),
    (lambda: cupynet.ones(2, 2).to_sparse("a"), "sparse_dim must be an int or None, got 'a'"),
])
def test_bad_arguments_are_refused_with_what_was_expected(call, match):
    with pytest.raises((RuntimeError, NotImplementedError, TypeError), match=match):
        call()

"""Sparse COO tensors, stored dense: ``torch.sparse_coo_tensor``, ``torch.spmm``, ``Tensor.to_sparse`` /
``to_dense`` (pytorch/examples gcn and gat build their graph with them).

cupynet has no sparse layout. A COO tensor is built as the dense tensor it stands for (repeated
indices add up, as ``coalesce`` would sum them), so every op that takes a sparse tensor in PyTorch
takes it here, with the same values and the same gradients for the dense operands and for
``values``. What differs is memory (an ``n x n`` adjacency matrix costs ``n*n`` elements) and the
answers about the layout: ``is_sparse`` is False, ``to_sparse()`` gives a (dense) copy.
"""

from __future__ import annotations

import numpy

from .. import backend, dtypes
from ..tensor import Tensor
from ._linalg_checks import _require_ndim
from ._util import xp_of
from .arith import cast, to_device
from .indexing import IndexAddZeros
from .linalg import Matmul

__all__ = ["sparse_coo_tensor", "spmm"]


class SparseCooTensor(IndexAddZeros):
    """The dense tensor of COO ``indices``/``values``: zeros with each value added at its index (repeats add).

    Gradient: ``values`` gets the output gradient read at the indices.
    """

    op_name = "sparse_coo_tensor"


def _host_indices(indices):
    """``indices`` as a 2-D int64 NumPy array (PyTorch takes any integer array-like)."""
    host = backend.to_numpy(indices.array) if isinstance(indices, Tensor) else numpy.asarray(indices)
    if host.dtype.kind not in "iu":
        raise RuntimeError(f"sparse_coo_tensor: indices must be integers, got dtype {host.dtype}")
    if host.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: {list(host.shape)}")
    return host.astype(numpy.int64, copy=False)


def _coo_size(index, values, size):
    """The dense shape: ``size`` checked against the indices, or the smallest shape that holds them."""
    sparse_dim, nnz = index.shape
    if values.ndim < 1 or values.shape[0] != nnz:
        raise RuntimeError(f"sparse_coo_tensor: indices and values must have same nnz, but got nnz from "
                           f"indices: {nnz}, nnz from values: {values.shape[0] if values.ndim else 'a 0-d tensor'}")
    if nnz and index.min() < 0:
        dim = int(numpy.argmax(index.min(axis=1) < 0))
        raise RuntimeError(f"sparse_coo_tensor: found negative index {int(index[dim].min())} for dim {dim}")
    if size is None:
        rows = tuple(int(m) + 1 for m in index.max(axis=1)) if nnz else (0,) * sparse_dim
        return rows + tuple(values.shape[1:])
    if isinstance(size, (str, bytes)) or not hasattr(size, "__iter__") or not all(
            isinstance(s, (int, numpy.integer)) and not isinstance(s, bool) and s >= 0 for s in size):
        raise TypeError(f"sparse_coo_tensor: size must be a sequence of non-negative ints, got {size!r}")
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + values.ndim - 1:
        raise RuntimeError(f"sparse_coo_tensor: 'len(size) == sparse_dim + dense_dim' is not satisfied: "
                           f"len(size) = {len(size)}, sparse_dim = {sparse_dim}, dense_dim = {values.ndim - 1}")
    for dim in range(sparse_dim):
        if nnz and index[dim].max() >= size[dim]:
            raise RuntimeError(f"sparse_coo_tensor: size is inconsistent with indices: for dim {dim}, size is "
                               f"{size[dim]} but found index {int(index[dim].max())}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"sparse_coo_tensor: values of shape {tuple(values.shape)} do not fit size {size}: "
                           f"expected values of shape (nnz, {', '.join(map(str, size[sparse_dim:]))})")
    return size


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """The tensor with ``values[k]`` at position ``indices[:, k]``, zeros elsewhere (stored dense).

    ``out[indices[0, k], ..., indices[d-1, k]] += values[k]`` for every ``k``: repeated indices add up.

    Args:
        indices: a ``(sparse_dim, nnz)`` integer Tensor or array-like.
        values: a Tensor (or array-like) of shape ``(nnz, *dense_dims)``.
        size: the shape; the smallest that holds the indices when None.
        dtype: the dtype of the result; ``values``' own when None.
        device: the device of the result; ``values``' own when None.
        requires_grad: make the result a leaf that records gradients.
        check_invariants: accepted for PyTorch's signature: the indices are always checked against ``size``.
        is_coalesced: accepted for PyTorch's signature (a dense tensor has no coalesced state).
    """
    index = _host_indices(indices)
    if not isinstance(values, Tensor):
        from ..creation import tensor  # noqa: PLC0415 - creation sits below ops; only array-like values need it
        values = tensor(values)
    shape = _coo_size(index, values, size)
    if dtype is not None and dtypes.as_dtype(dtype) != values.dtype:
        values = cast(values, dtype)
    if device is not None:
        values = to_device(values, device)
    xp = xp_of(values)
    out = SparseCooTensor.apply(values, index=tuple(xp.asarray(row) for row in index), shape=shape)
    return out.detach().requires_grad_() if requires_grad else out


def spmm(input, mat2):  # noqa: A002 - PyTorch's names
    """``input @ mat2`` for a (sparse, here dense) matrix ``input`` and a dense matrix ``mat2``.

    Args:
        input: a 2-D Tensor (from ``sparse_coo_tensor`` or ``to_sparse``).
        mat2: a 2-D Tensor.
    """
    _require_ndim("spmm", "input", input, 2)
    _require_ndim("spmm", "mat2", mat2, 2)
    return Matmul.apply(input, mat2, op_name="spmm")


def to_sparse(input, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):  # noqa: A002
    """A copy of ``input`` standing for its COO form (cupynet stores it dense; see this module).

    Args:
        input: a Tensor.
        sparse_dim: how many leading dimensions are sparse (checked: 0 to ``input.ndim``).
        layout: None (COO); cupynet has no other sparse layout.
        blocksize: only for block layouts: must be None.
        dense_dim: only for compressed layouts: must be None.
    """
    if layout is not None or blocksize is not None or dense_dim is not None:
        raise NotImplementedError("to_sparse: cupynet stores sparse tensors dense and has only the COO form: "
                                  "expected layout=None, blocksize=None, dense_dim=None")
    if sparse_dim is not None and (not isinstance(sparse_dim, (int, numpy.integer)) or isinstance(sparse_dim, bool)):
        raise TypeError(f"to_sparse: sparse_dim must be an int or None, got {sparse_dim!r}")
    if sparse_dim is not None and not 0 <= sparse_dim <= input.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim must be in [0, {input.ndim}] for a {input.ndim}-D tensor, "
                           f"got {sparse_dim}")
    return input.clone()


def to_dense(input, dtype=None, *, masked_grad=None):  # noqa: A002
    """``input`` itself, as PyTorch's ``to_dense`` of a strided tensor (cast when ``dtype`` differs).

    Args:
        input: a Tensor.
        dtype: the dtype of the result, or None to keep it.
        masked_grad: accepted for PyTorch's signature (a dense gradient is always given).
    """
    if dtype is None or dtypes.as_dtype(dtype) == input.dtype:
        return input
    return cast(input, dtype)


METHODS = {"to_sparse": to_sparse, "to_dense": to_dense}

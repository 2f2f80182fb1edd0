"""``torch.sparse`` for ``cupynet run``: the legacy sparse constructors and the sparse matrix products.

cupynet stores a COO tensor dense (``cupynet.ops.sparse``), so each name here is the dense op that gives
PyTorch's values and gradients: ``torch.sparse.FloatTensor(indices, values, size)`` (pygcn builds its
adjacency matrix so) is ``sparse_coo_tensor`` of float32 values, ``torch.sparse.mm`` is ``spmm``,
``torch.sparse.sum`` a sum and ``torch.sparse.addmm`` ``addmm``. What differs is what differs for every
cupynet sparse tensor: memory, and ``is_sparse`` is False (so ``isinstance(t, torch.sparse.FloatTensor)`` is
False for every cupynet tensor, as it is in PyTorch for a strided one).
"""

from __future__ import annotations

import numpy

from cupynet import dtypes
from cupynet.creation import zeros
from cupynet.ops.linalg import addmm as _addmm
from cupynet.ops.reduce import sum as _sum
from cupynet.ops.sparse import sparse_coo_tensor, spmm

__all__ = ["FloatTensor", "DoubleTensor", "mm", "sum", "addmm"]


def _is_size(args) -> bool:
    """Whether ``args`` are sizes: ints only (PyTorch's sparse legacy constructors refuse one sequence)."""
    return all(isinstance(a, (int, numpy.integer)) and not isinstance(a, bool) for a in args)


class _LegacySparseType(type):
    """The metaclass of ``torch.sparse.FloatTensor`` & co.: calling one builds the (dense-stored) COO tensor."""

    def __call__(cls, *args):
        if len(args) in (2, 3) and not _is_size(args):
            indices, values = args[0], args[1]
            size = None if len(args) == 2 else tuple(args[2])
            return sparse_coo_tensor(indices, values, size, dtype=cls.dtype)
        if _is_size(args):
            return zeros(args if args else (0,), dtype=cls.dtype)
        raise TypeError(f"torch.sparse.{cls.__name__}: expected (indices, values), (indices, values, size) or "
                        f"sizes as separate ints, got ({', '.join(type(a).__name__ for a in args)})")

    def __instancecheck__(cls, obj):
        return False


def _legacy_sparse_type(name, dtype):
    doc = f"""``torch.sparse.{name}``: ``{name}(indices, values[, size])`` is ``sparse_coo_tensor`` with
    dtype {dtypes.as_dtype(dtype)}; ``{name}(*sizes)`` is an all-zero one (stored dense, see this module).

    Args:
        *args: ``indices`` (a ``(sparse_dim, nnz)`` integer Tensor), ``values`` and optionally ``size``;
            or the sizes alone, as separate ints (one sequence is refused, as in PyTorch).
    """
    return _LegacySparseType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": __name__})


FloatTensor = _legacy_sparse_type("FloatTensor", dtypes.float32)
DoubleTensor = _legacy_sparse_type("DoubleTensor", dtypes.float64)


def mm(mat1, mat2):
    """``mat1 @ mat2`` for a (sparse, stored dense) matrix ``mat1`` and a matrix ``mat2``; gradients to both.

    Args:
        mat1: a 2-D Tensor (from ``sparse_coo_tensor``, ``FloatTensor(indices, values, size)`` or ``to_sparse``).
        mat2: a 2-D Tensor.
    """
    return spmm(mat1, mat2)


def sum(input, dim=None, dtype=None):  # noqa: A001, A002 - PyTorch's names
    """The sum of ``input``'s elements (over ``dim`` when given), as ``torch.sparse.sum``; returned dense.

    Args:
        input: a Tensor.
        dim: a dimension or a tuple of them; all when None.
        dtype: the dtype to sum in; ``input``'s when None.
    """
    return _sum(input, dim, dtype=dtype)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)``, as ``torch.sparse.addmm``.

    Args:
        mat: the Tensor added (broadcast to the product's shape).
        mat1: the (sparse, stored dense) 2-D Tensor.
        mat2: a 2-D Tensor.
        beta: the factor of ``mat``.
        alpha: the factor of the product.
    """
    return _addmm(mat, mat1, mat2, beta=beta, alpha=alpha)

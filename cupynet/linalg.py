"""``cupynet.linalg``: ``torch.linalg``'s names, over the ops in ``cupynet.ops.decomposition``,
``ops.matrix``, ``ops.reduce`` and ``ops.linalg``.

``LinAlgError`` (a RuntimeError) is raised for singular or not positive-definite inputs,
as ``torch.linalg.LinAlgError``.
"""

from __future__ import annotations

from .ops.decomposition import (
    LinAlgError,
    cholesky_ex,
    cond,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    pinv,
    slogdet,
    solve,
    solve_triangular,
    svdvals,
    vander,
    vecdot,
)
from .ops.decomposition import linalg_cholesky as cholesky
from .ops.decomposition import linalg_qr as qr
from .ops.decomposition import linalg_svd as svd
from .ops.linalg import matmul
from .ops.matrix import diagonal as _diagonal
from .ops.matrix import linalg_cross as cross
from .ops.reduce import linalg_vector_norm as vector_norm

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "solve", "det", "slogdet", "svd", "svdvals",
           "qr", "eigh", "eigvalsh", "cholesky", "pinv", "lstsq", "matrix_rank", "cross", "multi_dot", "vecdot",
           "diagonal", "matmul", "eig", "eigvals", "matrix_exp", "matrix_power", "solve_triangular", "cholesky_ex",
           "inv_ex", "cond", "vander"]


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803 - PyTorch's name
    """The diagonals of the matrices in the last two dimensions (``torch.linalg.diagonal``).

    Args:
        A: a Tensor with at least 2 dimensions.
        offset: which diagonal.
        dim1: the rows' dimension.
        dim2: the columns' dimension.
    """
    return _diagonal(A, offset, dim1, dim2)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803
    """A vector or matrix norm, chosen as ``torch.linalg.norm`` does.

    With ``dim`` a pair (or ``dim`` None, ``ord`` given and A 2-D) it is ``matrix_norm``;
    otherwise ``vector_norm`` (``ord`` None means 2, over all elements when dim is None).

    Args:
        A: a Tensor.
        ord: the order (a number, inf, -inf, or "fro"/"nuc" for matrices).
        dim: an int, a pair of ints, or None.
        keepdim: keep the reduced dimensions with size 1.
        dtype: compute in this dtype.
    """
    if dim is None and ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.ndim}D.")
    matrix = (dim is not None and not isinstance(dim, int) and len(dim) == 2) or (
        dim is None and ord is not None and A.ndim == 2)
    if matrix:
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord {ord!r} is a matrix norm; pass a pair of dims")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)

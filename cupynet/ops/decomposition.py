"""Matrix decompositions and what is built on them: inv, solve, det, slogdet, cholesky, qr, eigh,
svd, eig, matrix_exp, and the compositions pinv, svdvals, matrix_rank, matrix_norm, lstsq, multi_dot,
vecdot, solve_triangular, matrix_power, cond, the ``*_ex`` variants and vander.

Each decomposition is one op class whose forward calls ``xp.linalg`` (NumPy, or
CuPy's cuSOLVER wrappers; CuPy has no general ``eig``, so ``eig`` runs NumPy's on
the host) and whose backward is the textbook formula written with cupynet ops
(matmul, solve, the op itself), so gradients of gradients work:

* inv:    dA = -Y^T G Y^T                     (Y = A^-1)
* solve:  dB = A^-T G,  dA = -dB X^T           (X = A^-1 B)
* det:    dA = G det(A) A^-T                   (non-singular A)
* slogdet: dA = G A^-T                         (the sign has no gradient)
* cholesky: dA = L^-T Phi(L^T G) L^-1, symmetrised (Phi: lower triangle, half diagonal)
* qr (m >= n): dA = (G_Q + Q copyltu(M)) R^-T, M = R G_R^T - G_Q^T Q
* eigh:   dA = V (diag(G_w) + F o (V^T G_V)) V^T,  F_ij = 1 / (w_j - w_i)
* svd:    Townsend's formula for the reduced SVD (distinct, non-zero singular values)
* matrix_exp: dA = the upper-right block of exp([[A^T, G], [0, A^T]])  (Najfeld and Havel)
* eig:    none: its outputs are complex and cupynet has no complex gradients (backward raises)

NOTE (dtypes): as PyTorch, these run in float32/float64 only; float16/bfloat16
input is refused with PyTorch's message. PyTorch's CUDA autocast lists do not name
them (they run in the input dtype: fp32 under autocast for fp32 weights).
"""

from __future__ import annotations

import collections

import numpy

from .. import backend, dtypes
from ..autograd.function import Function
from ..autograd.state import STATE
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import xp_of
from .arith import mul
from .indexing import cat, masked_fill, stack, tril, triu
from .linalg import matmul, matmul_arrays
from .matrix import diag_embed, diagonal
from .reduce import amax, amin
from .reduce import sum as sum_
from .shape import broadcast_to, transpose, unsqueeze

# NOTE: the package exports torch's top-level names (torch.det, torch.inverse, torch.svd's older API, ...);
# cupynet/linalg.py exports the torch.linalg ones (linalg.inv, linalg.svd, ...) from this module.
__all__ = ["det", "inverse", "slogdet", "logdet", "svd", "pinverse", "cholesky", "qr"]

SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])
QRResult = collections.namedtuple("qr", ["Q", "R"])
EighResult = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])
SVDResult = collections.namedtuple("svd", ["U", "S", "Vh"])
OldSVDResult = collections.namedtuple("svd", ["U", "S", "V"])
LstsqResult = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
EigResult = collections.namedtuple("eig", ["eigenvalues", "eigenvectors"])
CholeskyExResult = collections.namedtuple("cholesky_ex", ["L", "info"])
InvExResult = collections.namedtuple("inv_ex", ["inverse", "info"])


class LinAlgError(RuntimeError):
    """A matrix that the op cannot handle (singular, not positive-definite): ``torch.linalg.LinAlgError``."""


def _mT(t):  # noqa: N802 - the matrix transpose, PyTorch's name
    return transpose(t, -2, -1)


def _check_matrix(op_name, A, square=True, low_precision_ok=False):  # noqa: N803 - the matrix's linear-algebra name
    require_tensor(op_name, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op_name}: The input tensor A must have at least 2 dimensions.")
    if A.dtype in dtypes.LOW_PRECISION and not low_precision_ok:
        raise RuntimeError(f"{op_name}: Low precision dtypes not supported. Got {dtypes.torch_scalar_name(A.dtype)}")
    if not dtypes.is_floating(A.dtype):
        raise RuntimeError(f"{op_name}: Expected a floating point or complex tensor as input. Got "
                           f"{dtypes.torch_scalar_name(A.dtype)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op_name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _lapack(op_name, fn, *arrays, **kwargs):
    """Call ``xp.linalg.<fn>``, turning its LinAlgError into PyTorch's."""
    xp = xp_of(arrays[0])
    try:
        return getattr(xp.linalg, fn)(*arrays, **kwargs)
    except Exception as error:  # NOTE: numpy.linalg.LinAlgError, or CuPy's, which do not share a base class
        if type(error).__name__ != "LinAlgError":
            raise
        raise LinAlgError(f"{op_name}: {_LINALG_REASON.get(fn, str(error))}") from None


_LINALG_REASON = {
    "inv": "The diagonal element is zero, the inversion could not be completed because the input matrix is "
           "singular.",
    "solve": "The solver failed because the input matrix is singular.",
    "cholesky": "The factorization could not be completed because the input is not positive-definite.",
}


# ---- inverse and solve ----------------------------------------------------------------------------------
class Inv(Function):
    """The inverse of each square matrix."""

    op_name = "linalg_inv"
    save_outputs = True

    @staticmethod
    def forward(ctx, a):
        return _lapack("linalg.inv", "inv", a.array)

    @staticmethod
    def backward(ctx, grad):
        y = _mT(ctx.output(0))
        return -matmul(matmul(y, grad), y)


def inv(A):  # noqa: N803
    """The inverse of each square matrix in ``A`` (a LinAlgError when one is singular).

    Args:
        A: a (..., n, n) floating Tensor.
    """
    _check_matrix("linalg.inv", A)
    return Inv.apply(A)


class Solve(Function):
    """``X`` with ``A X = B`` for square ``A``."""

    op_name = "linalg_solve"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a)
        return _lapack("linalg.solve", "solve", a.array, b.array)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        grad_b = Solve.apply(_mT(a), grad)
        grad_a = -matmul(grad_b, _mT(ctx.output(0))) if ctx.needs_input_grad[0] else None
        return grad_a, grad_b


def solve(A, B, *, left=True):  # noqa: N803
    """The solution ``X`` of ``A X = B`` (``X A = B`` when left=False); B may be a vector per matrix.

    Args:
        A: a (..., n, n) floating Tensor.
        B: a (..., n, k) Tensor, or (..., n) for one vector.
        left: solve A X = B (True) or X A = B (False).
    """
    _check_matrix("linalg.solve", A)
    if not left:
        return _mT(solve(_mT(A), _mT(B)))
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    b = unsqueeze(B, -1) if vector else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    if B.dtype != A.dtype:
        name = dtypes.torch_scalar_name
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{name(A.dtype)} and B of type {name(B.dtype)} instead")
    batch = _broadcast_batch(A.shape[:-2], b.shape[:-2])
    out = Solve.apply(_expand_batch(A, batch), _expand_batch(b, batch))
    return out[..., 0] if vector else out


def _broadcast_batch(*shapes):
    return numpy.broadcast_shapes(*shapes)


def _expand_batch(t, batch):
    shape = tuple(batch) + t.shape[-2:]
    return t if t.shape == shape else broadcast_to(t, shape)


# ---- determinants -------------------------------------------------------------------------------------------
def _scaled_inv_t(scale, a):
    """``scale * A^-T`` per matrix (``scale`` has one value per matrix): the gradient of det and log|det|."""
    return unsqueeze(unsqueeze(scale, -1), -1) * _mT(inv(a))


class Det(Function):
    """The determinant of each square matrix."""

    op_name = "linalg_det"
    save_outputs = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return xp_of(a).asarray(xp_of(a).linalg.det(a.array), dtype=a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        # NOTE: d det / dA = det(A) A^-T; singular A (det 0) has no inverse: see docs/differences.md
        return _scaled_inv_t(grad * ctx.output(0), a)


def det(A):  # noqa: N803
    """The determinant of each square matrix in ``A``.

    Args:
        A: a (..., n, n) floating Tensor.
    """
    _check_matrix("linalg.det", A)
    return Det.apply(A)


class Slogdet(Function):
    """The sign and the log of the absolute determinant of each square matrix."""

    op_name = "linalg_slogdet"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        sign, logabs = xp_of(a).linalg.slogdet(a.array)
        out_sign = Tensor(xp_of(a).asarray(sign, dtype=a.dtype))
        ctx.mark_non_differentiable(out_sign)
        return out_sign, xp_of(a).asarray(logabs, dtype=a.dtype)

    @staticmethod
    def backward(ctx, grad_sign, grad_logabs):
        (a,) = ctx.saved_tensors
        return _scaled_inv_t(grad_logabs, a)


def slogdet(A):  # noqa: N803
    """``(sign, log|det A|)`` of each square matrix (stable where det itself would over/underflow).

    Args:
        A: a (..., n, n) floating Tensor.
    """
    _check_matrix("linalg.slogdet", A)
    return SlogdetResult(*Slogdet.apply(A))


# ---- cholesky / qr / eigh --------------------------------------------------------------------------------------
def _phi(t):
    """The lower triangle with the diagonal halved."""
    return tril(t) - 0.5 * diag_embed(diagonal(t, 0, -2, -1))


class Cholesky(Function):
    """The lower-triangular ``L`` with ``A = L L^T`` for a symmetric positive-definite ``A``."""

    op_name = "linalg_cholesky"
    save_outputs = True

    @staticmethod
    def forward(ctx, a):
        return _lapack("linalg.cholesky", "cholesky", a.array)

    @staticmethod
    def backward(ctx, grad):
        lower = ctx.output(0)
        l_inv = inv(lower)
        s = matmul(matmul(_mT(l_inv), _phi(matmul(_mT(lower), grad))), l_inv)
        return 0.5 * (s + _mT(s))


def linalg_cholesky(A, *, upper=False):  # noqa: N803
    """The Cholesky factor of each symmetric positive-definite matrix (lower; upper=True gives its transpose).

    Args:
        A: a (..., n, n) floating Tensor (only its lower triangle is read).
        upper: return ``U = L^T`` with ``A = U^T U``.
    """
    _check_matrix("linalg.cholesky", A)
    lower = Cholesky.apply(A)
    return _mT(lower) if upper else lower


def _copyltu(m):
    """The symmetric matrix whose lower triangle is ``m``'s."""
    low = tril(m, -1)
    return low + _mT(low) + diag_embed(diagonal(m, 0, -2, -1))


class QR(Function):
    """The reduced QR decomposition ``A = Q R`` (Q with orthonormal columns, R upper triangular)."""

    op_name = "linalg_qr"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, mode="reduced"):
        q, r = _lapack("linalg.qr", "qr", a.array, mode=mode)
        return q, r

    @staticmethod
    def backward(ctx, grad_q, grad_r):
        q, r = ctx.output(0), ctx.output(1)
        if q.shape[-1] != r.shape[-2] or r.shape[-2] < r.shape[-1]:
            raise NotImplementedError("linalg.qr backward: cupynet differentiates the reduced QR of a tall or square "
                                      "matrix (m >= n) only")
        m = matmul(r, _mT(grad_r)) - matmul(_mT(grad_q), q)
        b = grad_q + matmul(q, _copyltu(m))
        return _mT(Solve.apply(r, _mT(b)))


def linalg_qr(A, mode="reduced"):  # noqa: N803
    """``(Q, R)`` with ``A = Q R``: mode "reduced" (Q is m x k), "complete" (m x m) or "r" (Q empty).

    Args:
        A: a (..., m, n) floating Tensor.
        mode: "reduced", "complete" or "r".
    """
    _check_matrix("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    q, r = QR.apply(A, mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        return QRResult(Tensor(xp_of(A).zeros((0,), dtype=A.dtype)), r)
    return QRResult(q, r)


class Eigh(Function):
    """Eigenvalues (ascending) and orthonormal eigenvectors of each symmetric matrix."""

    op_name = "linalg_eigh"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, uplo="L"):
        w, v = _lapack("linalg.eigh", "eigh", a.array, UPLO=uplo)
        return w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad_w, grad_v):
        w, v = ctx.output(0), ctx.output(1)
        inner = diag_embed(grad_w)
        if grad_v is not None:
            gap = unsqueeze(w, -2) - unsqueeze(w, -1)                 # [i, j] = w_j - w_i
            same = Tensor(xp_of(w).eye(w.shape[-1], dtype=bool))
            inner = inner + masked_fill(matmul(_mT(v), grad_v) / masked_fill(gap, same, 1.0), same, 0.0)
        return matmul(matmul(v, inner), _mT(v))



def eigh(A, UPLO="L"):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix, eigenvalues ascending.

    Args:
        A: a (..., n, n) floating Tensor (only the UPLO triangle is read).
        UPLO: "L" or "U": which triangle to read.
    """
    _check_matrix("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return EighResult(*Eigh.apply(A, uplo=UPLO))


def eigvalsh(A, UPLO="L"):  # noqa: N803
    """The eigenvalues (ascending) of each symmetric matrix.

    Args:
        A: a (..., n, n) floating Tensor.
        UPLO: "L" or "U": which triangle to read.
    """
    return eigh(A, UPLO).eigenvalues


# ---- svd and what builds on it ----------------------------------------------------------------------------------
class SVD(Function):
    """The reduced singular value decomposition ``A = U diag(S) Vh``."""

    op_name = "linalg_svd"
    save_outputs = True

    @staticmethod
    def forward(ctx, a, full_matrices=False):
        u, s, vh = _lapack("linalg.svd", "svd", a.array, full_matrices=full_matrices)
        return u, s.astype(a.dtype, copy=False), vh

    @staticmethod
    def backward(ctx, grad_u, grad_s, grad_vh):
        u, s, vh = ctx.output(0), ctx.output(1), ctx.output(2)
        v = _mT(vh)
        core = diag_embed(grad_s) if grad_s is not None else None
        sm = diag_embed(s)
        if grad_u is not None or grad_vh is not None:
            # NOTE: F_ij = 1 / (s_j^2 - s_i^2) off the diagonal; needs distinct singular values
            s2 = s * s
            gap = unsqueeze(s2, -2) - unsqueeze(s2, -1)
            same = Tensor(xp_of(s).eye(s.shape[-1], dtype=bool))
            f = masked_fill(1.0 / masked_fill(gap, same, 1.0), same, 0.0)
            rest = 0
            if grad_u is not None:
                utgu = matmul(_mT(u), grad_u)
                term = matmul(f * (utgu - _mT(utgu)), sm)
                core = term if core is None else core + term
                s_inv = diag_embed(1.0 / s)
                rest = rest + matmul(matmul(grad_u - matmul(u, utgu), s_inv), vh)
            if grad_vh is not None:
                grad_v = _mT(grad_vh)
                vtgv = matmul(_mT(v), grad_v)
                term = matmul(sm, f * (vtgv - _mT(vtgv)))
                core = term if core is None else core + term
                s_inv = diag_embed(1.0 / s)
                rest = rest + matmul(matmul(u, s_inv), _mT(grad_v - matmul(v, vtgv)))
            return matmul(matmul(u, core), vh) + rest
        return matmul(matmul(u, core), vh)


def linalg_svd(A, full_matrices=True, *, driver=None):  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values descending.

    Args:
        A: a (..., m, n) floating Tensor.
        full_matrices: square U and Vh (True, PyTorch's default) or the reduced ones (False).
        driver: accepted for PyTorch compatibility (a cuSOLVER choice); ignored.
    """
    _check_matrix("linalg.svd", A, square=False)
    if full_matrices and A.requires_grad and A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.svd: the derivative of full_matrices=True is not defined for non-square inputs "
                           "(use full_matrices=False)")
    return SVDResult(*SVD.apply(A, full_matrices=full_matrices))


def svd(input, some=True, compute_uv=True):  # noqa: A002 - PyTorch's names
    """``torch.svd``: ``(U, S, V)`` with ``A = U diag(S) V^T`` (reduced unless some=False).

    Args:
        input: a (..., m, n) floating Tensor.
        some: the reduced decomposition (True) or the full one.
        compute_uv: accepted for PyTorch compatibility; U and V are always computed.
    """
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return OldSVDResult(u, s, _mT(vh))


def svdvals(A):  # noqa: N803
    """The singular values of each matrix, descending.

    Args:
        A: a (..., m, n) floating Tensor.
    """
    return linalg_svd(A, full_matrices=False).S


def _rtol_default(A, rtol, atol):  # noqa: N803
    if rtol is not None:
        return rtol
    eps = float(numpy.finfo(A.dtype).eps)
    return eps * max(A.shape[-2:]) if not atol else 0.0


def pinv(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """The Moore-Penrose pseudo-inverse, through the SVD; singular values below the tolerance are dropped.

    Args:
        A: a (..., m, n) floating Tensor.
        atol: absolute tolerance on singular values.
        rtol: tolerance relative to the largest singular value (default eps * max(m, n)).
        hermitian: A is symmetric (accepted; the SVD is used either way).
    """
    u, s, vh = linalg_svd(A, full_matrices=False)
    cutoff = unsqueeze(amax(s, -1), -1) * _rtol_default(A, rtol, atol)
    if atol is not None:
        cutoff = cutoff.clamp(min=atol)
    keep = s > cutoff
    s_inv = masked_fill(1.0 / masked_fill(s, ~keep, 1.0), ~keep, 0.0)
    return matmul(_mT(vh) * unsqueeze(s_inv, -2), _mT(u))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """The number of singular values above the tolerance, per matrix (int64).

    Args:
        A: a (..., m, n) floating Tensor.
        atol: absolute tolerance.
        rtol: relative tolerance (default eps * max(m, n)).
        hermitian: A is symmetric (accepted).
    """
    s = svdvals(A.detach())
    cutoff = unsqueeze(amax(s, -1), -1) * _rtol_default(A, rtol, atol) if s.shape[-1] else s
    if atol is not None:
        cutoff = cutoff.clamp(min=atol)
    return sum_(s > cutoff, -1).to(dtypes.int64)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002, N803
    """A matrix norm: "fro", "nuc", 2/-2 (largest/smallest singular value), 1/-1 (column sums), inf/-inf (rows).

    Args:
        A: a Tensor with at least 2 dimensions.
        ord: the norm.
        dim: the two dimensions holding the matrices.
        keepdim: keep those dimensions with size 1.
        dtype: compute in this dtype.
    """
    _check_matrix("linalg.matrix_norm", A, square=False)
    x = A.to(dtype) if dtype is not None else A
    d0, d1 = (d % x.ndim for d in dim)
    if ord == "fro":
        out = sum_(x * x, (d0, d1), keepdim=keepdim).sqrt()
        return out
    if ord in ("nuc", 2, -2):
        moved = x.movedim(d0, -2).movedim(d1 if d1 > d0 else d1 + 1, -1) if (d0, d1) != (x.ndim - 2, x.ndim - 1) \
            else x
        s = svdvals(moved)
        out = sum_(s, -1) if ord == "nuc" else (amax(s, -1) if ord == 2 else amin(s, -1))
    elif ord in (1, -1, numpy.inf, -numpy.inf):
        summed, keep = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = sum_(x.abs(), summed, keepdim=True)
        out = (amax if ord > 0 else amin)(sums, keep, keepdim=True)
        out = out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if keepdim:
        out = unsqueeze(unsqueeze(out, min(d0, d1)), max(d0, d1))
    return out


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution of ``A X = B`` (through the pseudo-inverse; differentiable).

    Args:
        A: a (..., m, n) floating Tensor.
        B: a (..., m, k) Tensor.
        rcond: relative cutoff of small singular values (default eps * max(m, n)).
        driver: accepted for PyTorch compatibility; ignored.
    """
    _check_matrix("linalg.lstsq", A, square=False)
    if B.ndim < 2 or B.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got A "
                           f"{tuple(A.shape)} and B {tuple(B.shape)}")
    solution = matmul(pinv(A, rtol=rcond), B)
    empty = Tensor(xp_of(A).zeros((0,), dtype=A.dtype))
    return LstsqResult(solution, empty, Tensor(xp_of(A).zeros((0,), dtype=dtypes.int64)), empty)


def multi_dot(tensors):
    """The product of a chain of matrices (the first may be a vector, so may the last).

    Args:
        tensors: a list of 2 or more Tensors.
    """
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for k, t in enumerate(tensors):
        allowed = (1, 2) if k in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise RuntimeError(f"multi_dot(): tensor {k} must be {' or '.join(f'{a}D' for a in allowed)} but got "
                               f"{t.ndim}D")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def vecdot(x, y, *, dim=-1):
    """The dot product of vectors along ``dim`` (inputs broadcast).

    Args:
        x: a Tensor.
        y: a Tensor.
        dim: the dimension of the vectors.
    """
    return sum_(mul(x, y), dim)


# ---- eig, matrix functions, triangular solves and the *_ex variants --------------------------------------------------
class Eig(Function):
    """Eigenvalues and unit eigenvectors of each general square matrix, complex (no gradient)."""

    op_name = "linalg_eig"

    @staticmethod
    def forward(ctx, a):
        # NOTE: CuPy has no general eig (cuSOLVER's geev is not wrapped): a CuPy input is solved by NumPy's
        # LAPACK geev on the host and copied back, one device sync, as torch documents for its CUDA eig
        xp = xp_of(a)
        w, v = _lapack("linalg.eig", "eig", backend.to_numpy(a.array).astype(numpy.float64))
        complex_dtype = numpy.complex64 if a.dtype == dtypes.float32 else numpy.complex128
        return xp.asarray(w.astype(complex_dtype)), xp.asarray(v.astype(complex_dtype))

    @staticmethod
    def backward(ctx, grad_w, grad_v):
        raise NotImplementedError("linalg.eig: no gradient (complex outputs; see eig)")


def eig(A):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of each square matrix, as complex64/complex128 Tensors (LAPACK geev).

    The eigenvectors are the columns, each of unit norm. Forward only: an ``A`` that requires grad, with grad
    mode on, is refused (NotImplementedError), rather than giving no gradient silently.

    Args:
        A: a (..., n, n) float32 or float64 Tensor.
    """
    _check_matrix("linalg.eig", A)
    if A.requires_grad and STATE.grad_enabled:
        # NOTE: loud rather than a silently missing gradient: torch differentiates eig, cupynet cannot (complex)
        raise NotImplementedError("linalg.eig: A requires grad, but the gradient of eig is complex and cupynet has "
                                  "no complex tensors in autograd; call it under no_grad() or on A.detach(), or use "
                                  "linalg.eigh for symmetric matrices (differentiable)")
    return EigResult(*Eig.apply(A))


def eigvals(A):  # noqa: N803
    """The eigenvalues of each square matrix, complex (``eig(A).eigenvalues``).

    Args:
        A: a (..., n, n) float32 or float64 Tensor.
    """
    return eig(A).eigenvalues


def _expm_array(a):
    """exp of each square matrix: scaling and squaring around an 18-term Taylor series, in float64.

    NOTE: after scaling by 2^-s the 1-norm is at most 1, where the series' truncation error is below
    1/19! ~ 1e-17; s squarings then give the usual relative error of a few ulps times the norm. s is
    one number for the whole batch, read on the host (one device sync).
    """
    xp = xp_of(a)
    x = a.astype(numpy.float64)
    norm = float(xp.abs(x).sum(axis=-2).max()) if x.size else 0.0
    # NOTE: an inf or NaN entry makes no number of squarings meaningful: none, and the series carries it
    squarings = max(0, int(numpy.ceil(numpy.log2(norm)))) if 0 < norm < numpy.inf else 0
    x = x / 2.0 ** squarings
    if not 0 <= norm < numpy.inf:
        # NOTE: inf/NaN input: every entry of the result is NaN, as torch.linalg.matrix_exp gives (no warnings)
        return xp.full(a.shape, numpy.nan, dtype=a.dtype)
    eye = xp.broadcast_to(xp.eye(a.shape[-1]), x.shape)
    out = eye
    for k in range(18, 0, -1):  # NOTE: Horner: I + x/1 (I + x/2 (I + ... (I + x/18)))
        out = eye + matmul_arrays(x, out) / k
    for _ in range(squarings):
        out = matmul_arrays(out, out)
    return out.astype(a.dtype, copy=False)


class MatrixExp(Function):
    """The exponential ``sum_k A^k / k!`` of each square matrix."""

    op_name = "linalg_matrix_exp"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _expm_array(a.array)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        at = _mT(a)
        block = cat([cat([at, grad], -1), cat([Tensor(xp_of(a).zeros_like(at.array)), at], -1)], -2)
        return MatrixExp.apply(block)[..., :n, n:]


def matrix_exp(A):  # noqa: N803
    """The matrix exponential of each square matrix (``torch.linalg.matrix_exp``).

    Args:
        A: a (..., n, n) float32 or float64 Tensor.
    """
    _check_matrix("linalg.matrix_exp", A)
    return MatrixExp.apply(A)


def matrix_power(A, n):  # noqa: N803
    """``A`` multiplied by itself ``n`` times (by squaring); ``n = 0`` gives I, ``n < 0`` powers of ``inv(A)``.

    Args:
        A: a (..., m, m) floating Tensor.
        n: an int.
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {n!r}")
    _check_matrix("linalg.matrix_power", A, low_precision_ok=True)
    if n == 0:
        return broadcast_to(Tensor(xp_of(A).eye(A.shape[-1], dtype=A.dtype)), A.shape)
    base, out, k = (inv(A) if n < 0 else A), None, abs(n)
    while True:  # NOTE: binary powering: about 2 log2(n) products instead of n - 1
        if k & 1:
            out = base if out is None else matmul(out, base)
        k >>= 1
        if not k:
            return out
        base = matmul(base, base)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):  # noqa: N803
    """The solution ``X`` of ``A X = B`` (``X A = B`` when left=False) reading only one triangle of ``A``.

    Args:
        A: a (..., n, n) floating Tensor; only its upper (``upper``) or lower triangle is read.
        B: a (..., n, k) Tensor (``(..., k, n)`` when left=False).
        upper: read the upper triangle (keyword-only, as in PyTorch).
        left: solve A X = B (True) or X A = B (False).
        unitriangular: take A's diagonal as ones without reading it.
    """
    _check_matrix("linalg.solve_triangular", A)
    if not isinstance(B, Tensor) or B.ndim < 2:
        got = tuple(B.shape) if isinstance(B, Tensor) else type(B).__name__
        raise RuntimeError(f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got {got}")
    t = triu(A) if upper else tril(A)
    if unitriangular:
        eye = Tensor(xp_of(A).eye(A.shape[-1], dtype=bool))
        t = masked_fill(t, eye, 1.0)
    # NOTE: a general solve of the triangle: the same X (LAPACK's LU of a triangular matrix needs no pivoting
    # in exact arithmetic), O(n^3) rather than O(n^2); the gradient lands on the triangle only, as torch's
    return solve(t, B, left=left)


def cholesky_ex(A, *, upper=False, check_errors=False):  # noqa: N803
    """``(L, info)``: the Cholesky factor and, per matrix, 0 or the order of the first non-positive-definite minor.

    Args:
        A: a (..., n, n) floating Tensor.
        upper: return the upper factor.
        check_errors: raise on a failure instead of reporting it in ``info``.
    """
    _check_matrix("linalg.cholesky_ex", A)
    return CholeskyExResult(*_ex(lambda m: linalg_cholesky(m, upper=upper), _cholesky_info, A, check_errors))


def inv_ex(A, *, check_errors=False):  # noqa: N803
    """``(inverse, info)``: the inverse and, per matrix, 0 or the (1-based) index of the first zero LU pivot.

    Args:
        A: a (..., n, n) floating Tensor.
        check_errors: raise on a singular matrix instead of reporting it in ``info``.
    """
    _check_matrix("linalg.inv_ex", A)
    return InvExResult(*_ex(inv, _inv_info, A, check_errors))


def _ex(factor, info_of, A, check_errors):  # noqa: N803
    """``factor(A)`` and a zero ``info``; on a LinAlgError, matrix by matrix: NaN and ``info_of`` where one fails.

    NOTE: the fast path is one batched call; only a batch holding a failure is redone per matrix (on the host
    for ``info``). torch leaves a partial factor in a failed matrix's slot; cupynet fills it with NaN.
    """
    xp = xp_of(A)
    try:
        return factor(A), Tensor(xp.zeros(A.shape[:-2], dtype=dtypes.int32))
    except LinAlgError:
        if check_errors:
            raise
    flat = A.reshape((-1,) + A.shape[-2:])
    outs, info = [], numpy.zeros(flat.shape[0], dtype=numpy.int32)
    for i in range(flat.shape[0]):
        try:
            outs.append(factor(flat[i]).array)
        except LinAlgError:
            info[i] = info_of(backend.to_numpy(flat.array[i]).astype(numpy.float64))
            outs.append(xp.full(A.shape[-2:], numpy.nan, dtype=A.dtype))
    return Tensor(xp.stack(outs).reshape(A.shape)), Tensor(xp.asarray(info.reshape(A.shape[:-2])))


def _cholesky_info(a):
    """LAPACK potrf's info: the order of the first leading minor that is not positive-definite."""
    for k in range(1, a.shape[0] + 1):
        try:
            numpy.linalg.cholesky(a[:k, :k])
        except numpy.linalg.LinAlgError:
            return k
    return 0


def _inv_info(a):
    """LAPACK getrf's info: the 1-based index of the first zero pivot of a partial-pivoting LU."""
    u = a.copy()
    for k in range(u.shape[0]):
        p = k + int(numpy.argmax(numpy.abs(u[k:, k])))
        u[[k, p]] = u[[p, k]]
        if u[k, k] == 0:
            return k + 1
        u[k + 1:] -= numpy.outer(u[k + 1:, k] / u[k, k], u[k])
    return 0


def cond(A, p=None):  # noqa: N803
    """The condition number of each matrix in norm ``p`` (None or 2: the ratio of extreme singular values).

    Args:
        A: a (..., m, n) floating Tensor (square unless p is None, 2 or -2).
        p: None, 2, -2, "fro", "nuc", inf, -inf, 1 or -1.
    """
    if p in (None, 2, -2):
        _check_matrix("linalg.cond", A, square=False)
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    _check_matrix("linalg.cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def vander(x, *, N=None):  # noqa: N803
    """The Vandermonde matrix of ``x``: column j is ``x ** j`` (increasing powers, as torch.linalg.vander).

    Args:
        x: a (..., n) Tensor.
        N: the number of columns (default n).
    """
    if not isinstance(x, Tensor) or x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if not isinstance(n, int) or n < 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {N!r}")
    cols = [Tensor(xp_of(x).ones_like(x.array))] + [x] * (n > 1)
    while len(cols) < n:
        cols.append(cols[-1] * x)
    return stack(cols, -1)


def inverse(input):  # noqa: A002 - PyTorch's name
    """``torch.inverse``: the same as ``linalg.inv``.

    Args:
        input: a (..., n, n) floating Tensor.
    """
    return inv(input)


def logdet(input):  # noqa: A002
    """``log(det(input))``: NaN where the determinant is negative, -inf where it is 0.

    Args:
        input: a (..., n, n) floating Tensor.
    """
    sign, logabs = slogdet(input)
    return masked_fill(logabs, sign.detach() < 0, numpy.nan)


def pinverse(input, rcond=1e-15):  # noqa: A002
    """``torch.pinverse``: the pseudo-inverse with singular values below ``rcond * max`` dropped.

    Args:
        input: a (..., m, n) floating Tensor.
        rcond: the relative cutoff.
    """
    return pinv(input, rtol=rcond)


def cholesky(input, upper=False):  # noqa: A002
    """``torch.cholesky``: ``linalg.cholesky`` with ``upper`` as a positional argument.

    Args:
        input: a (..., n, n) symmetric positive-definite Tensor.
        upper: return the upper factor.
    """
    return linalg_cholesky(input, upper=upper)


def qr(input, some=True):  # noqa: A002
    """``torch.qr``: ``linalg.qr`` with ``some`` (reduced) instead of ``mode``.

    Args:
        input: a (..., m, n) floating Tensor.
        some: the reduced decomposition (True) or the complete one.
    """
    return linalg_qr(input, "reduced" if some else "complete")


METHODS = {name: globals()[name] for name in __all__}

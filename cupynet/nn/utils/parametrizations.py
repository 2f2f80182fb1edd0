"""``nn.utils.parametrizations``: weight norm and spectral norm as parametrizations (``parametrize.py``).

* ``weight_norm(module)``: ``weight = g * v / ||v||`` with the norm over every dimension but ``dim``;
  ``g`` and ``v`` are ``parametrizations.weight.original0`` / ``original1``.
* ``spectral_norm(module)``: ``weight = W / sigma(W)``, ``sigma`` the largest singular value of the weight
  as a matrix (``dim`` first, the rest flattened), estimated by power iteration: one step (or
  ``n_power_iterations``) per read in training mode, 15 at registration; the vectors are buffers ``_u``,
  ``_v`` of the parametrization, so ``parametrizations.weight.0._u`` in the state dict, as PyTorch.

* ``orthogonal(module)``: the weight kept orthogonal (``Q^H Q = I``): ``base @ map(X)`` where ``map`` is the
  matrix exponential or the Cayley map of a skew-symmetric matrix made from ``X``, or a product of
  Householder reflections (PyTorch's three maps, its defaults); ``base`` (a buffer) is the weight's
  orthogonal factor at registration.

``norm_hooks.py`` has the older forms (``nn.utils.weight_norm``, ``nn.utils.spectral_norm``), which
compute the weight in a forward pre-hook instead.
"""

from __future__ import annotations

import numpy

from ... import backend, creation, linalg
from ...autograd import no_grad
from ...ops import cat, mv, normalize, vdot
from ...tensor import Tensor
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal", "norm_except_dim", "weight_norm_value", "matrix_view"]


def norm_except_dim(v, dim: int):
    """The 2-norm of ``v`` over every dimension but ``dim``, keeping them as size 1 (``dim=-1``: one norm of all).

    Args:
        v: a Tensor.
        dim: the kept dimension, or -1 for the norm of the whole tensor (PyTorch's convention).
    """
    if dim == -1:
        return (v * v).sum().sqrt()
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return (v * v).sum(dim=others, keepdim=True).sqrt() if others else v.abs()


def weight_norm_value(g, v, dim: int):
    """``v * (g / ||v||)``, the norm over every dimension but ``dim`` (PyTorch's ``_weight_norm``).

    Args:
        g: the magnitudes (the shape of ``norm_except_dim(v, dim)``).
        v: the directions.
        dim: the kept dimension, or -1.
    """
    return v * (g / norm_except_dim(v, dim))


def matrix_view(weight, dim: int):
    """``weight`` as a matrix: dimension ``dim`` first, the others flattened.

    Args:
        weight: a Tensor of at least 2 dimensions.
        dim: the row dimension.
    """
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


class _WeightNorm(Module):
    """``weight = g * v / ||v||``: the parametrization ``weight_norm`` registers.

    Args:
        dim: the dimension whose slices keep their own magnitude (-1: one magnitude for the tensor).
    """

    def __init__(self, dim: int):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        """The weight from its magnitude and direction.

        Args:
            weight_g: the magnitudes.
            weight_v: the directions.
        """
        return weight_norm_value(weight_g, weight_v, self.dim)

    def right_inverse(self, weight):
        """``(g, v)`` for a weight: its norm and the weight itself.

        Args:
            weight: a Tensor.
        """
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Split ``module.<name>`` into a magnitude ``original0`` and a direction ``original1`` (Salimans & Kingma).

    Args:
        module: the Module.
        name: the parameter's name.
        dim: the dimension whose slices keep their own magnitude (None: one magnitude for the tensor).
    """
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the power-iteration estimate of the largest singular value.

    Args:
        weight: the weight it will be applied to (sets the vectors' sizes).
        n_power_iterations: power-iteration steps per read in training mode (> 0).
        dim: the dimension taken as the matrix's rows.
        eps: the smallest norm when normalizing the vectors.
    """

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim, self.eps, self.n_power_iterations = dim % max(ndim, 1), eps, n_power_iterations
        if ndim > 1:
            matrix = matrix_view(weight.detach(), self.dim)
            h, w = matrix.shape
            # NOTE: random start vectors from cupynet's generator (torch draws its own: load its state to match)
            self.register_buffer("_u", normalize(matrix.new_empty(h).normal_(0, 1), dim=0, eps=eps))
            self.register_buffer("_v", normalize(matrix.new_empty(w).normal_(0, 1), dim=0, eps=eps))
            self._power_method(matrix, 15)

    def _power_method(self, matrix, steps: int) -> None:
        """``steps`` power iterations, written into the ``_u`` / ``_v`` buffers in place."""
        with no_grad():
            for _ in range(steps):
                self._u.array[...] = normalize(mv(matrix, self._v), dim=0, eps=self.eps).array
                self._v.array[...] = normalize(mv(matrix.T, self._u), dim=0, eps=self.eps).array

    def forward(self, weight):
        """``weight / sigma`` (a 1-D weight: normalized).

        Args:
            weight: the original weight.
        """
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = matrix_view(weight, self.dim)
        if self.training:
            self._power_method(matrix.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # NOTE: constants of this read (the buffers change in place)
        return weight / vdot(u, mv(matrix, v))

    def right_inverse(self, value):
        """The weight itself (a spectral norm is set by setting the original).

        Args:
            value: a Tensor.
        """
        return value


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value on every read (Miyato et al.).

    Args:
        module: the Module.
        name: the parameter's name.
        n_power_iterations: power-iteration steps per read in training mode.
        eps: the smallest norm when normalizing the vectors.
        dim: the rows' dimension (default 1 for transposed convolutions, else 0).
    """
    weight = getattr(module, name, None)
    if weight is None or not hasattr(weight, "ndim"):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _householder_product(reflectors, tau):
    """The first k columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T``, ``v_i`` column i of ``reflectors``
    below the diagonal with a 1 on it (LAPACK's ``orgqr``; differentiable: cupynet ops)."""
    n, k = reflectors.shape[-2], reflectors.shape[-1]
    eye = creation.eye(n, dtype=reflectors.dtype, device=reflectors.device)
    q = eye[:, :k]
    for i in reversed(range(k)):
        v = reflectors[..., :, i:i + 1] + eye[:, i:i + 1]
        q = q - (v * tau[..., i:i + 1].unsqueeze(-1)) @ (v.mT @ q)
    return q


def _make_orthogonal(a):
    """The Q of ``a = QR`` (``a`` tall) with ``diag(R) >= 0``: unique, so the same Q as PyTorch's."""
    host = backend.to_numpy(a.array)
    q, r = numpy.linalg.qr(host)
    signs = numpy.sign(numpy.diagonal(r, axis1=-2, axis2=-1))
    q = q * numpy.where(signs == 0, 1, signs)[..., None, :]
    return Tensor(backend.array_module_for(a.device).asarray(q.astype(host.dtype)))


class _Orthogonal(Module):
    """The parametrization ``orthogonal`` registers (PyTorch's, with ``use_trivialization=True``).

    Args:
        weight: the weight it will be applied to (at least 2-D).
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``.
    """

    def __init__(self, weight, orthogonal_map: str):
        super().__init__()
        self.shape, self.orthogonal_map = tuple(weight.shape), orthogonal_map
        self.register_buffer("base", None)

    def forward(self, x):
        """The orthogonal weight ``base @ map(x)``.

        Args:
            x: the original (a matrix or a batch of them).
        """
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, creation.zeros(*x.shape[:-2], n, n - k, dtype=x.dtype, device=x.device)], dim=-1)
            a = x - x.mT
            if self.orthogonal_map == "matrix_exp":
                q = linalg.matrix_exp(a)
            else:
                eye = creation.eye(n, dtype=a.dtype, device=a.device)
                q = linalg.solve(eye - a * 0.5, eye + a * 0.5)
            q = q[..., :k] if n != k else q
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            # NOTE: the diagonal of x holds the signs (+-1), read without a gradient, as PyTorch
            signs = Tensor(x.diagonal(dim1=-2, dim2=-1).array.astype(numpy.int64).astype(x.dtype))
            q = _householder_product(a, tau) * signs.unsqueeze(-2)
        q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q):
        """Store ``q``'s orthogonal factor as ``base``; the original becomes ``-I`` (so the map starts at ``base``).

        Args:
            q: a Tensor of the weight's shape.
        """
        if tuple(q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{tuple(q.shape)}.")
        with no_grad():
            start = q
            n, k = q.shape[-2], q.shape[-1]
            if n < k:
                q, n, k = q.mT, k, n
            if n != k:
                # NOTE: completed with random columns, as PyTorch (its base differs: load its buffer to match)
                q = cat([q, creation.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)], dim=-1)
            self.base = _make_orthogonal(q.detach())
            neg_eye = creation.zeros(*start.shape, dtype=start.dtype, device=start.device)
            neg_eye.array[..., range(min(start.shape[-2:])), range(min(start.shape[-2:]))] = -1
            return neg_eye


def orthogonal(module, name: str = "weight", orthogonal_map=None, *, use_trivialization: bool = True):
    """Keep ``module.<name>`` orthogonal (or its transpose, for a wide matrix) (PyTorch's ``orthogonal``).

    Args:
        module: the Module.
        name: the parameter's name (a matrix or a batch of matrices).
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"`` (default: matrix_exp for a square
            weight, householder otherwise).
        use_trivialization: must be True (cupynet's only form: the map starts from the weight's factor).
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    if not use_trivialization:
        raise NotImplementedError("orthogonal: use_trivialization=False is not supported by cupynet")
    return parametrize.register_parametrization(module, name, _Orthogonal(weight, orthogonal_map), unsafe=True)

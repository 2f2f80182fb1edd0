"""Shape bookkeeping shared by the reduce family (no ops here)."""

from __future__ import annotations

from .. import dtypes
from ._util import normalize_dim
from .shape import reshape


def _axes(op_name, dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = tuple(sorted(normalize_dim(op_name, d, ndim) for d in dims))
    if ndim == 0:
        return ()  # NOTE: a 0-d tensor accepts dim 0 or -1 (as PyTorch) and has no axis to reduce
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{op_name}: dim {tuple(dims)} names the same dimension more than once")
    return axes


def _keepdim_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _keep(t, in_shape, axes, keepdim):
    """A reduced tensor reshaped to its keepdim form, so it broadcasts against the input."""
    return t if keepdim else reshape(t, _keepdim_shape(in_shape, axes))


def _count(shape, axes):
    count = 1
    for ax in axes:
        count *= shape[ax]
    return count


def _acc_dtype(dtype):
    return dtypes.float32 if dtype in dtypes.LOW_PRECISION else None


def _check_reduced_nonempty(op_name, t, axes):
    for ax in axes:
        if t.shape[ax] == 0:
            raise IndexError(f"{op_name}(): Expected reduction dim {ax} to have non-zero size (input shape "
                             f"{tuple(t.shape)})")


def _reduced_shape(shape, axes):
    return tuple(s for i, s in enumerate(shape) if i not in axes)

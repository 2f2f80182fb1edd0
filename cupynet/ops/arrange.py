"""Rearranging and combining tensors, all compositions of differentiable ops: meshgrid, cartesian_prod,
repeat_interleave, take_along_dim, diff, rot90, atleast_1d/2d/3d, clamp_min/clamp_max.

None of these needs its own backward: each is built from reshape/expand/permute/
flip/cat/gather/index_select/sub/clamp, whose gradients already exist.
"""

from __future__ import annotations

import warnings

from .. import dtypes
from ..tensor import Tensor
from ._util import check_same_device, normalize_dim, xp_of
from .arith import sub
from .clamping import clamp
from .indexing import IndexSelect, cat, check_index_tensor, flip, gather, stack
from .shape import broadcast_to, permute, reshape

__all__ = ["meshgrid", "cartesian_prod", "repeat_interleave", "take_along_dim", "diff", "rot90", "atleast_1d",
           "atleast_2d", "atleast_3d", "clamp_min", "clamp_max"]


def _tensors(op_name, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: expected Tensors, but argument {k} is {type(t).__name__}")
    return tensors


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors: ``out[k]`` varies along dim k ('ij') or swaps the first two ('xy').

    Args:
        *tensors: 1-D (or 0-D) Tensors, or one list of them.
        indexing: "ij" (matrix) or "xy" (Cartesian); None means "ij" with PyTorch's warning.
    """
    tensors = _tensors("meshgrid", tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for k, t in enumerate(tensors):
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D "
                               f"(tensor {k})")
    flat = [reshape(t, (-1,)) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    order = [1, 0, *range(2, len(flat))] if swap else list(range(len(flat)))
    shape = tuple(flat[k].shape[0] for k in order)
    out = []
    for k, t in enumerate(flat):
        where = order.index(k)
        view = [1] * len(flat)
        view[where] = t.shape[0]
        out.append(broadcast_to(reshape(t, tuple(view)), shape))
    return tuple(out)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' values, as the rows of a (N, len(tensors)) tensor.

    Args:
        *tensors: 1-D Tensors.
    """
    tensors = _tensors("cartesian_prod", tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], dim=1)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002 - PyTorch's names
    """Repeat each element (or slice along ``dim``) ``repeats`` times in place.

    Args:
        input: a Tensor; or, with repeats None, a 1-D int Tensor of counts (then returns repeated arange).
        repeats: an int or a 1-D int Tensor of one count per element along dim.
        dim: the dimension, or None to flatten first.
        output_size: accepted for PyTorch compatibility (the total length; checked when given).
    """
    xp = xp_of(input)
    if repeats is None:
        check_index_tensor("repeat_interleave", input, (0, 1))
        return Tensor(xp.repeat(xp.arange(input.numel()), input.array.reshape(-1)))
    check_same_device("repeat_interleave", input=input, repeats=repeats)
    source = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else normalize_dim("repeat_interleave", dim, input.ndim)
    n = source.shape[d] if source.ndim else 1
    counts = repeats.array.reshape(-1) if isinstance(repeats, Tensor) else xp.asarray([repeats])
    if counts.size == 1:
        counts = xp.full(n, int(counts[0]))
    if counts.size != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.size} and input.size({d}) = {n}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    index = xp.repeat(xp.arange(n), counts)
    if output_size is not None and index.size != output_size:
        raise RuntimeError(f"repeat_interleave: output_size {output_size} does not match the total of repeats "
                           f"{index.size}")
    return IndexSelect.apply(source, index=(slice(None),) * d + (index,))


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """Values of ``input`` at ``indices`` along ``dim`` (indices broadcast against input; flattened if dim None).

    Args:
        input: a Tensor.
        indices: an int64 Tensor.
        dim: the dimension, or None to index the flattened input.
    """
    check_index_tensor("take_along_dim", indices)
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    d = normalize_dim("take_along_dim", dim, input.ndim)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    shape = [max(a, b) for a, b in zip(input.shape, indices.shape)]
    in_shape, idx_shape = list(shape), list(shape)
    in_shape[d], idx_shape[d] = input.shape[d], indices.shape[d]
    return gather(broadcast_to(input, tuple(in_shape)), d, Tensor(xp_of(indices).broadcast_to(indices.array,
                                                                                              tuple(idx_shape))))


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    """The n-th forward difference along ``dim``: ``out[i] = x[i + 1] - x[i]``, applied n times.

    Args:
        input: a Tensor.
        n: how many times to difference (>= 0).
        dim: the dimension.
        prepend: a Tensor put before input along dim first.
        append: a Tensor put after input along dim first.
    """
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim("diff", dim, input.ndim)
    x = cat([t for t in (prepend, input, append) if t is not None], dim=d) if prepend is not None or \
        append is not None else input
    for _ in range(n):
        if x.shape[d] == 0:
            break
        head = (slice(None),) * d
        later, earlier = x[head + (slice(1, None),)], x[head + (slice(None, -1),)]
        x = (later != earlier) if x.dtype == dtypes.bool_ else sub(later, earlier)
    return x


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second).

    Args:
        input: a Tensor with at least 2 dimensions.
        k: number of quarter turns (negative: the other way).
        dims: the two dimensions of the plane.
    """
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (normalize_dim("rot90", d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k %= 4
    swap = list(range(input.ndim))
    swap[d0], swap[d1] = d1, d0
    if k == 1:
        return permute(flip(input, [d1]), *swap)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(permute(input, *swap), [d1])
    return input


def _at_least(n, tensors):
    tensors = _tensors(f"atleast_{n}d", tensors)
    out = []
    for t in tensors:
        shape = t.shape
        if t.ndim < n:
            shape = {0: (1,) * n, 1: (1, *t.shape, 1)[:n] if n == 3 else (1, *t.shape),
                     2: (*t.shape, 1)}[t.ndim]
        out.append(reshape(t, shape) if shape != t.shape else t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors):
    """Each tensor viewed with at least 1 dimension.

    Args:
        *tensors: Tensors (or one list of them).
    """
    return _at_least(1, tensors)


def atleast_2d(*tensors):
    """Each tensor viewed with at least 2 dimensions (a 1-D one becomes a row).

    Args:
        *tensors: Tensors (or one list of them).
    """
    return _at_least(2, tensors)


def atleast_3d(*tensors):
    """Each tensor viewed with at least 3 dimensions ((n,) becomes (1, n, 1); (m, n) becomes (m, n, 1)).

    Args:
        *tensors: Tensors (or one list of them).
    """
    return _at_least(3, tensors)


def clamp_min(input, min):  # noqa: A002 - PyTorch's names
    """``clamp(input, min=min)``.

    Args:
        input: a Tensor.
        min: the lower bound (a number or Tensor).
    """
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    """``clamp(input, max=max)``.

    Args:
        input: a Tensor.
        max: the upper bound (a number or Tensor).
    """
    return clamp(input, max=max)


METHODS = {"repeat_interleave": repeat_interleave, "take_along_dim": take_along_dim, "diff": diff, "rot90": rot90,
           "clamp_min": clamp_min, "clamp_max": clamp_max}

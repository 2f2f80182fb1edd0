"""Selecting and counting by value: nonzero, argwhere, masked_select, take, count_nonzero, isin, bincount,
histc, and sampling indices by weight (multinomial).

Only ``masked_select`` and ``take`` are differentiable: each is a read at chosen positions (a
``GetItem``, indexing.py), whose backward writes the gradient back there. The
others return indices or counts (PyTorch gives them no gradient either).

NOTE (GPU): the result size of nonzero/argwhere/masked_select/unique depends on the
data, so on the GPU each is one host sync, as in PyTorch.
"""

from __future__ import annotations

import numpy

from .. import backend, dtypes, random
from ..checks import require_tensor
from ..tensor import Tensor
from ._util import xp_of
from .indexing import GetItem, check_index_tensor, normalize_dims
from .shape import broadcast_to, reshape

__all__ = ["nonzero", "argwhere", "masked_select", "take", "count_nonzero", "isin", "bincount", "histc", "multinomial"]


def nonzero(input, *, as_tuple=False):  # noqa: A002 - PyTorch's name
    """The indices of the nonzero elements: an (N, ndim) int64 tensor, or one 1-D tensor per dim.

    Args:
        input: a Tensor.
        as_tuple: return a tuple of 1-D index tensors (NumPy's form) instead.
    """
    require_tensor("nonzero", input)
    array = input.array.reshape(1) if input.ndim == 0 else input.array
    found = xp_of(input).nonzero(array)
    if as_tuple:
        return tuple(Tensor(f.astype(dtypes.int64, copy=False)) for f in found)
    stacked = xp_of(input).stack(found, axis=1) if found else xp_of(input).zeros((0, 0))
    return Tensor(stacked[:, : input.ndim].astype(dtypes.int64, copy=False))


def argwhere(input):  # noqa: A002
    """``nonzero(input)``: the (N, ndim) indices of the nonzero elements.

    Args:
        input: a Tensor.
    """
    return nonzero(input)


class MaskedSelect(GetItem):
    """The elements where a boolean mask is True, as a 1-D tensor."""

    op_name = "masked_select"


def masked_select(input, mask):  # noqa: A002
    """The elements of ``input`` where ``mask`` is True (both broadcast), as a 1-D tensor.

    Args:
        input: a Tensor.
        mask: a bool Tensor broadcastable with input.
    """
    require_tensor("masked_select", input)
    require_tensor("masked_select", mask, "mask")
    if mask.dtype != dtypes.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    try:
        shape = numpy.broadcast_shapes(input.shape, mask.shape)
    except ValueError:
        raise RuntimeError(f"masked_select: the shape of the mask {tuple(mask.shape)} does not broadcast with the "
                           f"input's {tuple(input.shape)}") from None
    wide = broadcast_to(input, shape) if input.shape != shape else input
    where = xp_of(mask).broadcast_to(mask.array, shape).nonzero()
    return MaskedSelect.apply(wide, index=tuple(where))


class Take(GetItem):
    """The elements of the flattened input at integer positions."""

    op_name = "take"


def take(input, index):  # noqa: A002 - PyTorch's name
    """``input`` read as a 1-D tensor (row-major) at ``index``; the result has the index's shape.

    Negative indices count from the end. On the CPU an index outside ``[-numel, numel)`` raises an
    IndexError; on the GPU it is not checked (indexing.py's NOTE).

    Args:
        input: a Tensor.
        index: an integer Tensor of positions into ``input.flatten()``.
    """
    require_tensor("take", input)
    check_index_tensor("take", index)
    if index.dtype != dtypes.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    return Take.apply(reshape(input, (-1,)), index=(index.array,))


def count_nonzero(input, dim=None):  # noqa: A002
    """How many elements are nonzero (along ``dim``: an int or a tuple of ints).

    Args:
        input: a Tensor.
        dim: dimension(s) to count along, or None for all.
    """
    require_tensor("count_nonzero", input)
    axes = None if dim is None else normalize_dims("count_nonzero", dim, input.ndim)
    return Tensor(xp_of(input).asarray((input.array != 0).sum(axis=axes), dtype=dtypes.int64))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor: is each of ``elements`` in ``test_elements``.

    Args:
        elements: a Tensor (or a number).
        test_elements: a Tensor (or a number).
        assume_unique: both hold distinct values (a hint; the result is the same).
        invert: is it *not* in test_elements.
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin: expected elements or test_elements to be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    xp = xp_of(like)
    a = elements.array if isinstance(elements, Tensor) else xp.asarray(elements)
    b = test_elements.array if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    return Tensor(xp.isin(a, b, assume_unique=assume_unique, invert=invert))


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value 0..max occurs in a 1-D non-negative int tensor (or the sum of its ``weights``).

    Args:
        input: a 1-D int Tensor of non-negative values.
        weights: a Tensor of input's shape, or None.
        minlength: the least number of bins.
    """
    require_tensor("bincount", input)
    if input.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{input.dtype}\'')
    if input.ndim != 1 or (input.numel() and int(input.array.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    xp = xp_of(input)
    w = None if weights is None else weights.array.astype(numpy.float64)
    out = xp.bincount(input.array, weights=w, minlength=minlength)
    if weights is None:
        return Tensor(out.astype(dtypes.int64, copy=False))
    # NOTE: as PyTorch: float weights keep their dtype (float32 stays float32); others give float64
    return Tensor(out.astype(weights.dtype if dtypes.is_floating(weights.dtype) else numpy.float64))


def histc(input, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    """A histogram of ``bins`` equal-width bins between ``min`` and ``max`` (the data's range when both are 0).

    Values outside [min, max] are ignored; the last bin includes max.

    Args:
        input: a floating point Tensor.
        bins: number of bins.
        min: lower end of the range.
        max: upper end of the range.
    """
    require_tensor("histc", input)
    if not dtypes.is_floating(input.dtype):
        raise NotImplementedError(f'"histogram_cpu" not implemented for \'{input.dtype}\'')
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if max < min:
        raise RuntimeError("torch.histc: max must be larger than min")
    xp = xp_of(input)
    values = input.array.reshape(-1).astype(numpy.float64)
    lo, hi = float(min), float(max)
    if lo == hi and values.size:
        lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = xp.histogram(values, bins=bins, range=(lo, hi))
    return Tensor(counts.astype(input.dtype))


def _check_distribution(input, num_samples, replacement):  # noqa: A002
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not dtypes.is_floating(input.dtype):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"cannot sample n_sample <= 0 samples (got {num_samples})")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = input.array.astype(numpy.float64)
    xp = xp_of(input)
    if bool((~xp.isfinite(p)).any()) or bool((p < 0).any()):  # NOTE: a host sync on the GPU, as PyTorch's check
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((p.sum(axis=-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    return p


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """Sample category indices from the (unnormalised) weights in each row of ``input``.

    With replacement each draw is independent (inverse CDF); without, it is a weighted draw of distinct
    categories (Efraimidis-Spirakis keys: the ``num_samples`` largest ``log(u) / w``), categories of zero
    weight coming last, as in PyTorch. Draws come from cupynet's generator of the input's device.

    Args:
        input: 1-D or 2-D floating Tensor of non-negative weights.
        num_samples: how many indices per row.
        replacement: draw with replacement.
        generator: a ``cupynet.Generator`` (or a NumPy/CuPy ``Generator``) to draw from instead of the device's.
    """
    require_tensor("multinomial", input)
    p = _check_distribution(input, num_samples, replacement)
    rows = p.reshape(-1, p.shape[-1])
    xp = xp_of(input)
    gen = random.resolve_generator(generator, backend.device_of_array(input.array), "multinomial")
    if hasattr(gen, "fill_uniform") and xp is numpy:
        # NOTE: torch's CPU algorithm on torch's CPU stream (cumulative sums and binary search, or Exp(1) keys)
        out = gen.multinomial(rows, num_samples, replacement)
        return Tensor(out.reshape(p.shape[:-1] + (num_samples,)))
    u = xp.asarray(gen.random((rows.shape[0], num_samples if replacement else rows.shape[1])))
    if replacement:
        cdf = xp.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]
        out = xp.stack([xp.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        out = xp.minimum(out, rows.shape[1] - 1)
    else:
        with numpy.errstate(divide="ignore"):
            keys = xp.where(rows > 0, xp.log(u) / xp.where(rows > 0, rows, 1), -xp.inf)
        # NOTE: zero-weight categories (key -inf) come last, in random order (a second key breaks the tie)
        order = xp.lexsort(xp.stack([u, keys]), axis=-1)[:, ::-1] if xp is numpy else xp.argsort(-keys, axis=1)
        out = order[:, :num_samples]
    return Tensor(out.reshape(p.shape[:-1] + (num_samples,)).astype(dtypes.int64, copy=False))


METHODS = {"nonzero": nonzero, "argwhere": argwhere, "masked_select": masked_select, "take": take,
           "count_nonzero": count_nonzero,
           "bincount": bincount, "histc": histc, "multinomial": multinomial}

"""Array-level helpers of the indexing family (no ops here): index normalisation and add-at scatter.

An index reaches NumPy/CuPy in one canonical form: a tuple whose items are
ints, slices, None, Ellipsis, Python bools or integer arrays on the tensor's
device. Boolean masks are turned into their ``nonzero()`` integer arrays, which
is what NumPy does internally, so the backward scatter sees plain integers.
"""

from __future__ import annotations

import numbers

import numpy

from .. import backend, dtypes
from ..tensor import Tensor
from ._util import compute_in_fp32, normalize_dim

_BASIC = (slice, type(None), type(Ellipsis), bool, numbers.Integral)


def normalize_index(op_name, x, index):
    """The index as a tuple NumPy/CuPy index with: Tensors, lists and foreign arrays become arrays on x's device.

    Args:
        op_name: the op, for error messages.
        x: the Tensor being indexed.
        index: anything Python's ``x[...]`` accepts.
    """
    xp = backend.get_array_module(x.data)
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if isinstance(item, _BASIC) and not isinstance(item, Tensor):
            out.append(item)
            continue
        array = _index_array(op_name, xp, x, item)
        if array.dtype == dtypes.bool_ and array.ndim > 0:
            out.extend(array.nonzero())  # NOTE: a host sync on the GPU: the result size depends on the data
        else:
            out.append(array)
    return tuple(out)


def _index_array(op_name, xp, x, item):
    if isinstance(item, Tensor):
        if type(item.data) is not type(x.data):
            raise IndexError(f"{op_name}: the index tensor is on {item.device} but the indexed tensor is on "
                             f"{x.device}; expected both on the same device")
        array = item.data
    elif isinstance(item, (list, range)) or (isinstance(item, tuple) and len(item) > 0):
        array = xp.asarray(backend.to_numpy(numpy.asarray(_plain(item))))
    elif isinstance(item, (numpy.ndarray, numpy.generic)) or hasattr(item, "__cuda_array_interface__"):
        array = numpy.asarray(backend.to_numpy(item)) if xp is numpy else xp.asarray(item)
    else:
        raise IndexError(f"{op_name}: only integers, slices, None, Ellipsis and integer or bool tensors/arrays "
                         f"are valid indices, got {type(item).__name__} {item!r}")
    if array.size == 0 and array.dtype.kind == "f":
        array = array.astype(dtypes.int64)  # NOTE: x[[]] selects nothing; NumPy would read [] as float64
    if array.dtype.kind not in "iub":
        raise IndexError(f"{op_name}: tensors used as indices must be long, int, byte or bool tensors, "
                         f"got an index of dtype {array.dtype}")
    return array


def _plain(item):
    return [_plain(v) if isinstance(v, (list, tuple)) else (v.item() if isinstance(v, Tensor) else v) for v in item]


def is_basic(index) -> bool:
    """True when ``index`` (a normalised tuple) has no arrays: the result is a view and hits no element twice.

    Args:
        index: a normalised index tuple.
    """
    return all(isinstance(item, _BASIC) for item in index)


def read(op_name, array, index):
    """``array[index]`` with NumPy's IndexError re-raised naming the op and the shape.

    Args:
        op_name: the op, for the message.
        array: a NumPy/CuPy array.
        index: a normalised index tuple.
    """
    try:
        return array[index]
    except IndexError as error:
        raise IndexError(f"{op_name}: {error} (indexing a tensor of shape {tuple(array.shape)})") from None


def index_add(out, index, values):
    """``out[index] += values`` where a repeated index accumulates every contribution; returns the result.

    NOTE: half-precision values accumulate in fp32 and are rounded once, so a
    row hit many times (an embedding, a gather backward) does not lose mass.

    Args:
        out: the array to add into (may be modified; use the returned array).
        index: a normalised index tuple.
        values: an array broadcastable to ``out[index]``.
    """
    if is_basic(index):
        out[index] += values  # NOTE: basic indexing never names an element twice
        return out
    acc = compute_in_fp32(out)
    values = values.astype(acc.dtype, copy=False)
    if backend.get_array_module(out) is numpy:
        numpy.add.at(acc, index, values)
    else:
        import cupyx  # noqa: PLC0415 - only on the GPU path
        cupyx.scatter_add(acc, index, values)
    return acc.astype(out.dtype, copy=False)


def along_dim_index(xp, index, dim):
    """The advanced index that reads ``a[..., index[i, j, k], ...]`` at ``dim`` and position elsewhere.

    ``a[along_dim_index(xp, idx, d)]`` is ``torch.gather(a, d, idx)``; its shape is ``idx.shape``.

    Args:
        xp: numpy or cupy.
        index: an integer array with as many dimensions as the tensor.
        dim: the gathered dimension (non-negative).
    """
    out = []
    for axis, size in enumerate(index.shape):
        if axis == dim:
            out.append(index)
        else:
            shape = [1] * index.ndim
            shape[axis] = size
            out.append(xp.arange(size).reshape(shape))
    return tuple(out)


def check_index_tensor(op_name, index, allowed_ndims=None):
    """Raise when an index argument is not an integer Tensor (of an allowed rank).

    Args:
        op_name: the op, for the message.
        index: the value passed as index.
        allowed_ndims: accepted numbers of dimensions, or None for any.
    """
    if not isinstance(index, Tensor):
        raise TypeError(f"{op_name}: expected index to be a Tensor, got {type(index).__name__}")
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{op_name}: expected index to be an int32 or int64 tensor, got {index.dtype}")
    if allowed_ndims is not None and index.ndim not in allowed_ndims:
        raise IndexError(f"{op_name}: expected index with {' or '.join(map(str, allowed_ndims))} dimensions, "
                         f"got shape {tuple(index.shape)}")


def check_gather_shapes(op_name, dim, index, *others):
    """Raise unless ``index`` has the rank of each other tensor and is no larger outside ``dim``.

    Args:
        op_name: the op, for the message.
        dim: the gathered/scattered dimension (non-negative).
        index: the index Tensor.
        *others: (name, Tensor, check_dim) for each tensor the index must fit into.
    """
    for name, t, include_dim in others:
        if t.ndim != index.ndim:
            raise RuntimeError(f"{op_name}: Index tensor must have the same number of dimensions as {name} tensor "
                               f"(index shape {tuple(index.shape)}, {name} shape {tuple(t.shape)})")
        for d, (i, s) in enumerate(zip(index.shape, t.shape)):
            if i > s and (include_dim or d != dim):
                raise RuntimeError(f"{op_name}: Size does not match at dimension {d}: expected index "
                                   f"{tuple(index.shape)} to be no larger than {name} {tuple(t.shape)}"
                                   + ("" if include_dim else f" apart from dimension {dim}"))


def check_same_shapes(op_name, tensors, skip_dim=None):
    """Raise naming both tensors when shapes differ (outside ``skip_dim``), as cat/stack need.

    Args:
        op_name: the op, for the message.
        tensors: the Tensors.
        skip_dim: a dimension allowed to differ (cat), or None (stack).
    """
    first = tensors[0]
    for k, t in enumerate(tensors[1:], start=1):
        if t.ndim != first.ndim:
            raise RuntimeError(f"{op_name}: Tensors must have same number of dimensions: tensors[0] has shape "
                               f"{tuple(first.shape)} but tensors[{k}] has shape {tuple(t.shape)}")
        same = all(a == b for d, (a, b) in enumerate(zip(first.shape, t.shape)) if d != skip_dim)
        if not same:
            rule = "equal size" if skip_dim is None else f"matching sizes except in dimension {skip_dim}"
            raise RuntimeError(f"{op_name}: expects each tensor to have {rule}, but tensors[0] has shape "
                               f"{tuple(first.shape)} and tensors[{k}] has shape {tuple(t.shape)}")


def check_tensor_list(op_name, tensors):
    """Raise unless ``tensors`` is a non-empty sequence of Tensors; return it as a tuple.

    Args:
        op_name: the op, for the message.
        tensors: the value passed as the list of tensors.
    """
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op_name}: expected a list or tuple of Tensors, got {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{op_name}: expected a non-empty list of Tensors")
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: expected Tensors, but tensors[{k}] is {type(t).__name__}")
    return tuple(tensors)


def normalize_dims(op_name, dims, ndim):
    """A tuple of distinct non-negative dims from an int or a sequence, with clear errors.

    Args:
        op_name: the op, for the message.
        dims: an int or a sequence of ints.
        ndim: the number of dimensions of the tensor.
    """
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(normalize_dim(op_name, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op_name}: dims {dims} name the same dimension more than once")
    return out


def share_version(out, base):
    """Give a view the version counter of its base, so an in-place change of either is seen by both (as PyTorch).

    Args:
        out: the Tensor holding a view.
        base: the Tensor it views.
    """
    out._vc = base._vc
    return out

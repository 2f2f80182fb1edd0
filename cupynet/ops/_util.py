"""Small helpers shared by the op families (no ops here)."""

from __future__ import annotations

import numbers
import os

import numpy

from .. import backend, dtypes
from ..tensor import Tensor


def xp_of(*values):
    """The array module (numpy or cupy) of the Tensors among ``values``.

    Args:
        *values: Tensors, arrays or scalars.
    """
    cupy = backend.cupy_or_none()
    if cupy is None:  # NOTE: the CPU-only fast path: no need to look at the values
        return numpy
    for v in values:
        if isinstance(v.array if isinstance(v, Tensor) else v, cupy.ndarray):
            return cupy
    return numpy


def relu_array(x, out=None):
    """``max(x, 0)`` on an array (NaN stays NaN), into ``out`` when given.

    NOTE (speed): on NumPy the zero is a zeros array, not the number 0: NumPy's ``maximum`` with a scalar
    operand takes a slow loop (7.3 us for 16384 float32 values, 53 us for 131072, against 2.6 and 18 us
    with the zeros array made on the spot; NumPy 2.4 capped at AVX2). Same values: NaN propagates either way.

    Args:
        x: a NumPy or CuPy array.
        out: optional output array (may be ``x``).
    """
    if type(x) is numpy.ndarray and x.ndim:
        return numpy.maximum(x, numpy.zeros(x.shape, x.dtype), out=out)
    return backend.get_array_module(x).maximum(x, 0, out=out)


# NOTE: the unsigned integer of each float width, for bit masks.
_UINT_OF_WIDTH = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}


def zero_where_not(mask, grad, xp):
    """``where(mask, grad, 0)``: keep ``grad`` where ``mask`` is true, +0 elsewhere (inf and NaN too).

    NOTE (speed): NumPy's ``where`` branches per element and runs about 7x
    slower than a multiply on a random mask, but ``grad * mask`` turns an inf
    or NaN under a false mask into NaN. On NumPy the mask is widened to all-ones
    or all-zeros words and ANDed with the gradient's bits: branch-free and exact.
    CuPy's ``where`` is already a branch-free kernel.

    Args:
        mask: boolean array broadcastable to ``grad``'s shape.
        grad: floating array.
        xp: the array module of ``grad``.
    """
    uint = _UINT_OF_WIDTH.get(grad.dtype.itemsize)
    if xp is not numpy or uint is None or mask.shape != grad.shape or grad.ndim == 0:
        # NOTE: 0-d: NumPy hands back scalars there, which the in-place bit trick below cannot write into
        return xp.where(mask, grad, grad.dtype.type(0))
    bits = mask.astype(uint)
    numpy.negative(bits, out=bits)  # 1 -> all ones (unsigned wrap-around), 0 -> 0
    grad_bits = numpy.ascontiguousarray(grad).view(uint)
    return numpy.bitwise_and(grad_bits, bits, out=bits).view(grad.dtype)


def lift(value, like: Tensor | None = None):
    """Turn an array into a Tensor on ``like``'s device; keep Python scalars and Tensors as they are.

    Args:
        value: a Tensor, a Python number, or a NumPy/CuPy array.
        like: a Tensor whose device an array should move to.
    """
    if isinstance(value, (Tensor, numbers.Number)):
        return value
    if like is None:
        return Tensor(backend.get_array_module(value).asarray(value))
    xp = like.array.__class__.__module__.split(".")[0]
    return Tensor(backend.to_numpy(value) if xp == "numpy" else backend.cupy_or_none().asarray(value))


def data(value):
    """``value.array`` for a Tensor, the value itself otherwise (scalars stay Python scalars).

    Args:
        value: a Tensor or a scalar.
    """
    return value.array if isinstance(value, Tensor) else value


def fix_float_dtype(result, *inputs):
    """Undo NumPy's widening where PyTorch keeps the tensors' dtype.

    An int tensor with a float number gives NumPy's float64, PyTorch's default float32;
    a bfloat16 tensor with a Python number gives float32 (ml_dtypes), PyTorch's bfloat16
    (rounding the float32 result once, as PyTorch's bfloat16 kernels do).

    Args:
        result: the computed array.
        *inputs: the op's inputs (Tensors or scalars).
    """
    # NOTE (speed): every binary op's forward runs this; plain loops with early returns, no
    # generators: the common float32 case returns at its first Tensor input.
    dtype = result.dtype
    if dtype == dtypes.float32:
        # bfloat16 only when every Tensor input is bfloat16 (the numbers alone widened it)
        saw_bfloat16 = False
        for v in inputs:
            if isinstance(v, Tensor):
                if v.array.dtype != dtypes.bfloat16:
                    return result
                saw_bfloat16 = True
        return result.astype(dtypes.bfloat16) if saw_bfloat16 else result
    if dtype != dtypes.float64:
        return result
    for v in inputs:
        if isinstance(v, Tensor) and v.array.dtype == dtypes.float64:
            return result
    return result.astype(dtypes.float32)


def normalize_dim(op_name: str, dim: int, ndim: int) -> int:
    """Turn a possibly negative dim into an index in ``[0, ndim)``, with a clear error when out of range.

    Args:
        op_name: the op, for the message.
        dim: the dimension.
        ndim: the number of dimensions of the tensor.
    """
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(dim, int) or not lo <= dim <= hi:
        raise IndexError(f"{op_name}: Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {dim})")
    return dim % max(ndim, 1)


def compute_in_fp32(array):
    """The array in the dtype its math should run in (float32 for float16/bfloat16).

    NOTE: half-precision math that accumulates (matmul, reductions) runs in fp32
    and is rounded once at the end, matching tensor cores and CUDA reductions.

    Args:
        array: a NumPy or CuPy array.
    """
    # NOTE (speed): itemsize first: a 4- or 8-byte dtype is never half, and the tuple test costs more
    dtype = array.dtype
    return array.astype(dtypes.float32) if dtype.itemsize == 2 and dtype in dtypes.LOW_PRECISION else array


def floating_compute(array):
    """``compute_in_fp32`` for the floating ops (exp, log, sin, sigmoid, ...), and the dtype their result takes.

    NOTE: as in PyTorch, an integer or bool input of such an op is converted to the
    default float dtype first (``exp(int64 tensor)`` is float32), then computed as that
    dtype would be. A floating input passes through exactly as ``compute_in_fp32`` does.

    Args:
        array: a NumPy or CuPy array.

    Returns:
        ``(array in its compute dtype, the result's dtype)``: round the result with ``round_from_fp32``.
    """
    dtype = array.dtype
    if dtype is not dtypes.float32 and dtype not in dtypes.FLOATING:  # NOTE (speed): float32 needs no tuple test
        array = array.astype(dtypes.get_default_dtype())
    return compute_in_fp32(array), array.dtype


def round_from_fp32(result, dtype):
    """The other half of ``compute_in_fp32``: ``result`` rounded once to ``dtype`` when that is float16/bfloat16.

    NOTE: an elementwise op on a half tensor computes in float32 and rounds once at
    the end, as CUDA's ``opmath`` does in PyTorch; other dtypes pass through untouched.

    Args:
        result: the array computed from ``compute_in_fp32(input)``.
        dtype: the input's dtype, which the output keeps.
    """
    return result.astype(dtype) if dtype.itemsize == 2 and dtype in dtypes.LOW_PRECISION else result


def scatter_dtype(reduce, dtype):
    """The dtype that ``scatter_at`` combines values of ``dtype`` in: one CuPy's scatter kernels accept.

    CuPy's ``scatter_add`` takes only int32, int64, uint32, uint64, float16, float32
    and float64; ``scatter_max`` / ``scatter_min`` take the same list without
    float16. NumPy's ``ufunc.at`` takes every dtype, and uses the same widening,
    so the two backends run one path and give the same bits.

    NOTE (why each widening is exact):
      - float16 / bfloat16 -> float32: every half value is a float32. ``amax`` /
        ``amin`` only select, so the result is exact; a ``sum`` (or ``prod``)
        accumulates in float32 and rounds once, which loses less than adding in half.
      - int8 / uint8 / int16 -> int32: every value fits. A ``sum`` or ``prod`` that
        overflows wraps modulo 2**32, and narrowing keeps the low 8 or 16 bits; as
        2**8 and 2**16 divide 2**32 these are the bits a sum or product that wrapped
        at every step (PyTorch's integer semantics) would leave.
      - bool -> int64 for ``sum``: a count of the True values; narrowing reads a
        nonzero count as True, which is PyTorch's (and NumPy's) bool add, a logical
        OR. int64 so that no count can wrap to zero. For ``prod`` / ``amax`` /
        ``amin`` the values stay 0 and 1 (AND, OR, AND): int32 is exact.

    Args:
        reduce: "sum", "prod", "amax" or "amin".
        dtype: the dtype of the array written into.
    """
    if dtype == dtypes.bool_:
        return dtypes.int64 if reduce == "sum" else dtypes.int32
    if dtype.itemsize < 4:
        return dtypes.float32 if dtype in dtypes.LOW_PRECISION else dtypes.int32
    return dtype


def scatter_at(reduce, out, index, values):
    """``out[index] (op)= values`` where a repeated index combines every value; returns the result.

    ``numpy.<ufunc>.at`` on the CPU, ``cupyx.scatter_<op>`` on the GPU (``scatter_prod`` for prod), run in
    ``scatter_dtype(reduce, out.dtype)`` and narrowed back to ``out.dtype``.

    Args:
        reduce: "sum", "prod", "amax" or "amin".
        out: the array written into (may be modified; use the returned array).
        index: an index NumPy/CuPy accept for ``out[index]``.
        values: an array broadcastable to ``out[index]``.
    """
    acc = out.astype(scatter_dtype(reduce, out.dtype), copy=False)
    values = values.astype(acc.dtype, copy=False)
    if backend.get_array_module(out) is numpy:
        ufunc = {"sum": numpy.add, "prod": numpy.multiply, "amax": numpy.maximum, "amin": numpy.minimum}[reduce]
        ufunc.at(acc, index, values)
    else:
        from ..cuda import device  # noqa: PLC0415 - only on the GPU path

        cupyx = device.cupyx()
        if reduce == "prod":
            acc = scatter_prod(acc, index, values)
        else:
            {"sum": cupyx.scatter_add, "amax": cupyx.scatter_max, "amin": cupyx.scatter_min}[reduce](acc, index, values)
    return acc.astype(out.dtype, copy=False)


def scatter_prod(acc, index, values):
    """``acc[index] *= values`` where a repeated index multiplies every value in; returns the result.

    NOTE: CuPy has no ``multiply.at``, so this is built from sort and gather, on any ``xp``: the
    targets are sorted, a segmented inclusive scan (log2(n) doubling steps, no host sync) leaves each
    run of equal targets' product at the run's last element, and every member of a run writes that
    same product, so the duplicate writes agree. Integers wrap as ``numpy.multiply.at`` does; floats
    may differ from it in the last bit (the products are taken in another order).

    Args:
        acc: the array written into (may be modified; use the returned array).
        index: an index NumPy/CuPy accept for ``acc[index]``.
        values: an array of ``acc``'s dtype broadcastable to ``acc[index]``.
    """
    xp = backend.get_array_module(acc)
    positions = xp.arange(acc.size).reshape(acc.shape)[index]
    order = xp.argsort(positions.reshape(-1))
    targets = positions.reshape(-1)[order]
    scan = xp.broadcast_to(values, positions.shape).reshape(-1)[order]
    one, step = acc.dtype.type(1), 1
    while step < targets.size:
        earlier = xp.where(targets[step:] == targets[:-step], scan[:-step], one)
        scan = xp.concatenate([scan[:step], scan[step:] * earlier])
        step *= 2
    run_last = xp.searchsorted(targets, targets, side="right") - 1
    flat = acc.reshape(-1)
    flat[targets] = flat[targets] * scan[run_last]
    return flat.reshape(acc.shape)


def check_same_device(op, **tensors):
    """Raise when option tensors (weights, masks, indices) live on another device than the first one.

    Args:
        op: the op, for the message.
        **tensors: name -> Tensor or None; the first non-None one sets the device.
    """
    given = [(name, t) for name, t in tensors.items() if isinstance(t, Tensor)]
    for name, t in given[1:]:
        if type(t.array) is not type(given[0][1].array):
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but {given[0][0]} is on "
                               f"{given[0][1].device} and {name} is on {t.device}")


def host_check_range(op, values, low, high, what, ignore=None):
    """Raise when an integer array has a value outside ``[low, high]`` (``ignore`` excepted).

    NOTE: this reads two numbers back to the host (one sync on a GPU); out-of-range
    class indices would otherwise read memory they should not or silently wrap.

    Args:
        op: the op, for the message.
        values: an integer array.
        low: the smallest valid value.
        high: the largest valid value.
        what: a phrase describing valid values, for the message (or a callable making it, called on error).
        ignore: a value that is allowed anyway (ignore_index).
    """
    if values.size == 0:
        return
    xp = xp_of(values)
    if xp is not numpy and not os.environ.get("CUPYNET_CHECK_INDICES"):
        # NOTE: on the GPU the check would cost a host sync in every training step,
        # so (like PyTorch's asynchronous device asserts) it is opt-in there:
        # CUPYNET_CHECK_INDICES=1. On the CPU it is cheap and always on.
        return
    lowest, highest = ((numpy.minimum.reduce(values, axis=None), numpy.maximum.reduce(values, axis=None))
                       if xp is numpy else (values.min(), values.max()))
    if low <= lowest and highest <= high:  # NOTE: two reductions settle the common case
        return
    what = what() if callable(what) else what
    bad = (values < low) | (values > high)
    if ignore is not None:
        bad &= values != ignore
    if bad.any():  # NOTE: on the CPU a plain read; on the GPU only with CUPYNET_CHECK_INDICES=1 (see above)
        value = int(backend.to_numpy(values.reshape(-1)[int(bad.reshape(-1).argmax())]))
        raise IndexError(f"{op}: Target {value} is out of bounds ({what})")

"""Argument checks of the linear-algebra ops (shapes and dtypes only): clear errors before any work."""

from __future__ import annotations


def _join(words):
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _same_dtype(op_name, *tensors, names=None):
    """Raise PyTorch's refusal of operands of different dtypes (a product never promotes; autocast casts first).

    NOTE: called inside forward, so under autocast the eligible operands are already cast;
    what still differs here (float64, integers, or no autocast at all) is an error, as in PyTorch.

    Args:
        op_name: the op, for the message.
        *tensors: the operands (None for an absent optional one).
        names: the operands' argument names, for the message (default: "all inputs").
    """
    first = tensors[0].dtype
    if any(t is not None and t.dtype != first for t in tensors[1:]):
        given = [(n, t) for n, t in zip(names or (None,) * len(tensors), tensors) if t is not None]
        what = _join([n for n, _ in given]) if names else "all inputs"
        raise RuntimeError(f"{op_name}: expected {what} to have the same dtype, but got "
                           f"{_join([str(t.dtype) for _, t in given])}")


# NOTE: the argument names of the public functions that run as one Matmul op, for the messages
_MATMUL_ARGS = {"matmul": ("input", "other"), "mm": ("input", "mat2"), "bmm": ("input", "mat2"),
                "mv": ("input", "vec")}


def _check(a, b, op_name="matmul"):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"{op_name}: both arguments need at least 1 dimension, got shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        raise RuntimeError(f"{op_name}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                           f"({ka} != {kb})")
    if a.dtype != b.dtype:
        _same_dtype(op_name, a, b, names=_MATMUL_ARGS[op_name])


def _check_linear(x, weight, bias):
    xa, wa = x.array, weight.array
    if (wa.ndim == 2 and xa.ndim and xa.shape[-1] == wa.shape[1] and xa.dtype == wa.dtype
            and (bias is None or (bias.array.shape == wa.shape[:1] and bias.array.dtype == wa.dtype))):
        return  # NOTE: the common, valid case in a few comparisons; the branches below name what is wrong
    if weight.ndim != 2:
        raise RuntimeError(f"linear: weight must be 2-D (out_features, in_features), got shape {tuple(weight.shape)}")
    if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        n = x.shape[-1] if x.ndim else 0
        raise RuntimeError(f"linear: input has {n} features (shape {tuple(x.shape)}) but weight expects "
                           f"{weight.shape[1]} (weight shape {tuple(weight.shape)})")
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), ()):
        raise RuntimeError(f"linear: bias must have shape ({weight.shape[0]},) (or () for one shared value) to "
                           f"match weight shape {tuple(weight.shape)}, got {tuple(bias.shape)}")
    _same_dtype("linear", x, weight, bias, names=("input", "weight", "bias"))


def _check_vectors(op_name, a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"{op_name}: 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors "
                           f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"{op_name}: inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got {a.shape[0]} and "
                           f"{b.shape[0]} elements respectively")
    _same_dtype(op_name, a, b, names=("input", "tensor" if op_name == "dot" else "other"))


def _require_ndim(op_name, name, t, ndim):
    if t.ndim != ndim:
        raise RuntimeError(f"{op_name}: {name} must be a {ndim}D tensor, got shape {tuple(t.shape)}")


def _require_inner(op_name, a, b, ka, kb):
    if ka != kb:
        raise RuntimeError(f"{op_name}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
                           f"({ka} != {kb})")


def _batch_shapes(op_name, b1, b2):
    _require_ndim(op_name, "batch1", b1, 3)
    _require_ndim(op_name, "batch2", b2, 3)
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError(f"{op_name}: batch sizes differ: batch1 {tuple(b1.shape)} and batch2 {tuple(b2.shape)}")
    _require_inner(op_name, b1, b2, b1.shape[2], b2.shape[1])
    return (b1.shape[0], b1.shape[1], b2.shape[2])


def _require_broadcastable(op_name, input, shape):  # noqa: A002
    in_shape = tuple(input.shape)
    ok = len(in_shape) <= len(shape) and all(
        i in (1, s) for i, s in zip(reversed(in_shape), reversed(shape)))
    if not ok:
        raise RuntimeError(f"{op_name}: input of shape {in_shape} cannot be broadcast to the product's shape "
                           f"{tuple(shape)}")

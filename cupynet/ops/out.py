"""PyTorch's ``out=`` argument: an op's result written into a tensor the caller gives (``torch.add(x, y, out=r)``).

The op computes its result as usual; ``write_out`` then checks ``out`` and copies the values into its memory
(bumping its version), and the op returns ``out`` itself, as PyTorch does. Refused as in PyTorch, with its
messages: ``out`` that is not a Tensor, a result that would need a gradient (``out=`` is never differentiable),
and a result whose dtype cannot be cast to ``out``'s (a float result into an integer ``out``). An ``out`` of
another shape is resized, with PyTorch's deprecation warning when it held elements.
"""

from __future__ import annotations

import warnings

from .. import dtypes
from ..autograd.state import STATE
from ..tensor import Tensor, view_info
from ._util import xp_of

__all__ = ["write_out"]

# NOTE: PyTorch's canCast: a result may go to an out of its own kind or a wider one (bool -> int -> float),
# never back (a float result into an int out would silently truncate)
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def _kind_rank(dtype):
    return 2 if dtypes.is_floating(dtype) else _KIND_RANK.get(dtype.kind, 3)


def _check_out(name, result, out):
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if STATE.grad_enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if _kind_rank(result.dtype) > _kind_rank(out.dtype):
        raise RuntimeError(f"{name}: result type {dtypes.torch_scalar_name(result.dtype)} can't be cast to the desired "
                           f"output type {dtypes.torch_scalar_name(out.dtype)}")
    if xp_of(result) is not xp_of(out):
        raise RuntimeError(f"{name}: out is on {out.device} but the result is on {result.device}; expected out on "
                           f"{result.device}")


def _resize(name, out, shape):
    """Give ``out`` a fresh buffer of ``shape`` (its own memory; a view cannot change shape under its base)."""
    if view_info(out) is not None or out.array.base is not None:
        raise RuntimeError(f"{name}: out has shape {tuple(out.shape)} but the result has shape {tuple(shape)}, and "
                           "out is a view, which cannot be resized; pass an out of the result's shape")
    if out.numel() > 0:
        warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                      f"which does not match the required output shape {list(shape)}. This behavior is deprecated, "
                      "and in a future PyTorch release outputs will not be resized unless they have zero elements. "
                      "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                      "t.resize_(0).", UserWarning, stacklevel=3)
    out.array = xp_of(out).empty(shape, dtype=out.dtype)


def write_out(name, result, out):
    """Copy ``result`` into ``out`` (PyTorch's ``out=``) and return ``out``; checks everything before writing.

    Args:
        name: the op, for error messages (``"add"``).
        result: the Tensor the op computed.
        out: the Tensor the caller passed as ``out=``.
    """
    _check_out(name, result, out)
    if tuple(out.shape) != tuple(result.shape):
        _resize(name, out, result.shape)
    # NOTE: the kinds were checked above; within a kind the values are rounded to out's dtype, as PyTorch does
    xp_of(out).copyto(out.array, result.array, casting="unsafe")
    out._bump_version()
    return out

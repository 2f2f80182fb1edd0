"""``torch.autograd.Variable``: the wrapper PyTorch had before 0.4, when a Tensor could not record history.

Old scripts and tutorials still write ``Variable(torch.randn(3), requires_grad=True)``. Since 0.4
PyTorch answers with a plain Tensor: a new leaf sharing the data's storage (history dropped) with
``requires_grad`` as asked, and ``isinstance(t, Variable)`` is True for every Tensor. This is that.
"""

from __future__ import annotations

import warnings

from ..tensor import Tensor

__all__ = ["Variable"]


class _VariableType(type):
    """Makes ``Variable(...)`` return a Tensor and ``isinstance(x, Variable)`` ask whether x is a Tensor."""

    def __call__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        return data.detach().requires_grad_(requires_grad)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """``Variable(data, requires_grad=False, volatile=False)``: a leaf Tensor sharing ``data``'s array.

    Args:
        data: a Tensor (its history is dropped, as ``detach()``).
        requires_grad: whether the new leaf records gradients (floating dtypes only).
        volatile: removed in PyTorch 0.4: a warning and no effect (use ``no_grad``).
    """

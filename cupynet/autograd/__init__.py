"""Tape-based reverse-mode automatic differentiation (see docs/autograd.md).

``functional`` (jacobian, hessian, ...) loads on first use. ``Variable`` (the pre-0.4 wrapper old
PyTorch scripts still use) is compatibility surface: it lives in ``cupynet/compat/variable.py`` and
loads on first use too.
"""

from .. import _lazy
from .engine import backward, grad
from .function import Function, Node, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["Function", "Node", "once_differentiable", "backward", "grad", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "is_inference_mode_enabled", "gradcheck", "gradgradcheck", "GradcheckError",
           "functional", "Variable"]

__getattr__, __dir__ = _lazy.lazy_names(__name__, {
    "functional": "cupynet.autograd.functional",  # jacobian, hessian, vjp, ...: loaded on first use
    "Variable": "cupynet.compat.variable:Variable",
    "variable": "cupynet.compat.variable",
})

"""Tape-based reverse-mode automatic differentiation (see docs/autograd.md)."""

from . import functional
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
from .variable import Variable

__all__ = ["Function", "Node", "once_differentiable", "backward", "grad", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "is_inference_mode_enabled", "gradcheck", "gradgradcheck", "GradcheckError",
           "functional", "Variable"]

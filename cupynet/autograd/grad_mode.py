"""``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``: thread-local, usable as decorators."""

from __future__ import annotations

import functools

from .state import STATE, is_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]


class _GradMode:
    """Set grad mode on enter, restore the previous mode on exit (also when the body raises)."""

    _mode = True

    def __enter__(self):
        self._previous = STATE.grad_enabled
        STATE.grad_enabled = self._mode
        return self

    def __exit__(self, *exc):
        STATE.grad_enabled = self._previous
        return False

    def __call__(self, func):
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            switch = _GradMode()
            switch._mode = mode  # NOTE: a fresh switch per call keeps recursion and threads safe
            with switch:
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: ops inside record no graph."""

    _mode = False


class enable_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: ops inside record the graph again."""

    _mode = True


class set_grad_enabled(_GradMode):  # noqa: N801 - PyTorch's name
    """Set grad mode on or off; takes effect at once, and as a context manager the old mode comes back on exit.

    Args:
        mode: True to record the graph, False not to.
    """

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {mode!r}")
        self._mode = mode
        self._previous = STATE.grad_enabled
        STATE.grad_enabled = mode

    def __enter__(self):
        return self


class inference_mode:  # noqa: N801 - PyTorch's name
    """Context manager / decorator for inference: ``no_grad`` in cupynet; ``inference_mode(False)`` changes nothing.

    NOTE: PyTorch also marks the tensors made inside as "inference tensors" (no version counter, and an
    error when autograd later meets them); cupynet has no such tensors, so the only effect is no_grad's.
    ``@inference_mode`` without parentheses decorates too, as in PyTorch.

    Args:
        mode: True (default) to turn gradient recording off inside; False leaves grad mode as it is.
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        if not callable(mode):
            raise TypeError(f"inference_mode: mode must be a bool, got {type(mode).__name__} {mode!r}")
        return cls()(mode)  # NOTE: @inference_mode without parentheses: mode is the function

    def __init__(self, mode=True):
        self._inference = mode if isinstance(mode, bool) else True

    def __enter__(self):
        self._saved = (STATE.inference_mode, STATE.grad_enabled)
        STATE.inference_mode = self._inference
        if self._inference:
            STATE.grad_enabled = False
        return self

    def __exit__(self, *exc):
        STATE.inference_mode, STATE.grad_enabled = self._saved
        return False

    def __call__(self, func):
        """Decorate ``func`` so each call runs inside a fresh region with this mode.

        Args:
            func: the function to wrap.
        """
        inference = self._inference

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with inference_mode(inference):
                return func(*args, **kwargs)
        return wrapper


def is_inference_mode_enabled() -> bool:
    """True inside an ``inference_mode()`` region (of this thread)."""
    return STATE.inference_mode

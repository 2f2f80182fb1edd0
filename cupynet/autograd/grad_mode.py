"""``no_grad``, ``enable_grad`` and ``set_grad_enabled``: thread-local, usable as decorators."""

from __future__ import annotations

import functools

from .state import STATE, is_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


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

"""``torch.jit`` for ``cupynet run``: the decorators and entry points, which hand back what they are given.

cupynet has no compiler and no TorchScript: it runs every model eagerly. Programs use ``torch.jit``
mostly as decorators (``@torch.jit.script`` on a helper, ``@torch.jit.ignore`` on a method) or read
``torch.jit.TracerWarning`` to filter warnings (ultralytics does at import). Here ``script``,
``trace``, ``trace_module``, ``ignore``, ``unused``, ``export`` and ``annotate`` return their argument,
so the program runs the Python code it wrote, as torch does with ``PYTORCH_JIT=0``.
``is_scripting()`` and ``is_tracing()`` are False. What a compiled module offers beyond running
(``.save``, ``.graph``, ``torch.jit.load``) is not here: reading it reports the name missing.
"""

from __future__ import annotations

__all__ = ["TracerWarning", "script", "trace", "trace_module", "ignore", "unused", "export", "annotate",
           "is_scripting", "is_tracing", "Final"]


class TracerWarning(Warning):
    """The warning torch's tracer gives for code that a trace cannot capture (never given here: no tracer)."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``torch.jit.script``: returns ``obj`` itself (cupynet runs it eagerly).

    Args:
        obj: the function, module or class to "compile".
        optimize: ignored (torch's deprecated argument).
        _frames_up: ignored.
        _rcb: ignored.
        example_inputs: ignored (torch uses them to infer types).
    """
    del optimize, _frames_up, _rcb, example_inputs
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """``torch.jit.trace``: returns ``func`` itself; calling it runs the Python code eagerly.

    NOTE: a real trace freezes data-dependent control flow to the path the example took; the eager
    function follows the data instead, which is what the program's own code says.

    Args:
        func: the function or module to trace.
        example_inputs: ignored (no trace is recorded).
        *args: torch's further options (``check_trace``, ``strict`` ...), ignored.
        **kwargs: the same by name, ignored.
    """
    del example_inputs, args, kwargs
    return func


def trace_module(mod, inputs=None, *args, **kwargs):
    """``torch.jit.trace_module``: returns ``mod`` itself.

    Args:
        mod: the module.
        inputs: ignored (torch's method name -> example inputs).
        *args: ignored.
        **kwargs: ignored.
    """
    del inputs, args, kwargs
    return mod


def _decorator_or_value(value):
    """``@name`` or ``@name(...)``: a callable is returned as it is; otherwise a decorator that does so."""
    if callable(value):
        return value
    return lambda fn: fn


def ignore(drop=False, **kwargs):
    """``torch.jit.ignore``: leaves the function as it is (``@ignore`` and ``@ignore(drop=True)``).

    Args:
        drop: the function when used as ``@ignore``; else torch's flag, ignored.
        **kwargs: ignored.
    """
    del kwargs
    return _decorator_or_value(drop)


def unused(fn):
    """``torch.jit.unused``: returns ``fn``.

    Args:
        fn: the function or method.
    """
    return fn


def export(fn):
    """``torch.jit.export``: returns ``fn``.

    Args:
        fn: the method.
    """
    return fn


def annotate(the_type, the_value):
    """``torch.jit.annotate``: returns ``the_value`` (the type is for TorchScript only).

    Args:
        the_type: ignored.
        the_value: the value.
    """
    del the_type
    return the_value


def is_scripting() -> bool:
    """False: nothing runs under TorchScript in cupynet."""
    return False


def is_tracing() -> bool:
    """False: cupynet records no traces."""
    return False


class Final:
    """``torch.jit.Final[T]``: a class attribute annotation; ``Final[int]`` is ``int`` here."""

    def __class_getitem__(cls, item):
        return item

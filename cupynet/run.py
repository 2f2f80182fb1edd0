"""``python -m cupynet.run script.py [args]``: the runner of ``cupynet run`` under its command-line name.

The runner lives with the rest of the compatibility surface, in ``cupynet/compat/run.py``. This module
forwards every name to it (``cupynet.run.TORCH_MODULES`` is ``cupynet.compat.run.TORCH_MODULES``), so
the old spellings keep working; run as ``-m``, it runs the runner's ``main``.
"""

import sys

from cupynet.compat import run as _runner


def __getattr__(name):
    """A name of ``cupynet.compat.run`` (its own dunder names, ``__all__`` included, stay its own).

    Args:
        name: the attribute asked for.
    """
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_runner, name)


def __dir__():
    return dir(_runner)


if __name__ == "__main__":
    sys.exit(_runner.main())

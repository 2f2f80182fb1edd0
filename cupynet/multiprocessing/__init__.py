"""``torch.multiprocessing``: Python's ``multiprocessing``, plus tensors that cross processes, and ``spawn``.

Everything of Python's ``multiprocessing`` is here under its own name (``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method`` ...: the very same objects). What cupynet adds, as torch does:

* importing cupynet registers reductions (``reductions.py``) with ``multiprocessing``'s pickler, so a
  tensor in shared memory (``Tensor.share_memory_()``, ``Module.share_memory()``) sent to another process
  maps the same memory there; any other tensor is copied;
* ``spawn`` / ``start_processes`` (``spawn.py``): ``fn(i, *args)`` in ``nprocs`` processes, a child's
  failure raised in the parent, naming its rank;
* the sharing-strategy questions: one strategy, ``file_descriptor``.

See docs/multiprocessing.md for how memory is shared and what is pickled.
"""

from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports Python's multiprocessing
from multiprocessing import __all__ as _python_all

from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [*_python_all, "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
           "spawn", "start_processes", "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy",
           "init_reductions"]

_STRATEGIES = frozenset({"file_descriptor"})


def get_all_sharing_strategies() -> set:
    """The ways shared tensors can be sent: cupynet has one, ``"file_descriptor"``."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The way shared tensors are sent: ``"file_descriptor"`` (a nameless memory file's descriptor)."""
    return "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how shared tensors are sent; cupynet only has ``"file_descriptor"``.

    Args:
        new_strategy: the strategy's name.
    """
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: cupynet shares tensors by file descriptor only (a nameless "
                         f"memory file, never a /dev/shm name); got {new_strategy!r}, expected one of "
                         f"{sorted(_STRATEGIES)}")


init_reductions()

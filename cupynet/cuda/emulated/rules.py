"""The CuPy rules the emulated device enforces on calls, shared by its array and its modules.

Each rule is read from the API table (:mod:`api`): which keyword arguments a function takes, which
dtypes ``ufunc.at`` / ``cupyx.scatter_*`` accept, which results CuPy can only size by reading a count
back to the host, and how a namespace answers for a name CuPy lacks.
"""

from __future__ import annotations

import types

import numpy

from . import api

__all__ = ["SIZED_BY_DATA", "check_keywords", "check_at_dtype", "Namespace"]

# NOTE: CuPy learns the size of these results by reading a count back to the host
SIZED_BY_DATA = frozenset({"nonzero", "argwhere", "flatnonzero", "unique", "unique_values", "unique_counts",
                           "unique_inverse", "unique_all", "extract", "compress", "bincount", "trim_zeros"})


def check_keywords(where, kwargs, spec):
    """Raise ``TypeError`` for a keyword argument CuPy's function does not take.

    Args:
        where: the call, for the message (``"cupy.sum"``).
        kwargs: the keyword arguments given.
        spec: the function's table entry.
    """
    allowed = api.keywords_allowed(spec)
    if allowed is not None:
        for key in kwargs:
            if key not in allowed:
                raise TypeError(f"{where}() got an unexpected keyword argument '{key}' (CuPy "
                                f"{api.version()} has no such argument)")


def check_at_dtype(where, ufunc_name, dtype):
    """Raise CuPy's ``TypeError`` when ``ufunc.at`` / ``cupyx.scatter_*`` does not take ``dtype``.

    Args:
        where: the call, for the message.
        ufunc_name: ``"add"``, ``"maximum"`` or ``"minimum"``.
        dtype: the target array's dtype.
    """
    allowed = api.at_dtypes(ufunc_name)
    if numpy.dtype(dtype).name not in allowed:
        raise TypeError(f"{where}: CuPy {api.version()} does not support dtype {numpy.dtype(dtype)} "
                        f"(it takes {', '.join(sorted(allowed))})")


class Namespace(types.ModuleType):
    """A module whose missing attributes say that CuPy lacks them."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}' (CuPy {api.version()} has "
                             "no such name; cuda-emulated exposes only CuPy's)")

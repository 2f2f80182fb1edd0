"""Names a package gives on first use: a submodule or an object, imported when first read (PEP 562).

``import cupynet`` loads the core alone. The optional packages (distributions, distributed,
vision, ...) and the compatibility surface (``cupynet.compat``: what exists so that PyTorch
programs run unmodified) are still names of the packages they were always read from
(``cupynet.distributions``, ``cupynet.FloatTensor``, ``cupynet.autograd.Variable``), but a
package lists them in a table instead of importing them, and Python's module ``__getattr__``
imports one when a program first reads it::

    __getattr__, __dir__ = lazy_names(__name__, {
        "distributions": "cupynet.distributions",          # a module
        "Variable": "cupynet.compat.variable:Variable",   # an object of a module
    })

NOTE: a core package may *name* a ``cupynet.compat`` module in such a table (a string, read on
first use), never import it; ``.importlinter`` forbids the import.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_names"]


def lazy_names(package: str, names: dict):
    """The module ``__getattr__`` and ``__dir__`` of a package whose ``names`` are imported on first read.

    The first read of a name imports it and stores it in the package, so later reads are plain attribute
    reads; ``dir(package)`` lists the names before that.

    Args:
        package: the package's ``__name__``.
        names: attribute name -> ``"module"`` (the module itself) or ``"module:attribute"`` (an object in it).
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name):  # noqa: N807 - the module hook's name
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        value = importlib.import_module(module_name)
        if attribute:
            value = getattr(value, attribute)
        namespace[name] = value
        return value

    def __dir__():  # noqa: N807
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__

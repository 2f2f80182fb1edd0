"""A module whose settings are checked bools: ``torch.backends.cudnn.benchmark = "yes"`` is a TypeError."""

from __future__ import annotations

import types

__all__ = ["FlagModule"]


class FlagModule(types.ModuleType):
    """Module class for settings modules: assigning a name in ``FLAGS`` must give a bool.

    NOTE: a module's class may be replaced by a ``ModuleType`` subclass (Python's documented way to
    customise attribute assignment on a module); ``FLAGS`` is read from the module itself.
    """

    def __setattr__(self, name, value):
        if name in self.__dict__.get("FLAGS", ()) and not isinstance(value, bool):
            raise TypeError(f"{self.__name__}.{name} must be a bool, got {type(value).__name__} {value!r}")
        super().__setattr__(name, value)

"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList`` and ``ParameterDict``.

State-dict keys are PyTorch's: ``0.weight``, ``blocks.1.bias``, ``params.0``, ``scales.alpha``.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Mapping

from ..tensor import Tensor
from .activation import ReLU
from .linear import Linear
from .module import Module
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(owner, idx, length):
    try:
        idx = operator.index(idx)
    except TypeError:
        raise TypeError(f"{owner} indices must be integers or slices, not {type(idx).__name__}") from None
    if not -length <= idx < length:
        raise IndexError(f"{owner}: index {idx} is out of range for a container of length {length}")
    return idx % length


class Sequential(Module):
    """Modules applied one after another; ``Sequential(a, b)(x) == b(a(x))``.

    NOTE (speed): a ``Linear`` directly followed by a ``ReLU`` runs as one fused
    op with the same values and gradients, bit for bit (``ops/_linear_relu.py``),
    unless either module has hooks or is a subclass. ``Sequential.fuse = False``
    turns this off (e.g. to see the two ops separately in ``amp.trace()``).

    Args:
        *args: Modules (named "0", "1", ...), or one OrderedDict of name -> Module.
    """

    fuse = True

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index("Sequential", idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[_index("Sequential", idx, len(self))]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())
        doomed = keys[idx] if isinstance(idx, slice) else [keys[_index("Sequential", idx, len(self))]]
        for key in doomed:
            del self._modules[key]
        self._renumber()

    def _renumber(self):
        if all(key.isdigit() for key in self._modules):
            items = list(self._modules.values())
            self._modules.clear()
            for i, module in enumerate(items):
                self._modules[str(i)] = module

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Add a module at the end.

        Args:
            module: the Module.
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append every module of an iterable.

        Args:
            modules: an iterable of Modules.
        """
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module):
        """Insert a module before position ``index``.

        Args:
            index: the position (negative counts from the end).
            module: the Module.
        """
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.insert: expected a Module, got {type(module).__name__}")
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, item in enumerate(items):
            self.add_module(str(i), item)
        return self

    def forward(self, input):  # noqa: A002 - PyTorch's name
        """Run each module on the previous one's output.

        Args:
            input: the input of the first module.
        """
        modules = list(self._modules.values())
        i, n = 0, len(modules)
        while i < n:
            module = modules[i]
            if i + 1 < n and self.fuse and _fusable(module, modules[i + 1]):
                input = module._forward_relu(input)  # noqa: A001
                i += 2
            else:
                input = module(input)  # noqa: A001
                i += 1
        return input


def _fusable(first, second) -> bool:
    """A plain Linear followed by a plain ReLU, neither with hooks (which must see the unfused pair)."""
    return (type(first) is Linear and type(second) is ReLU and not first._forward_hooks
            and not first._forward_pre_hooks and not second._forward_hooks and not second._forward_pre_hooks)


class ModuleList(Module):
    """A list of modules whose parameters are registered (names "0", "1", ...).

    Args:
        modules: an iterable of Modules, or None.
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index("ModuleList", idx, len(self)))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index("ModuleList", idx, len(self))), module)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        del items[idx if isinstance(idx, slice) else _index("ModuleList", idx, len(self))]
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        """Add a module at the end.

        Args:
            module: the Module.
        """
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append every module of an iterable.

        Args:
            modules: an iterable of Modules.
        """
        if isinstance(modules, (Module, str)) or not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable of Modules, "
                            f"but got {type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module):
        """Insert a module before position ``index``.

        Args:
            index: the position.
            module: the Module.
        """
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, item in enumerate(items):
            self.add_module(str(i), item)

    def forward(self, *args, **kwargs):
        """ModuleList has no forward; iterate over it instead.

        Args:
            *args: ignored.
            **kwargs: ignored.
        """
        raise NotImplementedError("ModuleList is not callable: iterate over it and call each module")


class ModuleDict(Module):
    """A dict of modules whose parameters are registered under their keys.

    Args:
        modules: a mapping or iterable of (name, Module) pairs, or None.
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no key {key!r}; keys are {list(self._modules)}")
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        """The keys."""
        return self._modules.keys()

    def items(self):
        """(key, Module) pairs."""
        return self._modules.items()

    def values(self):
        """The Modules."""
        return self._modules.values()

    def pop(self, key):
        """Remove and return the module under ``key``.

        Args:
            key: the name.
        """
        module = self[key]
        del self._modules[key]
        return module

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (name, Module) pairs.

        Args:
            modules: the modules to add.
        """
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for entry in pairs:
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise TypeError(f"ModuleDict.update: expected (name, Module) pairs, got {entry!r}")
            self[entry[0]] = entry[1]

    def forward(self, *args, **kwargs):
        """ModuleDict has no forward; index it instead.

        Args:
            *args: ignored.
            **kwargs: ignored.
        """
        raise NotImplementedError("ModuleDict is not callable: index it and call the module")


def _as_parameter(owner, value):
    """A Tensor that is not a Parameter is wrapped as one (as PyTorch's parameter containers do)."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value.detach())
    raise TypeError(f"{owner}: expected a Parameter or Tensor, got {type(value).__name__}")


def _parameter_lines(pairs):
    return "\n".join(f"  ({k}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                     for k, p in pairs)


class ParameterList(Module):
    """A list of Parameters registered under ``"0"``, ``"1"``, ... (Tensors are wrapped as Parameters).

    Args:
        values: an iterable of Parameters / Tensors, or None.
    """

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index("ParameterList", idx, len(self)))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index("ParameterList", idx, len(self))), _as_parameter("ParameterList", value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        """Add one Parameter (or Tensor) at the end.

        Args:
            value: the Parameter.
        """
        self.register_parameter(str(len(self)), _as_parameter("ParameterList", value))
        return self

    def extend(self, values):
        """Add Parameters from an iterable.

        Args:
            values: Parameters or Tensors.
        """
        if isinstance(values, Tensor) or not hasattr(values, "__iter__"):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per parameter, as PyTorch: ``(0): Parameter containing: [float32 of size 3x4]``."""
        return _parameter_lines(enumerate(self))

    def forward(self, *args, **kwargs):
        """ParameterList has no forward; index it instead.

        Args:
            *args: ignored.
            **kwargs: ignored.
        """
        raise NotImplementedError("ParameterList is not callable: index it")


class ParameterDict(Module):
    """A dict of Parameters registered under their keys (Tensors are wrapped as Parameters).

    Args:
        parameters: a mapping or iterable of (name, Parameter) pairs, or None.
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._parameters:
            raise KeyError(f"ParameterDict has no key {key!r}; keys are {list(self._parameters)}")
        return self._parameters[key]

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self.register_parameter(key, _as_parameter("ParameterDict", value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        """The keys."""
        return self._parameters.keys()

    def items(self):
        """(key, Parameter) pairs."""
        return self._parameters.items()

    def values(self):
        """The Parameters."""
        return self._parameters.values()

    def get(self, key, default=None):
        """The Parameter under ``key``, or ``default``.

        Args:
            key: the name.
            default: returned when absent.
        """
        return self._parameters.get(key, default)

    def pop(self, key):
        """Remove and return the Parameter under ``key``.

        Args:
            key: the name.
        """
        value = self[key]
        del self._parameters[key]
        return value

    def clear(self):
        """Remove every Parameter."""
        self._parameters.clear()

    def update(self, parameters):
        """Add Parameters from a mapping or an iterable of (name, Parameter) pairs.

        Args:
            parameters: the Parameters to add.
        """
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for entry in pairs:
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise TypeError(f"ParameterDict.update: expected (name, Parameter) pairs, got {entry!r}")
            self[entry[0]] = entry[1]

    def extra_repr(self) -> str:
        """One line per parameter, as PyTorch: ``(alpha): Parameter containing: [float32 of size 3]``."""
        return _parameter_lines(self.items())

    def forward(self, *args, **kwargs):
        """ParameterDict has no forward; index it instead.

        Args:
            *args: ignored.
            **kwargs: ignored.
        """
        raise NotImplementedError("ParameterDict is not callable: index it")

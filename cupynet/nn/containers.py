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
    op with the same values and gradients, bit for bit (``ops/linear_relu.py``),
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


class _Container(Module):
    """What the four containers share: the registry they hold (``_modules`` or ``_parameters``), a
    length, and no forward. A subclass names its registry (``_slot``), what it holds (``_holds``) and
    how one item is added (``_put``: a submodule by default).

    Args:
        items: what to fill it with (as ``extend`` or ``update`` take them), or None.
    """

    _slot = "_modules"
    _holds = "Module"

    def __init__(self, items=None):
        super().__init__()
        if items is not None:
            self._fill(items)

    def _store(self) -> OrderedDict:
        return getattr(self, self._slot)

    def _fill(self, items):
        raise NotImplementedError

    def _put(self, key: str, value):
        self.add_module(key, value)

    def __len__(self):
        return len(self._store())

    def forward(self, *args, **kwargs):
        """Containers have no forward: index (or iterate over) them and call what they hold.

        Args:
            *args: ignored.
            **kwargs: ignored.
        """
        raise NotImplementedError(f"{type(self).__name__} is not callable: index it"
                                  + (" and call the module" if self._holds == "Module" else ""))


class _ListContainer(_Container):
    """A list view of the registry: keys ``"0"``, ``"1"``, ... kept dense."""

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._store().values())[idx])
        return self._store()[str(_index(type(self).__name__, idx, len(self)))]

    def __setitem__(self, idx, value):
        self._put(str(_index(type(self).__name__, idx, len(self))), value)

    def __iter__(self):
        return iter(self._store().values())

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        """Add one item at the end.

        Args:
            value: the item (a Module, or a Parameter/Tensor).
        """
        self._put(str(len(self)), value)
        return self

    def extend(self, values):
        """Append every item of an iterable.

        Args:
            values: an iterable of items.
        """
        if isinstance(values, (Module, Tensor, str)) or not hasattr(values, "__iter__"):
            raise TypeError(f"{type(self).__name__}.extend should be called with an iterable of {self._holds}s, "
                            f"but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    _fill = extend


class _DictContainer(_Container):
    """A dict view of the registry: items under string keys."""

    def __getitem__(self, key):
        if key not in self._store():
            raise KeyError(f"{type(self).__name__} has no key {key!r}; keys are {list(self._store())}")
        return self._store()[key]

    def __setitem__(self, key, value):
        self._put(key, value)

    def __delitem__(self, key):
        del self._store()[key]

    def __iter__(self):
        return iter(self._store())

    def __contains__(self, key):
        return key in self._store()

    def keys(self):
        """The keys."""
        return self._store().keys()

    def items(self):
        """(key, item) pairs."""
        return self._store().items()

    def values(self):
        """The items."""
        return self._store().values()

    def get(self, key, default=None):
        """The item under ``key``, or ``default``.

        Args:
            key: the name.
            default: returned when absent.
        """
        return self._store().get(key, default)

    def pop(self, key):
        """Remove and return the item under ``key``.

        Args:
            key: the name.
        """
        value = self[key]
        del self._store()[key]
        return value

    def clear(self):
        """Remove every item."""
        self._store().clear()

    def update(self, values):
        """Add items from a mapping or an iterable of (name, item) pairs.

        Args:
            values: the items to add.
        """
        pairs = values.items() if isinstance(values, Mapping) else values
        for entry in pairs:
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise TypeError(f"{type(self).__name__}.update: expected (name, {self._holds}) pairs, got {entry!r}")
            self[entry[0]] = entry[1]

    _fill = update


class ModuleList(_ListContainer):
    """A list of modules whose parameters are registered (names "0", "1", ...).

    Args:
        modules: an iterable of Modules, or None.
    """

    def __init__(self, modules=None):
        super().__init__(modules)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        del items[idx if isinstance(idx, slice) else _index("ModuleList", idx, len(self))]
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

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


class ModuleDict(_DictContainer):
    """A dict of modules whose parameters are registered under their keys.

    Args:
        modules: a mapping or iterable of (name, Module) pairs, or None.
    """

    def __init__(self, modules=None):
        super().__init__(modules)


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


class ParameterList(_ListContainer):
    """A list of Parameters registered under ``"0"``, ``"1"``, ... (Tensors are wrapped as Parameters).

    Args:
        values: an iterable of Parameters / Tensors, or None.
    """

    _slot, _holds = "_parameters", "Parameter"

    def __init__(self, values=None):
        super().__init__(values)

    def _put(self, key, value):
        self.register_parameter(key, _as_parameter("ParameterList", value))

    def extra_repr(self) -> str:
        """One line per parameter, as PyTorch: ``(0): Parameter containing: [float32 of size 3x4]``."""
        return _parameter_lines(enumerate(self))


class ParameterDict(_DictContainer):
    """A dict of Parameters registered under their keys (Tensors are wrapped as Parameters).

    Args:
        parameters: a mapping or iterable of (name, Parameter) pairs, or None.
    """

    _slot, _holds = "_parameters", "Parameter"

    def __init__(self, parameters=None):
        super().__init__(parameters)

    def _put(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self.register_parameter(key, _as_parameter("ParameterDict", value))

    def extra_repr(self) -> str:
        """One line per parameter, as PyTorch: ``(alpha): Parameter containing: [float32 of size 3]``."""
        return _parameter_lines(self.items())

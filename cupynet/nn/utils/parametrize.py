"""``nn.utils.parametrize``: a parameter computed from others on every read (``register_parametrization``).

``register_parametrization(module, "weight", P)`` moves the parameter to
``module.parametrizations.weight.original`` (a ``ParametrizationList`` holding ``P``) and gives
``module`` a property ``weight`` that returns ``P(original)`` whenever it is read, so gradients reach
``original`` through ``P``. As in PyTorch, the property lives on a subclass made for the module
(``ParametrizedLinear``) and the state-dict keys are ``parametrizations.weight.original`` (or
``original0``, ``original1``, ... when ``P.right_inverse`` splits the tensor, as weight norm does).
``cached()`` computes each parametrized tensor once inside its block.
"""

from __future__ import annotations

import contextlib
import threading

from ...autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["ParametrizationList", "register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "type_before_parametrizations"]

# NOTE: per thread, as a ``with cached():`` block is: how deep the blocks nest, and the values computed in them
_CACHE = threading.local()


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (a model that reads a weight many times).

    Args:
        None.
    """
    depth = getattr(_CACHE, "depth", 0)
    if depth == 0:
        _CACHE.values = {}
    _CACHE.depth = depth + 1
    try:
        yield
    finally:
        _CACHE.depth = depth
        if depth == 0:
            _CACHE.values = {}


def _set_in_place(target: Tensor, value: Tensor) -> None:
    """Give ``target`` (an original) the value ``value`` keeping its identity (PyTorch's ``set_``)."""
    target.array = value.array if value.array.dtype == target.array.dtype else value.array.astype(target.array.dtype)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they read.

    Args:
        modules: the parametrizations (Modules).
        original: the Parameter (or buffer) being parametrized.
        unsafe: skip the checks that each parametrization keeps shape and dtype.
    """

    def __init__(self, modules, original, unsafe: bool = False):
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        if not isinstance(new, (Tensor, tuple, list)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            _set_in_place(original, new)
            self._register("original", original, original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(part).__name__}")
                self._register(f"original{i}", part.detach(), original)

    def _register(self, name, value, like):
        if isinstance(like, Parameter):
            self.register_parameter(name, value if isinstance(value, Parameter) else
                                    Parameter(value, requires_grad=like.requires_grad))
        else:
            self.register_buffer(name, value)

    def right_inverse(self, value) -> None:
        """Set the original(s) so that the parametrized tensor becomes ``value`` (``module.weight = value``).

        Args:
            value: a Tensor.
        """
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                _set_in_place(self.original, value)
            else:
                for i, part in enumerate(value):
                    _set_in_place(getattr(self, f"original{i}"), part)

    def forward(self):
        """The parametrized tensor: the parametrizations applied in order to the original(s).

        Args:
            None.
        """
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _parametrized_class(module) -> type:
    """A subclass of ``type(module)`` whose ``__setattr__`` sends a parametrized name to its property."""
    cls = type(module)

    def __setattr__(self, name, value):  # noqa: N807 - the hook's name
        if isinstance(getattr(type(self), name, None), property) and is_parametrized(self, name):
            self.parametrizations[name].right_inverse(value)
        else:
            cls.__setattr__(self, name, value)

    return type(f"Parametrized{cls.__name__}", (cls,), {"__setattr__": __setattr__, "_unparametrized": cls})


def _add_property(module, name: str) -> None:
    def getter(self):
        plist = self.parametrizations[name]
        values = getattr(_CACHE, "values", None)
        if getattr(_CACHE, "depth", 0) == 0 or values is None:
            return plist()
        key = (id(self), name)
        if key not in values:
            values[key] = plist()
        return values[key]

    setattr(type(module), name, property(getter))


def _check_consistent(module, name, original, plist):
    value = plist()
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != original.dtype or tuple(value.shape) != tuple(original.shape):
        raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor, unless "
                         f"`unsafe` flag is enabled.\nunparametrized shape: {tuple(original.shape)}, dtype "
                         f"{original.dtype}\nparametrized shape: {tuple(value.shape)}, dtype {value.dtype} "
                         f"({type(module).__name__}.{name})")


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Make ``module.<tensor_name>`` the value of ``parametrization`` applied to the original tensor.

    Args:
        module: the Module holding the parameter or buffer.
        tensor_name: its name (a parameter, a buffer, or an already parametrized name to add to).
        parametrization: a Module whose forward maps the original to the tensor used (optionally with
            ``right_inverse``, which maps a tensor back to the original(s)).
        unsafe: allow a parametrization that changes shape or dtype.
    """
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: parametrization must be a Module, got "
                        f"{type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
        if not plist.unsafe:
            _check_consistent(module, tensor_name, getattr(module, tensor_name), plist)
        return module
    stores = (module._parameters, module._buffers)
    if not any(tensor_name in store and store[tensor_name] is not None for store in stores):
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    if not unsafe:
        _check_consistent(module, tensor_name, original, plist)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        module.__class__ = _parametrized_class(module)
        module.parametrizations = ModuleDict()
    _add_property(module, tensor_name)
    module.parametrizations[tensor_name] = plist
    return module


def is_parametrized(module, tensor_name=None) -> bool:
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given).

    Args:
        module: a Module.
        tensor_name: a name, or None for any.
    """
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists._modules


def type_before_parametrizations(module) -> type:
    """The module's class before any parametrization was registered.

    Args:
        module: a Module.
    """
    return type(module)._unparametrized if is_parametrized(module) else type(module)


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Take the parametrizations off ``tensor_name``: it becomes a plain parameter (or buffer) again.

    Args:
        module: the Module.
        tensor_name: the parametrized name.
        leave_parametrized: keep the current parametrized value (else the original tensor comes back; only
            possible when there is one original of the same shape and dtype).
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if value.dtype != original.dtype or tuple(value.shape) != tuple(original.shape):
                raise ValueError("remove_parametrizations: the parametrized value's shape or dtype differs from the "
                                 "original's; it cannot be left in place")
            _set_in_place(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name)
        first = plist.original0
        original = Parameter(value.detach(), requires_grad=first.requires_grad) if isinstance(first, Parameter) \
            else value.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations._modules[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        del module._modules["parametrizations"]
        module.__class__ = type(module)._unparametrized
    return module

"""``Module``: the base class of layers and models, shaped like ``torch.nn.Module``.

Assigning a ``Parameter``, a ``Module`` or (after ``register_buffer``) a Tensor
as an attribute registers it; ``state_dict()`` keys are the dotted attribute
paths, exactly as PyTorch names them (``0.weight``, ``self_attn.in_proj_bias``).
Saving/loading lives in ``_state.py``, device/dtype moves in ``_convert.py``.
"""

from __future__ import annotations

from collections import OrderedDict

from ..tensor import Tensor
from . import _convert, _state
from .parameter import Parameter

__all__ = ["Module", "RemovableHandle"]


class RemovableHandle:
    """Returned by ``register_forward_hook``; ``remove()`` takes the hook off.

    Args:
        hooks: the dict holding the hook.
        key: the hook's key in it.
    """

    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        """Remove the hook (a no-op when already removed)."""
        self._hooks.pop(self._key, None)


def _check_name(kind: str, owner, name):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if hasattr(owner, name) and name not in owner._parameters and name not in owner._buffers \
            and name not in owner._modules:
        raise KeyError(f"attribute '{name}' already exists")


class Module(_convert.ConversionMixin):
    """Base class of every layer and model: holds parameters, buffers and submodules.

    Args:
        None (subclasses call ``super().__init__()`` before assigning attributes).
    """

    _next_hook_id = 0

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation; every subclass overrides it.

        Args:
            *args: the inputs.
            **kwargs: keyword inputs.
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- registration ----------------------------------------------------------------------
    def _require_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call "
                                 f"(call super().__init__() first in {type(self).__name__}.__init__)")

    def register_parameter(self, name: str, param):
        """Register a Parameter (or None) under ``name``.

        Args:
            name: the attribute name (no dots).
            param: a Parameter, or None for an absent optional parameter (e.g. ``bias=False``).
        """
        self._require_init("parameter")
        _check_name("parameter", self, name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(cupynet.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly (wrap the values in nn.Parameter).")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True):
        """Register a Tensor (or None) that is state but not a parameter (e.g. BatchNorm's running_mean).

        Args:
            name: the attribute name (no dots).
            tensor: a Tensor or None.
            persistent: whether it is part of ``state_dict()``.
        """
        self._require_init("buffers")
        _check_name("buffer", self, name)
        if name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(cupynet Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module):
        """Register a submodule (or None) under ``name``.

        Args:
            name: the attribute name (no dots).
            module: a Module or None.
        """
        self._require_init("child module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name("module", self, name)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params, buffers, modules = (self.__dict__.get(k) for k in ("_parameters", "_buffers", "_modules"))
        if isinstance(value, Parameter):
            self._require_init("parameters")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(cupynet.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            self._require_init("child module")
            self._forget(name)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(cupynet.nn.Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(cupynet Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # NOTE: called only when normal lookup fails, i.e. for parameters, buffers and submodules
        state = self.__dict__
        if "_modules" in state:
            for store in (state["_parameters"], state["_buffers"], state["_modules"]):
                if name in store:
                    return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # ---- iteration ---------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Yield ``(dotted_name, module)`` for this module and every descendant, each once.

        Args:
            memo: a set of modules already seen (internal).
            prefix: prepended to every name.
            remove_duplicate: yield a module shared by several parents only once.
        """
        memo = set() if memo is None else memo
        if remove_duplicate and self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        """Yield this module and every descendant."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """Yield ``(name, module)`` for the direct submodules."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        """Yield the direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, store, prefix, recurse, remove_duplicate):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield ``(dotted_name, Parameter)`` pairs (shared parameters once).

        Args:
            prefix: prepended to every name.
            recurse: include submodules' parameters.
            remove_duplicate: yield a shared parameter only once.
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Yield the Parameters (what an optimizer is given).

        Args:
            recurse: include submodules' parameters.
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield ``(dotted_name, Tensor)`` pairs for the buffers.

        Args:
            prefix: prepended to every name.
            recurse: include submodules' buffers.
            remove_duplicate: yield a shared buffer only once.
        """
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Yield the buffers.

        Args:
            recurse: include submodules' buffers.
        """
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target: str):
        """The submodule at a dotted path (``""`` is self).

        Args:
            target: e.g. ``"encoder.layers.0"``.
        """
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule `{part}` (looking up '{target}')")
            module = child
        return module

    # ---- modes and grads ----------------------------------------------------------------------
    def train(self, mode: bool = True):
        """Set training mode (Dropout drops, BatchNorm uses batch stats) on this module and descendants.

        Args:
            mode: True for training, False for evaluation.
        """
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        """Set evaluation mode (same as ``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Set ``requires_grad`` on every parameter (freeze / unfreeze).

        Args:
            requires_grad: the new flag.
        """
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True):
        """Reset the gradients of all parameters.

        Args:
            set_to_none: set ``.grad`` to None (default) instead of filling it with zeros.
        """
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad = param.grad.detach()
                param.grad.data[...] = 0
                param.grad._bump_version()

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant (children first), then on self; returns self.

        Args:
            fn: a callable taking a Module.
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- calling ---------------------------------------------------------------------------------
    def _add_hook(self, store, hook):
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        Module._next_hook_id += 1
        store[Module._next_hook_id] = hook
        return RemovableHandle(store, Module._next_hook_id)

    def register_forward_hook(self, hook):
        """Call ``hook(module, args, output)`` after forward; a non-None return replaces the output.

        Args:
            hook: the callable.
        """
        return self._add_hook(self._forward_hooks, hook)

    def register_forward_pre_hook(self, hook):
        """Call ``hook(module, args)`` before forward; a non-None return replaces the args.

        Args:
            hook: the callable.
        """
        return self._add_hook(self._forward_pre_hooks, hook)

    def __call__(self, *args, **kwargs):
        if not self._forward_pre_hooks and not self._forward_hooks:  # NOTE: the common case, kept short
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # ---- state, conversion and printing (see _state.py and _convert.py) --------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer, keyed as PyTorch keys them.

        Args:
            destination: a dict to fill (a new OrderedDict when None).
            prefix: prepended to every key.
            keep_vars: keep the Parameters themselves instead of detached Tensors sharing memory.
        """
        return _state.state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values into parameters and buffers; validates everything first and changes nothing on error.

        Args:
            state_dict: a mapping of key -> cupynet Tensor, NumPy/CuPy array or torch tensor.
            strict: missing or unexpected keys are an error (else reported in the result).
            assign: accepted for PyTorch compatibility; values are always copied into the existing tensors.
        """
        return _state.load_state_dict(self, state_dict, strict)

    def extra_repr(self) -> str:
        """The text inside the parentheses of ``repr`` (e.g. ``in_features=4, out_features=2, bias=True``)."""
        return ""

    def __repr__(self):
        return _state.module_repr(self)

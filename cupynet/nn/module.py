"""``Module``: the base class of layers and models, shaped like ``torch.nn.Module``.

Assigning a ``Parameter``, a ``Module`` or (after ``register_buffer``) a Tensor
as an attribute registers it; ``state_dict()`` keys are the dotted attribute
paths, exactly as PyTorch names them (``0.weight``, ``self_attn.in_proj_bias``).

The file reads top-down: how ``Module.to`` moves and casts (the helpers), how
state is saved, loaded and printed (the helpers), then the class itself.

``Module.to`` moves/casts parameters, their grads and buffers in place.
Parameters keep their identity (the array inside is replaced), so an optimizer
built before ``model.to(...)`` still holds the right objects, as in PyTorch.
NOTE: buffers named in a layer's ``_fp32_buffers`` (BatchNorm's running_mean /
running_var) stay float32 under ``.half()`` / ``.bfloat16()`` (``.double()`` makes them float64): running
statistics accumulated in half precision lose the small momentum updates
(0.1 * x rounds away next to a large mean). PyTorch casts them; cupynet does not.

Loading is all-or-nothing: every key, type and shape is checked first, and only
when all is well are values copied (cast to the destination's dtype and moved to
its device). PyTorch copies what fits before raising; cupynet changes nothing.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from .. import backend, dtypes
from ..amp.functional import to_device
from ..checks import require_tensor
from ..tensor import Tensor
from . import functional as F
from .parameter import Parameter

__all__ = ["Module", "RemovableHandle"]


# ---- moving and casting -------------------------------------------------------------------------------
def parse_to_args(owner: str, args, kwargs):
    """Split ``to()``'s arguments into (device or None, dtype or None), with clear errors.

    Args:
        owner: the module's class name, for messages.
        args: positional arguments (device, dtype, or a Tensor to match).
        kwargs: ``device=``, ``dtype=``, ``non_blocking=``.
    """
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"{owner}.to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, backend.Device)) and not dtypes.is_dtype_like(arg):
            device = arg
        elif dtypes.is_dtype_like(arg):
            dtype = arg
        else:
            raise TypeError(f"{owner}.to(): expected a device, a dtype or a Tensor, got {arg!r}")
    device = backend.device(device) if device is not None else None
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if not dtypes.is_floating(dtype):
            raise TypeError(f"{owner}.to() only accepts floating point dtypes, but got desired dtype={dtype}")
    return device, dtype


# NOTE: one array mover for the whole tree: the AMP core's (device to device on GPUs, a host copy only
# when the target is the CPU); ``nn.utils`` imports it from here under this name.
move_array = to_device


def _converted(array, device, dtype):
    if dtype is not None and dtypes.is_floating(array.dtype) and array.dtype != dtype:
        array = array.astype(dtype)
    return move_array(array, device) if device is not None else array


def _convert_tensor(t, device, dtype):
    new = _converted(t.array, device, dtype)
    if new is not t.array:
        t.array = new
        t._bump_version()
    if t.grad is not None:
        t.grad.array = _converted(t.grad.array, device, dtype)


def _buffer_dtype(keep_fp32, dtype):
    # NOTE: "at least fp32": half/bfloat16 casts leave these buffers float32; float64 is honoured.
    return dtypes.float32 if keep_fp32 and dtype in dtypes.LOW_PRECISION else dtype


def convert(module, device, dtype):
    """Apply a device move and/or floating cast to every parameter, grad and buffer of ``module``.

    Args:
        module: the root Module.
        device: a Device or None.
        dtype: a floating dtype or None.
    """
    for sub in module.modules():
        for param in sub._parameters.values():
            if param is not None:
                _convert_tensor(param, device, dtype)
        keep_fp32 = getattr(sub, "_fp32_buffers", ())
        for name, buf in sub._buffers.items():
            if buf is not None:
                _convert_tensor(buf, device, _buffer_dtype(name in keep_fp32, dtype))
    return module


# ---- state_dict, load_state_dict and repr -------------------------------------------------------------
IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

def collect_state(module, destination=None, prefix="", keep_vars=False):
    """Fill ``destination`` with ``prefix + name -> tensor`` for every parameter and persistent buffer.

    Args:
        module: the Module.
        destination: a dict, or None for a new OrderedDict.
        prefix: prepended to every key.
        keep_vars: store the Parameters/buffers themselves instead of detached views.
    """
    destination = OrderedDict() if destination is None else destination
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    for name, child in module._modules.items():
        if child is not None:
            collect_state(child, destination, prefix + name + ".", keep_vars)
    return destination

def _shape_text(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"

def _read_value(key, value):
    from .parameter import as_array  # noqa: PLC0415 - parameter imports tensor only; keep import order flat
    try:
        return as_array(value, f"load_state_dict: value of key '{key}'"), None
    except TypeError as error:
        return None, str(error)

def _check_entries(own, state):
    """Collect (missing, unexpected, errors, arrays) without changing anything."""
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    errors, arrays = [], {}
    for key, target in own.items():
        if key not in state:
            continue
        array, error = _read_value(key, state[key])
        if error is not None:
            errors.append(error)
        elif tuple(array.shape) != tuple(target.shape):
            errors.append(f"size mismatch for {key}: copying a param with shape {_shape_text(array.shape)} from "
                          f"checkpoint, the shape in current model is {_shape_text(target.shape)}.")
        elif array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
            errors.append(f"load_state_dict: key '{key}' holds values of dtype {array.dtype}; expected numbers")
        else:
            arrays[key] = array
    return missing, unexpected, errors, arrays

def copy_into(target, array):
    """Copy ``array`` into ``target`` in place, moving it to target's device and casting to its dtype.

    Args:
        target: the Tensor to overwrite.
        array: a NumPy/CuPy array of the same shape.
    """
    if backend.device_of_array(array) != target.device:
        array = backend.to_numpy(array)
        if target.is_cuda:
            cupy = target.device.xp
            with cupy.cuda.Device(target.device.index):
                array = cupy.asarray(array)
    xp = backend.get_array_module(target.array)
    xp.copyto(target.array, array.astype(target.dtype, copy=False), casting="unsafe")
    target._bump_version()

def _assign(module, key, value, array):
    """``load_state_dict(assign=True)`` for one key: the state's tensor becomes the parameter or buffer.

    NOTE: as in PyTorch, a parameter keeps its ``requires_grad`` and becomes a Parameter sharing the
    state's memory (no copy: a module built on the meta device gets real storage this way).
    """
    path, _, name = key.rpartition(".")
    owner = module.get_submodule(path)
    if name in owner._parameters:
        keep = owner._parameters[name].requires_grad
        # NOTE: a Parameter value is taken as it is and given the module's flag, as PyTorch does
        new = value.requires_grad_(keep) if isinstance(value, Parameter) else Parameter(array, requires_grad=keep)
        owner._parameters[name] = new
    else:
        owner._buffers[name] = value if isinstance(value, Tensor) else Tensor(array)


def load_state(module, state, strict=True, assign=False):
    """Validate ``state`` against ``module``'s own keys, then copy every value in place (or assign it).

    Args:
        module: the Module to load into.
        state: a mapping of key -> Tensor / array.
        strict: missing or unexpected keys raise (listed all at once).
        assign: make the state's tensors the module's parameters and buffers instead of copying.
    """
    name = type(module).__name__
    if not isinstance(state, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state).__name__}.")
    own = collect_state(module, keep_vars=True)
    missing, unexpected, errors, arrays = _check_entries(own, state)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {name}:\n\t" + "\n\t".join(errors))
    meta = [key for key in arrays if backend.is_meta(own[key].array)]
    if meta and not assign:
        raise RuntimeError(f"load_state_dict: {meta[0]} is on the meta device (no storage to copy into); load with "
                           "assign=True to make the state's tensors the module's own")
    for key, array in arrays.items():
        if assign:
            _assign(module, key, state[key], array)
        else:
            copy_into(own[key], array)
    return IncompatibleKeys(missing, unexpected)

def _add_indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])

def module_repr(module) -> str:
    """PyTorch's module repr: ``Name(extra)`` or ``Name(\\n  (child): ...\\n)``.

    Args:
        module: the Module.
    """
    extra = module.extra_repr()
    extra_lines = extra.split("\n") if extra else []
    child_lines = [f"({key}): " + _add_indent(repr(child), 2) for key, child in module._modules.items()]
    lines = extra_lines + child_lines
    text = module._get_name() + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            text += extra_lines[0]
        else:
            text += "\n  " + "\n  ".join(lines) + "\n"
    return text + ")"


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

class Module:
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
            self._forget(name, keep=self._parameters)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(cupynet.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            self._require_init("child module")
            self._forget(name, keep=modules)
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

    def _forget(self, name, keep=None):
        # NOTE: the store about to receive ``name`` keeps its entry, so a reassigned child or parameter keeps
        # its place in children() and state_dict() order, as in PyTorch
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            if store is not keep:
                store.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # NOTE: called only when normal lookup fails, i.e. for parameters, buffers and submodules. Each store
        # is looked for on its own, as torch does: a module rebuilt by load() without one of them (a file
        # written by other code) answers AttributeError, never KeyError.
        state = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if name in state.get(store, ()):
                return state[store][name]
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
        """Yield ``(dotted_name, Tensor)`` pairs for the buffers (a buffer set to None is skipped).

        Args:
            prefix, recurse, remove_duplicate: as in ``named_parameters``, for buffers.
        """
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Yield the buffers (what ``.to()`` moves besides the parameters, e.g. BatchNorm's running stats).

        Args:
            recurse: as in ``parameters``, for buffers.
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

    def get_parameter(self, target: str):
        """The Parameter at a dotted path, as PyTorch's ``get_parameter``: ``"encoder.layers.0.weight"``.

        Args:
            target: the submodule's dotted path, a dot, then the parameter's name.
        """
        return self._registered(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str):
        """The buffer at a dotted path, as PyTorch's ``get_buffer``: ``"bn.running_mean"``.

        Args:
            target: the submodule's dotted path, a dot, then the buffer's name.
        """
        return self._registered(target, "_buffers", "a buffer")

    def _registered(self, target, registry, what):
        """The entry of the submodule's ``registry`` named by dotted ``target``; AttributeError naming what is
        missing (no such attribute, or an attribute that is not ``what``)."""
        if not isinstance(target, str):
            raise TypeError(f"{type(self).__name__}: target must be a dotted name (str), got {type(target).__name__}")
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}` (looking up '{target}')")
        entries = getattr(module, registry)
        if name not in entries:
            raise AttributeError(f"`{name}` is not {what} (looking up '{target}')")
        return entries[name]

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
                param.grad.array[...] = 0
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

    # ---- device and dtype (parameters keep their identity; see convert above) -------------------------

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers in place (Parameter objects keep their identity).

        NOTE: a dtype applies only to floating parameters/buffers; buffers a layer
        lists in ``_fp32_buffers`` (BatchNorm's running stats) always stay float32.

        Args:
            *args: a device (``"cpu"``, ``"cuda"``, ``Device``) and/or a floating dtype.
            **kwargs: ``device=``, ``dtype=``, ``non_blocking=`` (ignored).
        """
        device, dtype = parse_to_args(type(self).__name__, args, kwargs)
        return convert(self, device, dtype)

    def share_memory(self):
        """Move every parameter and buffer into shared memory in place (``Tensor.share_memory_``); returns self.

        NOTE: as in PyTorch, gradients are not shared: each process that trains the shared model allocates
        its own ``.grad`` (Hogwild: every process writes its updates into the one set of parameters).
        """
        for tensor in (*self.parameters(), *self.buffers()):
            tensor.share_memory_()
        return self

    def cuda(self, device=None):
        """Move every parameter and buffer to the GPU.

        Args:
            device: GPU index or name; default cuda:0.
        """
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def cpu(self):
        """Move every parameter and buffer to the CPU."""
        return self.to("cpu")

    def half(self):
        """Cast floating parameters and buffers to float16."""
        return self.to("float16")

    def bfloat16(self):
        """Cast floating parameters and buffers to bfloat16."""
        return self.to("bfloat16")

    def float(self):
        """Cast floating parameters and buffers to float32."""
        return self.to("float32")

    def double(self):
        """Cast floating parameters and buffers to float64."""
        return self.to("float64")

    # ---- state and printing -----------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer, keyed as PyTorch keys them.

        Args:
            destination: a dict to fill (a new OrderedDict when None).
            prefix: prepended to every key.
            keep_vars: keep the Parameters themselves instead of detached Tensors sharing memory.
        """
        return collect_state(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values into parameters and buffers; validates everything first and changes nothing on error.

        Args:
            state_dict: a mapping of key -> cupynet Tensor, NumPy/CuPy array or torch tensor.
            strict: missing or unexpected keys are an error (else reported in the result).
            assign: make the state's tensors the module's parameters and buffers (sharing their memory, each
                parameter keeping its ``requires_grad``) instead of copying into the existing ones; the way to give
                a module built on the meta device real storage.
        """
        return load_state(self, state_dict, strict, assign)

    def extra_repr(self) -> str:
        """The text inside the parentheses of ``repr`` (e.g. ``in_features=4, out_features=2, bias=True``)."""
        return ""

    def _get_name(self) -> str:
        """The class name ``repr`` starts with (PyTorch's hook; profilers such as thop read it)."""
        return type(self).__name__

    def __repr__(self):
        return module_repr(self)


class FunctionalLayer(Module):
    """A layer that applies one ``cupynet.nn.functional`` function with the options it was built with.

    A subclass names the function (``function``), its inputs (``inputs``) and its constructor as
    PyTorch's ``(name, default)`` pairs in PyTorch's order (``signature``): each constructor argument
    becomes an attribute and is passed to the function by name. ``inplace`` is the exception: it is
    kept and shown in ``repr`` but not passed on, so the layer computes out of place. ``repr_options``
    names what ``repr`` shows, as PyTorch's ``extra_repr`` does.

    Args:
        *args: the constructor's arguments by position, in ``signature`` order.
        **kwargs: the same by name.
    """

    function = None
    inputs = ("input",)
    signature = ()
    repr_options = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
                      for name, default in self.signature]
        try:
            bound = inspect.Signature(parameters).bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{type(self).__name__}(): {error}") from None
        bound.apply_defaults()
        self.check_options(**bound.arguments)
        for name, value in bound.arguments.items():
            self.keep_option(name, value)

    def keep_option(self, name, value) -> None:
        """Store one constructor argument (an attribute; subclasses may make it a buffer).

        Args:
            name: the argument's name.
            value: its value.
        """
        setattr(self, name, value)

    def check_options(self, **options) -> None:
        """Refuse bad constructor arguments before anything is stored (the function checks the rest when called).

        Args:
            **options: every constructor argument by name.
        """

    def options(self) -> dict:
        """The keyword options passed to the function: every constructor argument except ``inplace``."""
        return {name: getattr(self, name) for name, _ in self.signature if name != "inplace"}

    def forward(self, *inputs):
        """Apply the function.

        Args:
            *inputs: Tensors, as named by ``inputs``.
        """
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{type(self).__name__}.forward() takes {', '.join(self.inputs)}; got "
                            f"{len(inputs)} input(s)")
        for name, value in zip(self.inputs, inputs):
            require_tensor(type(self).__name__, value, name)
        return getattr(F, self.function)(*inputs, **self.options())

    def extra_repr(self) -> str:
        """The ``repr_options`` as ``name=value``; ``inplace=True`` only when set."""
        shown = [f"{name}={getattr(self, name)!r}" if isinstance(getattr(self, name), str)
                 else f"{name}={getattr(self, name)}" for name in self.repr_options if name != "inplace"]
        if "inplace" in self.repr_options and self.inplace:
            shown.append("inplace=True")
        return ", ".join(shown)

"""``Tensor``: an array (NumPy or CuPy) plus what autograd needs to know about it.

* ``array`` is the raw NumPy/CuPy array (as in Chainer); every internal use
  goes through it. ``data`` has PyTorch's meaning: a Tensor sharing the same
  array, without history (``p.data.add_(1)`` changes ``p``; autograd sees nothing).
* ``grad_fn`` is the graph node that made the tensor (None for leaves), and
  ``_output_nr`` which output of that node it is.
* ``_version`` counts in-place changes; ``save_for_backward`` remembers it so a
  tensor changed after being saved is an error at backward, not a wrong grad.
  A view shares the counter of its base (``_vc`` is one list for both).
* ``_view`` (set only on views made by a view op: slicing, reshape, transpose,
  expand, split) is ``(base, op class, op options, writable)``: what an in-place write
  through the view needs to rebase the base's history. ``_views`` (set only on
  a graph tensor that has views needing grad) holds weak references to them, so
  an in-place change of the base can give them their new history.

The math methods (``x + y``, ``x.sum()``, ...) live in ``cupynet.ops`` and are
reached through ``_ops``, resolved on first use, because ops import this module.
"""

from __future__ import annotations

import sys
import weakref

import numpy

from . import backend, dtypes, settings

__all__ = ["Tensor", "Size"]


class _LazyOps:
    """Stands in for ``cupynet.ops`` until first use, then replaces itself with the module."""

    def __getattr__(self, name):
        global _ops
        import cupynet.ops as ops_module  # noqa: PLC0415 - ops imports tensor, so import on first use
        _ops = ops_module
        return getattr(ops_module, name)


_ops = _LazyOps()


class _RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` takes the hook off again."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        """Remove the hook."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


# NOTE: the types Tensor(array) takes as is; CuPy's ndarray joins on first sight (CuPy is imported lazily)
_RAW_ARRAYS = {numpy.ndarray}
# NOTE: the Python sequences whose product with a tensor is a repeat, never an elementwise product
_PY_SEQUENCES = (str, bytes, list, tuple)


def _is_raw_array(data) -> bool:
    """True for a NumPy array or scalar (subclasses too) or a CuPy array: what ``Tensor(array)`` wraps as is."""
    if isinstance(data, (numpy.ndarray, numpy.generic)):
        return True
    # NOTE: the real cupy only if something imported it already; the emulated one when it is the device
    cupy = backend.cupy_or_none() if backend.emulating() else sys.modules.get("cupy")
    if cupy is not None and isinstance(data, cupy.ndarray):
        _RAW_ARRAYS.add(type(data))
        return True
    return backend.is_meta(data)  # NOTE: the meta device's storage: a shape and a dtype (meta.py)


def _parse_legacy_type_name(name):
    """``'torch.FloatTensor'`` -> (float32, "cpu"), ``'torch.cuda.LongTensor'`` -> (int64, "cuda"); else ValueError."""
    device, rest = ("cuda", name[len("torch.cuda."):]) if name.startswith("torch.cuda.") else \
        ("cpu", name[len("torch."):] if name.startswith("torch.") else None)
    for dtype, short in dtypes.TORCH_SCALAR_NAMES.items():
        if rest == f"{short}Tensor":
            return dtype, device
    raise ValueError(f"invalid type: {name!r} (expected a name like 'torch.FloatTensor' or 'torch.cuda.LongTensor')")


class Size(tuple):
    """A shape: PyTorch's ``torch.Size``, a tuple of ints, returned by ``Tensor.size()``.

    NOTE: ``Tensor.shape`` stays a plain tuple (it is read on every op's hot path); the two compare
    equal. A Size given to a legacy constructor is a shape (``Tensor(x.size())``), a tuple is data.

    Args:
        sizes: the dimensions (an iterable of non-negative ints).
    """

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        bad = [s for s in sizes if not isinstance(s, (int, numpy.integer))]  # NOTE: True is 1, as in torch
        if bad:
            raise TypeError(f"Size(): expected a sequence of ints, got an element of type {type(bad[0]).__name__}")
        return super().__new__(cls, (int(s) for s in sizes))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __repr__(self):
        return f"Size({list(self)})"


class Tensor:
    """An n-dimensional array that can record the ops applied to it for backward.

    ``Tensor(2, 3)``, ``Tensor([1.0, 2.0])``, ``Tensor(other)`` and ``Tensor()`` are PyTorch's legacy
    constructor (see ``legacy_array``): a CPU tensor of the default dtype.

    Args:
        data: a NumPy or CuPy array (taken as is, not copied); it becomes ``array``. Python ints, lists,
            tuples or a Tensor take the legacy constructor's path.
        *size: more sizes after an int ``data`` (the legacy ``Tensor(2, 3)``).
        requires_grad: whether gradients should be computed for this (leaf) tensor.
    """

    # NOTE: ``_view``, ``_views`` and ``_post_acc_hooks`` are left unset by __init__ (most tensors are not
    # views, few have hooks): read them with ``view_info`` / ``live_views`` / getattr, which cost nothing
    # on the construction hot path
    __slots__ = ("array", "grad", "_requires_grad", "grad_fn", "_output_nr", "_vc", "_hooks", "_view", "_views",
                 "_post_acc_hooks", "__weakref__")
    __array_priority__ = 1000  # NOTE: make numpy_array * tensor call Tensor.__rmul__
    is_sparse = False  # NOTE: PyTorch's layout question; cupynet stores sparse COO tensors dense (ops/sparse.py)

    def __init__(self, data=None, *size, requires_grad=False):
        if type(data) not in _RAW_ARRAYS and not _is_raw_array(data):
            # NOTE: PyTorch's legacy constructor (torch.Tensor([1, 2]), torch.Tensor(2, 3)); arrays (the ops'
            # constructor) pass with one type check, anything else that is not an array goes here
            data = legacy_array("Tensor", dtypes.get_default_dtype(), () if data is None else (data, *size))
        elif size:
            raise TypeError(f"Tensor(array, *size): sizes follow an int, not an array; got {len(size)} after it")
        self.array = data
        self.grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._vc = [0]
        self._hooks = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    @property
    def data(self) -> Tensor:
        """A Tensor sharing this one's array, with no history and ``requires_grad=False`` (PyTorch's ``.data``).

        NOTE: as in PyTorch it does not share the version counter (that is ``detach()``'s job): changes
        made through it are invisible to autograd, which is what optimizers and initialisers want.
        """
        return Tensor(self.array)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if type(value.array) is not type(self.array) or value.device != self.device:
            raise RuntimeError(f"data set to a tensor on {value.device}, but this tensor is on {self.device}; "
                               "expected both on the same device (move it with .to() first)")
        self.array = value.array

    # ---- autograd attributes -------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor are recorded for backward."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if self.grad_fn is not None and not value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if value and not dtypes.is_floating(self.array.dtype) and self.array.dtype.kind != "c":
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients, got "
                               f"{self.dtype}")
        self._requires_grad = bool(value)

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op (their ``.grad`` is filled by backward)."""
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    def _bump_version(self):
        self._vc[0] += 1

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place and return self.

        Args:
            requires_grad: the new flag.
        """
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """A new leaf Tensor sharing this one's memory (and version counter), outside the graph."""
        t = Tensor(self.array)
        t._vc = self._vc
        return t

    def detach_(self):
        """Cut this tensor from the graph in place."""
        self.grad_fn, self._requires_grad = None, False
        return self

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        import weakref  # noqa: PLC0415
        node = self.grad_fn
        node.retained = node.retained or {}
        node.retained[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned Tensor replaces it.

        Args:
            hook: a callable taking and optionally returning a Tensor.
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            self._hooks = self._hooks if self._hooks is not None else []
            hooks = self._hooks
        else:
            node = self.grad_fn
            node.tensor_hooks = node.tensor_hooks or {}
            hooks = node.tensor_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after a backward pass has accumulated a gradient into this leaf's ``.grad``.

        Args:
            hook: a callable taking this tensor; its return value is ignored.
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = getattr(self, "_post_acc_hooks", None)
        if hooks is None:
            hooks = self._post_acc_hooks = []
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Compute the gradient of this tensor w.r.t. the graph leaves, accumulating into ``.grad``.

        Args:
            gradient: d(loss)/d(self); None allowed only for a single-element tensor.
            retain_graph: keep the graph for another backward (default: create_graph).
            create_graph: record the backward pass for higher-order gradients.
        """
        from .autograd.engine import backward  # noqa: PLC0415
        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph)

    # ---- metadata --------------------------------------------------------------------------
    @property
    def dtype(self):
        """The element dtype: a ``cupynet.dtype`` (``torch.dtype``), equal to the array's NumPy dtype."""
        return dtypes.public(self.array.dtype)

    @property
    def shape(self) -> tuple:
        """The shape as a tuple (PyTorch's ``torch.Size`` is a tuple too)."""
        return self.array.shape

    def size(self, dim=None):
        """The shape, or the length of one dimension.

        Args:
            dim: a dimension index, or None for the whole shape.
        """
        return Size(self.array.shape) if dim is None else self.array.shape[dim]

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self.array.ndim

    def dim(self) -> int:
        """Number of dimensions."""
        return self.array.ndim

    def numel(self) -> int:
        """Number of elements."""
        return int(self.array.size)

    @property
    def device(self):
        """The ``Device`` the data lives on."""
        return backend.device_of_array(self.array)

    @property
    def is_cuda(self) -> bool:
        """True when the data is a CuPy array."""
        return not isinstance(self.array, numpy.ndarray) and not backend.is_meta(self.array)

    # NOTE: torch's small metadata questions and factories, each one line over the array (programs use them)
    @property
    def is_cpu(self) -> bool:
        """True when the data is a NumPy array."""
        return isinstance(self.array, numpy.ndarray)

    is_xpu = is_mps = is_meta = False  # NOTE: devices cupynet never has (scripts test them)

    def nelement(self) -> int:
        """Number of elements (``numel``)."""
        return int(self.array.size)

    def ndimension(self) -> int:
        """Number of dimensions (``dim``)."""
        return self.array.ndim

    def element_size(self) -> int:
        """Bytes per element."""
        return self.array.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of all elements."""
        return int(self.array.nbytes)

    def is_floating_point(self) -> bool:
        """True for float16, bfloat16, float32 and float64."""
        return dtypes.is_floating(self.dtype)

    def is_contiguous(self) -> bool:
        """True when the elements are laid out in row-major order without gaps."""
        return bool(self.array.flags.c_contiguous)

    def stride(self, dim=None):
        """Steps between elements, in elements (not bytes), per dimension or for one.

        Args:
            dim: a dimension, or None for all.
        """
        steps = tuple(s // self.array.itemsize for s in self.array.strides)
        return steps if dim is None else steps[dim]

    def data_ptr(self) -> int:
        """The address of the first element."""
        return int(self.array.ctypes.data if self.is_cpu else self.array.data.ptr)

    def get_device(self) -> int:
        """-1 on the CPU, else the GPU's index."""
        return -1 if self.is_cpu else int(self.device.index or 0)

    def _new(self, factory, size, fill, dtype, device, requires_grad):
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
        for pos, n in enumerate(shape):
            if isinstance(n, bool) or not isinstance(n, (int, numpy.integer)) or n < 0:
                raise TypeError(f"new_*(): argument 'size' must be a tuple of non-negative ints, but found {n!r} "
                                f"at pos {pos}")
        return self._leaf_like(numpy.full(shape, factory if fill is None else fill), dtype, device, requires_grad)

    def _leaf_like(self, values, dtype, device, requires_grad):
        """A new leaf from host ``values`` in ``dtype`` (default this tensor's) on ``device`` (default its)."""
        # NOTE: built here from the array module, not through cupynet.creation (a layer above tensor)
        target = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        made = Tensor(numpy.asarray(values).astype(target)).to(device if device is not None else self.device)
        return made.requires_grad_(True) if requires_grad else made

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with this tensor's dtype and device (unless given).

        Args:
            *size: the shape (ints, or one tuple).
            dtype: another dtype.
            device: another device.
            requires_grad: make it a leaf that records gradients.
        """
        return self._new(0, size, None, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """Ones of ``size`` with this tensor's dtype and device (unless given); arguments as ``new_zeros``.

        Args:
            *size: the shape.
            dtype: another dtype.
            device: another device.
            requires_grad: make it a leaf that records gradients.
        """
        return self._new(1, size, None, dtype, device, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """``fill_value`` everywhere, with this tensor's dtype and device (unless given).

        Args:
            size: the shape.
            fill_value: the value.
            dtype: another dtype.
            device: another device.
            requires_grad: make it a leaf that records gradients.
        """
        return self._new(None, (size,), fill_value, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """A tensor of ``size`` (zeros here: cupynet has no uninitialised memory); arguments as ``new_zeros``.

        Args:
            *size: the shape.
            dtype: another dtype.
            device: another device.
            requires_grad: make it a leaf that records gradients.
        """
        return self._new(0, size, None, dtype, device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new leaf holding a copy of ``data``, with this tensor's dtype and device (unless given).

        Args:
            data: nested lists, a number, an array or a Tensor.
            dtype: another dtype.
            device: another device.
            requires_grad: make it a leaf that records gradients.
        """
        values = backend.to_numpy(data.detach().array) if isinstance(data, Tensor) else data
        return self._leaf_like(values, dtype, device, requires_grad)

    def type_as(self, other):
        """This tensor in ``other``'s dtype.

        Args:
            other: a Tensor.
        """
        return self.to(other.dtype)

    def reshape_as(self, other):
        """This tensor in ``other``'s shape.

        Args:
            other: a Tensor.
        """
        return self.reshape(other.shape)

    def share_memory_(self):
        """Move this CPU tensor's values into shared memory (in place; returns self), as PyTorch does.

        After it, the tensor sent to another process (a ``multiprocessing.Process`` argument, a ``Queue``)
        maps the same memory there, so writes on either side are seen by both (Hogwild training); views of
        it are shared too. Dtype, shape and values are kept; ``.grad`` stays process-local. A no-op when
        the tensor is shared already (see cupynet/shared_memory.py, docs/multiprocessing.md).

        NOTE: views taken *before* the call keep the old memory (torch moves the storage they share; here
        the tensor gets a new array). A CUDA tensor raises NotImplementedError: cupynet has no CUDA IPC.
        """
        if not isinstance(self.array, numpy.ndarray):
            raise NotImplementedError(f"share_memory_() of a tensor on {self.device}: cupynet has no CUDA IPC "
                                      "(torch shares CUDA memory between processes through it); move the tensor "
                                      "to the CPU first")
        from . import shared_memory  # noqa: PLC0415 - loads on the first use of shared memory

        self.array = shared_memory.share_array(self.array)
        return self

    def is_shared(self) -> bool:
        """Whether this tensor's values lie in shared memory (after ``share_memory_()``, or received shared)."""
        from . import shared_memory  # noqa: PLC0415 - loads on the first use of shared memory

        return shared_memory.is_shared(self.array)

    def pin_memory(self):
        """Returns self: page-locked host memory is not used (``DataLoader(pin_memory=True)`` is accepted too)."""
        return self

    def is_pinned(self) -> bool:
        """False: cupynet never pins host memory."""
        return False

    def __len__(self):
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __repr__(self):
        extras = []
        if self.dtype not in (dtypes.float32, dtypes.int64, dtypes.bool_):
            extras.append(f"dtype=cupynet.{self.dtype}")
        if backend.is_meta(self.array):  # NOTE: no values to show, as PyTorch prints a meta tensor
            return f"tensor(..., device='meta', size={self.shape}" + "".join(", " + e for e in extras) + ")"
        if self.is_cuda:
            extras.append(f"device='{self.device}'")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + _values_text(self.array) + "".join(", " + e for e in extras) + ")"

    def __format__(self, spec):
        # NOTE: as PyTorch: a 0-d tensor formats as its Python scalar (f"{loss:.4f}"); any other tensor only
        # takes the empty spec (str(t)), and object.__format__ raises torch's TypeError for the rest
        if self.array.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    __hash__ = object.__hash__

    # ---- conversion ----------------------------------------------------------------------
    def numpy(self):
        """The data as a NumPy array (copied from the GPU; shared memory on the CPU)."""
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if backend.is_meta(self.array):
            from .meta import meta_error  # noqa: PLC0415 - loaded already: a meta array exists

            raise meta_error("numpy()")
        return backend.to_numpy(self.array)

    def item(self):
        """The single value as a Python number (a host sync on the GPU)."""
        if self.array.size != 1:
            raise RuntimeError(f"a Tensor with {self.array.size} elements cannot be converted to Scalar")
        return backend.to_numpy(self.array).reshape(()).item()

    def tolist(self):
        """The data as (nested) Python lists."""
        return backend.to_numpy(self.array).tolist()

    def __array__(self, dtype=None, copy=None):
        array = self.numpy() if not self._requires_grad else backend.to_numpy(self.array)
        return array if dtype is None else array.astype(dtype)

    def __bool__(self):
        if self.array.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.array.size} values is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if dtypes.is_floating(self.dtype) or self.array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def to(self, *args, **kwargs):
        """Move to a device and/or cast to a dtype (differentiable), like ``torch.Tensor.to``.

        Args:
            *args: a device (``"cpu"``, ``"cuda"``, ``Device``), a dtype, or both.
            **kwargs: ``device=`` / ``dtype=``.
        """
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, (str, backend.Device)) and not dtypes.is_dtype_like(a):
                device = a
            else:
                dtype = a
        out = self
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype)
            if dtype != self.dtype:
                out = _ops.cast(out, dtype)
        if device is not None:
            device = backend.device(device)
            if device != out.device:
                out = _ops.to_device(out, device)
        return out

    # ---- one-word conversions, each one ``self.to(...)`` --------------------------------------------
    def cpu(self):
        """A copy on the CPU (self if already there)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """A copy on the GPU (a clear error where none is usable).

        Args:
            device: GPU index or name; default cuda:0.
        """
        return self.to(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))

    def half(self):
        """Cast to float16."""
        return self.to(dtypes.float16)

    def float(self):
        """Cast to float32."""
        return self.to(dtypes.float32)

    def double(self):
        """Cast to float64."""
        return self.to(dtypes.float64)

    def bfloat16(self):
        """Cast to bfloat16."""
        return self.to(dtypes.bfloat16)

    @property
    def real(self):
        """The real part (of a complex tensor; a real tensor is its own real part)."""
        return _ops.real(self)

    @property
    def imag(self):
        """The imaginary part of a complex tensor."""
        return _ops.imag(self)

    def byte(self):
        """Cast to uint8."""
        return self.to(dtypes.uint8)

    def char(self):
        """Cast to int8."""
        return self.to(dtypes.int8)

    def short(self):
        """Cast to int16."""
        return self.to(dtypes.int16)

    def long(self):
        """Cast to int64."""
        return self.to(dtypes.int64)

    def int(self):
        """Cast to int32."""
        return self.to(dtypes.int32)

    def bool(self):
        """Cast to bool."""
        return self.to(dtypes.bool_)

    def type(self, dtype=None):
        """PyTorch's legacy type name (``'torch.FloatTensor'``, ``'torch.cuda.LongTensor'``), or a cast.

        Args:
            dtype: None for the name; else the target: a dtype, a legacy type (``cupynet.LongTensor``) or its
                name (``'torch.DoubleTensor'``, ``'torch.cuda.HalfTensor'``: also moves to that device).
        """
        if dtype is None:
            prefix = "torch.cuda." if self.device.type == "cuda" else "torch."
            return f"{prefix}{dtypes.TORCH_SCALAR_NAMES[self.array.dtype]}Tensor"
        if isinstance(dtype, str):
            target, device = _parse_legacy_type_name(dtype)
            return self.to(device=device, dtype=target)
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), numpy.dtype):
            return self.to(dtype.dtype)  # NOTE: cupynet.FloatTensor & co. carry their dtype
        return self.to(dtype)

    def __getattr__(self, name):
        # NOTE: every other method (sum, reshape, exp, add_, ...) is a function in
        # cupynet.ops taking the tensor first; this forwards x.f(...) to ops.f(x, ...).
        method = _ops.TENSOR_METHODS.get(name)
        if method is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        return method.__get__(self, Tensor)

    # ---- operators ---------------------------------------------------------------------------
    def __add__(self, other):
        return _ops.add(self, other)

    def __radd__(self, other):
        return _ops.add(other, self)

    def __sub__(self, other):
        return _ops.sub(self, other)

    def __rsub__(self, other):
        return _ops.sub(other, self)

    def __mul__(self, other):
        # NOTE: a Python sequence times a tensor is Python's repeat (through __index__), as in torch
        if isinstance(other, _PY_SEQUENCES):
            return NotImplemented
        return _ops.mul(self, other)

    def __rmul__(self, other):
        if isinstance(other, _PY_SEQUENCES):
            return NotImplemented
        return _ops.mul(other, self)

    def __truediv__(self, other):
        return _ops.div(self, other)

    def __rtruediv__(self, other):
        # NOTE: PyTorch's Tensor.__rdiv__ is reciprocal(self) * other: its rounding, and fp32 under autocast
        # (reciprocal's policy); cupynet.div(number, tensor) divides directly, as torch.div does
        if dtypes.is_floating(self.dtype) and isinstance(other, (int, float)):
            return _ops.mul(_ops.reciprocal(self), other)
        return _ops.div(other, self)

    def __mod__(self, other):
        return _ops.remainder(self, other)

    def __rmod__(self, other):
        return _ops.remainder(other, self)

    def __floordiv__(self, other):
        return _ops.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return _ops.floor_divide(other, self)

    def __pow__(self, other):
        return _ops.pow(self, other)

    def __rpow__(self, other):
        return _ops.pow(other, self)

    def __matmul__(self, other):
        return _ops.matmul(self, other)

    def __rmatmul__(self, other):
        return _ops.matmul(other, self)

    def __neg__(self):
        return _ops.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ops.abs(self)

    def __getitem__(self, index):
        return _ops.getitem(self, index)

    def __setitem__(self, index, value):
        _ops.setitem_(self, index, value)

    def __iadd__(self, other):
        return _ops.add_(self, other)

    def __isub__(self, other):
        return _ops.sub_(self, other)

    def __imul__(self, other):
        return _ops.mul_(self, other)

    def __itruediv__(self, other):
        return _ops.div_(self, other)

    def __eq__(self, other):
        return _ops.eq(self, other)

    def __ne__(self, other):
        return _ops.ne(self, other)

    def __lt__(self, other):
        return _ops.lt(self, other)

    def __le__(self, other):
        return _ops.le(self, other)

    def __gt__(self, other):
        return _ops.gt(self, other)

    def __ge__(self, other):
        return _ops.ge(self, other)

    def __invert__(self):
        return _ops.logical_not(self)

    def __and__(self, other):
        return _ops.logical_and(self, other)

    def __or__(self, other):
        return _ops.logical_or(self, other)

    def __iter__(self):
        if self.array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.array.shape[0]))

    @property
    def T(self):  # noqa: N802 - PyTorch's name
        """The tensor with its dimensions reversed."""
        return _ops.permute(self, tuple(reversed(range(self.array.ndim))))

    @property
    def mT(self):  # noqa: N802 - PyTorch's name
        """The last two dimensions swapped."""
        return _ops.transpose(self, -2, -1)



# ---- views ----------------------------------------------------------------------------------------
_VIEW_SLOT, _VIEWS_SLOT = Tensor.__dict__["_view"], Tensor.__dict__["_views"]
# NOTE: views of a graph tensor are remembered weakly on the root; the dead ones are dropped whenever the
# list reaches a power of two from this size on (amortised constant cost per view)
_PRUNE_AT = 16


def view_info(t):
    """``(base, op class, op options, writable)`` when ``t`` was made by a view op, else None.

    NOTE: reads the slot descriptor directly, so a tensor that is not a view costs one
    caught AttributeError and never reaches ``Tensor.__getattr__``.

    Args:
        t: a Tensor.
    """
    try:
        return _VIEW_SLOT.__get__(t, Tensor)
    except AttributeError:
        return None


def live_views(root):
    """The views of ``root`` that need gradients and are still alive, in the order they were made.

    Args:
        root: a Tensor that is not itself a view.
    """
    try:
        refs = _VIEWS_SLOT.__get__(root, Tensor)
    except AttributeError:
        return []
    return [v for v in (r() for r in refs) if v is not None]


def view_root(t):
    """The tensor owning the memory ``t`` views (``t`` itself when it is not a view).

    Args:
        t: a Tensor.
    """
    info = view_info(t)
    while info is not None:
        t = info[0]
        info = view_info(t)
    return t


def mark_view(out, base, op, options, writable=True):
    """Record that ``out`` views ``base``'s memory: one version counter, and how to make it again.

    Args:
        out: the Tensor a view op returned.
        base: the Tensor it views.
        op: the ``Function`` class that made it.
        options: the keyword options ``op.apply(base, **options)`` takes to make the same view again.
        writable: False for the pieces of a multi-output view op (``split``, ``unbind``), which cannot be
            written in place while they are part of a graph, as in PyTorch.
    """
    out._vc = base._vc
    out._view = (base, op, options, writable)
    if out._requires_grad and base.grad_fn is not None:
        remember_view(out)
    return out


def remember_view(view):
    """Keep a weak reference to ``view`` on its root, so an in-place change of the root can renew its history.

    Args:
        view: a Tensor made by a view op.
    """
    root = view_root(view)
    if root.grad_fn is None and root._requires_grad:
        return  # NOTE: the history of a leaf that requires grad never changes (in-place ops on it are refused)
    try:
        refs = _VIEWS_SLOT.__get__(root, Tensor)
    except AttributeError:
        refs = root._views = []
    if len(refs) >= _PRUNE_AT and not len(refs) & (len(refs) - 1):
        refs[:] = [r for r in refs if r() is not None]
    refs.append(weakref.ref(view))


# ---- printing ----------------------------------------------------------------------------------------
def _values_text(array):
    """The values part of ``repr(tensor)``, laid out as PyTorch does under ``settings.set_printoptions``."""
    options = settings.print_options()
    host = backend.to_numpy(array)
    if host.dtype == dtypes.bfloat16:
        host = host.astype(numpy.float64)  # NOTE: exact; NumPy's printer does not know ml_dtypes' bfloat16
    style = {"precision": options["precision"], "threshold": options["threshold"],
             # NOTE: NumPy keeps a column for the closing bracket of nested rows, which PyTorch's rows may use
             "edgeitems": options["edgeitems"], "max_line_width": options["linewidth"] + (host.ndim > 1)}
    if host.dtype.kind == "f":
        style.update(_float_style(_shown(host, options), options))
    text = numpy.array2string(host, separator=", ", prefix="tensor(", **style)
    return text.replace(", ...,", ",  ...,")  # NOTE: PyTorch's summary marker inside a row is " ..."


def _shown(host, options):
    """The values a summarised print shows (the first and last ``edgeitems`` along each axis), or all of them."""
    if host.size <= options["threshold"]:
        return host
    edge = options["edgeitems"]
    for axis, n in enumerate(host.shape):
        if n > 2 * edge:
            host = numpy.take(host, numpy.r_[0:edge, n - edge:n], axis=axis)
    return host


def _float_style(shown, options):
    """NumPy's float layout for PyTorch's rule: integral values print as ``1.``; others with ``precision`` digits;
    scientific notation when the finite non-zero magnitudes reach 1e8, go below 1e-4 or span more than 1000x
    (NumPy's automatic choice is that rule), or always/never as ``sci_mode`` says."""
    finite = numpy.abs(shown[numpy.isfinite(shown)])
    nonzero = finite[finite != 0]
    integral = bool(numpy.all(finite == numpy.floor(finite)))
    spread = nonzero.size and (nonzero.max() >= 1e8 or nonzero.max() / nonzero.min() > 1000)
    if options["sci_mode"] is True and nonzero.size:
        precision = options["precision"]
        width = max(len(f"{x:.{precision}e}") for x in shown.reshape(-1).tolist())
        return {"formatter": {"float_kind": lambda x: f"{x:.{precision}e}".rjust(width)}}
    if options["sci_mode"] is False:
        return {"suppress_small": True, "floatmode": "maxprec" if integral else "fixed"}
    return {"floatmode": "maxprec" if integral and not spread else "fixed"}


def legacy_array(name, dtype, args) -> object:
    """The array of PyTorch's legacy constructors: ``torch.Tensor(2, 3)``, ``torch.FloatTensor([1, 2])``.

    ``()`` is an empty 1-D array; ints are a shape, filled with zeros (PyTorch leaves the memory
    uninitialised); one sequence (a tuple too: PyTorch reads only its ``torch.Size`` as a shape) or NumPy
    array is data, copied into ``dtype``; one Tensor of ``dtype`` is shared, as PyTorch aliases it.

    Args:
        name: the constructor's name, for errors (``"Tensor"``, ``"LongTensor"``...).
        dtype: the NumPy dtype it makes.
        args: its positional arguments.
    """
    if not args:
        return numpy.empty((0,), dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return _legacy_alias(name, dtype, args[0])
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])  # NOTE: a Size is a shape (torch.Tensor(x.size())); a plain tuple is data
    if all(isinstance(s, int) and not isinstance(s, bool) for s in args):
        if any(s < 0 for s in args):
            raise RuntimeError(f"{name}(): trying to create tensor with negative dimension: {args}")
        return numpy.zeros(args, dtype)
    if len(args) == 1:
        return _legacy_data(name, dtype, args[0])
    raise TypeError(f"{name}(): expected sizes as ints or one sequence of data, got "
                    f"({', '.join(type(a).__name__ for a in args)})")


def _legacy_alias(name, dtype, other):
    # NOTE: torch.Tensor(t) is t's storage whatever its dtype; FloatTensor(t) & co. insist on theirs
    if name != "Tensor" and other.array.dtype != dtype:
        raise TypeError(f"{name}(): expected a tensor of dtype {dtypes.as_dtype(dtype)}, got {other.dtype}")
    return other.array


def _legacy_data(name, dtype, data):
    if isinstance(data, (float, bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__}); {name}() takes sizes "
                        "as ints or a sequence of numbers")
    if isinstance(data, (str, bytes, dict, set)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}' ({name}() takes sizes or a "
                        "sequence of numbers)")
    try:
        host = numpy.asarray(data)
    except ValueError as error:
        raise TypeError(f"{name}(): data must be numbers or (nested) sequences of numbers of one shape "
                        f"({error})") from None
    if host.dtype.kind not in "biuf":
        raise TypeError(f"new(): invalid data type '{type(data).__name__}' ({name}() takes sizes or a "
                        f"sequence of numbers, got elements of dtype {host.dtype})")
    return numpy.array(host, dtype=dtype)

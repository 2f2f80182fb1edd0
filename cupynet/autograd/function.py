"""``Function``: one differentiable op, and the graph node (``ctx``) it leaves behind.

An op is a subclass with two static methods, as in PyTorch::

    class Mul(Function):
        amp_policy = None                       # autocast leaves it alone
        @staticmethod
        def forward(ctx, a, b):                 # Tensors in; arrays (or Tensors) out
            ctx.save_for_backward(a, b)
            return a.array * b.array
        @staticmethod
        def backward(ctx, grad):                # Tensors in, Tensors out
            a, b = ctx.saved_tensors
            return grad * b, grad * a           # cupynet ops: double backward for free

``Mul.apply(a, b)`` runs it. ``apply`` is the single place where the modes of
this thread are honoured: autocast casts the inputs according to the class's
``amp_policy``, the forward runs with grad mode off, and when any input needs a
gradient the returned tensors point back at ``ctx`` (their ``grad_fn``).
"""

from __future__ import annotations

import weakref

import numpy

from .. import dtypes
from ..tensor import Tensor
from .state import STATE

__all__ = ["Function", "Node", "Cast", "once_differentiable"]

_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


class Node:
    """A recorded op: what ``Tensor.grad_fn`` points to, and the ``ctx`` of forward/backward.

    Args:
        fn: the ``Function`` subclass that made it.
    """

    # NOTE: rarely used fields are class-level defaults, so making a node (once
    # per op call, the hot path) sets only four attributes.
    next_edges = ()               # per positional input: (Node, output_nr), (leaf Tensor, None) or None
    generation = 0
    freed = False
    materialize_grads = True
    tensor_hooks = None           # output_nr -> [hook]
    retained = None               # output_nr -> weakref to a Tensor that called retain_grad()
    autocast_snapshot = None      # the autocast state forward ran under (for custom_bwd)
    _saved = ()
    _non_diff = ()                # ids of outputs marked non-differentiable
    _outputs = ()                 # weakrefs to the output Tensors
    _overwritten = ()             # output_nrs an in-place op wrote over (their old values are gone)
    _output_meta = ()             # (shape, dtype, array or None) per output

    def __init__(self, fn, needs_input_grad):
        self.fn = fn
        self.needs_input_grad = needs_input_grad

    def name(self) -> str:
        """PyTorch-style node name, e.g. ``MulBackward``."""
        return f"{self.fn.__name__.lstrip('_')}Backward"

    __repr__ = name

    @property
    def next_functions(self) -> tuple:
        """PyTorch's view of the graph one step back: a ``(node, output_nr)`` pair per input.

        An input made by an op gives its node; a leaf that requires grad gives an ``AccumulateGrad``
        holding it (``.variable``); an input that needs no gradient gives ``(None, 0)``.
        """
        return tuple((None, 0) if edge is None else (AccumulateGrad(edge[0]), 0) if edge[1] is None else edge
                     for edge in self.next_edges)

    def save_for_backward(self, *tensors):
        """Keep tensors for backward; an in-place change before backward is then an error.

        Args:
            *tensors: Tensors (or None) needed by backward.
        """
        saved = []  # NOTE (speed): a plain loop, no generator: most ops save something on every call
        for t in tensors:
            if t is None:
                saved.append((None, 0))
            elif isinstance(t, Tensor):
                saved.append((t, t._vc[0]))
            else:
                raise TypeError(f"save_for_backward can only save Tensors or None, got {type(t).__name__}")
        self._saved = tuple(saved)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, checked against in-place changes."""
        if self.freed:
            raise RuntimeError(_FREED_MESSAGE)
        out = []
        for entry, version in self._saved:
            t = self.output(entry) if type(entry) is int else entry
            if t is not None and t._vc[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.dtype} tensor of shape {tuple(t.shape)}], which is output of "
                    f"{t.grad_fn.name() if t.grad_fn else 'a leaf'}, is at version {t._version}; expected "
                    f"version {version} instead (in {self.name()})"
                )
            out.append(t)
        return tuple(out)

    def mark_non_differentiable(self, *tensors):
        """Mark outputs that should not require grad (non-floating outputs never do).

        Args:
            *tensors: outputs that should not require grad.
        """
        self._non_diff = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool):
        """Whether missing output gradients reach backward as zeros (True) or None.

        Args:
            value: the flag.
        """
        self.materialize_grads = bool(value)

    def output(self, index: int) -> Tensor:
        """Output ``index`` of this node as a Tensor wired to this node (rebuilt if it was freed).

        Args:
            index: which output.
        """
        if index in self._overwritten:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: output {index} of {self.name()} was written over after it was saved")
        t = self._outputs[index]() if self._outputs else None
        if t is not None:
            return t
        shape, dtype, array = self._output_meta[index]
        if array is None:
            raise RuntimeError(f"{self.name()}: output {index} was not kept for backward")
        t = Tensor(array, requires_grad=True)
        t.grad_fn, t._output_nr = self, index
        return t

    def rebase_output(self, index: int, tensor: Tensor):
        """Make ``tensor`` output ``index`` of this node (an in-place op took over ``tensor``'s history).

        Args:
            index: which output.
            tensor: the Tensor that now holds that output's value.
        """
        if self._outputs:
            refs = list(self._outputs)
            refs[index] = weakref.ref(tensor)
            self._outputs = tuple(refs)
        tensor.grad_fn, tensor._output_nr, tensor._requires_grad = self, index, True

    def mark_overwritten(self, index: int):
        """Record that output ``index`` was written over in place; a backward that needs it then raises.

        Args:
            index: which output.
        """
        if self._outputs or any(isinstance(entry, int) for entry, _ in self._saved):
            self._overwritten = (*self._overwritten, index)

    def free(self):
        """Drop everything saved for backward (called after backward unless retain_graph)."""
        self._saved = ()
        if self.fn.save_outputs:
            self._output_meta = tuple((s, d, None) for s, d, _ in self._output_meta)
        self.freed = True


class AccumulateGrad:
    """What ``next_functions`` shows for a leaf that requires grad: PyTorch's node that adds into ``.grad``.

    cupynet's engine accumulates into leaves directly; this object only names that step for code that
    walks the graph (``grad_fn.next_functions[0][0].variable`` is the leaf).

    Args:
        variable: the leaf Tensor.
    """

    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        """``"AccumulateGrad"``, PyTorch's name."""
        return "AccumulateGrad"

    __repr__ = name


class Function:
    """Base class of every op; subclass with static ``forward(ctx, ...)`` and ``backward(ctx, *grads)``.

    Class attributes:
        amp_policy: ``None`` (run in the input dtypes), ``"lower"``, ``"fp32"``, ``"promote"`` or ``"banned"``.
        op_name: the name used in error messages, traces and the op reference.
        save_outputs: keep output arrays so backward can call ``ctx.output(i)`` after the output died.

    Args:
        None (use ``apply``).
    """

    amp_policy = None
    op_name = None
    save_outputs = False
    banned_message = None

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the op on ``x.array`` arrays; return an array, a Tensor, or a tuple of them.

        Args:
            ctx: the Node, for save_for_backward and attributes.
            *args: the op's inputs.
        """
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Return one gradient (Tensor or None) per positional input of forward.

        Args:
            ctx: the Node.
            *grad_outputs: one Tensor per output.
        """
        raise NotImplementedError

    @classmethod
    def name(cls) -> str:
        """The op's public name (``op_name`` or the lowercased class name)."""
        return cls.op_name or cls.__name__.lower()

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the op: autocast casts, forward without recording, then wire the graph.

        Args:
            *args: inputs; positional Tensors are the differentiable ones.
            **kwargs: options passed to forward.
        """
        state = STATE
        if state.autocast or state.tracers:
            from ..amp.policy import apply_cast_policy  # noqa: PLC0415 - amp sits above autograd; only when on
            args = apply_cast_policy(cls, args)
        needs = _scan_inputs(cls, args)
        grad_mode = state.grad_enabled
        needs_graph = grad_mode and True in needs
        ctx = Node(cls, needs if needs_graph else (False,) * len(args))
        if needs_graph and state.autocast:
            ctx.autocast_snapshot = (dict(state.autocast), state.autocast_cache_enabled)
        state.grad_enabled = False
        try:
            raw = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = grad_mode
        if type(raw) is numpy.ndarray:  # NOTE (speed): the common case, one fresh NumPy array, wrapped here
            out = Tensor(raw)
            if needs_graph:
                _link(cls, ctx, args, (out,))
            return out
        return _wrap_outputs(cls, ctx, args, raw, needs_graph)


def _scan_inputs(cls, args):
    """One pass over the inputs: which need a gradient, and are all tensors on one device."""
    needs, kind, first = [], None, None
    for a in args:
        if isinstance(a, Tensor):
            if kind is None:
                kind, first = type(a.array), a
            elif type(a.array) is not kind and _array_kind(a.array) is not _array_kind(first.array):
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two devices, "
                    f"{first.device} and {a.device}! (in op {cls.name()})"
                )
            needs.append(a._requires_grad)
        else:
            needs.append(False)
    return tuple(needs)


def _array_kind(array):
    # NOTE: a NumPy scalar (what NumPy returns for a 0-d result) is on the CPU like an ndarray;
    # comparing array types alone would call the two different devices
    return numpy.ndarray if isinstance(array, numpy.generic) else type(array)


def _wrap_outputs(cls, ctx, args, raw, needs_graph):
    if type(raw) is not tuple:  # NOTE: the common single-output case, kept free of generators
        out = _as_output_tensor(raw)
        if needs_graph:
            _link(cls, ctx, args, (out,))
        return out
    outputs = tuple(_as_output_tensor(r) for r in raw)
    if needs_graph:
        _link(cls, ctx, args, outputs)
    return outputs


def _as_output_tensor(value):
    if type(value) is numpy.ndarray:
        return Tensor(value)
    if isinstance(value, Tensor):
        if isinstance(value.array, numpy.generic):
            return Tensor(numpy.asarray(value.array))
        return Tensor(value.array) if (value.grad_fn is not None or value.requires_grad) else value
    if isinstance(value, numpy.generic):
        value = numpy.asarray(value)  # NOTE: NumPy reductions return scalars; a Tensor always holds an array
    return Tensor(value)


def _link(cls, ctx, args, outputs):
    needs, edges, generation = ctx.needs_input_grad, [], 0
    for i in range(len(args)):  # NOTE (speed): by index, no zip: every recorded op comes here
        if not needs[i]:
            edges.append(None)
            continue
        a = args[i]
        node = a.grad_fn
        if node is None:
            edges.append((a, None))
        else:
            edges.append((node, a._output_nr))
            if node.generation >= generation:
                generation = node.generation + 1
    ctx.next_edges, ctx.generation = tuple(edges), generation
    non_diff = ctx._non_diff
    keep = cls.save_outputs
    meta = []
    for i in range(len(outputs)):
        out = outputs[i]
        array = out.array
        dtype = array.dtype
        if (dtype.kind == "f" or dtype == _BFLOAT16 or dtype.kind == "c") and (not non_diff or id(out) not in non_diff):
            out._requires_grad, out.grad_fn, out._output_nr = True, ctx, i
        meta.append((array.shape, dtype, array if keep else None))
    ctx._output_meta = tuple(meta)
    saved = ctx._saved
    if keep or saved:  # NOTE: only ctx.output(i) reads these weak references
        ctx._outputs = tuple([weakref.ref(o) for o in outputs])  # NOTE (speed): a list, not a generator
    if saved:
        _saved_outputs_by_index(ctx, outputs)


_BFLOAT16 = dtypes.bfloat16


def _saves_an_output(saved, outputs) -> bool:
    # NOTE (speed): plain loops, no generator: every op that saves something comes here.
    # Identity only: ``in`` would fall back to Tensor.__eq__.
    for t, _ in saved:
        if t is not None:
            for o in outputs:
                if t is o:
                    return True
    return False


def _saved_outputs_by_index(ctx, outputs):
    # NOTE: a saved output is kept by index, not by reference, so the node
    # does not keep its own output alive through a reference cycle.
    if not _saves_an_output(ctx._saved, outputs):
        return
    out_ids = {id(o): i for i, o in enumerate(outputs)}
    ctx._saved = tuple((out_ids[id(t)], v) if t is not None and id(t) in out_ids else (t, v)
                       for t, v in ctx._saved)
    ctx._output_meta = tuple((o.shape, o.dtype, o.array) for o in outputs)


class Cast(Function):
    """Differentiable dtype conversion: the gradient comes back in the source dtype.

    Args:
        x: the tensor.
        dtype: the target dtype (keyword).
    """

    op_name = "to"

    @staticmethod
    def forward(ctx, x, dtype=None):
        ctx.source_dtype = x.dtype
        return x.array.astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return Cast.apply(grad, dtype=ctx.source_dtype) if grad.dtype != ctx.source_dtype else grad


def once_differentiable(backward):
    """Decorator for a ``backward`` that is not itself differentiable (runs it without recording).

    Args:
        backward: the static backward method.
    """
    from .grad_mode import no_grad  # noqa: PLC0415

    def wrapper(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)
    return wrapper

"""The backward pass: walk the recorded graph from the outputs to the leaves.

Nodes are visited in decreasing *generation* (a node's generation is one more
than the largest of its inputs'), kept in a heap: when a node is popped, every
node that consumed its outputs has already run, so its output gradients are
complete. This is DeZero's ordering, and it needs no topological sort.

Gradients flowing into the same node output are summed; gradients reaching a
leaf are accumulated into ``leaf.grad`` (``backward``) or captured and returned
(``grad``). With ``create_graph=True`` backward formulas run with grad mode on,
so the gradients themselves have a graph (higher-order derivatives).
"""

from __future__ import annotations

import heapq
import itertools
import warnings

import numpy

from ..backend import get_array_module
from ..tensor import Tensor
from .state import STATE

__all__ = ["backward", "grad", "queue_callback", "leaf_edges"]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """Accumulate d(tensors)/d(leaf) into ``leaf.grad`` for every leaf that requires grad.

    Args:
        tensors: a Tensor or a sequence of Tensors to differentiate.
        grad_tensors: the cotangents (None for scalar outputs, meaning 1).
        retain_graph: keep saved values for another backward (defaults to create_graph).
        create_graph: record the backward pass itself, for higher-order gradients.
    """
    roots, seeds = _roots_and_seeds(tensors, grad_tensors, "backward")
    _run(roots, seeds, create_graph if retain_graph is None else retain_graph, create_graph, capture=None)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False):
    """Return d(outputs)/d(inputs) without touching any ``.grad``.

    Args:
        outputs: a Tensor or sequence of Tensors.
        inputs: a Tensor or sequence of Tensors (leaves or intermediate results).
        grad_outputs: cotangents for ``outputs`` (None for scalar outputs).
        retain_graph: keep saved values for another backward (defaults to create_graph).
        create_graph: record the backward pass, for higher-order gradients.
        only_inputs: ignored, as in PyTorch (deprecated there; False warns as torch does).
        allow_unused: return None for an input the outputs do not depend on instead of raising.
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", FutureWarning,
                      stacklevel=2)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs[{i}] must be a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors does not require grad (inputs[{i}])")
    roots, seeds = _roots_and_seeds(outputs, grad_outputs, "grad")
    capture = {_capture_key(t): [i, None] for i, t in enumerate(inputs)}
    _run(roots, seeds, create_graph if retain_graph is None else retain_graph, create_graph, capture,
         needed=_nodes_leading_to(roots, capture))
    results = [None] * len(inputs)
    for slot in capture.values():
        results[slot[0]] = slot[1]
    for i, r in enumerate(results):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"One of the differentiated Tensors (inputs[{i}]) appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior."
            )
    return tuple(results)


def queue_callback(callback):
    """Run ``callback()`` once the backward pass now running has finished (PyTorch's ``queue_callback``).

    Called from a hook during ``backward``; DistributedDataParallel uses it to reduce the
    gradient buckets that never became ready (unused parameters, gradients that were None).

    Args:
        callback: a callable taking no arguments.
    """
    if STATE.final_callbacks is None:
        raise RuntimeError("queue_callback: no backward pass is running in this thread")
    STATE.final_callbacks.append(callback)


def leaf_edges(roots):
    """The leaf Tensors the graph behind ``roots`` reaches, one per edge into it (a leaf reached twice comes twice).

    A root that is itself a leaf requiring grad counts as one edge. DDP counts the gradients each
    parameter will receive from this; activation checkpointing finds the parameters a function read.

    Args:
        roots: an iterable of Tensors.
    """
    seen, stack = set(), []
    for t in roots:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            yield t
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for edge in node.next_edges:
            if edge is None:
                continue
            target, nr = edge
            if nr is None:
                yield target
            else:
                stack.append(target)


def _nodes_leading_to(roots, capture):
    """The nodes behind ``roots`` with a path to a captured input: the only ones ``grad`` must run.

    NOTE: as in PyTorch, nothing beyond the inputs runs: ``grad(y, x)`` with ``x`` an intermediate result
    never calls the backward of the ops that made ``x`` (their saved values may already be freed).
    Iterative post-order walk: a node is judged once all its inputs' nodes are.

    Args:
        roots: the output Tensors.
        capture: ``grad``'s table of inputs, keyed as ``_capture_key`` keys them.
    """
    needed, seen = set(), set()
    stack = [(t.grad_fn, False) for t in roots if t.grad_fn is not None]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            if any(_leads_to(edge, capture, needed) for edge in node.next_edges if edge is not None):
                needed.add(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            stack.extend((edge[0], False) for edge in node.next_edges if edge is not None and edge[1] is not None)
    return needed


def _leads_to(edge, capture, needed):
    target, nr = edge
    if nr is None:
        return (id(target), None) in capture
    return (target, nr) in capture or target in needed


def _capture_key(t):
    return (t.grad_fn, t._output_nr) if t.grad_fn is not None else (id(t), None)


def _roots_and_seeds(tensors, grads, caller):
    tensors = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    if grads is None or isinstance(grads, Tensor):
        grads = (grads,) * len(tensors) if grads is None else (grads,)
    grads = tuple(grads)
    if len(grads) != len(tensors):
        raise RuntimeError(f"{caller}: got {len(tensors)} tensors but {len(grads)} gradients")
    seeds = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        seeds.append(_seed(t, g))
    return tensors, seeds


def _seed(t, g):
    if g is None:
        if t.array.size != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs (got an output of shape "
                f"{tuple(t.shape)}); pass gradient= with the same shape"
            )
        return Tensor(_ones_like(t.array))
    if not isinstance(g, Tensor):
        raise TypeError(f"gradient must be a Tensor or None, got {type(g).__name__}")
    if tuple(g.shape) != tuple(t.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {tuple(g.shape)} and output has a "
                           f"shape of {tuple(t.shape)}")
    return g


def _ones_like(array):
    return get_array_module(array).ones(array.shape, dtype=array.dtype)


class _Pass:
    """The bookkeeping of one backward pass."""

    def __init__(self, retain_graph, create_graph, capture, needed):
        self.retain_graph, self.create_graph, self.capture = retain_graph, create_graph, capture
        self.needed = needed       # the nodes whose backward runs (None: all; ``grad`` skips those past its inputs)
        self.pending = {}          # Node -> [grad per output]
        self.heap, self.counter = [], itertools.count()
        self.handed_out = set()    # owners of arrays already stored in some leaf's .grad


def _run(roots, seeds, retain_graph, create_graph, capture, needed=None):
    run = _Pass(retain_graph, create_graph, capture, needed)
    saved_mode, saved_autocast, saved_callbacks = STATE.grad_enabled, STATE.autocast, STATE.final_callbacks
    # NOTE: backward formulas run with autocast off: the forward already decided
    # every dtype, and re-deciding would change the math of the gradient.
    STATE.grad_enabled, STATE.autocast, STATE.final_callbacks = create_graph, {}, []
    try:
        for t, g in zip(roots, seeds):
            _send(run, (t.grad_fn, t._output_nr) if t.grad_fn is not None else (t, None), g)
        while run.heap:
            _, _, node = heapq.heappop(run.heap)
            _run_node(run, node)
        callbacks = STATE.final_callbacks
    finally:
        STATE.grad_enabled, STATE.autocast, STATE.final_callbacks = saved_mode, saved_autocast, saved_callbacks
    for callback in callbacks:
        callback()


def _send(run, edge, g):
    target, nr = edge
    if nr is None:
        _reach_leaf(run, target, g)
        return
    slots = run.pending.get(target)
    if slots is None:
        slots = run.pending[target] = [None] * len(target._output_meta)
        heapq.heappush(run.heap, (-target.generation, next(run.counter), target))
    if slots[nr] is None:
        slots[nr] = g
    else:
        # NOTE: without create_graph the sum needs no graph: add the arrays directly
        slots[nr] = slots[nr] + g if run.create_graph else Tensor(slots[nr].array + g.array)


def _run_node(run, node):
    grads = run.pending.pop(node)
    if run.needed is not None and node not in run.needed:
        for nr, g in enumerate(grads):  # NOTE: its outputs may be inputs of ``grad``: capture, then stop here
            _output_grad_hooks(run, node, nr, g)
        return
    if node.freed:
        from .function import _FREED_MESSAGE  # noqa: PLC0415
        raise RuntimeError(_FREED_MESSAGE)
    if node.tensor_hooks or node.retained or run.capture is not None:
        for nr, g in enumerate(grads):
            grads[nr] = _output_grad_hooks(run, node, nr, g)
    if node.materialize_grads and (grads[0] is None if len(grads) == 1 else any(g is None for g in grads)):
        # NOTE: not `None in grads`: that calls Tensor.__eq__
        like = next(g for g in grads if g is not None).array
        grads = [g if g is not None else _zeros(node, nr, like) for nr, g in enumerate(grads)]
    input_grads = node.fn.backward(node, *grads)
    if not isinstance(input_grads, tuple):
        input_grads = (input_grads,)
    edges = node.next_edges
    if len(input_grads) < len(edges):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(edges)}, got {len(input_grads)})")
    if not run.retain_graph:
        node.free()
    # NOTE (speed): the edges by index, no enumerate/zip: this loop runs once per input of every node
    for i in range(len(edges)):
        edge, g = edges[i], input_grads[i]
        if edge is not None and g is not None:
            _send(run, edge, _validate(node, i, edge, g))


def _output_grad_hooks(run, node, nr, g):
    if g is None:
        return None
    for hook in (node.tensor_hooks or {}).get(nr, ()):
        new = hook(g)
        g = new if new is not None else g
    if run.capture is not None:
        slot = run.capture.get((node, nr))
        if slot is not None:
            slot[1] = g if slot[1] is None else slot[1] + g
    retained = node.retained.get(nr) if node.retained else None
    t = retained() if retained is not None else None
    if t is not None and run.capture is None:
        value = g if run.create_graph else g.detach()
        t.grad = value if t.grad is None else t.grad + value
    return g


def _zeros(node, nr, like):
    # NOTE: on the device of a gradient that did arrive (``like``): the node keeps its outputs' arrays only when
    # its op saves them, and zeros made without one would land on the CPU beside CUDA gradients
    shape, dtype, _ = node._output_meta[nr]
    return Tensor(get_array_module(like).zeros(shape, dtype=dtype))


def _validate(node, i, edge, g):
    target, nr = edge
    if nr is None:
        shape, dtype = target.array.shape, target.array.dtype
    else:
        meta = target._output_meta[nr]
        shape, dtype = meta[0], meta[1]
    array = g.array
    if type(array) is not numpy.ndarray and isinstance(array, numpy.generic):
        # NOTE: NumPy returns scalars for 0-d results; a Tensor (and the next op's device check) wants an array
        g = Tensor(numpy.asarray(array))
    if array.shape != shape and tuple(array.shape) != tuple(shape):  # NOTE: tuple() for shapes given as lists
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                           f"{list(g.shape)} but expected shape compatible with {list(shape)}")
    return g if array.dtype == dtype else g.to(dtype)


def _reach_leaf(run, leaf, g):
    for hook in leaf._hooks or ():
        new = hook(g)
        g = new if new is not None else g
    if run.capture is not None:
        slot = run.capture.get((id(leaf), None))
        if slot is not None:
            slot[1] = g if slot[1] is None else slot[1] + g
        return
    if leaf.grad is None:
        leaf.grad = g if run.create_graph else _fresh_grad(run, g)
    else:
        # NOTE: out of place, so a .grad someone kept a reference to is never changed under them
        leaf.grad = leaf.grad + g
    for hook in getattr(leaf, "_post_acc_hooks", None) or ():
        hook(leaf)


def _fresh_grad(run, g):
    """A gradient Tensor safe to store in ``.grad``: never sharing memory with another leaf's grad.

    NOTE: ``Add`` hands the same gradient to both inputs and ``reshape`` hands
    out a view; storing either as-is would let an in-place update of one
    ``.grad`` (an unscale, a clip) silently change another. Views and arrays
    already handed out are copied; everything else is stored without a copy.
    """
    array = g.array
    owner = array.base if array.base is not None else array
    if array.base is not None or id(owner) in run.handed_out:
        array = array.copy()
        owner = array
    run.handed_out.add(id(owner))
    return Tensor(array)

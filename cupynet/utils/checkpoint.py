"""Activation checkpointing (``torch.utils.checkpoint``): keep a segment's inputs, not its activations.

``checkpoint(fn, *args)`` runs ``fn`` and keeps only its inputs and outputs; the
activations inside are dropped and recomputed during backward, trading one more
forward of the segment for their memory. The recomputation sees the same random
numbers (dropout masks) as the forward: the generators are captured before the
forward and restored around the recompute (``preserve_rng_state``), and it runs in
the autocast state the forward ran in.

How gradients reach the parameters ``fn`` reads: the forward runs once with the
graph on, the leaves it reaches (parameters, tensors ``fn`` closes over) are
collected, then the graph is dropped; those leaves become inputs of one
``Checkpoint`` node, so ``backward()``, ``autograd.grad`` and ``create_graph``
route their gradients as for any op. The peak memory is one segment's activations
(during its forward, and again during its recompute).
"""

from __future__ import annotations

from ..amp.custom import custom_bwd
from ..autograd import enable_grad, grad, is_grad_enabled
from ..autograd.engine import leaf_edges
from ..autograd.function import Function
from ..random import restore_rng, snapshot_rng
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def _leaves_reached(outputs, exclude):
    """Leaf Tensors requiring grad that the graph of ``outputs`` reaches, except those in ``exclude``."""
    excluded = {id(t) for t in exclude}
    leaves = {id(leaf): leaf for leaf in leaf_edges(outputs) if id(leaf) not in excluded}
    return list(leaves.values())


def _as_outputs(result):
    """``(tuple of Tensors, was_a_tuple)`` for what the checkpointed function returned."""
    outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"checkpoint: the function must return a Tensor or a tuple of Tensors, but output {i} "
                            f"is a {type(out).__name__}")
    return outputs, isinstance(result, (tuple, list))


def _inputs_for_recompute(args, create_graph):
    """Detached leaves for the tensor arguments that need a gradient (aliases keeping the graph with create_graph)."""
    out = []
    for a in args:
        if isinstance(a, Tensor) and a.requires_grad:
            out.append(a.view_as(a) if create_graph else a.detach().requires_grad_(True))
        else:
            out.append(a.detach() if isinstance(a, Tensor) else a)
    return out


class Checkpoint(Function):
    """The node a checkpointed segment leaves in the graph: inputs ``(*args, *leaves)``, outputs of ``fn``.

    Forward returns the outputs computed beforehand; backward recomputes ``fn`` with the graph on, under the
    forward's RNG and autocast state, and differentiates it.
    """

    op_name = "checkpoint"
    amp_policy = None   # NOTE: the segment's own ops cast under autocast; the node itself never casts

    @staticmethod
    def forward(ctx, *inputs, run=None):
        ctx.run = run
        ctx.save_for_backward(*(t if isinstance(t, Tensor) else None for t in inputs))
        arrays = tuple(o.array for o in run["outputs"])
        run["outputs"] = None   # NOTE: the Node holds no activations, only what save_for_backward keeps
        return arrays if run["as_tuple"] else arrays[0]

    @staticmethod
    @custom_bwd
    def backward(ctx, *grads):
        run, saved = ctx.run, ctx.saved_tensors
        n_args = len(run["args"])
        args = [s if s is not None else a for s, a in zip(saved[:n_args], run["args"])]
        leaves = saved[n_args:]
        create_graph = is_grad_enabled()
        inputs = _inputs_for_recompute(args, create_graph)
        current = snapshot_rng(run["devices"]) if run["rng"] is not None else None
        try:
            if run["rng"] is not None:
                restore_rng(run["rng"])
            with enable_grad():
                outputs, _ = _as_outputs(run["fn"](*inputs, **run["kwargs"]))
        finally:
            if current is not None:
                restore_rng(current)
        wanted = [x for x, needed in zip(inputs + list(leaves), ctx.needs_input_grad) if needed]
        pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad and g is not None]
        found = iter(grad([o for o, _ in pairs], wanted, [g for _, g in pairs], create_graph=create_graph,
                          allow_unused=True) if pairs and wanted else [None] * len(wanted))
        return tuple(next(found) if needed else None for needed in ctx.needs_input_grad)


def _check_kwargs(kwargs):
    for name, value in kwargs.items():
        if isinstance(value, Tensor) and value.requires_grad:
            raise ValueError(f"checkpoint: keyword argument {name!r} is a Tensor that requires grad; pass it "
                             "positionally so its gradient is computed")


def _check_options(context_fn, determinism_check, debug):
    if context_fn is not None:
        raise NotImplementedError("checkpoint: context_fn (selective activation checkpointing) is not supported by "
                                  "cupynet; leave it None")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check!r}")
    if debug:
        raise NotImplementedError("checkpoint: debug=True is not supported by cupynet")


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them during backward.

    Gradients (also for parameters ``function`` reads, also through ``autograd.grad`` and
    ``create_graph=True``) equal those of the plain call. With grad mode off it is the plain call.

    Args:
        function: a function of Tensors returning a Tensor or a tuple of Tensors (a Module works).
        *args: its positional arguments; Tensors among them are differentiated.
        use_reentrant: accepted for torch compatibility (True or False give the same, non-reentrant behaviour:
            parameters get gradients even when no input requires grad).
        context_fn: must be None (torch's selective-checkpoint contexts are not supported).
        determinism_check: "default" or "none" (the recompute replays RNG and autocast; no check of metadata).
        debug: must be False.
        preserve_rng_state: replay the forward's random numbers (dropout masks) in the recompute.
        **kwargs: keyword arguments of ``function`` (not differentiated: Tensors requiring grad go in ``args``).
    """
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if use_reentrant not in (None, True, False):
        raise TypeError(f"checkpoint: use_reentrant must be True, False or None, got {use_reentrant!r}")
    _check_options(context_fn, determinism_check, debug)
    _check_kwargs(kwargs)
    if not is_grad_enabled():
        return function(*args, **kwargs)
    devices = [a.device for a in args if isinstance(a, Tensor)]
    rng = snapshot_rng(devices) if preserve_rng_state else None
    inputs = _inputs_for_recompute(args, create_graph=False)
    with enable_grad():
        outputs, as_tuple = _as_outputs(function(*inputs, **kwargs))
    leaves = _leaves_reached(outputs, [x for x in inputs if isinstance(x, Tensor)])
    run = {"fn": function, "args": args, "kwargs": kwargs, "rng": rng, "devices": devices,
           "outputs": tuple(o.detach() for o in outputs), "as_tuple": as_tuple}
    del outputs, inputs   # NOTE: the segment's graph (and every activation it saved) is freed here
    result = Checkpoint.apply(*args, *leaves, run=run)
    return result


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002 - torch's name
    """Run a chain of modules in ``segments`` pieces, checkpointing all but the last.

    Args:
        functions: a ``Sequential`` or a list of modules/functions applied in order.
        segments: how many pieces to cut the chain into (1 .. len(functions)).
        input: the input of the first function.
        use_reentrant: passed to ``checkpoint``.
        **kwargs: passed to ``checkpoint`` (``preserve_rng_state``).
    """
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or not 1 <= segments <= max(len(functions), 1):
        raise ValueError(f"checkpoint_sequential: segments must be an int in [1, {len(functions)}] (the number "
                         f"of functions), got {segments!r}")
    size = len(functions) // segments

    def run_range(start, end):
        def forward(x):
            for f in functions[start:end]:
                x = f(x)
            return x
        return forward

    for start in range(0, size * (segments - 1), size):
        input = checkpoint(run_range(start, start + size), input, use_reentrant=use_reentrant, **kwargs)
    return run_range(size * (segments - 1), len(functions))(input)

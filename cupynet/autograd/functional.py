"""Derivatives of whole functions: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``vhp``, ``hvp``.

These are ``torch.autograd.functional``, built on ``grad`` alone:

- ``vjp`` is one backward pass: ``v^T J``.
- ``jvp`` and ``hvp`` use the double-backward trick: ``g(u) = u^T J`` is linear in
  a dummy cotangent ``u``, so differentiating ``g`` with respect to ``u`` along
  ``v`` gives ``J v`` (forward mode from two reverse passes).
- ``jacobian`` takes one backward pass per output element (``vectorize=False``);
  ``hessian`` is the jacobian of the gradient.

``inputs`` are detached copies inside (so the result does not depend on the caller's
graph) unless ``create_graph=True``, where the results keep a graph back to the
inputs for higher-order derivatives. An output that does not depend on an input
gives zeros, or an error with ``strict=True``.
"""

from __future__ import annotations

from ..creation import zeros, zeros_like
from ..tensor import Tensor
from .engine import grad
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(value, what, fn_name):
    """``(tuple of Tensors, was_a_tuple)``; anything but Tensors is torch's TypeError."""
    was_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if was_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            if what == "outputs":
                raise TypeError(f"The outputs of the user-provided function given to {fn_name} must be either a "
                                f"Tensor or a tuple of Tensors but the given outputs of the user-provided function "
                                f"has type {type(value if not was_tuple else v)}.")
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"value at index {i} has type {type(v)}.")
    return values, was_tuple


def _prepare(inputs, create_graph):
    """Inputs the function is differentiated at: aliases keeping the caller's graph when create_graph and the
    input requires grad, else fresh leaves."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _call(func, inputs, fn_name):
    if not callable(func):
        raise TypeError(f"{fn_name}: func must be a callable taking the inputs, got {type(func).__name__}")
    with enable_grad():
        return _as_tuple(func(*inputs), "outputs", fn_name)


def _evaluate(func, inputs, create_graph, fn_name):
    """``(inputs, inputs_was_tuple, outputs, outputs_was_tuple)``: ``func`` run with the graph on, at the inputs."""
    inputs, in_tuple = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph)
    outputs, out_tuple = _call(func, inputs, fn_name)
    return inputs, in_tuple, outputs, out_tuple


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn_name, what="The output"):
    """``sum_i grad_outputs[i]^T d outputs[i] / d inputs``, zeros (or a strict-mode error) where unused."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    found = (None,) * len(inputs)
    if pairs:
        found = grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                     create_graph=create_graph, allow_unused=True)
    results = []
    for i, (g, x) in enumerate(zip(found, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"{what} of the user-provided function is independent of input {i}. This "
                                   f"is not allowed in strict mode.")
            g = zeros_like(x)
        results.append(g if create_graph else g.detach())
    return tuple(results)


def _check_v(v, outputs, fn_name, against="output"):
    """``v`` as a tuple matching ``outputs`` in number and shapes; None only for one single-element output."""
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            subject = "user-provided function returns" if against == "output" else "input to the user-provided " \
                "function is"
            raise RuntimeError(f"The vector v can only be None if the {subject} a single Tensor with a single "
                               "element.")
        return (zeros_like(outputs[0]) + 1,)
    vs, v_tuple = _as_tuple(v, "v", fn_name)
    if len(vs) != len(outputs):
        if len(outputs) == 1:
            raise RuntimeError("The given v should contain a single Tensor.")
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(outputs)} but got {len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if tuple(a.shape) != tuple(b.shape):
            entry = f"Entry {i} in v" if v_tuple else "v"
            raise RuntimeError(f"{entry} has invalid size: should be {tuple(b.shape)} but got {tuple(a.shape)}.")
    return vs


def _finish(values, was_tuple, create_graph):
    values = tuple(v if create_graph else v.detach() for v in values)
    return values if was_tuple else values[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The function's outputs and the vector-Jacobian product ``v^T J``.

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or tuple of Tensors, the point to differentiate at.
        v: cotangents shaped like the outputs (None only for a single one-element output).
        create_graph: give results with a graph, for higher-order derivatives.
        strict: raise when an output is independent of an input instead of giving zeros.
    """
    inputs, in_tuple, outputs, out_tuple = _evaluate(func, inputs, create_graph, "vjp")
    vs = _check_v(v, outputs, "vjp")
    products = _grads(outputs, inputs, vs, create_graph, strict, "vjp")
    return _finish(outputs, out_tuple, create_graph), _finish(products, in_tuple, create_graph)


def _forward_product(outputs, inputs, vs, create_graph, strict, fn_name):
    """``J v`` by the double-backward trick: differentiate ``u^T J`` (linear in ``u``) along ``v``."""
    dummies = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
    pulled = _grads(outputs, inputs, dummies, True, strict, fn_name)
    used = [(p, v) for p, v in zip(pulled, vs) if p.requires_grad]
    if not used:
        return tuple(zeros_like(o) for o in outputs)
    return _grads([p for p, _ in used], dummies, [v for _, v in used], create_graph, strict, fn_name)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """The function's outputs and the Jacobian-vector product ``J v`` (forward mode, by double backward).

    Args:
        func, inputs, create_graph, strict: as in ``vjp``.
        v: tangents shaped like the inputs (None only for a single one-element input).
    """
    inputs, in_tuple, outputs, out_tuple = _evaluate(func, inputs, create_graph, "jvp")
    vs = _check_v(v, inputs, "jvp", against="input")
    products = _forward_product(outputs, inputs, vs, create_graph, strict, "jvp")
    return _finish(outputs, out_tuple, create_graph), _finish(products, out_tuple, create_graph)


def _jacobian_of(outputs, inputs, create_graph, strict):
    """``J[i][j]`` of shape ``outputs[i].shape + inputs[j].shape``: one backward pass per output element."""
    table = []
    for i, out in enumerate(outputs):
        flat = out.reshape(-1)
        rows = [zeros((flat.shape[0],) + tuple(x.shape), dtype=x.dtype, device=x.device) for x in inputs]
        for k in range(flat.shape[0]):
            grads = _grads((flat[k],), inputs, (zeros_like(flat[k]) + 1,), create_graph, strict, "jacobian",
                           what=f"Output {i}")
            for row, g in zip(rows, grads):
                row[k] = g
        table.append(tuple(r.reshape(tuple(out.shape) + tuple(x.shape)) for r, x in zip(rows, inputs)))
    return table


def _check_strategy(vectorize, strategy, fn_name):
    if vectorize:
        raise NotImplementedError(f"{fn_name}: vectorize=True is not supported by cupynet; use vectorize=False "
                                  "(one backward pass per output element)")
    if strategy != "reverse-mode":
        raise NotImplementedError(f"{fn_name}: strategy {strategy!r} is not supported by cupynet; expected "
                                  "'reverse-mode'")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``d outputs[i] / d inputs[j]``, shaped ``out.shape + in.shape``.

    Nested as torch nests it: a Tensor for one output and one input, a tuple over
    the inputs (or the outputs), a tuple of tuples for both.

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or tuple of Tensors, the point to differentiate at.
        create_graph: give results with a graph, for higher-order derivatives.
        strict: raise when an output is independent of an input instead of giving zeros.
        vectorize: must be False (cupynet runs one backward pass per output element).
        strategy: must be "reverse-mode".
    """
    _check_strategy(vectorize, strategy, "jacobian")
    inputs, in_tuple, outputs, out_tuple = _evaluate(func, inputs, create_graph, "jacobian")
    table = _jacobian_of(outputs, inputs, create_graph, strict)
    table = [_finish(row, in_tuple, create_graph) for row in table]
    return tuple(table) if out_tuple else table[0]


def _scalar_output(func, inputs, fn_name):
    outputs, out_tuple = _call(func, inputs, fn_name)
    if out_tuple or len(outputs) != 1:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                           "element")
    return outputs[0].reshape(())


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: ``H[i][j] = d^2 f / d inputs[i] d inputs[j]``.

    Args:
        func: a function of Tensors returning a one-element Tensor.
        inputs: a Tensor or tuple of Tensors, the point to differentiate at.
        create_graph: give results with a graph, for higher-order derivatives.
        strict: raise when the function (or its gradient) is independent of an input instead of giving zeros.
        vectorize: must be False.
        outer_jacobian_strategy: must be "reverse-mode".
    """
    _check_strategy(vectorize, outer_jacobian_strategy, "hessian")
    inputs, in_tuple = _as_tuple(inputs, "inputs", "hessian")
    inputs = _prepare(inputs, create_graph)
    out = _scalar_output(func, inputs, "hessian")
    with enable_grad():
        gradient = _grads((out,), inputs, (zeros_like(out) + 1,), True, strict, "hessian")
    table = _jacobian_of(gradient, inputs, create_graph, strict)
    table = [_finish(row, in_tuple, create_graph) for row in table]
    return tuple(table) if in_tuple else table[0]


_SECOND_ORDER_ARGS = """

    Args:
        func: a function of Tensors returning a one-element Tensor.
        inputs: a Tensor or tuple of Tensors, the point to differentiate at.
        v: vectors shaped like the inputs.
        create_graph: give results with a graph, for higher-order derivatives.
        strict: raise when the function (or its gradient) is independent of an input instead of giving zeros.
    """


def _second_order(name, summary, product):
    """The function ``name(func, inputs, v=None, create_graph=False, strict=False)``: ``(f(inputs), product)``.

    Args:
        name: its public name.
        summary: the first line of its docstring.
        product: ``product(gradient, inputs, vs, create_graph, strict)``, the vector product with the Hessian.
    """

    def second_order(func, inputs, v=None, create_graph=False, strict=False):
        inputs, in_tuple = _as_tuple(inputs, "inputs", name)
        inputs = _prepare(inputs, create_graph)
        out = _scalar_output(func, inputs, name)
        vs = _check_v(v, inputs, name, against="input")
        with enable_grad():
            gradient = _grads((out,), inputs, (zeros_like(out) + 1,), True, strict, name)
        products = product(gradient, inputs, vs, create_graph, strict)
        return _finish((out,), False, create_graph), _finish(products, in_tuple, create_graph)

    second_order.__name__ = second_order.__qualname__ = name
    second_order.__doc__ = summary + _SECOND_ORDER_ARGS
    return second_order


vhp = _second_order("vhp", "The function's value and the vector-Hessian product ``v^T H`` of a scalar function.",
                    lambda gradient, inputs, vs, create_graph, strict:
                    _grads(gradient, inputs, vs, create_graph, strict, "vhp"))
hvp = _second_order("hvp", "The function's value and the Hessian-vector product ``H v`` of a scalar function "
                           "(by double backward).",
                    lambda gradient, inputs, vs, create_graph, strict:
                    _forward_product(gradient, inputs, vs, create_graph, strict, "hvp"))

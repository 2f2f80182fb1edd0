"""``gradcheck`` / ``gradgradcheck``: compare autograd with float64 central differences.

With a random cotangent ``v``, autograd's vector-Jacobian product ``v^T J`` is
compared with the numerical one, ``v . (f(x + eps e_i) - f(x - eps e_i)) / 2eps``
for every input element ``i``. ``gradgradcheck`` applies the same test to the
function ``x -> grad(f(x), x, v, create_graph=True)``.
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..backend import to_numpy
from ..tensor import Tensor
from .engine import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(AssertionError):
    """Raised when the analytical and numerical gradients differ."""


def _outputs(fn, inputs):
    out = fn(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(out)


def _check_inputs(inputs):
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck: at least one input must be a Tensor with requires_grad=True")
    for t in diff:
        if t.dtype != dtypes.float64:
            raise ValueError(f"gradcheck: inputs that require grad must be float64 (got {t.dtype}); "
                             "finite differences are meaningless in lower precision")
    return inputs, diff


def _like(t, host):
    module = type(t.array).__module__.split(".")[0]
    if module == "numpy":
        return numpy.asarray(host, dtype=t.dtype)
    import cupy  # noqa: PLC0415
    return cupy.asarray(host, dtype=t.dtype)


def _dot(outputs, cotangents):
    total = 0.0
    for o, v in zip(outputs, cotangents):
        total += float((o.array.astype(numpy.float64) * v.array).sum())
    return total


def _numerical_vjp(fn, inputs, diff, cotangents, eps):
    result = []
    for t in diff:
        flat = t.array.reshape(-1)
        g = numpy.zeros(flat.size)
        for i in range(flat.size):
            orig = float(flat[i])
            flat[i] = orig + eps
            plus = _dot(_outputs(fn, inputs), cotangents)
            flat[i] = orig - eps
            minus = _dot(_outputs(fn, inputs), cotangents)
            flat[i] = orig
            g[i] = (plus - minus) / (2 * eps)
        result.append(g.reshape(t.shape))
    return result


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, raise_exception=True):
    """Check autograd's gradients of ``fn`` at ``inputs`` against central differences in float64.

    Args:
        fn: a function of Tensors returning a Tensor or tuple of Tensors.
        inputs: a Tensor or tuple of inputs; those with requires_grad=True are checked (float64).
        eps: the finite-difference step.
        atol: absolute tolerance.
        rtol: relative tolerance.
        seed: seed of the random cotangent.
        raise_exception: raise GradcheckError on mismatch (else return False).
    """
    inputs, diff = _check_inputs(inputs)
    rng = numpy.random.default_rng(seed)
    outputs = _outputs(fn, inputs)
    cots = [Tensor(_like(o, rng.standard_normal(o.shape))) for o in outputs]
    # NOTE: an output with no graph is constant in the inputs: its analytical
    # derivative is zero, and the numerical one must agree.
    pairs = [(o, c) for o, c in zip(outputs, cots) if o.requires_grad]
    analytical = (grad([o for o, _ in pairs], diff, [c for _, c in pairs], allow_unused=True) if pairs
                  else (None,) * len(diff))
    numerical = _numerical_vjp(fn, inputs, diff, cots, eps)
    for k, (a, n) in enumerate(zip(analytical, numerical)):
        a_host = numpy.zeros_like(n) if a is None else numpy.asarray(to_numpy(a.array), dtype=numpy.float64)
        if not numpy.allclose(a_host, n, atol=atol, rtol=rtol):
            if not raise_exception:
                return False
            worst = numpy.abs(a_host - n).max()
            raise GradcheckError(f"gradcheck: Jacobian mismatch for input {k} (max abs diff {worst:.3g})\n"
                                 f"analytical:\n{a_host}\nnumerical:\n{n}")
    return True


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, raise_exception=True):
    """Check second derivatives: gradcheck of ``x -> grad(fn(x), x, v, create_graph=True)``.

    Args:
        fn, inputs, eps, atol, rtol, seed, raise_exception: as in ``gradcheck`` (the random ``v`` is drawn
            with ``seed + 1``).
    """
    inputs, diff = _check_inputs(inputs)
    rng = numpy.random.default_rng(seed + 1)
    outputs = [o for o in _outputs(fn, inputs) if o.requires_grad]
    cot = tuple(Tensor(_like(o, rng.standard_normal(o.shape))) for o in outputs)
    positions = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_grad(*xs):
        outs = [o for o in _outputs(fn, xs) if o.requires_grad]
        targets = [xs[i] for i in positions]
        gs = grad(outs, targets, cot, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grad, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed, raise_exception=raise_exception)

"""``gradcheck`` / ``gradgradcheck``: compare autograd with float64 central differences.

With a random cotangent ``v``, autograd's vector-Jacobian product ``v^T J`` is
compared with the numerical one, ``v . (f(x + eps e_i) - f(x - eps e_i)) / 2eps``
for every input element ``i``. ``gradgradcheck`` applies the same test to the
function ``x -> grad(f(x), x, v, create_graph=True)``.
"""

from __future__ import annotations

import numpy

from .. import backend, dtypes
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
    """``host`` (NumPy) as an array of ``t``'s dtype on ``t``'s device."""
    return backend.array_module_for(backend.device_of_array(t.array)).asarray(host, dtype=t.dtype)


def _dot(outputs, cotangents):
    total = 0.0
    for o, v in zip(outputs, cotangents):
        total += float((o.array.astype(numpy.float64) * v.array).sum())
    return total


def _central_differences(fn, inputs, t, eps, measure):
    """``(measure(f(t + eps e_i)) - measure(f(t - eps e_i))) / (2 eps)`` for every element ``i`` of ``t``, in C order.

    NOTE: each element is perturbed in place through its index, so a transposed or otherwise
    non-contiguous input is perturbed too (``reshape(-1)`` of such an array is a copy).
    """
    for index in numpy.ndindex(*t.shape):
        orig = float(t.array[index])
        t.array[index] = orig + eps
        plus = measure(_outputs(fn, inputs))
        t.array[index] = orig - eps
        minus = measure(_outputs(fn, inputs))
        t.array[index] = orig
        yield (plus - minus) / (2 * eps)


def _numerical_vjp(fn, inputs, diff, cotangents, eps):
    return [numpy.fromiter(_central_differences(fn, inputs, t, eps, lambda outs: _dot(outs, cotangents)),
                           dtype=numpy.float64, count=int(t.array.size)).reshape(t.shape) for t in diff]


def _full_jacobians(fn, inputs, diff, eps):
    """Every output's full Jacobian, analytical (one backward per output element) and numerical.

    Returns a list, per differentiable input, of (analytical, numerical) arrays of shape
    ``(total output elements, input elements)``.
    """
    outputs = _outputs(fn, inputs)
    sizes = [int(o.array.size) for o in outputs]
    rows = []
    for o, size in zip(outputs, sizes):
        for j in range(size):
            if not o.requires_grad:
                rows.append([None] * len(diff))
                continue
            unit = numpy.zeros(size)
            unit[j] = 1.0
            cot = Tensor(_like(o, unit.reshape(o.shape)))
            rows.append(grad(o, diff, cot, retain_graph=True, allow_unused=True))
    result = []
    for k, t in enumerate(diff):
        analytical = numpy.array([numpy.zeros(t.array.size) if row[k] is None
                                  else numpy.asarray(to_numpy(row[k].array), dtype=numpy.float64).reshape(-1)
                                  for row in rows]).reshape(sum(sizes), t.array.size)
        result.append((analytical, _numerical_jacobian(fn, inputs, t, sum(sizes), eps)))
    return result


def _numerical_jacobian(fn, inputs, t, rows, eps):
    columns = list(_central_differences(fn, inputs, t, eps, _flat))
    return numpy.array(columns).T.reshape(rows, int(t.array.size))


def _flat(outputs):
    return numpy.concatenate([numpy.asarray(to_numpy(o.array), dtype=numpy.float64).reshape(-1) for o in outputs])


def _compare(pairs, atol, rtol, raise_exception):
    """True when every (analytical, numerical) pair of host arrays agrees; else GradcheckError or False."""
    for k, (a, n) in enumerate(pairs):
        if not numpy.allclose(a, n, atol=atol, rtol=rtol):
            if not raise_exception:
                return False
            worst = numpy.abs(a - n).max()
            raise GradcheckError(f"gradcheck: Jacobian mismatch for input {k} (max abs diff {worst:.3g})\n"
                                 f"analytical:\n{a}\nnumerical:\n{n}")
    return True


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, raise_exception=True, *, fast_mode=None):
    """Check autograd's gradients of ``fn`` at ``inputs`` against central differences in float64.

    Args:
        fn: a function of Tensors returning a Tensor or tuple of Tensors.
        inputs: a Tensor or tuple of inputs; those with requires_grad=True are checked (float64).
        eps: the finite-difference step.
        atol: absolute tolerance.
        rtol: relative tolerance.
        seed: seed of the random cotangent.
        raise_exception: raise GradcheckError on mismatch (else return False).
        fast_mode: None or True: compare one vector-Jacobian product ``v^T J`` for a random ``v`` (one
            backward; PyTorch's fast mode is also a random projection). False: compare the full Jacobian, one
            backward per output element (PyTorch's default; slow for large outputs).
    """
    if fast_mode not in (None, True, False):
        raise TypeError(f"gradcheck: fast_mode must be True, False or None, got {fast_mode!r:.80}")
    inputs, diff = _check_inputs(inputs)
    if fast_mode is False:
        return _compare(_full_jacobians(fn, inputs, diff, eps), atol, rtol, raise_exception)
    rng = numpy.random.default_rng(seed)
    outputs = _outputs(fn, inputs)
    cots = [Tensor(_like(o, rng.standard_normal(o.shape))) for o in outputs]
    # NOTE: an output with no graph is constant in the inputs: its analytical
    # derivative is zero, and the numerical one must agree.
    pairs = [(o, c) for o, c in zip(outputs, cots) if o.requires_grad]
    analytical = (grad([o for o, _ in pairs], diff, [c for _, c in pairs], allow_unused=True) if pairs
                  else (None,) * len(diff))
    numerical = _numerical_vjp(fn, inputs, diff, cots, eps)
    hosts = [numpy.zeros_like(n) if a is None else numpy.asarray(to_numpy(a.array), dtype=numpy.float64)
             for a, n in zip(analytical, numerical)]
    return _compare(zip(hosts, numerical), atol, rtol, raise_exception)


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, raise_exception=True, *, fast_mode=None):
    """Check second derivatives: gradcheck of ``x -> grad(fn(x), x, v, create_graph=True)``.

    Args:
        fn, inputs, eps, atol, rtol, seed, raise_exception, fast_mode: as in ``gradcheck`` (the random ``v`` is
            drawn with ``seed + 1``).
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

    return gradcheck(first_grad, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed, raise_exception=raise_exception,
                     fast_mode=fast_mode)

"""Random sampling: ``normal`` (every overload), ``bernoulli``, ``poisson`` and the in-place fills
``bernoulli_``, ``exponential_``, ``geometric_``, ``cauchy_``, ``log_normal_``, ``random_``.

Every draw comes from a generator picked by ``cupynet.random.resolve_generator``:
``generator=`` (a ``cupynet.Generator``) or the default generator of the device the
values are made on. NOTE: those are NumPy's PCG64 (CPU) and CuPy's XORWOW (GPU), not
torch's streams: the same seed gives other numbers than PyTorch, so the tests check
statistics (means, variances, frequencies within 6 standard errors of the sample size),
not values (docs/differences.md). Draws are made in float32 (float64 for a float64
result) and rounded once to a half dtype.

Gradients are PyTorch's: ``normal``, ``bernoulli`` and ``poisson`` are recorded (their
output requires grad when an input does) and give their inputs zero gradients (a sample
is not reparameterised: write ``mean + std * randn_like(std)`` for that). The in-place
fills go through ``write_in_place``: a tensor in a graph gets a node whose gradient to the
old values is zero, as ``normal_``/``uniform_`` do.
"""

from __future__ import annotations

import math
import numbers

import numpy

from .. import creation, dtypes
from ..autograd.function import Function
from ..checks import require_tensor
from ..random import bernoulli_mask, normal_values, resolve_generator
from ..tensor import Tensor
from ._util import xp_of
from .inplace import Copy, _assign, write_in_place

__all__ = ["normal", "bernoulli", "poisson", "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_",
           "random_"]


def _wide(dtype):
    """The dtype a draw is made in for a result of ``dtype``: float64 stays, everything else float32."""
    return "float64" if dtype == numpy.float64 else "float32"


def _on_device(device, draw):
    """Run ``draw()`` with ``device`` current (CuPy allocates on the current GPU)."""
    if device.type == "cuda":
        with device.xp.cuda.Device(device.index):
            return draw()
    return draw()


def _check_real(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise TypeError(f"{fn}: {name} must be a real number, got {value!r}")


# ---- out of place: recorded, zero gradients ---------------------------------------------------------------
class _Sample(Function):
    """A draw whose inputs are parameters (means, probabilities, rates): zero gradient to each (not an op)."""

    @staticmethod
    def draw(gen, xp, arrays, wide, **options):
        """The sample, as an array.

        Args:
            gen: the array generator.
            xp: numpy or cupy.
            arrays: the inputs' arrays in the draw dtype.
            wide: the draw dtype name.
            **options: the op's options.
        """
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, *tensors, gen=None, out_dtype=None, **options):
        """Draw (no graph work: the gradient is zero).

        Args:
            ctx: the node.
            *tensors: the parameter Tensors.
            gen: the array generator.
            out_dtype: the result's dtype.
            **options: passed to ``draw``.
        """
        ctx.shapes = [(t.shape, t.dtype) for t in tensors]
        wide = _wide(out_dtype)
        arrays = [t.array.astype(wide, copy=False) for t in tensors]
        device = tensors[0].device
        return _on_device(device, lambda: cls.draw(gen, xp_of(tensors[0]), arrays, wide, **options)).astype(
            out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        """Zeros for every input, as PyTorch (a sample is not differentiated through).

        Args:
            ctx: the node.
            grad: the output's gradient.
        """
        xp = xp_of(grad)
        grads = tuple(Tensor(xp.zeros(shape, dtype=dtype)) for shape, dtype in ctx.shapes)
        return grads if len(grads) > 1 else grads[0]


def _as_parameter(value, like):
    """A Tensor from a number (on ``like``'s device, in its dtype) or the Tensor itself."""
    if isinstance(value, Tensor):
        return value
    return Tensor(xp_of(like).asarray(value, dtype=like.dtype))


def _normal_of_numbers(mean, std, size, generator, dtype, device, requires_grad):
    _check_real("normal", "mean", mean)
    _check_real("normal", "std", std)
    if size is None:
        raise TypeError("normal: with a number mean and std, size must be given (e.g. normal(0.0, 1.0, (2, 3)))")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    holder = creation.empty(*((size,) if isinstance(size, int) else tuple(size)), dtype=dtype, device=device)
    if not dtypes.is_floating(holder.dtype):
        raise TypeError(f"normal: expected a floating point dtype, got {holder.dtype}")
    gen = resolve_generator(generator, holder.device, "normal")
    # NOTE: as torch: normal_(mean, std) of the result's dtype (torch's transforms on the CPU stream)
    values = _on_device(holder.device, lambda: normal_values(gen, tuple(holder.shape), holder.dtype, mean, std))
    return Tensor(values.astype(holder.dtype, copy=False), requires_grad=requires_grad)


class Normal(_Sample):
    """``mean + std * N(0, 1)``, ``mean`` and ``std`` broadcast together; zero gradients."""

    op_name = "normal"

    @staticmethod
    def draw(gen, xp, arrays, wide, shape=(), result_dtype=None):
        mean, std = arrays
        # NOTE: torch draws normal_(0, 1) into the result, then multiplies by std and adds mean, each step
        # rounded to the result's dtype
        result_dtype = result_dtype or wide
        scaled = (std * normal_values(gen, shape, result_dtype).astype(wide)).astype(result_dtype).astype(wide)
        return mean + scaled


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,  # noqa: A002
           requires_grad=False, layout=None, pin_memory=False):
    """Samples of N(mean, std^2): ``mean`` and ``std`` are Tensors (broadcast together) or numbers.

    With two numbers, ``size`` gives the shape (and ``dtype``/``device`` the rest, as ``torch.normal``'s
    last overload). The result is recorded when ``mean`` or ``std`` requires grad; their gradient is zero.

    Args:
        mean: a floating Tensor or a number.
        std: a floating Tensor (all >= 0) or a number >= 0.
        size: the shape, only when both are numbers.
        generator: a ``cupynet.Generator`` (default: the device's).
        out: not supported (must be None).
        dtype: the dtype when both are numbers (default dtype when None).
        device: the device when both are numbers.
        requires_grad: make the result a leaf that requires grad (numbers only).
        layout: accepted for PyTorch compatibility (must be None or strided).
        pin_memory: accepted for PyTorch compatibility.
    """
    if out is not None:
        raise TypeError("normal: out= is not supported by cupynet; use the returned tensor")
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        return _normal_of_numbers(mean, std, size, generator, dtype, device, requires_grad)
    if size is not None:
        raise TypeError("normal: size is only accepted when mean and std are both numbers")
    like = tensors[0]
    for name, value in (("mean", mean), ("std", std)):
        if isinstance(value, Tensor):
            if not dtypes.is_floating(value.dtype):
                raise TypeError(f"normal: expected {name} to be a floating point tensor, got {value.dtype}")
        else:
            _check_real("normal", name, value)
    if isinstance(std, Tensor):
        if std.array.size and bool((std.array < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    mean_t, std_t = _as_parameter(mean, like), _as_parameter(std, like)
    try:
        shape = tuple(xp_of(like).broadcast_shapes(tuple(mean_t.shape), tuple(std_t.shape)))
    except ValueError:
        raise RuntimeError(f"normal: mean of shape {tuple(mean_t.shape)} and std of shape {tuple(std_t.shape)} "
                           f"do not broadcast together") from None
    out_dtype = dtypes.result_type(*(t.dtype for t in tensors))
    gen = resolve_generator(generator, like.device, "normal")
    return Normal.apply(mean_t, std_t, gen=gen, out_dtype=out_dtype, shape=shape, result_dtype=out_dtype)


def _check_probability(fn, p):
    _check_real(fn, "p", p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"{fn}_ expects p to be in [0, 1], but got p={p}")


class Bernoulli(_Sample):
    """1 with probability ``p`` (elementwise), else 0; zero gradient."""

    op_name = "bernoulli"

    @staticmethod
    def draw(gen, xp, arrays, wide):
        (p,) = arrays
        return bernoulli_mask(gen, p.shape, p)


def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002 - PyTorch's names
    """1 with probability ``input`` (elementwise; or the number ``p`` for every element), else 0.

    Args:
        input: a floating Tensor of probabilities in [0, 1] (its shape and dtype when ``p`` is given).
        p: a probability for every element instead of ``input``'s values, or None.
        generator: a ``cupynet.Generator`` (default: the device's).
        out: not supported (must be None).
    """
    if out is not None:
        raise TypeError("bernoulli: out= is not supported by cupynet; use the returned tensor")
    require_tensor("bernoulli", input, "input")
    if not dtypes.is_floating(input.dtype):
        raise TypeError(f"bernoulli: expected a floating point tensor, got {input.dtype}")
    if p is not None:
        _check_probability("bernoulli", p)
        return bernoulli_(Tensor(xp_of(input).empty_like(input.array)), p, generator=generator)
    if input.array.size and not bool(((input.array >= 0) & (input.array <= 1)).all()):
        raise RuntimeError("bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    gen = resolve_generator(generator, input.device, "bernoulli")
    return Bernoulli.apply(input, gen=gen, out_dtype=input.dtype)


class Poisson(_Sample):
    """Counts drawn from Poisson(rate) (elementwise), as floats; zero gradient."""

    op_name = "poisson"

    @staticmethod
    def draw(gen, xp, arrays, wide):
        (rate,) = arrays
        return gen.poisson(rate)


def poisson(input, generator=None):  # noqa: A002 - PyTorch's names
    """Counts drawn from Poisson(``input``) elementwise, in ``input``'s dtype.

    Args:
        input: a floating Tensor of rates (>= 0).
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    require_tensor("poisson", input, "input")
    if not dtypes.is_floating(input.dtype):
        raise TypeError(f"poisson: expected a floating point tensor, got {input.dtype}")
    if input.array.size and not bool((input.array >= 0).all()):
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    gen = resolve_generator(generator, input.device, "poisson")
    return Poisson.apply(input, gen=gen, out_dtype=input.dtype)


# ---- in place: through write_in_place ---------------------------------------------------------------------
def _fill(name, input, draw, generator, floating=True):  # noqa: A002
    """Write ``draw(array_generator, xp, draw_dtype)`` into ``input`` (recorded with zero gradient in a graph).

    Args:
        name: the op, for errors.
        input: the Tensor to fill.
        draw: makes the values.
        generator: None or a ``cupynet.Generator``.
        floating: refuse tensors that are not floating.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(input).__name__}")
    if floating and not dtypes.is_floating(input.dtype):
        raise TypeError(f"{name}: expected a floating point tensor, got dtype {input.dtype}")
    gen = resolve_generator(generator, input.device, name)

    def compute():
        return _on_device(input.device, lambda: draw(gen, xp_of(input), _wide(input.dtype)))
    return write_in_place(name, input, None, lambda old: Copy.apply(old, Tensor(compute())), _assign(input, compute))


def bernoulli_(input, p=0.5, *, generator=None):  # noqa: A002 - PyTorch's names
    """Fill with 1 (probability ``p``) or 0, in place; any dtype.

    Args:
        input: the Tensor to fill.
        p: a probability in [0, 1], or a Tensor of them broadcastable to ``input``.
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    if isinstance(p, Tensor):
        probs = p.array
        if probs.size and not bool(((probs >= 0) & (probs <= 1)).all()):
            raise RuntimeError("bernoulli_: expects all probabilities p to be in [0, 1]")
    else:
        _check_probability("bernoulli", p)
        probs = p
    return _fill("bernoulli_", input, lambda gen, xp, wide: bernoulli_mask(gen, input.shape, probs), generator,
                 floating=False)


def exponential_(input, lambd=1.0, *, generator=None):  # noqa: A002 - PyTorch's names
    """Fill with draws of Exponential(rate ``lambd``), in place.

    Args:
        input: a floating Tensor.
        lambd: the rate (> 0); the mean is 1 / lambd.
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    _check_real("exponential_", "lambd", lambd)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    def draw(gen, xp, wide):
        if hasattr(gen, "fill_uniform"):  # NOTE: the CPU stream: torch's -log1p(-u) / lambd, in double
            return gen.exponential(tuple(input.shape), wide, lambd)
        return gen.standard_exponential(tuple(input.shape), dtype=wide) / lambd
    return _fill("exponential_", input, draw, generator)


def geometric_(input, p, *, generator=None):  # noqa: A002 - PyTorch's names
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...), in place.

    Args:
        input: the Tensor to fill (integer tensors too, as PyTorch).
        p: the success probability, in (0, 1).
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    _check_real("geometric_", "p", p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")

    def draw(gen, xp, wide):
        if hasattr(gen, "fill_uniform"):  # NOTE: the CPU stream: torch's ceil(log(u) / log1p(-p))
            return gen.geometric(tuple(input.shape), "float64", p)
        # NOTE: inverse CDF with U in (0, 1]: P(k = 1) = P(U > 1 - p) = p, and k >= 1 always
        u = 1.0 - gen.random(tuple(input.shape), dtype="float64")
        return xp.floor(xp.log(u) / math.log1p(-p)) + 1.0
    return _fill("geometric_", input, draw, generator, floating=False)


def cauchy_(input, median=0.0, sigma=1.0, *, generator=None):  # noqa: A002 - PyTorch's names
    """Fill with draws of Cauchy(``median``, ``sigma``), in place.

    Args:
        input: a floating Tensor.
        median: the location.
        sigma: the scale (> 0).
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    _check_real("cauchy_", "median", median)
    _check_real("cauchy_", "sigma", sigma)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    def draw(gen, xp, wide):
        if hasattr(gen, "fill_uniform"):  # NOTE: the CPU stream: torch's transform, in double
            return gen.cauchy(tuple(input.shape), wide, median, sigma)
        return median + sigma * xp.tan(math.pi * (gen.random(tuple(input.shape), dtype=wide) - 0.5))
    return _fill("cauchy_", input, draw, generator)


def log_normal_(input, mean=1.0, std=2.0, *, generator=None):  # noqa: A002 - PyTorch's names
    """Fill with ``exp(N(mean, std^2))``, in place.

    Args:
        input: a floating Tensor.
        mean: the mean of the underlying normal.
        std: its standard deviation (> 0).
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    _check_real("log_normal_", "mean", mean)
    _check_real("log_normal_", "std", std)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    def draw(gen, xp, wide):
        if hasattr(gen, "fill_uniform"):  # NOTE: the CPU stream: torch's scalar normals, exp in double
            return gen.log_normal(tuple(input.shape), wide, mean, std)
        return xp.exp(mean + std * gen.standard_normal(tuple(input.shape), dtype=wide))
    return _fill("log_normal_", input, draw, generator)


def _random_high(dtype):
    """The largest value ``random_()`` draws for ``dtype``: 2**mantissa bits for floats, the max for integers."""
    if dtype == numpy.bool_:
        return 1
    if dtypes.is_floating(dtype):
        return round(2.0 / dtypes.finfo(dtype).eps)  # NOTE: eps = 2**-mantissa bits
    return int(numpy.iinfo(dtype).max)


def random_(input, from_=0, to=None, *, generator=None):  # noqa: A002 - PyTorch's names (from is ``from_``)
    """Fill with integers drawn uniformly from [from_, to), in place; ``random_(n)`` draws from [0, n).

    With no bound the range is [0, 2**mantissa] for floating dtypes (every integer exact) and
    [0, max] for integer ones, as PyTorch.

    Args:
        input: the Tensor to fill (any dtype).
        from_: the lowest value, or the exclusive upper bound when ``to`` is None and it is the only bound given.
        to: the exclusive upper bound (None: the dtype's largest value, inclusive).
        generator: a ``cupynet.Generator`` (default: the device's).
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"random_: expected a Tensor, got {type(input).__name__}")
    for name, value in (("from", from_), ("to", to)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise TypeError(f"random_: {name} must be an int, got {value!r}")
    if to is None:
        low, high = (0, from_ - 1) if from_ else (0, _random_high(input.dtype))  # NOTE: random_(n) is [0, n)
    else:
        low, high = from_, to - 1
    if low > high:
        shown = (from_, to) if to is not None else (0, from_)
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={shown[0]} >= to={shown[1]}")
    def draw(gen, xp, wide):
        if hasattr(gen, "fill_uniform") and (to is not None or from_):
            # NOTE: the CPU stream: torch's random_from_to, with its bounds for float dtypes
            return gen.random_from_to(tuple(input.shape), low, high + 1, input.dtype)
        return gen.integers(low, high, size=tuple(input.shape), dtype="int64", endpoint=True)
    return _fill("random_", input, draw, generator, floating=False)


METHODS = {"bernoulli": bernoulli, "bernoulli_": bernoulli_, "exponential_": exponential_,
           "geometric_": geometric_, "cauchy_": cauchy_, "log_normal_": log_normal_, "random_": random_}

"""Creating tensors: ``tensor``, ``zeros``, ``randn``, ... with PyTorch's ``dtype=``, ``device=``, ``requires_grad=``.

Defaults follow PyTorch: Python floats take the default dtype (float32 unless
``set_default_dtype`` changed it), Python ints int64, bools bool; NumPy and CuPy
arrays and NumPy scalars keep their own dtype (float64 stays float64, int32 and
uint8 stay as they are), and ``from_numpy`` also keeps the array's memory.
"""

from __future__ import annotations

import numbers

import numpy

from . import backend, dtypes
from .random import cpu_stream, generator_for, normal_values, resolve_generator, uniform_values
from .tensor import Tensor

__all__ = ["is_tensor", "numel", "tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange",
           "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm", "zeros_like", "ones_like",
           "full_like", "empty_like", "rand_like", "randn_like", "randint_like"]


def _device(device):
    return backend.device(device) if device is not None else backend.default_device()


def _finish(array, device, requires_grad):
    if device.type == "cuda":
        cupy = device.xp
        with cupy.cuda.Device(device.index):
            array = cupy.asarray(array)
    return Tensor(array, requires_grad=requires_grad)


def _infer_dtype(host):
    """The dtype of Python data (numbers, nested lists): floats -> the default dtype, ints -> int64."""
    if host.dtype == numpy.bool_:
        return dtypes.bool_
    if host.dtype.kind in "iu":
        return dtypes.int64
    if host.dtype.kind == "f":
        return dtypes.get_default_dtype()
    if host.dtype.kind == "c":  # NOTE: PyTorch's default complex dtype follows the default float dtype
        return dtypes.complex128 if dtypes.get_default_dtype() == dtypes.float64 else dtypes.complex64
    raise TypeError(f"tensor: cannot make a tensor from data of dtype {host.dtype}")


def _array_dtype(host, fn="tensor"):
    """The dtype of an array or NumPy scalar: its own, as PyTorch keeps it, when cupynet supports it."""
    try:
        return dtypes.as_dtype(host.dtype)
    except TypeError:
        raise TypeError(f"{fn}: cannot make a tensor from an array of dtype {host.dtype}; expected one of "
                        "float16, bfloat16, float32, float64, complex64, complex128, int8, uint8, int16, int32, "
                        "int64, bool") from None


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or a Tensor).

    Args:
        data: the values.
        dtype: the dtype; when None, arrays and NumPy scalars keep theirs, Python floats take
            ``get_default_dtype()``, Python ints int64 and bools bool.
        device: ``"cpu"``/``"cuda"``; the default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    if isinstance(data, Tensor):
        data = data.array
    python_data = isinstance(data, (list, tuple, numbers.Number)) and not isinstance(data, numpy.generic)
    on_gpu = not (python_data or isinstance(data, (numpy.ndarray, numpy.generic)))
    try:
        host = backend.to_numpy(data) if on_gpu else numpy.asarray(data)
    except ValueError as error:
        raise TypeError(f"tensor: data must be numbers or (nested) sequences of numbers of one shape ({error})") \
            from None
    if host.dtype == object:
        raise TypeError("tensor: data must be numbers or (nested) sequences of numbers of one shape")
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    else:
        dtype = _infer_dtype(host) if python_data else _array_dtype(host)
    dev = backend.device(device) if device is not None else (
        backend.device_of_array(data) if on_gpu else backend.default_device())
    return _finish(numpy.array(host, dtype=dtype), dev, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but reuses ``data`` when it already is a Tensor/array of the right dtype and device.

    Args:
        data: the values.
        dtype: the dtype, or None to keep/infer.
        device: the device, or None.
    """
    if isinstance(data, Tensor) and (dtype is None or data.dtype == dtypes.as_dtype(dtype)) \
            and (device is None or data.device == backend.device(device)):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing memory with a NumPy array (dtype kept).

    Args:
        array: a numpy.ndarray.
    """
    if not isinstance(array, numpy.ndarray):
        raise TypeError(f"from_numpy: expected numpy.ndarray, got {type(array).__name__}")
    dtypes.as_dtype(array.dtype)
    return Tensor(array)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, numpy.integer)) or s < 0:
            raise ValueError(f"expected a shape of non-negative integers, got {tuple(size)}")
    return tuple(int(s) for s in size)


def _size_arg(fn, args, size):
    """The shape given as ``*size`` ints (or one tuple) or as the keyword ``size=``: PyTorch takes either.

    Args:
        fn: the factory's name, for the error.
        args: the positional sizes.
        size: the ``size=`` keyword, or None.
    """
    if size is None:
        return args
    if args:
        raise TypeError(f"{fn}() got multiple values for argument 'size'")
    return (size,)


_SIZE_ARGS = """

    Args:
        *size: the shape, as ints or one tuple (or the keyword ``size=``).
        dtype: ``get_default_dtype()`` (float32 unless changed) when None.
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """


def _sized(name, summary, create):
    """The factory ``name(*size, dtype=None, device=None, requires_grad=False)``, documented.

    Args:
        name: its public name.
        summary: the first line of its docstring.
        create: ``create(size, dtype, device, requires_grad)`` makes the Tensor.
    """

    def make(*args, size=None, dtype=None, device=None, requires_grad=False):
        return create(_size_arg(name, args, size), dtype, device, requires_grad)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = summary + _SIZE_ARGS
    return make


def _constant(name):
    def create(size, dtype, device, requires_grad):
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
        return _finish_on(_device(device), lambda xp: getattr(xp, name)(_shape(size), dtype=dt), requires_grad)
    return create


zeros = _sized("zeros", "A tensor of zeros.", _constant("zeros"))
ones = _sized("ones", "A tensor of ones.", _constant("ones"))


def empty(*args, size=None, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor (zeros here: NumPy/CuPy allocation is cheap enough to be safe).

    Args:
        *args: the shape, as ints or one tuple.
        size: the shape, by keyword (instead of ``*args``).
        dtype: ``get_default_dtype()`` (float32 unless changed) when None.
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    return zeros(*_size_arg("empty", args, size), dtype=dtype, device=device, requires_grad=requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor filled with ``fill_value``.

    Args:
        size: the shape.
        fill_value: the value.
        dtype: inferred from fill_value when None (float -> the default dtype, int -> int64, bool -> bool).
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    dt = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(numpy.asarray(fill_value))
    shape = _shape((size,) if not isinstance(size, int) else (size,))
    return _finish_on(_device(device), lambda xp: xp.full(shape, fill_value, dtype=dt), requires_grad)


def _finish_on(dev, make, requires_grad):
    xp = dev.xp
    if dev.type == "cuda":
        with xp.cuda.Device(dev.index):
            return Tensor(make(xp), requires_grad=requires_grad)
    return Tensor(make(xp), requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``.

    Args:
        start: first value (or the end, when end is None).
        end: the end (exclusive).
        step: the spacing.
        dtype: int64 when all arguments are ints, else ``get_default_dtype()``, when None.
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    all_int = all(isinstance(v, (int, numpy.integer)) for v in (start, end, step))
    dt = dtypes.as_dtype(dtype) if dtype is not None else (dtypes.int64 if all_int else dtypes.get_default_dtype())
    return _finish(numpy.arange(start, end, step).astype(dt), _device(device), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Args:
        start: first value.
        end: last value.
        steps: how many values.
        dtype: ``get_default_dtype()`` (float32 unless changed) when None.
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _finish(numpy.linspace(start, end, steps).astype(dt), _device(device), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** e`` for exponents evenly spaced from ``start`` to ``end`` inclusive.

    NOTE: computed as PyTorch's CPU kernel does: ``start`` and ``end`` are first rounded to dtype and
    their difference taken there; the exponents and the power are float64, the first half counting up
    from ``start``, the second half down from ``end`` (both ends exact); then one rounding to dtype.

    Args:
        start: first exponent.
        end: last exponent.
        steps: how many values (>= 0).
        base: the base of the power.
        dtype: ``get_default_dtype()`` (float32 unless changed) when None.
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    if not isinstance(steps, numbers.Integral) or steps < 0:
        raise RuntimeError(f"logspace: number of steps must be a non-negative integer, got {steps!r}")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    first, last = numpy.array([start, end]).astype(dt)
    with numpy.errstate(over="ignore"):  # NOTE: a power past the dtype's range is inf, as in PyTorch
        step = float(last - first) / (steps - 1) if steps > 1 else 0.0
        k = numpy.arange(steps, dtype=numpy.float64)
        exponents = numpy.where(k < steps // 2, float(first) + step * k, float(last) - step * (steps - 1 - k))
        values = numpy.power(float(base), exponents).astype(dt)
    return _finish(values, _device(device), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The identity matrix (n x m).

    Args:
        n: rows.
        m: columns (n when None).
        dtype: ``get_default_dtype()`` (float32 unless changed) when None.
        device: default device when None.
        requires_grad: make it a leaf that records gradients.
    """
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return _finish(numpy.eye(n, m, dtype=dt), _device(device), requires_grad)


def _random(draw, size, generator, dtype, device, requires_grad, fn):
    dev = _device(device)
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if not dtypes.is_floating(dt):
        raise TypeError(f"random floats need a floating dtype, got {dt}")
    gen = resolve_generator(generator, dev, fn)
    # NOTE: the CPU stream draws in the asked dtype as torch does; CuPy draws float32/float64 and rounds
    if dev.type == "cuda":
        with dev.xp.cuda.Device(dev.index):
            array = draw(gen, _shape(size), dt).astype(dt, copy=False)
    else:
        array = draw(gen, _shape(size), dt).astype(dt, copy=False)
    return Tensor(array, requires_grad=requires_grad)


def _random_factory(name, summary, draw):
    """The factory ``name(*size, generator=None, dtype=None, device=None, requires_grad=False)``, documented.

    Args:
        name: its public name.
        summary: the first line of its docstring.
        draw: ``draw(array_generator, shape, dtype)`` makes the array.
    """

    def make(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
        return _random(draw, _size_arg(name, args, size), generator, dtype, device, requires_grad, name)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (summary + _SIZE_ARGS.rstrip()
                    + "\n        generator: a ``cupynet.Generator`` to draw from (default: the device's).\n    ")
    return make


rand = _random_factory("rand", "Uniform random values in [0, 1).", uniform_values)
randn = _random_factory("randn", "Standard normal random values.", normal_values)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, low=None,
            high=None):
    """Random integers in [low, high), with torch's overloads: ``randint(high, size)``, ``randint(low, high, size)``.

    Args:
        *args: ``high, size`` or ``low, high, size`` (each may also come by keyword; ``size`` a tuple).
        size: the shape (a tuple or list of ints).
        generator: a ``cupynet.Generator`` to draw from (default: the device's).
        dtype: default int64.
        device: default device when None.
        requires_grad: must be False (integer tensors have no gradients).
        low: lowest value (default 0).
        high: one above the highest value.
    """
    low, high, size = _randint_arguments(args, low, high, size)
    if requires_grad:
        raise RuntimeError("randint: only Tensors of floating point dtype can require gradients")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dev = _device(device)
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int64
    gen = resolve_generator(generator, dev, "randint")
    stream = cpu_stream(gen)
    if stream is not None:  # NOTE: the CPU stream: torch's draws, with its bounds for float dtypes
        array = stream.random_from_to(_shape((size,)), low, high, dt)
    else:
        array = gen.integers(low, high, size=_shape((size,)))
    return _finish(backend.to_numpy(array).astype(dt), dev, False) if dev.type == "cpu" else Tensor(array.astype(dt))


def _randint_arguments(args, low, high, size):
    """(low, high, size) from torch's two positional forms and keywords, each checked."""
    if len(args) > 3:
        raise TypeError(f"randint: expected randint(high, size) or randint(low, high, size), got {len(args)} "
                        "positional arguments")
    three = len(args) == 3 or (len(args) == 2 and size is not None) or (len(args) == 1 and high is not None)
    named = {"low": low, "high": high, "size": size}
    for name, value in zip(("low", "high", "size") if three else ("high", "size"), args):
        if named[name] is not None:
            raise TypeError(f"randint: got multiple values for argument '{name}'")
        named[name] = value
    low, high, size = named["low"] if named["low"] is not None else 0, named["high"], named["size"]
    if high is None or size is None:
        raise TypeError("randint: high and size are required, e.g. randint(10, (3,)) or randint(0, 10, (3,))")
    if not isinstance(size, (tuple, list)) or not all(isinstance(n, numbers.Integral) for n in size):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    for name, value in (("low", low), ("high", high)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"randint(): argument '{name}' must be int, not {type(value).__name__}")
    return int(low), int(high), tuple(int(n) for n in size)


def randperm(n, generator=None, dtype=None, device=None):
    """A random permutation of ``0..n-1``.

    Args:
        n: how many values.
        generator: a ``cupynet.Generator`` to draw from (default: the CPU's; the result moves to ``device``).
        dtype: default int64.
        device: default device when None.
    """
    dev = _device(device)
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int64
    gen = generator_for("cpu") if generator is None else resolve_generator(generator, dev, "randperm")
    if hasattr(gen, "permutation"):
        order = gen.permutation(n)
    else:  # NOTE: CuPy's Generator has no permutation; sorting n uniform keys gives a uniform permutation
        order = gen.random(n).argsort()
    return _finish(backend.to_numpy(order).astype(dt), dev, False)


_LIKE_ARGS = """
    Args:
        input: a Tensor.
        dtype: override the dtype.
        device: override the device.
        requires_grad: make it a leaf that records gradients.
    """


def _like(factory, summary, name=None):
    """``<name>(input, dtype=None, device=None, requires_grad=False)``: ``factory`` at input's shape.

    Args:
        factory: ``zeros``, ``ones``, ``rand`` or ``randn``.
        summary: the first line of the docstring.
        name: the function's name (default ``<factory>_like``).
    """

    def like(input, dtype=None, device=None, requires_grad=False):  # noqa: A002 - PyTorch's argument name
        return factory(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                       requires_grad=requires_grad)

    like.__name__ = like.__qualname__ = name or f"{factory.__name__}_like"
    like.__doc__ = summary + "\n" + _LIKE_ARGS
    return like


zeros_like = _like(zeros, "Zeros with ``input``'s shape, dtype and device.")
ones_like = _like(ones, "Ones with ``input``'s shape, dtype and device.")
# NOTE: cupynet never hands out uninitialised memory: empty_like is zeros_like under PyTorch's name.
empty_like = _like(zeros, "An uninitialised (zero) tensor like ``input``.", "empty_like")
rand_like = _like(rand, "Uniform [0, 1) values like ``input``.")
randn_like = _like(randn, "Standard normal values like ``input``.")


def randint_like(input, *args, low=None, high=None, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """Random integers in [low, high) with ``input``'s shape, dtype and device: ``randint_like(input, high)``
    or ``randint_like(input, low, high)``.

    Args:
        input: a Tensor.
        *args: ``high`` or ``low, high``.
        low: lowest value (default 0).
        high: one above the highest value.
        dtype: override the dtype (default ``input``'s, a float input gives whole-number floats).
        device: override the device.
        requires_grad: make it a leaf that records gradients (floating dtypes only).
    """
    if len(args) > 2:
        raise TypeError(f"randint_like: expected (input, high) or (input, low, high), got {len(args) + 1} "
                        "positional arguments")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        high = args[0]
    if high is None:
        raise TypeError("randint_like: high is required, e.g. randint_like(x, 10) or randint_like(x, 0, 10)")
    out = randint(0 if low is None else low, high, tuple(input.shape), dtype=dtype or input.dtype,
                  device=device or input.device)
    return out.requires_grad_() if requires_grad else out


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """``fill_value`` everywhere, with ``input``'s shape, dtype and device.

    Args:
        input: a Tensor.
        fill_value: the value.
        dtype: override the dtype.
        device: override the device.
        requires_grad: make it a leaf that records gradients.
    """
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def is_tensor(obj) -> bool:
    """True when ``obj`` is a cupynet Tensor (Parameters included).

    Args:
        obj: any object.
    """
    return isinstance(obj, Tensor)


def numel(input) -> int:  # noqa: A002 - PyTorch's name
    """The number of elements of a tensor.

    Args:
        input: a Tensor.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"numel(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.numel()

"""torch's CPU random stream: the mt19937 generator, seeded and stepped as ATen does, and ATen's transforms.

``TorchCPUStream`` holds what ``at::CPUGeneratorImpl`` holds: an mt19937 state (NumPy's MT19937 bit
generator does the twisting and tempering, which is the standard algorithm) and the cached second
normal of the scalar Box-Muller path. Its methods are ATen's CPU kernels written with NumPy, so the
same seed gives torch's numbers bit for bit (docs/random.md lists each transform and its limits):

- ``fill_uniform`` (``rand``, ``uniform_``): a 32-bit draw masked to 24 bits for float32 (and for
  float16/bfloat16, rounded afterwards), two draws making 53 bits for float64;
  ``fma(u, to - from, from)``, and a value that rounds to ``to`` becomes ``from``.
- ``fill_normal`` (``randn``, ``normal_``): 16 or more contiguous values use ATen's block Box-Muller
  (``normal_fill``: all uniforms first, blocks of 16, the tail block redrawn); fewer use the scalar
  Box-Muller in double precision with its cached second value.
- ``random_from_to`` (``randint``), ``randperm``, ``bernoulli``, ``exponential``, ``multinomial``,
  ``cauchy``, ``geometric``, ``log_normal``, ``poisson``.

It also answers the NumPy ``Generator`` calls the rest of cupynet makes (``random``, ``standard_normal``,
``integers``, ``permutation``, ``uniform``...), so every CPU draw comes from this one stream.
"""

from __future__ import annotations

import math
import struct

import numpy

_N = 624                              # NOTE: mt19937's state words
_STATE_BYTES = 5056                   # NOTE: sizeof(at::CPUGeneratorImplState), what torch.get_rng_state() returns
_LEGACY_BYTES = 5048                  # NOTE: the older layout without the float normal cache (torch accepts it)
_WIDE_RANGE = 1 << 28                 # NOTE: random_from_to uses a 64-bit draw from this range up (measured)
_NORMAL_FILL_MIN = 16                 # NOTE: normal_ switches to the block Box-Muller at 16 contiguous values
_F32, _F64 = numpy.float32, numpy.float64


def seed_key(seed: int) -> numpy.ndarray:
    """mt19937's initial state from ``seed`` as ``at::mt19937`` makes it: only the low 32 bits of the seed count.

    Args:
        seed: the 64-bit seed given to ``manual_seed``.
    """
    word, key = seed & 0xFFFFFFFF, numpy.empty(_N, dtype=numpy.uint32)
    for i in range(_N):
        key[i] = word
        word = (1812433253 * (word ^ (word >> 30)) + i + 1) & 0xFFFFFFFF
    return key


class TorchCPUStream:
    """torch's CPU generator state and its transforms (see the module docstring).

    Args:
        seed: the 64-bit seed (``manual_seed``'s).
    """

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int):
        """Start again from ``seed``, as ``CPUGeneratorImpl::set_current_seed`` does (the normal cache cleared).

        Args:
            seed: the 64-bit seed.
        """
        self.seed = int(seed)
        self._bits = numpy.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": seed_key(self.seed), "pos": _N}}
        self._fresh = True            # NOTE: torch reports next=0 (not 624) before the first draw
        self.next_double_normal = None
        self.next_float_normal = None

    # ---- raw draws ------------------------------------------------------------------------------------

    def draw32(self, count: int) -> numpy.ndarray:
        """``count`` 32-bit draws (``CPUGeneratorImpl::random``) as uint64.

        Args:
            count: how many.
        """
        self._fresh = self._fresh and count == 0
        return self._bits.random_raw(int(count)).astype(numpy.uint64, copy=False)

    def draw64(self, count: int) -> numpy.ndarray:
        """``count`` 64-bit draws (``random64``): two 32-bit draws, the first the high word.

        Args:
            count: how many.
        """
        pairs = self.draw32(2 * count)
        return (pairs[0::2] << numpy.uint64(32)) | pairs[1::2]

    def unit_doubles(self, count: int) -> numpy.ndarray:
        """``count`` uniforms in [0, 1) from 53 bits of ``random64`` each (``uniform_real_distribution<double>``).

        Args:
            count: how many.
        """
        return self._unit(count, 53)

    def _unit(self, count: int, bits: int) -> numpy.ndarray:
        """Uniforms in [0, 1) as ATen's ``uniform_real`` makes them: 24 bits of a 32-bit draw, or 53 of 64."""
        if bits == 53:
            return (self.draw64(count) & numpy.uint64((1 << 53) - 1)).astype(_F64) * _F64(2.0 ** -53)
        return (self.draw32(count) & numpy.uint64((1 << bits) - 1)).astype(_F32) * _F32(2.0 ** -bits)

    # ---- torch's transforms ---------------------------------------------------------------------------

    def fill_uniform(self, shape, dtype, low=0.0, high=1.0) -> numpy.ndarray:
        """``torch.empty(shape, dtype).uniform_(low, high)``: ATen's ``uniform_kernel``.

        Args:
            shape: the shape.
            dtype: float16, bfloat16, float32 or float64.
            low: ``from``.
            high: ``to``.
        """
        from .normal_fill import fma32, fma64  # noqa: PLC0415 - loads with the first draw
        dtype, count = numpy.dtype(dtype), _count(shape)
        # NOTE: torch's build contracts u * (to - from) + from into one fused multiply-add
        if dtype == _F64:
            values, to = fma64(self._unit(count, 53), high - low, low), _F64(high)
        else:
            # NOTE: half and bfloat16 draw as float32 (24 bits, float arithmetic) and round at the end
            low32, high32 = _F32(low), _F32(high)
            values = fma32(self._unit(count, 24), high32 - low32, low32).astype(dtype)
            to = numpy.asarray(high32).astype(dtype)
        # NOTE: ATen keeps the interval half-open: a value that rounded up to `to` becomes `from`
        values = numpy.where(values == to, numpy.asarray(low).astype(dtype), values)
        return values.astype(dtype, copy=False).reshape(shape)

    def fill_normal(self, shape, dtype, mean=0.0, std=1.0, contiguous=True) -> numpy.ndarray:
        """``torch.empty(shape, dtype).normal_(mean, std)``: ATen's ``normal_kernel``.

        Args:
            shape: the shape.
            dtype: float16, bfloat16, float32 or float64.
            mean: the mean.
            std: the standard deviation.
            contiguous: whether the tensor filled is contiguous (torch's block path needs it).
        """
        dtype, count = numpy.dtype(dtype), _count(shape)
        if count >= _NORMAL_FILL_MIN and contiguous:
            from . import normal_fill  # noqa: PLC0415 - the block Box-Muller loads with the first large draw
            values = normal_fill.fill(self, count, dtype, mean, std)
        else:
            values = numpy.array([self.scalar_normal(mean, std) for _ in range(count)], dtype=_F64).astype(dtype)
        return values.reshape(shape)

    def scalar_normal(self, mean=0.0, std=1.0) -> float:
        """One ``at::normal_distribution<double>`` draw: Box-Muller on two 53-bit uniforms, the sine cached.

        Args:
            mean: the mean.
            std: the standard deviation.
        """
        if self.next_double_normal is not None:
            value, self.next_double_normal = self.next_double_normal, None
            return _fma(value, std, mean)
        u1, u2 = (float(u) for u in self._unit(2, 53))
        # NOTE: Python's math calls the C library's log1p/sin/cos, the functions ATen calls here
        radius, theta = math.sqrt(-2.0 * math.log1p(-u2)), 2.0 * math.pi * u1
        self.next_double_normal = radius * math.sin(theta)
        return _fma(radius * math.cos(theta), std, mean)

    def random_from_to(self, shape, low: int, high: int, dtype=None) -> numpy.ndarray:
        """``random_(low, high)`` / ``randint``: ``draw % (high - low) + low``, the draw 64-bit from a range of 2**28.

        Args:
            shape: the shape.
            low: the lowest value.
            high: one above the highest.
            dtype: the tensor's dtype: for a floating one, bounds it cannot hold move inwards as ATen moves them.
        """
        if dtype is not None and numpy.dtype(dtype).name in _DIGITS:
            low, high = float_bounds(low, high, numpy.dtype(dtype))
        span, count = high - low, _count(shape)
        draws = self.draw64(count) if span >= _WIDE_RANGE else self.draw32(count)
        # NOTE: unsigned 64-bit arithmetic, as ATen's static_cast<int64_t>((val % range) + base)
        values = draws % numpy.uint64(span) + numpy.uint64(low % (1 << 64))
        return values.view(numpy.int64).reshape(shape)

    def randperm(self, n: int) -> numpy.ndarray:
        """``torch.randperm(n)``: a Fisher-Yates pass, swapping ``i`` with ``i + draw % (n - i)``.

        Args:
            n: how many values.
        """
        if n >= (1 << 32) // 20:
            raise NotImplementedError(f"randperm: n={n} is past torch's small-n algorithm (n < 2**32 / 20), the only "
                                      "one implemented")
        offsets = (self.draw32(max(n - 1, 0)) % numpy.arange(n, 1, -1, dtype=numpy.uint64)).tolist()
        order = list(range(n))
        for i, offset in enumerate(offsets):
            j = i + offset
            order[i], order[j] = order[j], order[i]
        return numpy.array(order, dtype=numpy.int64)

    def bernoulli(self, shape, p) -> numpy.ndarray:
        """``bernoulli_``: True where a uniform is below ``p``.

        A number ``p`` (``bernoulli_(p)``, dropout) and a float64 array of probabilities compare 53-bit
        uniforms in double precision; other arrays (``torch.bernoulli(p)``) compare 24-bit float uniforms
        with ``p`` as float32.

        Args:
            shape: the shape.
            p: a probability, or an array of them (broadcast to ``shape``).
        """
        count = _count(shape)
        if numpy.ndim(p) == 0:
            return self._unit(count, 53).reshape(shape) < float(p)
        p = numpy.asarray(p)
        if p.dtype == _F64:
            return self._unit(count, 53).reshape(shape) < numpy.broadcast_to(p, shape)
        return self._unit(count, 24).reshape(shape) < numpy.broadcast_to(p.astype(_F32), shape)

    def exponential(self, shape, dtype, lambd=1.0) -> numpy.ndarray:
        """``exponential_(lambd)``: ``-1 / lambd * log1p(-u)`` on 53-bit uniforms, in double precision.

        Args:
            shape: the shape.
            dtype: the result's dtype.
            lambd: the rate.
        """
        values = [-1.0 / lambd * math.log1p(-u) for u in self._unit(_count(shape), 53).tolist()]
        return numpy.array(values, dtype=_F64).astype(dtype).reshape(shape)

    def scalar_map(self, shape, dtype, value_of) -> numpy.ndarray:
        """One value per element from one 53-bit uniform each, ``value_of(u)`` in double, as ATen's serial kernels.

        Args:
            shape: the shape.
            dtype: the result's dtype.
            value_of: a function of one float (the uniform) to one float.
        """
        values = [value_of(u) for u in self._unit(_count(shape), 53).tolist()]
        return numpy.array(values, dtype=_F64).astype(dtype).reshape(shape)

    def cauchy(self, shape, dtype, median=0.0, sigma=1.0) -> numpy.ndarray:
        """``cauchy_``: ``median + sigma * tan(pi * (u - 0.5))`` in double.

        Args:
            shape: the shape.
            dtype: the result's dtype.
            median: the location.
            sigma: the scale.
        """
        return self.scalar_map(shape, dtype, lambda u: median + sigma * math.tan(math.pi * (u - 0.5)))

    def geometric(self, shape, dtype, p) -> numpy.ndarray:
        """``geometric_``: ``ceil(log(u) / log1p(-p))`` in double.

        Args:
            shape: the shape.
            dtype: the result's dtype.
            p: the success probability.
        """
        denominator = math.log1p(-p)
        # NOTE: u = 0 (probability 2**-53) gives log(0); ATen's value is then +inf, here too
        return self.scalar_map(shape, dtype, lambda u: math.ceil(math.log(u) / denominator) if u else math.inf)

    def log_normal(self, shape, dtype, mean=1.0, std=2.0) -> numpy.ndarray:
        """``log_normal_``: ``exp`` of one scalar (double, cached) normal per element.

        Args:
            shape: the shape.
            dtype: the result's dtype.
            mean: the underlying normal's mean.
            std: its standard deviation.
        """
        values = [math.exp(self.scalar_normal(mean, std)) for _ in range(_count(shape))]
        return numpy.array(values, dtype=_F64).astype(dtype).reshape(shape)

    def multinomial(self, probs: numpy.ndarray, num_samples: int, replacement: bool) -> numpy.ndarray:
        """``torch.multinomial`` on the rows of a 2-D array of weights.

        With replacement: each row's running sum (in the weights' dtype) divided by the total, then one
        53-bit uniform per sample placed by binary search. Without (or for one sample):
        ``argsort(weights / Exp(1))``, the exponential trick ATen uses, keeping the first ``num_samples``.

        Args:
            probs: non-negative weights, one row per distribution.
            num_samples: draws per row.
            replacement: whether a category may be drawn again.
        """
        if not replacement or num_samples == 1:
            # NOTE: ATen takes this path for one sample with replacement too
            ratio = probs / self.exponential(probs.shape, probs.dtype)
            return numpy.argsort(-ratio, axis=1, kind="stable")[:, :num_samples].astype(numpy.int64)
        cumulative = numpy.cumsum(probs, axis=1, dtype=probs.dtype)
        cumulative = cumulative / cumulative[:, -1:]
        cumulative[:, -1] = 1
        uniforms = self._unit(probs.shape[0] * num_samples, 53).reshape(probs.shape[0], num_samples)
        return numpy.stack([numpy.searchsorted(row.astype(_F64), u, side="left")
                            for row, u in zip(cumulative, uniforms)]).astype(numpy.int64)

    # ---- state ----------------------------------------------------------------------------------------

    def get_state(self) -> bytes:
        """The state in ``at::CPUGeneratorImplState``'s 5056-byte layout (what ``torch.get_rng_state()`` holds)."""
        state = self._bits.state["state"]
        pos = int(state["pos"])
        left, nxt = (1, 0) if self._fresh else (_N + 1 - pos, pos)
        words = numpy.asarray(state["key"], dtype=numpy.uint32).astype("<u8").tobytes()
        double_valid = self.next_double_normal is not None
        float_valid = self.next_float_normal is not None
        head = struct.pack("<qiiQ", _signed64(self.seed), left, 1, nxt)
        tail = struct.pack("<dddi4xf?3x", 0.0, self.next_double_normal if double_valid else 0.0, 0.0,
                           int(double_valid), self.next_float_normal if float_valid else 0.0, float_valid)
        return head + words + tail

    def set_state(self, raw: bytes):
        """Restore a state from ``get_state`` or from torch (5056 bytes, or the 5048-byte legacy layout).

        Args:
            raw: the bytes.
        """
        if len(raw) not in (_STATE_BYTES, _LEGACY_BYTES):
            raise RuntimeError(f"Generator.set_state: expected a state of {_STATE_BYTES} bytes (torch's CPU "
                               f"generator layout), got {len(raw)}")
        seed, left, _seeded, nxt = struct.unpack_from("<qiiQ", raw, 0)
        words = numpy.frombuffer(raw, dtype="<u8", count=_N, offset=24)
        _x, normal_y, _rho, normal_valid = struct.unpack_from("<dddi", raw, 24 + 8 * _N)
        if not 1 <= left <= _N or nxt > _N:
            raise RuntimeError(f"Generator.set_state: the state is corrupt (left={left}, next={nxt})")
        self.seed = seed % (1 << 64)
        self._bits = numpy.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937",
                            "state": {"key": words.astype(numpy.uint32), "pos": _N if left == 1 else int(nxt)}}
        self._fresh = left == 1 and nxt == 0
        self.next_double_normal = normal_y if normal_valid else None
        self.next_float_normal = None
        if len(raw) == _STATE_BYTES:
            value, valid = struct.unpack_from("<f?", raw, _LEGACY_BYTES)
            self.next_float_normal = value if valid else None

    # ---- the NumPy Generator calls the rest of cupynet makes ------------------------------------------

    def random(self, size=None, dtype=_F64):
        """Uniforms in [0, 1), as ``torch.rand`` (NumPy's ``Generator.random`` signature).

        Args:
            size: the shape (None for one float).
            dtype: float32 or float64.
        """
        values = self.fill_uniform(_shape(size), dtype)
        return values.item() if size is None else values

    def standard_normal(self, size=None, dtype=_F64):
        """Standard normals, as ``torch.randn`` (NumPy's ``Generator.standard_normal`` signature).

        Args:
            size: the shape (None for one float).
            dtype: float32 or float64.
        """
        values = self.fill_normal(_shape(size), dtype)
        return values.item() if size is None else values

    def integers(self, low, high=None, size=None, dtype=numpy.int64, endpoint=False):
        """Integers in [low, high), as ``torch.randint`` (NumPy's ``Generator.integers`` signature).

        Args:
            low: the lowest value (the bound above, from 0, when ``high`` is None).
            high: one above the highest value.
            size: the shape (None for one int).
            dtype: the result's integer dtype.
            endpoint: include ``high``.
        """
        low, high = (0, low) if high is None else (low, high)
        low, high = int(low), int(high) + bool(endpoint)
        if high <= low:
            raise ValueError(f"integers: high ({high}) must be above low ({low})")
        values = self.random_from_to(_shape(size), low, high).astype(dtype)
        return values.item() if size is None else values

    def permutation(self, x):
        """A permutation of ``range(x)`` (an int) or of ``x``'s first axis, as ``torch.randperm``.

        Args:
            x: an int or an array.
        """
        if isinstance(x, (int, numpy.integer)):
            return self.randperm(int(x))
        x = numpy.asarray(x)
        return x[self.randperm(len(x))]

    def uniform(self, low=0.0, high=1.0, size=None):
        """Float64 uniforms in [low, high), as ``torch.empty(size, dtype=float64).uniform_(low, high)``.

        Args:
            low: the lowest value.
            high: the bound above.
            size: the shape (None for one float).
        """
        values = self.fill_uniform(_shape(size), _F64, float(low), float(high))
        return values.item() if size is None else values

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Float64 normals, as ``torch.empty(size, dtype=float64).normal_(loc, scale)``.

        Args:
            loc: the mean.
            scale: the standard deviation.
            size: the shape (None for one float).
        """
        values = self.fill_normal(_shape(size), _F64, float(loc), float(scale))
        return values.item() if size is None else values

    def poisson(self, lam=1.0, size=None):
        """Poisson counts (as float64), as ``torch.poisson`` draws them: one ATen ``sample_poisson`` per rate, in order.

        Args:
            lam: a rate or an array of rates (each >= 0).
            size: the shape when ``lam`` is a number (None for one value).
        """
        shape = _shape(size) if size is not None else numpy.shape(lam)
        rates = numpy.broadcast_to(numpy.asarray(lam, dtype=_F64), shape)
        counts = numpy.array([self._poisson(rate) for rate in rates.reshape(-1).tolist()], dtype=_F64)
        counts = counts.reshape(rates.shape)
        return counts.item() if counts.ndim == 0 else counts

    def _poisson(self, rate: float) -> int:
        """ATen's ``sample_poisson``: Hoermann's transformed rejection from a rate of 10, else uniforms' products."""
        if rate >= 10:
            return self._poisson_rejection(rate)
        if rate == 0:
            return 0
        limit, count, product = math.exp(-rate), 0, 1.0
        while True:
            product *= float(self._unit(1, 53)[0])
            if product <= limit:
                return count
            count += 1

    def _poisson_rejection(self, rate: float) -> int:
        root, log_rate = math.sqrt(rate), math.log(rate)
        b = 0.931 + 2.53 * root
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2)
        while True:
            u, v = (float(x) for x in self._unit(2, 53))
            u -= 0.5
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + rate + 0.43)
            if us >= 0.07 and v <= v_r:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            accept = -rate + k * log_rate - math.lgamma(k + 1)
            if math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b) <= accept:
                return k

    def standard_exponential(self, size=None, dtype=_F64):
        """Exp(1) values, as ``torch.empty(size).exponential_()`` (NumPy's signature).

        Args:
            size: the shape (None for one float).
            dtype: float32 or float64.
        """
        values = self.exponential(_shape(size), dtype)
        return values.item() if size is None else values

    def __getattr__(self, name):
        # NOTE: other NumPy Generator methods (choice, poisson, ...) have no torch transform here: they draw
        # from a NumPy Generator seeded by one 64-bit draw of this stream, so the stream's state still
        # determines them (and get_state/set_state replay them), though torch's numbers differ.
        if name.startswith("_") or not callable(getattr(numpy.random.Generator, name, None)):
            raise AttributeError(f"TorchCPUStream has no attribute {name!r}")

        def call(*args, **kwargs):
            seeded = numpy.random.Generator(numpy.random.PCG64(int(self.draw64(1)[0])))
            return getattr(seeded, name)(*args, **kwargs)
        return call


_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def float_bounds(low: int, high: int, dtype) -> tuple:
    """ATen's ``update_from``/``update_to``: integer bounds a floating dtype cannot hold, moved inwards.

    NOTE: when ``low + 1`` (or ``high - 1``) rounds past the bound in ``dtype``, the bound becomes that
    rounded value plus (minus) one step of the dtype's spacing there, so every drawn integer stays inside.

    Args:
        low: the lowest integer.
        high: one above the highest.
        dtype: a floating dtype (float16 bounds past its largest value raise, as torch's).
    """
    name = numpy.dtype(dtype).name
    digits, largest = _DIGITS[name], float(numpy.finfo(numpy.float16).max) if name == "float16" else math.inf
    for label, bound in (("from", low), ("to - 1", high - 1)):
        if not -largest <= bound <= largest:
            raise RuntimeError(f"random_: {label} is out of bounds for {name} (|value| <= {largest:g}), got {bound}")
    low_plus_1 = _as_float_int(low + 1, dtype)
    if low_plus_1 < low:
        low = low_plus_1 + (1 << (abs(low + 1).bit_length() - 1 - digits + 1))
    high_minus_1 = _as_float_int(high - 1, dtype)
    if high_minus_1 >= high:
        high = high_minus_1 - (1 << (abs(high - 1).bit_length() - 1 - digits + 1))
    return low, high


def _as_float_int(value: int, dtype) -> int:
    """``static_cast<int64_t>(static_cast<scalar_t>(value))``: half types round through float32, as c10's do."""
    wide = numpy.float64 if numpy.dtype(dtype) == numpy.float64 else numpy.float32
    return int(numpy.asarray(wide(value)).astype(dtype).astype(numpy.float64))


def _fma(value: float, std: float, mean: float) -> float:
    """``value * std + mean`` rounded once, as torch's build (which contracts it into an FMA) computes it."""
    if std == 1.0 and mean == 0.0:
        return value
    from .normal_fill import fma64  # noqa: PLC0415
    return float(fma64(value, float(std), float(mean)))


def _count(shape) -> int:
    return int(numpy.prod(shape, dtype=numpy.int64))


def _shape(size):
    if size is None:
        return ()
    return (int(size),) if isinstance(size, (int, numpy.integer)) else tuple(int(n) for n in size)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value

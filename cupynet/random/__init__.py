"""Random number generators: ``Generator`` objects, one default per device, and the global seed.

A ``Generator`` (``torch.Generator``) on the CPU is torch's CPU generator: mt19937
seeded as ATen seeds it, with ATen's transforms (``mt19937_stream``, loaded on
the first draw), so ``manual_seed(s)`` then ``rand``/``randn``/``randint``/... give
torch's numbers bit for bit (docs/random.md says which, and where not). On a GPU
it wraps CuPy's XORWOW, whose numbers are not torch's CUDA ones.
``default_generator`` is the CPU one every random op uses unless given
``generator=``; each GPU has its own default, made on first use.
``manual_seed(s)`` seeds them all and returns ``default_generator``, as in
PyTorch. ``get_rng_state()`` / ``set_rng_state()`` capture and restore the
global state as plain data (checkpoints use this for a bit-identical resume).
"""

from __future__ import annotations

import numbers

import numpy

from .. import backend
from ..tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "seed_gpus", "initial_seed", "get_rng_state",
           "set_rng_state", "cpu_generator", "generator_for", "resolve_generator", "snapshot_rng", "restore_rng",
           "uniform_values", "normal_values", "bernoulli_mask", "cpu_stream"]

_TORCH_INITIAL_SEED = 67280421310721   # NOTE: what a fresh torch.Generator() reports as initial_seed()


def _check_seed(fn, seed):
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise ValueError(f"{fn}: seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


class Generator:
    """A random stream with its own state (``torch.Generator``): pass it as ``generator=`` to random ops.

    On the CPU it is torch's generator (same seed, same numbers; docs/random.md); on a GPU, CuPy's XORWOW.

    Args:
        device: where its numbers are made ("cpu" by default, or "cuda", "cuda:1", a Device).
    """

    def __init__(self, device="cpu"):
        self.device = backend.device(device)
        self._seed = _TORCH_INITIAL_SEED
        self._array_generator = None

    def __repr__(self):
        return f"<cupynet.Generator device={self.device} initial_seed={self._seed}>"

    @property
    def array_generator(self):
        """What this one draws from, made from the seed on first use: torch's CPU stream, or CuPy's ``Generator``."""
        if self._array_generator is None:
            if self.device.type == "cpu":
                from .mt19937_stream import TorchCPUStream  # noqa: PLC0415 - loads with the first CPU draw
                self._array_generator = TorchCPUStream(self._seed)
            else:
                cupy = self.device.xp
                with cupy.cuda.Device(self.device.index):
                    self._array_generator = cupy.random.Generator(cupy.random.XORWOW(self._seed))
        return self._array_generator

    def _cpu_stream(self):
        """The CPU stream (torch's generator) of a CPU Generator."""
        return self.array_generator

    def manual_seed(self, seed):
        """Restart the stream from ``seed``; returns this generator.

        Args:
            seed: an integer in [0, 2**64).
        """
        self._seed = _check_seed("Generator.manual_seed", seed)
        self._array_generator = None
        return self

    def seed(self) -> int:
        """Restart the stream from a fresh nondeterministic seed (from the OS) and return that seed.

        Args:
            (none)
        """
        fresh = int(numpy.random.SeedSequence().entropy % 2**64)
        self.manual_seed(fresh)
        return fresh

    def initial_seed(self) -> int:
        """The seed the stream started from (the last ``manual_seed``/``seed``)."""
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 CPU Tensor of 5056 bytes, torch's ``CPUGeneratorImplState`` layout.

        Args:
            (none)
        """
        if self.device.type != "cpu":
            # NOTE: CuPy keeps XORWOW's state on the device with no public way to read it
            raise RuntimeError(f"Generator.get_state: the state of a {self.device} generator cannot be read "
                               "(CuPy keeps it on the device); re-seed it with manual_seed instead")
        return Tensor(numpy.frombuffer(self._cpu_stream().get_state(), dtype=numpy.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from ``get_state`` (or from ``torch.Generator.get_state``); returns this generator.

        Args:
            new_state: a uint8 Tensor of 5056 bytes (torch's legacy 5048-byte layout is accepted too).
        """
        if not isinstance(new_state, Tensor) or new_state.dtype != numpy.uint8:
            raise TypeError("Generator.set_state: expected a torch.ByteTensor (a uint8 Tensor from get_state()), "
                            f"got {type(new_state).__name__}"
                            + (f" of dtype {new_state.dtype}" if isinstance(new_state, Tensor) else ""))
        if self.device.type != "cpu":
            raise RuntimeError(f"Generator.set_state: the state of a {self.device} generator cannot be set "
                               "(CuPy keeps it on the device); re-seed it with manual_seed instead")
        from .mt19937_stream import TorchCPUStream  # noqa: PLC0415
        stream = TorchCPUStream(0)
        stream.set_state(bytes(backend.to_numpy(new_state.array).reshape(-1)))
        self._seed, self._array_generator = stream.seed, stream
        return self


class _Defaults:
    """The process-wide generators (PyTorch's default generators): one for the CPU, one per GPU."""

    def __init__(self):
        self.seed = 0
        self.gpu_seed = 0                 # NOTE: the GPU generators' seed; seed_gpus changes it alone
        self.cpu = Generator("cpu").manual_seed(0)
        self.cuda = {}


_DEFAULTS = _Defaults()
default_generator = _DEFAULTS.cpu


def manual_seed(seed: int) -> Generator:
    """Seed the CPU generator and every GPU generator; returns the default (CPU) ``Generator``, as torch does.

    Args:
        seed: a non-negative integer.
    """
    _check_non_negative(seed, "manual_seed")
    _DEFAULTS.seed = _DEFAULTS.gpu_seed = int(seed)
    _DEFAULTS.cpu.manual_seed(int(seed) % 2**64)
    _DEFAULTS.cuda = {}
    return _DEFAULTS.cpu


def _check_non_negative(seed, caller):
    if not isinstance(seed, (int, numpy.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"{caller}: seed must be a non-negative integer, got {seed!r}")


def seed_gpus(seed: int):
    """Seed every GPU generator, leaving the CPU one as it is (``torch.cuda.manual_seed_all``).

    Args:
        seed: a non-negative integer.
    """
    _check_non_negative(seed, "cuda.manual_seed")
    _DEFAULTS.gpu_seed = int(seed)
    _DEFAULTS.cuda = {}


def seed() -> int:
    """Seed every generator from a fresh nondeterministic seed and return it (``torch.seed``).

    Args:
        (none)
    """
    fresh = _DEFAULTS.cpu.seed()
    manual_seed(fresh)
    return fresh


def initial_seed() -> int:
    """The last seed given to ``manual_seed``."""
    return _DEFAULTS.seed


def cpu_generator():
    """The default CPU generator's stream: torch's mt19937 and ATen's transforms (it takes NumPy-style calls too)."""
    return _DEFAULTS.cpu.array_generator


def _default_for(device):
    if device.type == "cpu":
        return _DEFAULTS.cpu
    gen = _DEFAULTS.cuda.get(device.index)
    if gen is None:
        gen = _DEFAULTS.cuda[device.index] = Generator(device).manual_seed(
            (_DEFAULTS.gpu_seed + device.index) % 2**64)
    return gen


def generator_for(device):
    """The array generator of ``device``'s default: NumPy's for the CPU, a seeded CuPy one per GPU.

    Args:
        device: a Device.
    """
    return _default_for(backend.device(device)).array_generator


def resolve_generator(generator, device, fn: str):
    """The array generator a random op on ``device`` draws from: ``generator``'s, or the device default's.

    Args:
        generator: None, a cupynet ``Generator``, or a NumPy/CuPy ``Generator`` (used as is).
        device: the Device the values are made on.
        fn: the op's name, for errors.
    """
    device = backend.device(device)
    if generator is None:
        return generator_for(device)
    if isinstance(generator, Generator):
        if generator.device.type != device.type:
            raise RuntimeError(f"{fn}: Expected a '{device.type}' device type for generator but found "
                               f"'{generator.device.type}'")
        return generator.array_generator
    if hasattr(generator, "random") and hasattr(generator, "standard_normal"):
        return generator
    raise TypeError(f"{fn}: generator must be a cupynet.Generator (or a NumPy/CuPy Generator), got "
                    f"{type(generator).__name__}")


def get_rng_state() -> dict:
    """The generators' states as plain data (JSON-able), for checkpoints: the CPU state as 5056 bytes in hex."""
    # NOTE: only the CPU stream is captured exactly. CuPy's generators keep their
    # state on the device with no public way to save it, so set_rng_state re-creates
    # them from the seed: a resumed GPU run is deterministic, but its dropout masks
    # differ from those of the run that never stopped (see docs/checkpoints.md).
    return {"seed": _DEFAULTS.seed, "cpu": cpu_generator().get_state().hex()}


def set_rng_state(state: dict):
    """Restore states captured by ``get_rng_state``.

    Args:
        state: the dict returned by ``get_rng_state``, or a CPU generator state as torch's
            ``get_rng_state()`` returns it (a uint8 Tensor of 5056 bytes; it sets the CPU generator only).
    """
    if isinstance(state, Tensor):
        _DEFAULTS.cpu.set_state(state)
        return
    if not isinstance(state, dict) or not isinstance(state.get("cpu"), str):
        raise ValueError("set_rng_state: expected the dict returned by get_rng_state() (with a 'cpu' key holding "
                         "the CPU generator's state in hex)")
    from .mt19937_stream import TorchCPUStream  # noqa: PLC0415
    stream = TorchCPUStream(0)
    try:
        stream.set_state(bytes.fromhex(state["cpu"]))
    except (ValueError, RuntimeError) as error:
        raise ValueError(f"set_rng_state: the 'cpu' entry is not a CPU generator state ({error})") from None
    _DEFAULTS.seed = _DEFAULTS.gpu_seed = int(state.get("seed", 0))
    _DEFAULTS.cpu._seed, _DEFAULTS.cpu._array_generator = stream.seed, stream
    _DEFAULTS.cuda = {}  # NOTE: re-created from the seed on next use (see get_rng_state)


def uniform_values(gen, shape, dtype, low=0.0, high=1.0, like=None):
    """Uniform values in [low, high) of ``dtype``: torch's CPU transform on the CPU stream, else the array generator's.

    Args:
        gen: what ``resolve_generator`` returned.
        shape: the shape.
        dtype: a floating dtype.
        low: the lowest value.
        high: the bound above.
        like: the array the values will fill, or None: a non-contiguous one is filled in memory order, as torch's.
    """
    if hasattr(gen, "fill_uniform"):
        return _in_memory_order(like, tuple(shape), lambda s, contiguous: gen.fill_uniform(s, dtype, low, high))
    native = numpy.float64 if numpy.dtype(dtype) == numpy.float64 else numpy.float32
    return (gen.random(tuple(shape), dtype=native) * (high - low) + low).astype(dtype, copy=False)


def normal_values(gen, shape, dtype, mean=0.0, std=1.0, like=None):
    """Normal values of ``dtype``: torch's CPU transforms on the CPU stream, else the array generator's.

    Args:
        gen: what ``resolve_generator`` returned.
        shape: the shape.
        dtype: a floating dtype.
        mean: the mean.
        std: the standard deviation.
        like: the array the values will fill, or None: a non-contiguous one is filled in memory order with
            torch's scalar path, as torch does.
    """
    if hasattr(gen, "fill_normal"):
        return _in_memory_order(like, tuple(shape),
                                lambda s, contiguous: gen.fill_normal(s, dtype, mean, std, contiguous))
    native = numpy.float64 if numpy.dtype(dtype) == numpy.float64 else numpy.float32
    return (gen.standard_normal(tuple(shape), dtype=native) * std + mean).astype(dtype, copy=False)


def cpu_stream(gen):
    """The CPU stream (torch's generator) that ``gen`` is, or None when it is a CuPy or NumPy generator.

    Args:
        gen: what ``resolve_generator`` returned.
    """
    return gen if hasattr(gen, "fill_uniform") else None


def _in_memory_order(like, shape, fill):
    """``fill(shape, contiguous)``, or for a non-contiguous ``like`` its values drawn in ``like``'s memory order."""
    if like is None or like.flags.c_contiguous or like.shape != shape:
        return fill(shape, True)
    # NOTE: torch's TensorIterator walks a strided tensor in memory order: the axes by decreasing stride
    axes = sorted(range(len(shape)), key=lambda axis: -abs(like.strides[axis]))
    values = fill(tuple(shape[axis] for axis in axes), False)
    return values.transpose(numpy.argsort(axes))


def bernoulli_mask(gen, shape, p):
    """A bool mask, True with probability ``p`` (a number or an array broadcast to ``shape``), as ``bernoulli_``.

    Args:
        gen: what ``resolve_generator`` returned.
        shape: the shape.
        p: the probability of True.
    """
    if hasattr(gen, "fill_uniform"):
        return gen.bernoulli(tuple(shape), p)
    return gen.random(tuple(shape), dtype=numpy.float64 if hasattr(gen, "bit_generator") else numpy.float32) < p


def snapshot_rng(devices) -> list:
    """Capture the default generators of ``devices`` so ``restore_rng`` can replay their next draws exactly.

    The CPU state is copied. A GPU generator's state cannot be read (see ``Generator.get_state``), so it is
    re-seeded here from a seed drawn from its own stream, and the snapshot is that seed: the replay is exact
    and the stream stays deterministic, but it is not the one a run without the snapshot would see.

    Args:
        devices: Devices whose generators to capture (duplicates are fine).
    """
    snapshot = []
    for device in {backend.device(d) for d in devices} | {backend.device("cpu")}:
        gen = _default_for(device)
        if device.type == "cpu":
            snapshot.append((gen, gen.get_state()))
        else:
            fresh = int(backend.to_numpy(gen.array_generator.integers(0, 2**63 - 1, size=())))
            snapshot.append((gen.manual_seed(fresh), fresh))  # NOTE: an int marks a re-seed, not a copied state
    return snapshot


def restore_rng(snapshot):
    """Put the generators back to a ``snapshot_rng`` capture.

    Args:
        snapshot: what ``snapshot_rng`` returned.
    """
    for gen, state in snapshot:
        if isinstance(state, Tensor):
            gen.set_state(state)
        else:
            gen.manual_seed(state)

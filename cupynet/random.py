"""Random number generators: one NumPy ``Generator`` for the CPU, CuPy's for each GPU.

``manual_seed(s)`` seeds both. ``get_rng_state()`` / ``set_rng_state()``
capture and restore them (checkpoints use this for a bit-identical resume).
NOTE: the CPU and GPU streams differ (different algorithms), so the same seed
gives different numbers on the two devices; each device is reproducible.
"""

from __future__ import annotations

import numpy

from . import backend

__all__ = ["manual_seed", "seed", "seed_gpus", "initial_seed", "get_rng_state", "set_rng_state", "cpu_generator",
           "generator_for"]


class _Generators:
    """The process-wide generators (like PyTorch's default generator)."""

    def __init__(self):
        self.seed = 0
        self.gpu_seed = 0
        self.cpu = numpy.random.Generator(numpy.random.PCG64(0))
        self.cuda = {}


_GENERATORS = _Generators()


def manual_seed(seed: int):
    """Seed the CPU generator and every GPU generator.

    Args:
        seed: a non-negative integer.
    """
    _check_seed(seed, "manual_seed")
    _GENERATORS.seed = _GENERATORS.gpu_seed = int(seed)
    _GENERATORS.cpu = numpy.random.Generator(numpy.random.PCG64(int(seed)))
    _GENERATORS.cuda = {}
    return _GENERATORS


def _check_seed(seed, caller):
    if not isinstance(seed, (int, numpy.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"{caller}: seed must be a non-negative integer, got {seed!r}")


def seed_gpus(seed: int):
    """Seed every GPU generator, leaving the CPU one as it is (``torch.cuda.manual_seed_all``).

    Args:
        seed: a non-negative integer.
    """
    _check_seed(seed, "cuda.manual_seed")
    _GENERATORS.gpu_seed = int(seed)
    _GENERATORS.cuda = {}


seed = manual_seed


def initial_seed() -> int:
    """The last seed given to ``manual_seed``."""
    return _GENERATORS.seed


def cpu_generator():
    """The NumPy ``Generator`` behind random CPU tensors."""
    return _GENERATORS.cpu


def generator_for(device):
    """The generator of ``device``: NumPy's for the CPU, a seeded ``cupy.random.Generator`` per GPU.

    Args:
        device: a Device.
    """
    device = backend.device(device)
    if device.type == "cpu":
        return _GENERATORS.cpu
    gen = _GENERATORS.cuda.get(device.index)
    if gen is None:
        cupy = device.xp
        with cupy.cuda.Device(device.index):
            gen = cupy.random.Generator(cupy.random.XORWOW(_GENERATORS.gpu_seed + device.index))
        _GENERATORS.cuda[device.index] = gen
    return gen


def get_rng_state() -> dict:
    """The generators' states as plain data (JSON-able), for checkpoints."""
    # NOTE: only the CPU stream is captured exactly. CuPy's generators keep their
    # state on the device with no public way to save it, so set_rng_state re-creates
    # them from the seed: a resumed GPU run is deterministic, but its dropout masks
    # differ from those of the run that never stopped (see docs/checkpoints.md).
    return {"seed": _GENERATORS.seed, "cpu": _GENERATORS.cpu.bit_generator.state}


def set_rng_state(state: dict):
    """Restore states captured by ``get_rng_state``.

    Args:
        state: the dict returned by ``get_rng_state``.
    """
    if not isinstance(state, dict) or "cpu" not in state:
        raise ValueError("set_rng_state: expected the dict returned by get_rng_state() (with a 'cpu' key)")
    cpu = numpy.random.Generator(numpy.random.PCG64())
    try:
        cpu.bit_generator.state = state["cpu"]
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"set_rng_state: the 'cpu' entry is not a PCG64 state ({error})") from None
    _GENERATORS.cpu = cpu
    _GENERATORS.seed = _GENERATORS.gpu_seed = int(state.get("seed", 0))
    _GENERATORS.cuda = {}  # NOTE: re-created from the seed on next use (see get_rng_state)

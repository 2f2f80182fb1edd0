"""The emulated ``cupy.random``: CuPy's names over NumPy's generators.

The numbers are NumPy's, not CuPy's (an emulated XORWOW stream is NumPy's PCG64 seeded alike): a
test may rely on a seed giving the same numbers twice, never on matching a real GPU's. What is
CuPy's is the API: ``Generator`` has only the methods CuPy's has (no ``permutation``, ``choice``,
``normal`` or ``shuffle`` in CuPy 14), with CuPy's keyword arguments.
"""

from __future__ import annotations

import numpy

from . import api
from .array import call

__all__ = ["Generator", "BitGenerator", "random_namespace"]


class BitGenerator:
    """``cupy.random.XORWOW`` / ``MRG32k3a`` / ``Philox4x3210``: here a seeded NumPy PCG64.

    Args:
        seed: the seed (None: from the OS).
        size: ignored (CuPy's number of parallel states).
    """

    def __init__(self, seed=None, *, size=None):
        self._numpy = numpy.random.PCG64(seed)


class Generator:
    """``cupy.random.Generator``: CuPy's methods, NumPy's numbers, device arrays out.

    Args:
        bit_generator: a :class:`BitGenerator`.
    """

    def __init__(self, bit_generator):
        if not isinstance(bit_generator, BitGenerator):
            raise TypeError(f"Generator: expected a cupy.random bit generator, got {type(bit_generator).__name__}")
        self._numpy = numpy.random.Generator(bit_generator._numpy)
        self.bit_generator = bit_generator

    def __getattr__(self, name):
        spec = api.entry("random_generator", name)
        if spec is None or name.startswith("_"):
            raise AttributeError(f"'cupy.random.Generator' object has no attribute '{name}' (CuPy "
                                 f"{api.version()} lacks it)")
        method = getattr(self._numpy, name)

        def draw(*args, **kwargs):
            api.check_keywords(f"Generator.{name}", kwargs, spec)
            return call(method, args, kwargs, name=f"Generator.{name}", launches=1)

        return draw


# NOTE: the module-level functions draw from a state of their own, as CuPy's do: seeding the device's
# numbers must not reseed the host's (numpy.random's global state)
_STATE = numpy.random.RandomState()
_ALIASES = {"ranf": "random_sample", "sample": "random_sample"}


def _legacy(name, spec):
    """A module-level function of ``cupy.random`` (``rand``, ``randn``, ``seed``, ...) on a private RandomState."""
    function = getattr(_STATE, _ALIASES.get(name, name), None)
    if function is None:
        return None

    def draw(*args, **kwargs):
        api.check_keywords(f"cupy.random.{name}", kwargs, spec)
        return call(function, args, kwargs, name=f"cupy.random.{name}", launches=0 if name == "seed" else 1)

    draw.__name__ = name
    return draw


def random_namespace():
    """The emulated ``cupy.random`` module."""
    space = api.Namespace("cupy.random")
    for name, spec in api.names("cupy.random").items():
        if spec.get("kind") == "function":
            value = _legacy(name, spec)
            if value is not None:
                setattr(space, name, value)
    space.Generator = Generator
    for name in ("XORWOW", "MRG32k3a", "Philox4x3210"):
        if name in api.names("cupy.random"):
            setattr(space, name, type(name, (BitGenerator,), {"__doc__": BitGenerator.__doc__}))
    if "default_rng" in api.names("cupy.random"):
        space.default_rng = lambda seed=None: Generator(space.XORWOW(seed))
    return space

"""Samplers (``torch.utils.data`` names): which sample indices a DataLoader visits, and in which batches.

A sampler is an iterable of indices; ``BatchSampler`` groups one into lists.
Random samplers draw from a NumPy ``Generator``: the one given, or one seeded
by ``generator``'s seed (an int, or anything with ``initial_seed()`` like a
torch-style Generator), else a fresh seed drawn from cupynet's global
generator on each pass (so ``cupynet.manual_seed`` fixes the order).
"""

from __future__ import annotations

import numbers

import numpy

from cupynet import backend
from cupynet.random import Generator, cpu_generator, resolve_generator
from cupynet.tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "numpy_generator"]


def numpy_generator(generator):
    """A NumPy ``Generator`` for ``generator``: itself, one seeded by it, or a fresh one from cupynet's seed stream.

    Args:
        generator: None, a ``cupynet.Generator`` (a CPU one), a ``numpy.random.Generator``, an int seed, or an
            object with ``initial_seed()``.
    """
    if generator is None:
        return numpy.random.default_rng(int(cpu_generator().integers(0, 2**63 - 1)))
    if isinstance(generator, numpy.random.Generator):
        return generator
    if isinstance(generator, Generator):
        return resolve_generator(generator, "cpu", "DataLoader")  # NOTE: draws advance its stream, as torch's do
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return numpy.random.default_rng(int(generator))
    if callable(getattr(generator, "initial_seed", None)):
        return numpy.random.default_rng(int(generator.initial_seed()))
    raise TypeError(f"generator must be None, a numpy.random.Generator, an int seed or have initial_seed(), got "
                    f"{type(generator).__name__}")


def _count(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{owner}: {name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


class Sampler:
    """Base class: an iterable of sample indices (subclasses implement ``__iter__``, usually ``__len__``).

    Args:
        data_source: ignored (accepted as PyTorch's base class accepts it).
    """

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``.

    Args:
        data_source: the dataset (only its length is used).
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


_CHUNK = 1 << 16  # NOTE: draws per chunk; one chunk up to this size gives the same indices as one call


class RandomSampler(Sampler):
    """A random permutation (or, with ``replacement``, independent draws) of the dataset's indices.

    Args:
        data_source: the dataset.
        replacement: draw with replacement.
        num_samples: how many indices per pass (default ``len(data_source)``; more than that needs replacement
            or wraps around in several permutations, as PyTorch).
        generator: the random source (see the module docstring).
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = None if num_samples is None else _count("RandomSampler", "num_samples", num_samples)

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), numpy_generator(self.generator)
        # NOTE: drawn a chunk at a time, so num_samples may be huge (minGPT asks for 1e10 with replacement)
        chunks = self._draws(rng, n) if self.replacement else self._permutations(rng, n)
        return (i for chunk in chunks for i in chunk)

    def _draws(self, rng, n):
        for start in range(0, self.num_samples, _CHUNK):
            yield rng.integers(0, n, size=min(_CHUNK, self.num_samples - start)).tolist()

    def _permutations(self, rng, n):
        for start in range(0, self.num_samples, n):
            yield rng.permutation(n).tolist()[:self.num_samples - start]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, new each pass.

    Args:
        indices: a sequence of indices.
        generator: the random source (see the module docstring).
    """

    def __init__(self, indices, generator=None):
        self.indices, self.generator = list(indices), generator

    def __iter__(self):
        order = numpy_generator(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Args:
        weights: non-negative weights, one per index (a sequence, array or Tensor).
        num_samples: how many indices per pass.
        replacement: draw with replacement (without: at most ``len(weights)`` distinct indices).
        generator: the random source (see the module docstring).
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a boolean value, but got "
                             f"replacement={replacement!r}")
        raw = weights.array if isinstance(weights, Tensor) else weights
        w = numpy.asarray(backend.to_numpy(raw) if not isinstance(raw, (list, tuple)) else raw, dtype=numpy.float64)
        if w.ndim != 1 or w.size == 0 or not numpy.all(numpy.isfinite(w)) or numpy.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"WeightedRandomSampler: weights should be a non-empty 1-D sequence of non-negative, "
                             f"finite numbers with a positive sum, got shape {w.shape}")
        self.num_samples = _count("WeightedRandomSampler", "num_samples", num_samples)
        if not replacement and self.num_samples > int(numpy.count_nonzero(w)):
            raise ValueError(f"WeightedRandomSampler: cannot draw {self.num_samples} samples without replacement "
                             f"from {int(numpy.count_nonzero(w))} non-zero weights")
        self.weights, self.replacement, self.generator = w, replacement, generator

    def __iter__(self):
        rng = numpy_generator(self.generator)
        drawn = rng.choice(self.weights.size, size=self.num_samples, replace=self.replacement,
                           p=self.weights / self.weights.sum())
        return iter(drawn.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless ``drop_last``).

    Args:
        sampler: an iterable of indices.
        batch_size: indices per batch.
        drop_last: drop a last, incomplete batch.
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler, self.drop_last = sampler, drop_last
        self.batch_size = _count("BatchSampler", "batch_size", batch_size)

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(int(index))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

"""Datasets: ``Dataset``, ``TensorDataset``, ``ArrayDataset``, ``Subset`` and ``random_split``.

A dataset maps an index to a sample. ``__getitems__(indices)`` (optional, as
in PyTorch) returns a whole batch at once; the array-backed datasets here
implement it with one fancy-indexing gather, so the DataLoader never loops
over samples in Python.
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers

import numpy

from cupynet import backend
from cupynet.random import cpu_generator
from cupynet.tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ArrayDataset", "ConcatDataset", "Subset", "random_split"]


class Dataset:
    """Base class: subclasses implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


class IterableDataset(Dataset):
    """A stream of samples (subclasses implement ``__iter__``); with DataLoader workers, each worker iterates
    its own copy, so ``__iter__`` should split the work with ``get_worker_info()`` as in PyTorch."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate over it instead of indexing it")


class ConcatDataset(Dataset):
    """The samples of several datasets, one after another.

    Args:
        datasets: map-style datasets (not IterableDatasets).
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = _check_index("ConcatDataset", index, len(self))
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _check_index(owner, index, length) -> int:
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"{owner}: index must be an int, got {type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"{owner}: index {index} is out of range for a dataset of length {length}")
    return int(index) % length


class TensorDataset(Dataset):
    """Samples are the i-th rows of the given tensors (e.g. inputs and labels).

    Args:
        *tensors: Tensors (or arrays) with the same first dimension.
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        sizes = [t.shape[0] if t.ndim else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tensors)

    def __getitem__(self, index):
        index = _check_index("TensorDataset", index, len(self))
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices):
        """A batch as a tuple of host arrays (one gather per tensor).

        Args:
            indices: a list of sample indices.
        """
        idx = numpy.asarray(indices, dtype=numpy.int64)
        return tuple(backend.to_numpy(t.array)[idx] if isinstance(t.array, numpy.ndarray)
                     else backend.to_numpy(t.array[backend.get_array_module(t.array).asarray(idx)])
                     for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ArrayDataset(Dataset):
    """Samples are ``(data[i], int(targets[i]))`` from host NumPy arrays (the built-in datasets use it).

    Args:
        data: a NumPy array of samples (first dimension = sample).
        targets: a NumPy integer array of labels, one per sample.
    """

    def __init__(self, data, targets):
        data, targets = numpy.asarray(data), numpy.asarray(targets)
        if data.ndim == 0 or targets.ndim != 1 or data.shape[0] != targets.shape[0]:
            raise ValueError(f"{type(self).__name__}: data of shape {data.shape} and targets of shape "
                             f"{targets.shape} must have the same first dimension (targets 1-D)")
        self.data, self.targets = data, targets.astype(numpy.int64, copy=False)

    def __getitem__(self, index):
        index = _check_index(type(self).__name__, index, len(self))
        return self.data[index], int(self.targets[index])

    def __getitems__(self, indices):
        """A batch as ``(data[indices], targets[indices])`` (host arrays, one gather each).

        Args:
            indices: a list of sample indices.
        """
        idx = numpy.asarray(indices, dtype=numpy.int64)
        return self.data[idx], self.targets[idx]

    def __len__(self):
        return int(self.data.shape[0])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``.

    Args:
        dataset: the full dataset.
        indices: a sequence of indices into it.
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [int(i) for i in indices]
        n = len(dataset)
        bad = [i for i in self.indices if not -n <= i < n]
        if bad:
            raise IndexError(f"Subset: indices {bad[:5]} are out of range for a dataset of length {n}")

    def __getitem__(self, index):
        return self.dataset[self.indices[_check_index("Subset", index, len(self))]]

    def __getitems__(self, indices):
        """A batch: delegates to the dataset's ``__getitems__`` when it has one.

        Args:
            indices: a list of indices into this subset.
        """
        mapped = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(mapped)
        return [self.dataset[i] for i in mapped]

    def __len__(self):
        return len(self.indices)


def _split_lengths(lengths, n) -> list:
    lengths = list(lengths)
    if not lengths or any(isinstance(x, bool) or not isinstance(x, numbers.Real) or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative numbers, got {lengths}")
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):  # NOTE: the remainder goes round-robin, as in PyTorch
            counts[i % len(counts)] += 1
        return counts
    if any(not float(x).is_integer() for x in lengths) or sum(lengths) != n:
        raise ValueError(f"random_split: Sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({n}); give integer lengths summing to {n} or fractions summing to 1")
    return [int(x) for x in lengths]


def random_split(dataset, lengths, generator=None, seed=None) -> list:
    """Split a dataset into non-overlapping random Subsets.

    Args:
        dataset: the dataset to split.
        lengths: integer lengths summing to ``len(dataset)``, or fractions summing to 1.
        generator: a ``numpy.random.Generator`` (or an int seed / an object with ``initial_seed()``) to draw
            the permutation from.
        seed: an int seed instead (default: drawn from cupynet's global generator).
    """
    if generator is not None and seed is not None:
        raise ValueError("random_split: give generator or seed, not both")
    counts = _split_lengths(lengths, len(dataset))
    if generator is not None and not isinstance(generator, numpy.random.Generator):
        generator = numpy.random.default_rng(int(generator if isinstance(generator, numbers.Integral)
                                                 else generator.initial_seed()))
    rng = generator if generator is not None else (
        numpy.random.default_rng(seed) if seed is not None else cpu_generator())
    order = rng.permutation(len(dataset)).tolist()
    out, start = [], 0
    for count in counts:
        out.append(Subset(dataset, order[start:start + count]))
        start += count
    return out

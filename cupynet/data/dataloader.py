"""``DataLoader``: batches of a dataset as cupynet Tensors on a device, with a resumable shuffle.

Shuffling: epoch ``e`` uses the permutation drawn from
``numpy.random.Generator(PCG64([seed, e]))``, so the order depends only on
``(seed, epoch)``. ``state_dict()`` records ``seed``, the epoch and how many
batches of it were handed out; a loader given that state resumes with the very
next batch of the very same order (what a checkpoint needs).

Collation happens on the host (NumPy ``stack``); a batch then moves to the
device in ONE transfer: all its arrays are packed into one byte buffer, copied
once, and viewed back as arrays on the device.
"""

from __future__ import annotations

import itertools
import numbers

import numpy

from cupynet import backend
from cupynet.data.dataset import IterableDataset
from cupynet.data.sampler import BatchSampler, RandomSampler, SequentialSampler, numpy_generator
from cupynet.data.workers import WorkerPool, default_context, fetch_batch, fetch_stream
from cupynet.random import cpu_generator
from cupynet.tensor import Tensor

__all__ = ["DataLoader", "EpochShuffleSampler", "default_collate", "pack_arrays", "unpack_arrays"]

_ALIGN = 16


def _to_host(value):
    if isinstance(value, Tensor):
        return backend.to_numpy(value.array)
    if isinstance(value, (bool, numpy.bool_)):
        return numpy.asarray(value, dtype=numpy.bool_)
    if isinstance(value, numbers.Integral):
        return numpy.asarray(value, dtype=numpy.int64)  # NOTE: labels become int64, as PyTorch's
    if isinstance(value, numbers.Real) and not isinstance(value, numpy.floating):
        return numpy.asarray(value, dtype=numpy.float32)  # NOTE: Python floats -> float32 (PyTorch: float64)
    return numpy.asarray(backend.to_numpy(value))


def default_collate(samples):
    """Stack a list of samples field by field into host NumPy arrays (tuples/lists/dicts keep their shape).

    Args:
        samples: a list of samples: arrays, Tensors, numbers, or tuples/lists/dicts of them.
    """
    first = samples[0]
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate: each element in list of batch should be of equal size")
        return type(first)(default_collate(list(field)) for field in zip(*samples)) if isinstance(first, list) \
            else tuple(default_collate(list(field)) for field in zip(*samples))
    arrays = [_to_host(s) for s in samples]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"default_collate: samples have different shapes {sorted(shapes)}; expected one shape")
    return numpy.stack(arrays)


def _leaves(tree, out):
    if isinstance(tree, dict):
        for v in tree.values():
            _leaves(v, out)
    elif isinstance(tree, (tuple, list)):
        for v in tree:
            _leaves(v, out)
    else:
        out.append(tree)
    return out


def _rebuild(tree, leaves):
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(v, leaves) for v in tree)
    return next(leaves)


def pack_arrays(arrays):
    """Pack host arrays into one uint8 buffer; return ``(buffer, layout)`` with 16-byte aligned offsets.

    Args:
        arrays: C-contiguous-able NumPy arrays.
    """
    layout, offset = [], 0
    for a in arrays:
        layout.append((offset, a.dtype, a.shape))
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    buffer = numpy.empty(max(offset, 1), dtype=numpy.uint8)
    for a, (start, _, _) in zip(arrays, layout):
        buffer[start:start + a.nbytes] = numpy.ascontiguousarray(a).reshape(-1).view(numpy.uint8)
    return buffer, layout


def unpack_arrays(buffer, layout):
    """Views of a packed buffer (on any device) as the original arrays.

    Args:
        buffer: the uint8 buffer from ``pack_arrays`` (NumPy, or CuPy after one transfer).
        layout: the layout from ``pack_arrays``.
    """
    out = []
    for start, dtype, shape in layout:
        size = int(numpy.prod(shape, dtype=numpy.int64)) * dtype.itemsize
        out.append(buffer[start:start + size].view(dtype).reshape(shape))
    return out


def _stream_batches(stream, loader):
    """An iterable dataset's batches, loaded in this process."""
    while True:
        try:
            batch = fetch_stream(stream, loader.collate_fn, loader.batch_size, loader.drop_last)
        except StopIteration:
            return
        yield batch


def _move(leaves, device):
    if device.type == "cpu":
        return leaves
    buffer, layout = pack_arrays(leaves)
    cupy = device.xp
    with cupy.cuda.Device(device.index):
        return unpack_arrays(cupy.asarray(buffer), layout)  # NOTE: the one host->device copy of the batch


class EpochShuffleSampler(RandomSampler):
    """The sampler of ``DataLoader(shuffle=True)``: pass ``e`` is the permutation of ``PCG64([seed, e])``.

    The loader sets ``seed`` and ``epoch`` before each epoch (so a resumed loader repeats the order);
    each pass then moves ``epoch`` on by one, so a program that iterates the loader's ``batch_sampler``
    itself, again and again (YOLOv5's repeating sampler), gets a new order every pass, as from torch's
    ``RandomSampler``.

    Args:
        data_source: the dataset.
        seed: the shuffle seed.
    """

    def __init__(self, data_source, seed: int):
        super().__init__(data_source)
        self.seed, self.epoch = seed, 0

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        order = numpy.random.Generator(numpy.random.PCG64([self.seed, epoch])).permutation(len(self.data_source))
        return iter(order.tolist())


def _check_options(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers, timeout,
                   prefetch_factor, persistent_workers, collate_fn, worker_init_fn) -> None:
    """PyTorch's DataLoader argument checks (its messages), before anything starts."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"DataLoader: batch_size should be a positive integer value, but got "
                         f"batch_size={batch_size!r}")
    iterable = isinstance(dataset, IterableDataset)
    if not iterable and (not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__")):
        raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__ (or be an IterableDataset), got "
                        f"{type(dataset).__name__}")
    if iterable and shuffle:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                         f"shuffle={shuffle}")
    if iterable and (sampler is not None or batch_sampler is not None):
        raise ValueError("DataLoader with IterableDataset: expected unspecified sampler and batch_sampler options")
    if sampler is not None and shuffle:
        raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
        raise ValueError("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                         "and drop_last")
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or num_workers < 0:
        raise ValueError("DataLoader: num_workers option should be non-negative; use num_workers=0 to disable "
                         f"multiprocessing (got {num_workers!r})")
    if not isinstance(timeout, numbers.Real) or timeout < 0:
        raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout!r}")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("DataLoader: prefetch_factor option could only be specified in multiprocessing. let "
                         "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or not isinstance(
            prefetch_factor, numbers.Integral) or prefetch_factor < 1):
        raise ValueError(f"DataLoader: prefetch_factor should be a positive integer, got {prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
    for name, fn in (("collate_fn", collate_fn), ("worker_init_fn", worker_init_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"DataLoader: {name} must be callable, got {type(fn).__name__}")


class DataLoader:
    """Iterate over a dataset in batches of cupynet Tensors, in this process or in worker processes.

    Args:
        dataset: a Dataset (``__getitem__`` + ``__len__``; ``__getitems__`` used when present) or an
            IterableDataset.
        batch_size: samples per batch.
        shuffle: reshuffle every epoch (order fixed by ``seed`` and the epoch number).
        sampler: the indices to visit, in order (a Sampler or any iterable of indices); excludes shuffle.
            Not given: a ``SequentialSampler``, or with ``shuffle`` an ``EpochShuffleSampler`` (``.sampler``).
        batch_sampler: yields whole index lists; excludes batch_size, shuffle, sampler and drop_last. Not
            given: ``BatchSampler(sampler, batch_size, drop_last)`` (``.batch_sampler``), as PyTorch builds;
            the loader iterates whatever ``.batch_sampler`` holds when an epoch starts.
        num_workers: worker processes (0: load in this process). See ``cupynet.data.workers``.
        collate_fn: turns a list of samples into a batch. Not given: ``default_collate``, whose host arrays
            become Tensors on ``device``; a program's own collate_fn's batch is handed out untouched, as in
            PyTorch (it may hold paths, shapes, Tensors it built).
        pin_memory: accepted; batches already move to the GPU in one packed transfer (a no-op on the CPU).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a worker's batch (0: no limit).
        worker_init_fn: called in each worker with its id, after seeding, before loading.
        multiprocessing_context: the start method (``"fork"``, ``"spawn"``, ...; default: see workers).
        generator: a ``numpy.random.Generator`` to draw the seed from (instead of ``seed``).
        prefetch_factor: batches in flight per worker (default 2 with workers).
        persistent_workers: keep the workers alive across epochs.
        pin_memory_device: accepted (PyTorch's; unused).
        in_order: must be True (batches always come in order).
        seed: the shuffle seed; default: drawn from cupynet's global generator (``cupynet.manual_seed``).
        device: where batches go (default: the default device).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True, seed=None, device=None):
        _check_options(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers, timeout,
                       prefetch_factor, persistent_workers, collate_fn, worker_init_fn)
        if generator is not None and seed is not None:
            raise ValueError("DataLoader: give generator or seed, not both")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"DataLoader: seed must be a non-negative int, got {seed!r}")
        if in_order is not True:
            raise ValueError("DataLoader: in_order=False is not supported (batches always come in order)")
        self.dataset, self.batch_size = dataset, int(batch_size)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.num_workers, self.timeout, self.worker_init_fn = int(num_workers), timeout, worker_init_fn
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None or not num_workers else 2
        self.persistent_workers, self.pin_memory = bool(persistent_workers), bool(pin_memory)
        self.multiprocessing_context = multiprocessing_context
        self.collate_fn = collate_fn or default_collate
        self.device = backend.device(device) if device is not None else backend.default_device()
        rng = numpy_generator(generator) if generator is not None else cpu_generator()
        self.seed = int(seed) if seed is not None else int(rng.integers(0, 2**63 - 1))
        self._epoch, self._resume_at, self._position, self._pool = 0, 0, None, None
        self.sampler, self.batch_sampler = self._samplers(sampler, batch_sampler)

    def _samplers(self, sampler, batch_sampler):
        """(sampler, batch_sampler) as PyTorch builds them when not given (None for an IterableDataset)."""
        if isinstance(self.dataset, IterableDataset) or batch_sampler is not None:
            return sampler, batch_sampler
        if sampler is None:
            sampler = EpochShuffleSampler(self.dataset, self.seed) if self.shuffle else SequentialSampler(self.dataset)
        return sampler, BatchSampler(sampler, self.batch_size, self.drop_last)

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.dataset)  # NOTE: an IterableDataset's own length, batched, as PyTorch estimates it
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _index_batches(self, epoch):
        """The epoch's index lists, from ``batch_sampler`` (the seeded shuffle set to this epoch first)."""
        if isinstance(self.sampler, EpochShuffleSampler):
            self.sampler.seed, self.sampler.epoch = self.seed, epoch
        return (list(b) for b in self.batch_sampler)

    def _batched(self) -> bool:
        return self.collate_fn is default_collate and hasattr(self.dataset, "__getitems__")

    def _fetch(self, indices):
        return fetch_batch(self.dataset, self.collate_fn, indices, self._batched())

    def _to_tensors(self, batch):
        if self.collate_fn is not default_collate:
            return batch  # NOTE: a program's own collate_fn: its batch as it made it, as in PyTorch
        if self._batched() and isinstance(batch, (tuple, list)) and batch and not isinstance(
                batch[0], (tuple, list, dict)):
            batch = tuple(_to_host(b) for b in batch)
        elif self._batched() and isinstance(batch, list):
            batch = default_collate(batch)
        leaves = [_to_host(leaf) if not isinstance(leaf, numpy.ndarray) else leaf for leaf in _leaves(batch, [])]
        leaves = [leaf.astype(numpy.int64) if leaf.dtype.kind in "iu" and leaf.dtype != numpy.uint8 else leaf
                  for leaf in leaves]
        moved = _move(leaves, self.device)
        return _rebuild(batch, iter(Tensor(a) for a in moved))

    def _host_batches(self, epoch, start):
        """The epoch's collated host batches from ``start`` on, fetched here or by the workers."""
        iterable = isinstance(self.dataset, IterableDataset)
        if iterable:
            indices = itertools.repeat(None)
        else:
            indices = itertools.islice(self._index_batches(epoch), start, None)
        if self.num_workers == 0:
            if iterable:
                return _stream_batches(iter(self.dataset), self)
            return (self._fetch(ix) for ix in indices)
        return self._worker_batches(epoch, indices)

    def _worker_batches(self, epoch, indices):
        pool = self._pool or self._start_pool(epoch)
        try:
            yield from pool.run(indices, self.prefetch_factor, self.timeout)
        finally:
            if not self.persistent_workers:
                pool.shutdown()
                self._pool = None

    def _start_pool(self, epoch):
        spec = dict(dataset=self.dataset, collate_fn=self.collate_fn, batched=self._batched(),
                    iterable=isinstance(self.dataset, IterableDataset), batch_size=self.batch_size,
                    drop_last=self.drop_last, worker_init_fn=self.worker_init_fn, num_workers=self.num_workers)
        base_seed = int(numpy.random.default_rng([self.seed, epoch, 1]).integers(0, 2**62))
        self._pool = WorkerPool(spec, base_seed, self.multiprocessing_context or default_context())
        return self._pool

    def __iter__(self):
        epoch, start = self._epoch, self._resume_at
        self._epoch, self._resume_at = epoch + 1, 0
        count = start
        for host in self._host_batches(epoch, start):
            batch = self._to_tensors(host)
            count += 1
            self._position = (epoch, count)
            yield batch
        self._position = None

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()

    def state_dict(self) -> dict:
        """``{"seed", "epoch", "batches_done"}``: where the data order stands (plain ints).
        """
        sized = not isinstance(self.dataset, IterableDataset)
        if self._position is not None and (not sized or self._position[1] < len(self)):
            return {"seed": self.seed, "epoch": self._position[0], "batches_done": self._position[1]}
        return {"seed": self.seed, "epoch": self._epoch, "batches_done": self._resume_at}

    def load_state_dict(self, state) -> None:
        """Resume: the next iteration continues epoch ``epoch`` after ``batches_done`` batches.

        Args:
            state: the dict from ``state_dict()``.
        """
        if not isinstance(state, dict) or set(state) != {"seed", "epoch", "batches_done"}:
            raise ValueError(f"DataLoader.load_state_dict: expected keys ['batches_done', 'epoch', 'seed'], got "
                             f"{sorted(state) if isinstance(state, dict) else type(state).__name__}")
        for key in ("seed", "epoch", "batches_done"):
            value = state[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"DataLoader.load_state_dict: {key} must be a non-negative int, got {value!r}")
        if not isinstance(self.dataset, IterableDataset) and state["batches_done"] > len(self):
            raise ValueError(f"DataLoader.load_state_dict: batches_done={state['batches_done']} but an epoch has "
                             f"only {len(self)} batches")
        self.seed, self._epoch, self._resume_at = int(state["seed"]), int(state["epoch"]), int(state["batches_done"])
        self._position = None


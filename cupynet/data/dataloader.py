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

import numbers

import numpy

from cupynet import backend
from cupynet.random import cpu_generator
from cupynet.tensor import Tensor

__all__ = ["DataLoader", "default_collate", "pack_arrays", "unpack_arrays"]

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


def _move(leaves, device):
    if device.type == "cpu":
        return leaves
    buffer, layout = pack_arrays(leaves)
    cupy = device.xp
    with cupy.cuda.Device(device.index):
        return unpack_arrays(cupy.asarray(buffer), layout)  # NOTE: the one host->device copy of the batch


class DataLoader:
    """Iterate over a dataset in batches of cupynet Tensors.

    Args:
        dataset: a Dataset (``__getitem__`` + ``__len__``; ``__getitems__`` used when present).
        batch_size: samples per batch.
        shuffle: reshuffle every epoch (order fixed by ``seed`` and the epoch number).
        drop_last: drop the last incomplete batch.
        collate_fn: turns a list of samples (or what ``__getitems__`` returns) into host arrays.
        generator: a ``numpy.random.Generator`` to draw the seed from (instead of ``seed``).
        seed: the shuffle seed; default: drawn from cupynet's global generator (``cupynet.manual_seed``).
        device: where batches go (default: the default device).
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None, generator=None,
                 seed=None, device=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__, got {type(dataset).__name__}")
        if generator is not None and seed is not None:
            raise ValueError("DataLoader: give generator or seed, not both")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
            raise ValueError(f"DataLoader: seed must be a non-negative int, got {seed!r}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {type(collate_fn).__name__}")
        self.dataset, self.batch_size = dataset, int(batch_size)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.collate_fn = collate_fn or default_collate
        self.device = backend.device(device) if device is not None else backend.default_device()
        rng = generator if generator is not None else cpu_generator()
        self.seed = int(seed) if seed is not None else int(rng.integers(0, 2**63 - 1))
        self._epoch, self._resume_at, self._position = 0, 0, None

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self, epoch):
        n = len(self.dataset)
        if not self.shuffle:
            return numpy.arange(n)
        return numpy.random.Generator(numpy.random.PCG64([self.seed, epoch])).permutation(n)

    def _fetch(self, indices):
        if self.collate_fn is default_collate and hasattr(self.dataset, "__getitems__"):
            batch = self.dataset.__getitems__(indices)
            if isinstance(batch, (tuple, list)) and batch and not isinstance(batch[0], (tuple, list, dict)):
                return tuple(_to_host(b) for b in batch)
            return default_collate(batch)
        return self.collate_fn([self.dataset[i] for i in indices])

    def _to_tensors(self, batch):
        leaves = [_to_host(leaf) if not isinstance(leaf, numpy.ndarray) else leaf for leaf in _leaves(batch, [])]
        leaves = [leaf.astype(numpy.int64) if leaf.dtype.kind in "iu" and leaf.dtype != numpy.uint8 else leaf
                  for leaf in leaves]
        moved = _move(leaves, self.device)
        return _rebuild(batch, iter(Tensor(a) for a in moved))

    def __iter__(self):
        epoch, start = self._epoch, self._resume_at
        self._epoch, self._resume_at = epoch + 1, 0
        order = self._order(epoch).tolist()
        for b in range(start, len(self)):
            indices = order[b * self.batch_size:(b + 1) * self.batch_size]
            batch = self._to_tensors(self._fetch(indices))
            self._position = (epoch, b + 1)
            yield batch
        self._position = None

    def state_dict(self) -> dict:
        """``{"seed", "epoch", "batches_done"}``: where the data order stands (plain ints).
        """
        if self._position is not None and self._position[1] < len(self):
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
        if state["batches_done"] > len(self):
            raise ValueError(f"DataLoader.load_state_dict: batches_done={state['batches_done']} but an epoch has "
                             f"only {len(self)} batches")
        self.seed, self._epoch, self._resume_at = int(state["seed"]), int(state["epoch"]), int(state["batches_done"])
        self._position = None


"""``DistributedSampler``: each rank's share of a dataset's indices, reshuffled per epoch by ``set_epoch``.

PyTorch's semantics: the epoch's order is a permutation drawn from ``seed + epoch``
(NumPy's generator here, so the order differs from PyTorch's numbers), padded by
repeating indices (or truncated with ``drop_last``) to a multiple of the number of
replicas; rank r takes every num_replicas-th index starting at r. The union of the
ranks' shares at one step is the same set of samples whatever the world size, which
is what lets a run resume at another world size (docs/distributed.md).
"""

from __future__ import annotations

import math
import numbers

import numpy

__all__ = ["DistributedSampler"]


def _default(value, question, name):
    # NOTE: question: the cupynet.distributed function that gives the default (get_world_size, get_rank)
    if value is not None:
        return value
    from cupynet import distributed  # noqa: PLC0415 - an optional package, loaded when a default is asked for

    if not distributed.is_initialized():
        raise RuntimeError(f"DistributedSampler: pass {name}= or call cupynet.distributed.init_process_group "
                           "first")
    return getattr(distributed, question)()


class DistributedSampler:
    """The indices of ``dataset`` this rank reads, an iterable of ints.

    Args:
        dataset: anything with ``len()``.
        num_replicas: the number of ranks (default: the world size).
        rank: this rank (default: the process group's).
        shuffle: draw a new permutation each epoch (``set_epoch``).
        seed: the shuffle seed; must be the same on every rank.
        drop_last: drop the tail instead of padding it with repeated indices.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False):
        num_replicas = _default(num_replicas, "get_world_size", "num_replicas")
        rank = _default(rank, "get_rank", "rank")
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = bool(shuffle), int(seed), bool(drop_last), 0
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose permutation ``__iter__`` yields (call it at the start of every epoch).

        Args:
            epoch: the epoch number (same on every rank).
        """
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral):
            raise ValueError(f"DistributedSampler.set_epoch: epoch must be an int, got {epoch!r}")
        self.epoch = int(epoch)

    def global_order(self) -> list:
        """The epoch's indices for all ranks, padded or truncated to ``total_size``."""
        n = len(self.dataset)
        if self.shuffle:
            order = numpy.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            return order[:self.total_size]
        pad = self.total_size - n
        return order + (order * math.ceil(pad / n))[:pad] if pad > 0 and n > 0 else order

    def __iter__(self):
        return iter(self.global_order()[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

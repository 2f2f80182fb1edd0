"""Chunk tables for the multi-tensor kernels, built on the host and cached on the device.

A multi-tensor kernel gets one int64 buffer (layout in ``common.cuh``): the data
pointers of every list, the element count of every tensor, and one descriptor
per thread block naming a (tensor, chunk) pair. Building it means a small
host-to-device copy; the cache keys it on ``(data pointer, size, dtype)`` of
every array, so a training loop that passes the same parameters and gradients
every step uploads its tables once.

NOTE: the key holds only what the table contains (pointers and sizes), so a
cached table is correct for any arrays that match the key, even new arrays
that happen to reuse freed memory at the same addresses.
"""

from __future__ import annotations

import collections
import threading

import numpy

from cupynet.amp.kernels.sources import CHUNK_SIZE

__all__ = ["build_host_table", "TableCache", "table_key"]


def table_key(device_id: int, pointer_lists, sizes, dtypes) -> tuple:
    """The cache key of a chunk table: the device, then ``(pointers, size, dtype)`` of every tensor.

    Args:
        device_id: the CUDA device the arrays live on.
        pointer_lists: one list of integer device pointers per kernel list (0 for an absent array).
        sizes: the element count of each tensor.
        dtypes: the dtype of each tensor's main array (the one the kernel is templated on).
    """
    per_tensor = zip(zip(*pointer_lists), sizes, dtypes)
    return (device_id, len(pointer_lists), tuple(per_tensor))


def build_host_table(pointer_lists, sizes) -> tuple[numpy.ndarray, int]:
    """Build the int64 chunk table on the host; return it and its number of chunks (= blocks).

    Args:
        pointer_lists: one list of integer device pointers per kernel list, each as long as ``sizes``.
        sizes: the element count of each tensor.
    """
    sizes = numpy.asarray(sizes, dtype=numpy.int64)
    chunks_per_tensor = -(-sizes // CHUNK_SIZE)
    n_chunks = int(chunks_per_tensor.sum())
    tensor_of_chunk = numpy.repeat(numpy.arange(sizes.size, dtype=numpy.int64), chunks_per_tensor)
    first_chunk = numpy.repeat(numpy.cumsum(chunks_per_tensor) - chunks_per_tensor, chunks_per_tensor)
    chunk_in_tensor = numpy.arange(n_chunks, dtype=numpy.int64) - first_chunk
    descriptors = (tensor_of_chunk << 32) | chunk_in_tensor
    pointers = numpy.asarray(pointer_lists, dtype=numpy.uint64).reshape(-1).view(numpy.int64)
    return numpy.concatenate([pointers, sizes, descriptors]), n_chunks


class TableCache:
    """A small thread-safe LRU cache of device chunk tables.

    Args:
        capacity: how many tables to keep (the least recently used is dropped).
    """

    def __init__(self, capacity: int = 64):
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, build):
        """Return the cached value for ``key``, calling ``build()`` (and caching it) on a miss.

        Args:
            key: a hashable key, see :func:`table_key`.
            build: a function of no arguments returning the value to cache.
        """
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key]
        value = build()
        with self._lock:
            self.misses += 1
            self._entries[key] = value
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        """Drop every cached table and reset the counters.

        Args:
            None.
        """
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self):
        return len(self._entries)

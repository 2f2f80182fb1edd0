"""Multi-tensor launches: one launch over many tensors, one thread block per chunk of a tensor.

A multi-tensor kernel gets one int64 buffer, the chunk table (layout in
``common.cuh``): the data pointers of every list, the element count of every
tensor, and one descriptor per thread block naming a (tensor, chunk) pair.
Building it means a small host-to-device copy; :data:`TABLE_CACHE` keys it on
``(data pointer, size, dtype)`` of every array, so a training loop that passes
the same parameters and gradients every step uploads its tables once.

NOTE: the key holds only what the table contains (pointers and sizes), so a
cached table is correct for any arrays that match the key, even new arrays
that happen to reuse freed memory at the same addresses.

CUDA graphs: a kernel captured into a graph keeps the *address* of its table,
and every replay reads it again. An LRU that later dropped that table would
free memory the graph still reads. So a table used while the current stream
is capturing is *pinned*: it leaves the LRU and is never evicted (``clear()``
drops pins, for tests and teardown). Capture also forbids the synchronous
host-to-device copy that builds a table, so a table must exist before capture:
run the step once first (the warm-up PyTorch's graph capture asks for too).
"""

from __future__ import annotations

import collections
import threading

import numpy

from cupynet.cuda import device
from cupynet.cuda.args import c_int

__all__ = ["CHUNK_SIZE", "BLOCK_THREADS", "TABLE_CACHE", "TableCache", "table_key", "build_host_table",
           "group_by_dtype", "pointers", "launch_chunked"]

CHUNK_SIZE = 65536
"""Elements handled by one thread block of a multi-tensor kernel (PyTorch uses the same)."""

BLOCK_THREADS = 256
"""Threads per block of every multi-tensor kernel (and of the grid-stride kernels)."""


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
    flat_pointers = numpy.asarray(pointer_lists, dtype=numpy.uint64).reshape(-1).view(numpy.int64)
    return numpy.concatenate([flat_pointers, sizes, descriptors]), n_chunks


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
        self._pinned: dict = {}
        self._lock = threading.Lock()

    def get(self, key, build, pin: bool = False):
        """Return the cached value for ``key``, calling ``build()`` (and caching it) on a miss.

        Args:
            key: a hashable key, see :func:`table_key`.
            build: a function of no arguments returning the value to cache.
            pin: the caller is capturing a CUDA graph: keep the value for good (never evicted), and
                refuse to build it (a capture cannot upload one).
        """
        with self._lock:
            if key in self._pinned:
                self.hits += 1
                return self._pinned[key]
            if key in self._entries:
                self.hits += 1
                if pin:
                    self._pinned[key] = self._entries.pop(key)
                    return self._pinned[key]
                self._entries.move_to_end(key)
                return self._entries[key]
        if pin:
            raise RuntimeError("cupynet: a multi-tensor launch met a CUDA graph capture before its chunk table was "
                               "built (building it is a host-to-device copy, which capture forbids); run the "
                               "captured step once before capturing it (a warm-up iteration)")
        value = build()
        with self._lock:
            self.misses += 1
            self._entries[key] = value
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        """Drop every cached table, pinned ones included, and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._pinned.clear()
            self.hits = self.misses = 0

    @property
    def pinned(self) -> int:
        """How many tables are pinned by CUDA graph captures."""
        return len(self._pinned)

    def __len__(self):
        return len(self._entries) + len(self._pinned)


TABLE_CACHE = TableCache(capacity=64)
"""The device chunk tables of every multi-tensor launch; tests read its hits/misses."""


def group_by_dtype(arrays) -> list:
    """Indices of ``arrays`` grouped by dtype, groups in order of first appearance (one launch per group).

    Args:
        arrays: the arrays whose dtypes decide the groups.
    """
    groups: dict = {}
    for i, a in enumerate(arrays):
        groups.setdefault(a.dtype, []).append(i)
    return list(groups.items())


def pointers(arrays, indices) -> list:
    """Device pointers of ``arrays[i]`` for i in ``indices``; null pointers for an absent list (None).

    Args:
        arrays: CuPy arrays, or None.
        indices: which of them.
    """
    return [0] * len(indices) if arrays is None else [arrays[i].data.ptr for i in indices]


def _capturing(cupy) -> bool:
    """Whether the current CUDA stream is capturing a graph."""
    return bool(cupy.cuda.get_current_stream().is_capturing())


def _device_table(pointer_lists, sizes, dtype):
    cupy = device.cupy()
    key = table_key(cupy.cuda.runtime.getDevice(), pointer_lists, sizes, [dtype] * len(sizes))

    def build():
        host, n_chunks = build_host_table(pointer_lists, sizes)
        return cupy.asarray(host), n_chunks  # NOTE: the only host->device copy, once per key

    return TABLE_CACHE.get(key, build, pin=_capturing(cupy))


def launch_chunked(library, filename: str, kernel: str, dtype, pointer_lists, sizes, *args) -> int:
    """Launch a multi-tensor kernel, one block per chunk; no launch when there is no element.

    The kernel is called as ``kernel<T>(table, n_tensors, *args)``.

    Args:
        library: the :class:`~cupynet.cuda.compile.KernelLibrary` holding the kernel.
        filename: its ``.cu`` file.
        kernel: its name.
        dtype: the element dtype it is instantiated for.
        pointer_lists: one list of device pointers per kernel list (see :func:`pointers`).
        sizes: the element count of each tensor.
        *args: the kernel's remaining arguments, already typed (``cupynet.cuda.args``).

    Returns:
        The number of chunks (blocks) launched.
    """
    table, n_chunks = _device_table(pointer_lists, sizes, dtype)
    if n_chunks:
        function = library.get_kernel(filename, kernel, dtype)
        function((n_chunks,), (BLOCK_THREADS,), (table, c_int(len(sizes)), *args))
    return n_chunks

"""Shared memory for CPU arrays: where ``Tensor.share_memory_()`` moves a tensor's values.

A ``SharedBlock`` is an anonymous memory file (``memfd_create`` on Linux, an unlinked temporary file
elsewhere) mapped with ``mmap`` as MAP_SHARED. A shared array is an ordinary NumPy array whose memory
lies in a block (its ``base`` chain ends at the block), so every view of it is shared too, and every
write through any of them is seen by every process that maps the block.

Another process maps the same block from its file descriptor. ``portable`` wraps a shared array in an
object that pickles as "map this descriptor, then take these bytes at this offset, shape, strides and
dtype"; the descriptor travels as ``multiprocessing.reduction.DupFd`` (inherited by a spawned child,
sent over a Unix socket to any other process), which is how ``torch.multiprocessing``'s default
``file_descriptor`` strategy sends storages too. An array that is not shared pickles by value.

Lifetime: a block has no name in any file system, so nothing can be left behind in ``/dev/shm``: the
kernel frees the memory when the last mapping and the last descriptor of it, in every process, are
closed (each block holds one descriptor, closed when the block is garbage collected).
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from multiprocessing import reduction

import numpy

__all__ = ["SharedBlock", "block_of", "is_shared", "share_array", "portable"]


def _anonymous_file(nbytes: int) -> int:
    """A descriptor of a new, nameless file of ``nbytes`` zero bytes, in memory where the OS allows."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("cupynet-shared", os.MFD_CLOEXEC)
    else:  # NOTE: macOS and BSDs: an unlinked temporary file, in /dev/shm when there is one
        fd, path = tempfile.mkstemp(prefix="cupynet-shared-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        os.unlink(path)
    os.ftruncate(fd, nbytes)
    return fd


class SharedBlock(mmap.mmap):
    """A MAP_SHARED mapping of a nameless memory file; it owns the file's descriptor (closed with it).

    Made by ``SharedBlock.allocate(nbytes)`` in the owner and by unpickling a ``portable`` array elsewhere.

    Args:
        fd: the descriptor of the memory file (the block takes ownership of it).
        nbytes: its size in bytes (at least 1).
    """

    def __new__(cls, fd: int, nbytes: int):
        block = super().__new__(cls, fd, nbytes)
        block.fd, block.nbytes = fd, nbytes
        block.address = numpy.frombuffer(block, numpy.uint8, count=1).ctypes.data
        block.reference = _BlockReference(fd, nbytes)
        weakref.finalize(block, os.close, fd)
        return block

    @classmethod
    def allocate(cls, nbytes: int) -> SharedBlock:
        """A new block of ``nbytes`` zero bytes (one byte for an empty array: a mapping cannot be empty).

        Args:
            nbytes: the size in bytes.
        """
        nbytes = max(int(nbytes), 1)
        return cls(_anonymous_file(nbytes), nbytes)


class _BlockReference:
    """What a pickler sends for a block: its descriptor (as ``DupFd``) and size.

    NOTE: one object per block, so that two views of one block in one message are pickled once (the
    pickler's memo) and the receiver maps the block once: a spawned child inherits a descriptor under
    its parent's number, and two references to it would otherwise both try to own it.
    """

    def __init__(self, fd: int, nbytes: int):
        self.fd, self.nbytes = fd, nbytes

    def __reduce__(self):
        return _open_block, (reduction.DupFd(self.fd), self.nbytes)


def _open_block(dup_fd, nbytes: int) -> SharedBlock:
    return SharedBlock(dup_fd.detach(), nbytes)


def block_of(array):
    """The ``SharedBlock`` whose memory ``array`` lies in, or None (CuPy arrays and ordinary NumPy arrays).

    Args:
        array: a NumPy or CuPy array.
    """
    base = array
    while isinstance(base, numpy.ndarray):
        base = base.base
    return base if isinstance(base, SharedBlock) else None


def is_shared(array) -> bool:
    """Whether ``array``'s memory lies in a shared block.

    Args:
        array: a NumPy or CuPy array.
    """
    return block_of(array) is not None


def share_array(array: numpy.ndarray) -> numpy.ndarray:
    """``array``'s values in a new shared block (same dtype, shape and values; C-contiguous), or ``array``
    itself when it is shared already.

    Args:
        array: a NumPy array.
    """
    if not isinstance(array, numpy.ndarray):
        raise TypeError(f"share_array: expected a NumPy array (CPU memory), got {type(array).__name__}")
    if is_shared(array):
        return array
    shared = numpy.ndarray(array.shape, array.dtype, buffer=SharedBlock.allocate(array.nbytes))
    shared[...] = array
    return shared


class _SharedView:
    """A shared array as a pickler sends it: its block's reference, byte offset, shape, strides, dtype."""

    def __init__(self, array: numpy.ndarray, block: SharedBlock):
        self.array, self.block = array, block

    def __reduce__(self):
        offset = self.array.__array_interface__["data"][0] - self.block.address
        return _rebuild_view, (self.block.reference, offset, self.array.shape, self.array.strides, self.array.dtype)


def _rebuild_view(block: SharedBlock, offset: int, shape, strides, dtype) -> numpy.ndarray:
    return numpy.ndarray(shape, dtype, buffer=block, offset=offset, strides=strides)


def portable(array):
    """What to pickle for ``array`` to cross a process boundary: a reference to its shared memory when it
    is shared (the receiver maps the same memory), else the array itself (sent by value).

    Args:
        array: a NumPy or CuPy array.
    """
    block = block_of(array)
    return array if block is None else _SharedView(array, block)

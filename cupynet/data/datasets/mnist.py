"""MNIST and Fashion-MNIST from local IDX files (raw or .gz), checked byte by byte before use.

IDX layout: a big-endian uint32 magic ``0x000008DD`` (0x08 = unsigned bytes,
DD = number of dimensions), then one big-endian uint32 per dimension, then the
data. Images are ``0x00000803`` (N, rows, cols); labels ``0x00000801`` (N,).
"""

from __future__ import annotations

import gzip
import math
import os
import pathlib
import zlib

import numpy

from cupynet.data.dataset import ArrayDataset

__all__ = ["MNIST", "FashionMNIST", "read_idx", "read_mnist", "find_idx"]

_IMAGES_MAGIC, _LABELS_MAGIC = 0x00000803, 0x00000801
IMAGE_SHAPE = (28, 28)  # rows, cols of every MNIST-layout image; another shape is refused, not trained on


_CHUNK = 1 << 20  # NOTE: a .gz is inflated this many bytes at a time, so a lying header costs at most this much
# NOTE: deflate's largest ratio: a 258-byte match costs at least 2 bits, so 1 byte inflates to at most 1032;
# a header declaring more than 1032 times the .gz file's size cannot be honest and is refused before inflating
_MAX_DEFLATE_RATIO = 1032


def _header(owner, path, f, magic, ndim) -> list:
    """The dimensions in the IDX header at the start of ``f``, after checking its magic number."""
    head = f.read(4)
    if len(head) < 4:
        raise ValueError(f"{owner}: {path}: file is {len(head)} bytes, too short for an IDX header")
    found = int.from_bytes(head, "big")
    if found != magic:
        hint = " (it looks gzip-compressed: name it .gz)" if head[:2] == b"\x1f\x8b" else ""
        raise ValueError(f"{owner}: {path}: expected IDX magic 0x{magic:08X} but found 0x{found:08X}{hint}")
    raw_dims = f.read(4 * ndim)
    if len(raw_dims) < 4 * ndim:
        raise ValueError(f"{owner}: {path}: truncated header ({4 + len(raw_dims)} bytes, expected {4 + 4 * ndim})")
    return [int.from_bytes(raw_dims[4 * i:4 * i + 4], "big") for i in range(ndim)]


def _check_dims(owner, path, dims, expected) -> None:
    """Check the header's dims against the data set's fixed ones (sizes are Python ints: no overflow)."""
    for axis, (dim, want) in enumerate(zip(dims, expected)):
        if want is not None and dim != want:
            raise ValueError(f"{owner}: {path}: dimensions {dims}: dimension {axis} is {dim}, expected {want} "
                             f"(the shape {tuple('N' if w is None else w for w in expected)} of this data set)")
    if dims and dims[0] == 0:
        raise ValueError(f"{owner}: {path}: dimensions {dims} hold no samples; expected at least one")


def _read_raw(owner, path, f, dims, size) -> numpy.ndarray:
    """Read an uncompressed payload straight into its array; the file's size is checked before allocating."""
    header, payload = 4 + 4 * len(dims), math.prod(dims)
    if size != header + payload:
        raise ValueError(f"{owner}: {path}: dimensions {dims} need {header + payload} bytes but the file has {size}")
    data = numpy.empty(payload, numpy.uint8)
    if f.readinto(memoryview(data)) != payload:
        raise ValueError(f"{owner}: {path}: the file changed size while it was read")
    return data


def _read_gz(owner, path, f, dims, size) -> numpy.ndarray:
    """Inflate exactly the declared payload, a chunk at a time: never more than it plus one chunk."""
    header, payload = 4 + 4 * len(dims), math.prod(dims)
    if header + payload > _MAX_DEFLATE_RATIO * size:
        raise ValueError(f"{owner}: {path}: dimensions {dims} need {header + payload} bytes, but a "
                         f"{size}-byte gzip file inflates to at most {_MAX_DEFLATE_RATIO * size}")
    data = bytearray()
    while len(data) < payload:
        chunk = f.read(min(_CHUNK, payload - len(data)))
        if not chunk:
            raise ValueError(f"{owner}: {path}: dimensions {dims} need {header + payload} bytes but the file has "
                             f"{header + len(data)} (inflated)")
        data += chunk
    if f.read(1):
        raise ValueError(f"{owner}: {path}: dimensions {dims} need {header + payload} bytes but the file inflates "
                         "to more")
    return numpy.frombuffer(data, numpy.uint8)


def read_idx(owner: str, path, magic: int, ndim: int, expected=None) -> numpy.ndarray:
    """Read an unsigned-byte IDX file, validating magic number, dimensions and size.

    Memory is bounded by what the header declares: an uncompressed file's size is checked against it
    before anything is allocated, and a ``.gz`` is inflated a chunk at a time, stopping at the declared
    size (plus one byte, to notice a longer stream). Every defect is a ValueError naming the file.

    Args:
        owner: the dataset name, for messages.
        path: the file (``.gz`` is decompressed).
        magic: the expected magic number (0x00000803 images, 0x00000801 labels).
        ndim: the expected number of dimensions.
        expected: the expected dimensions, None where any size is allowed (e.g. ``(None, 28, 28)``); None: any.
    """
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as raw:
            size = os.fstat(raw.fileno()).st_size
            f = gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw
            dims = _header(owner, path, f, magic, ndim)
            _check_dims(owner, path, dims, expected or [None] * ndim)
            read = _read_gz if path.suffix == ".gz" else _read_raw
            return read(owner, path, f, dims, size).reshape(dims)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{owner}: {path}: not a valid gzip file ({type(exc).__name__}: {exc})") from None
    except OSError as exc:
        raise ValueError(f"{owner}: {path}: cannot read the file ({exc})") from exc


class MNIST(ArrayDataset):
    """MNIST digits from IDX files: images ``(N, 1, 28, 28)`` float32 in [0, 1], int64 labels.

    Files are looked for in ``root``, ``root/<Name>/raw`` and ``root/<Name>`` (torchvision's layout), each
    as ``train-images-idx3-ubyte`` or ``train-images-idx3-ubyte.gz`` (``t10k-...`` for the test split).

    Args:
        root: the directory holding the files.
        train: the training split (60000 images) or the test split (10000).
    """

    num_classes = 10

    def __init__(self, root, train=True):
        images, labels = read_mnist(type(self).__name__, root, train)
        data = (images.astype(numpy.float32) / numpy.float32(255.0))[:, None]
        super().__init__(data, labels.astype(numpy.int64))


def read_mnist(name: str, root, train: bool = True) -> tuple:
    """The raw uint8 images ``(N, rows, cols)`` and uint8 labels ``(N,)`` of an MNIST-layout dataset, checked.

    Args:
        name: the dataset's folder name and the name in messages (``"MNIST"``, ``"FashionMNIST"``).
        root: the directory holding the files (or ``root/<name>/raw``, ``root/<name>`` holding them).
        train: the training split (``train-*``) or the test split (``t10k-*``).
    """
    prefix = "train" if train else "t10k"
    images_path = find_idx(name, root, f"{prefix}-images-idx3-ubyte")
    labels_path = find_idx(name, root, f"{prefix}-labels-idx1-ubyte")
    images = read_idx(name, images_path, _IMAGES_MAGIC, 3, (None, *IMAGE_SHAPE))
    labels = read_idx(name, labels_path, _LABELS_MAGIC, 1)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{name}: {images_path} has {images.shape[0]} images but {labels_path} has "
                         f"{labels.shape[0]} labels")
    if labels.size and int(labels.max()) >= MNIST.num_classes:
        raise ValueError(f"{name}: {labels_path}: label {int(labels.max())} is out of range; expected 0..9")
    return images, labels


def find_idx(name: str, root, stem: str) -> pathlib.Path:
    """The path of IDX file ``stem`` (raw or ``.gz``) in ``root``, ``root/<name>/raw`` or ``root/<name>``.

    Args:
        name: the dataset's folder name (``"MNIST"``), also used in the error message.
        root: the directory to look in.
        stem: the file name without ``.gz``, e.g. ``"train-images-idx3-ubyte"``.
    """
    root = pathlib.Path(root)
    folders = [root, root / name / "raw", root / name]
    for folder in folders:
        for candidate in (folder / stem, folder / f"{stem}.gz"):
            if candidate.is_file():
                return candidate
    where = "the directory does not exist" if not root.is_dir() else "not found"
    raise FileNotFoundError(f"{name}: {root}: {where}; expected {stem} or {stem}.gz in "
                            f"{', '.join(str(f) for f in folders)} (train-images-idx3-ubyte, "
                            "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte)")


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): the same IDX layout and file names as MNIST, 10 clothing classes.

    Args:
        root: the directory holding the files.
        train: the training split or the test split.
    """

"""MNIST and Fashion-MNIST from local IDX files (raw or .gz), checked byte by byte before use.

IDX layout: a big-endian uint32 magic ``0x000008DD`` (0x08 = unsigned bytes,
DD = number of dimensions), then one big-endian uint32 per dimension, then the
data. Images are ``0x00000803`` (N, rows, cols); labels ``0x00000801`` (N,).
"""

from __future__ import annotations

import gzip
import pathlib

import numpy

from cupynet.data.dataset import ArrayDataset

__all__ = ["MNIST", "FashionMNIST", "read_idx", "read_mnist", "find_idx"]

_IMAGES_MAGIC, _LABELS_MAGIC = 0x00000803, 0x00000801


def _read_bytes(path: pathlib.Path) -> bytes:
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()


def read_idx(owner: str, path, magic: int, ndim: int) -> numpy.ndarray:
    """Read an unsigned-byte IDX file, validating magic number, dimensions and size.

    Args:
        owner: the dataset name, for messages.
        path: the file (``.gz`` is decompressed).
        magic: the expected magic number (0x00000803 images, 0x00000801 labels).
        ndim: the expected number of dimensions.
    """
    path = pathlib.Path(path)
    try:
        raw = _read_bytes(path)
    except (OSError, EOFError) as exc:
        raise ValueError(f"{owner}: {path}: cannot read the file ({exc})") from exc
    if len(raw) < 4:
        raise ValueError(f"{owner}: {path}: file is {len(raw)} bytes, too short for an IDX header")
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(f"{owner}: {path}: expected IDX magic 0x{magic:08X} but found 0x{found:08X}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{owner}: {path}: truncated header ({len(raw)} bytes, expected at least {header})")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    expected = header + int(numpy.prod(dims, dtype=numpy.int64))
    if len(raw) != expected:
        raise ValueError(f"{owner}: {path}: dimensions {dims} need {expected} bytes but the file has {len(raw)}")
    return numpy.frombuffer(raw, dtype=numpy.uint8, offset=header).reshape(dims)


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
    images = read_idx(name, images_path, _IMAGES_MAGIC, 3)
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

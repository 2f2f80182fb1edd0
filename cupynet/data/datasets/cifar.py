"""CIFAR-10 from the python pickle batches, read with a RESTRICTED unpickler.

A pickle can name any Python callable and run it while loading (e.g.
``os.system``). The CIFAR batches only need NumPy's array reconstruction, so
``find_class`` allows exactly those few globals and refuses everything else:
a hostile file raises ``pickle.UnpicklingError`` instead of executing code.
"""

from __future__ import annotations

import io
import pathlib
import pickle

import numpy

from cupynet.data.dataset import ArrayDataset

__all__ = ["CIFAR10", "restricted_load", "read_cifar10"]

_TRAIN_FILES = [f"data_batch_{i}" for i in range(1, 6)]
_TEST_FILES = ["test_batch"]


def _safe_dtype(*args, **kwargs):
    dtype = numpy.dtype(*args, **kwargs)
    if dtype.hasobject:
        raise pickle.UnpicklingError(f"object dtype {dtype} is not allowed in a dataset pickle")
    return dtype


def _latin1_encode(text, encoding="latin1"):
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return text.encode("latin1")


def _allowed_globals() -> dict:
    # NOTE: NumPy 2 moved numpy.core to numpy._core; old pickles name the old path, both map to the same function
    multiarray, numeric = numpy._core.multiarray, numpy._core.numeric
    allowed = {}
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = multiarray._reconstruct
        allowed[(module, "scalar")] = multiarray.scalar
    for module in ("numpy.core.numeric", "numpy._core.numeric"):
        allowed[(module, "_frombuffer")] = numeric._frombuffer
    allowed[("numpy", "ndarray")] = numpy.ndarray
    allowed[("numpy", "dtype")] = _safe_dtype
    allowed[("_codecs", "encode")] = _latin1_encode
    return allowed


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        """Return an allowed global, or raise UnpicklingError for anything else.

        Args:
            module: the module name in the pickle.
            name: the global's name.
        """
        allowed = _allowed_globals()
        if (module, name) not in allowed:
            raise pickle.UnpicklingError(
                f"refusing to load global {module}.{name}: only NumPy array reconstruction is allowed in a "
                "dataset pickle (the file may be corrupt or malicious)")
        return allowed[(module, name)]


def restricted_load(path) -> object:
    """Unpickle a file allowing only NumPy array reconstruction (bytes keys kept, as CIFAR's batches have).

    Args:
        path: the pickle file.
    """
    data = pathlib.Path(path).read_bytes()
    return _RestrictedUnpickler(io.BytesIO(data), encoding="bytes").load()


def _field(batch, name):
    for key in (name.encode(), name):
        if key in batch:
            return batch[key]
    return None


def _read_batch(path) -> tuple:
    try:
        batch = restricted_load(path)
    except pickle.UnpicklingError as exc:
        raise ValueError(f"CIFAR10: {path}: {exc}") from exc
    except Exception as exc:  # NOTE: truncated/garbled pickles raise many types
        raise ValueError(f"CIFAR10: {path}: not a readable CIFAR-10 batch ({type(exc).__name__}: {exc})") from exc
    data, labels = (_field(batch, "data"), _field(batch, "labels")) if isinstance(batch, dict) else (None, None)
    if not isinstance(data, numpy.ndarray) or labels is None:
        raise ValueError(f"CIFAR10: {path}: expected a dict with 'data' (uint8 array) and 'labels'")
    labels = numpy.asarray(labels, dtype=numpy.int64)
    if data.dtype != numpy.uint8 or data.ndim != 2 or data.shape[1] != 3072 or data.shape[0] != labels.shape[0]:
        raise ValueError(f"CIFAR10: {path}: data must be uint8 of shape (N, 3072) with N labels, got "
                         f"{data.dtype} {data.shape} and {labels.shape[0]} labels")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"CIFAR10: {path}: labels must be in 0..9, got {int(labels.min())}..{int(labels.max())}")
    return data, labels


class CIFAR10(ArrayDataset):
    """CIFAR-10 from ``data_batch_1..5`` / ``test_batch``: ``(N, 3, 32, 32)`` float32 in [0, 1], int64 labels.

    Args:
        root: directory holding the batches, or holding ``cifar-10-batches-py`` with them.
        train: the 5 training batches (50000 images) or the test batch (10000).
    """

    def __init__(self, root, train=True):
        data, labels = read_cifar10(root, train)
        super().__init__(data.astype(numpy.float32) / numpy.float32(255.0), labels)


def read_cifar10(root, train: bool = True) -> tuple:
    """The raw uint8 images ``(N, 3, 32, 32)`` (channels first, as stored) and int64 labels of CIFAR-10.

    Args:
        root: directory holding the batches, or holding ``cifar-10-batches-py`` with them.
        train: the 5 training batches or the test batch.
    """
    names = _TRAIN_FILES if train else _TEST_FILES
    folder = _folder(pathlib.Path(root), names)
    parts = [_read_batch(folder / name) for name in names]
    return numpy.concatenate([p[0] for p in parts]).reshape(-1, 3, 32, 32), numpy.concatenate([p[1] for p in parts])


def _folder(root, names) -> pathlib.Path:
    for folder in (root, root / "cifar-10-batches-py"):
        if all((folder / n).is_file() for n in names):
            return folder
    where = "does not exist" if not root.is_dir() else "is missing files"
    raise FileNotFoundError(f"CIFAR10: {root} {where}; expected {', '.join(names)} in {root} or "
                            f"{root / 'cifar-10-batches-py'}")

"""CIFAR-10 from the python pickle batches, read with a RESTRICTED unpickler.

A pickle can name any Python callable and run it while loading (e.g.
``os.system``). The CIFAR batches only need NumPy's array reconstruction, so
``find_class`` allows exactly those few globals and refuses everything else:
a hostile file raises ``pickle.UnpicklingError`` instead of executing code.

Memory is bounded too: a batch file may hold at most ``MAX_BATCH_BYTES``, and before
unpickling, its opcodes are scanned (``pickletools``) and the objects they would build are
priced (``_OBJECT_COST`` bytes each plus their data); a file whose objects would take more
than ``MAX_COST_RATIO`` times its size (``]]]]...``: 1 byte per empty list, 56 bytes in
memory) is refused before anything is built.
"""

from __future__ import annotations

import io
import pathlib
import pickle
import pickletools

import numpy

from cupynet.data.dataset import ArrayDataset

__all__ = ["CIFAR10", "restricted_load", "read_cifar10"]

MAX_BATCH_BYTES = 256 * 2 ** 20  # a real batch (10000 images) is about 31 MB
MAX_OPCODES = 2 ** 20  # a real batch has about 40000 (a label and a file name per image)
MAX_COST_RATIO = 4  # the objects a batch builds may take at most this many times the file's size (plus 1 MiB)
# NOTE: the bytes an object costs beyond its data: a small list, dict, str or int is 28..64 bytes in CPython,
# plus a pointer to it in its container
_OBJECT_COST = 72
_PUSHES_NOTHING = {"MARK", "STOP", "PROTO", "FRAME", "POP", "POP_MARK", "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE",
                   "APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"}
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


def _check_cost(data: bytes) -> None:
    """Refuse a pickle whose opcodes would build objects far larger than the file (before building any)."""
    limit, cost, count = MAX_COST_RATIO * len(data) + 2 ** 20, 0, 0
    for opcode, arg, _ in pickletools.genops(data):
        count += 1
        if count > MAX_OPCODES:
            raise pickle.UnpicklingError(f"more than {MAX_OPCODES} pickle opcodes; a CIFAR-10 batch has about 40000")
        if opcode.name not in _PUSHES_NOTHING:
            cost += _OBJECT_COST + (len(arg) if isinstance(arg, (bytes, bytearray, str)) else 0)
        elif opcode.name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
            cost += _OBJECT_COST // 4  # NOTE: a memo entry: a dict slot and an int key
        if cost > limit:
            raise pickle.UnpicklingError(f"its objects would take more than {MAX_COST_RATIO} times the file's "
                                         f"{len(data)} bytes (plus 1 MiB); a CIFAR-10 batch is mostly one array")


def restricted_load(path) -> object:
    """Unpickle a file allowing only NumPy array reconstruction (bytes keys kept, as CIFAR's batches have).

    The file's size (at most ``MAX_BATCH_BYTES``) and the objects its opcodes would build are checked first.

    Args:
        path: the pickle file.
    """
    path = pathlib.Path(path)
    size = path.stat().st_size
    if size > MAX_BATCH_BYTES:
        raise pickle.UnpicklingError(f"the file has {size} bytes; a dataset batch may have at most "
                                     f"{MAX_BATCH_BYTES} (a CIFAR-10 batch has about 31 MB)")
    data = path.read_bytes()
    _check_cost(data)
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
    if not isinstance(data, numpy.ndarray) or not isinstance(labels, (list, tuple, numpy.ndarray)):
        raise ValueError(f"CIFAR10: {path}: expected a dict with 'data' (uint8 array) and 'labels' (a list)")
    try:
        labels = numpy.asarray(labels, dtype=numpy.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"CIFAR10: {path}: labels must be a list of ints 0..9 ({exc})") from None
    if labels.ndim != 1:
        raise ValueError(f"CIFAR10: {path}: labels must be a flat list of ints, got shape {labels.shape}")
    if data.dtype != numpy.uint8 or data.ndim != 2 or data.shape[1] != 3072 or data.shape[0] != labels.shape[0]:
        raise ValueError(f"CIFAR10: {path}: data must be uint8 of shape (N, 3072) with N labels, got "
                         f"{data.dtype} {data.shape} and {labels.shape[0]} labels")
    if data.shape[0] == 0:
        raise ValueError(f"CIFAR10: {path}: holds no images; expected at least one")
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

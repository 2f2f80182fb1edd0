"""``save`` / ``load``: checkpoints that are data, never code.

File format (version 1), documented in docs/checkpoints.md:

* a ZIP archive, entries stored uncompressed (``ZIP_STORED``);
* ``manifest.json``: ``{"format": "cupynet", "version": 1, "tree": ..., "arrays": [...]}``
  where ``tree`` is the saved object as tagged JSON (so int dict keys, tuples and
  non-finite floats survive) and each array entry gives ``file``, ``dtype``,
  ``shape``, ``nbytes``, ``crc32`` and the ``device`` it was saved from;
* ``arrays/N.bin``: the raw little-endian bytes of array N in C order. bfloat16
  and float16 are stored bit for bit.

Loading never unpickles and never executes anything. Every size in the manifest
is checked against the archive before any memory is allocated, so a hostile file
cannot make us allocate more than its own size.

Writes are atomic: a temporary file in the same directory, flush + fsync,
``os.replace`` over the old file, fsync of the directory. A crash at any moment
leaves either the old file or the new one, plus at worst a ``.*.tmp-*`` file
that loaders and ``Checkpoint.latest()`` ignore.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
import zipfile
import zlib

import numpy

from . import backend, dtypes
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError", "FORMAT_VERSION", "atomic_write", "TEMP_MARKER"]

FORMAT_VERSION = 1
TEMP_MARKER = ".tmp-"
_MAX_NDIM = 32
_ALLOWED_DTYPES = {str(d): d for d in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8,
                                       dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.bool_)}


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: names the file and what is wrong with it."""


# ---- writing --------------------------------------------------------------------------------------
class _Encoder:
    """Turns a nested object into tagged JSON plus a list of arrays."""

    def __init__(self):
        self.arrays = []

    def encode(self, obj, path="obj"):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"__float__": repr(obj)}
        if isinstance(obj, Tensor):
            return {"__tensor__": self._add(obj.data), "requires_grad": obj.requires_grad}
        if isinstance(obj, numpy.generic):
            return {"__scalar__": str(obj.dtype), "value": self.encode(obj.item(), path)}
        if _is_array(obj):
            return {"__ndarray__": self._add(obj)}
        if isinstance(obj, numpy.dtype):
            return {"__dtype__": str(obj)}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            return {"__list__": items} if isinstance(obj, list) else {"__tuple__": items}
        if isinstance(obj, dict):
            return {"__dict__": [[self.encode(k, f"{path} key"), self.encode(v, f"{path}[{k!r}]")]
                                 for k, v in obj.items()]}
        raise TypeError(f"save: cannot save {path} of type {type(obj).__name__}; checkpoints hold tensors, arrays, "
                        "numbers, strings, None, lists, tuples and dicts (no pickled objects)")

    def _add(self, array):
        self.arrays.append(array)
        return len(self.arrays) - 1


def _is_array(obj):
    return isinstance(obj, numpy.ndarray) or type(obj).__module__.startswith("cupy")


def _host_array(array):
    # NOTE: not numpy.ascontiguousarray, which turns a 0-d array into shape (1,)
    host = numpy.asarray(backend.to_numpy(array), order="C")
    if host.dtype.byteorder == ">":
        host = host.astype(host.dtype.newbyteorder("<"))
    return host


def save(obj, path):
    """Save tensors, arrays, numbers, strings and None in nested dicts/lists/tuples to ``path`` atomically.

    Args:
        obj: the object (state dicts of models, optimizers, schedulers, scalers, ...).
        path: the file to write (replaced atomically if it exists).
    """
    encoder = _Encoder()
    tree = encoder.encode(obj)
    for array in encoder.arrays:
        if str(array.dtype) not in _ALLOWED_DTYPES:
            raise TypeError(f"save: arrays of dtype {array.dtype} are not supported")

    def write(f):
        entries = []
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for i, array in enumerate(encoder.arrays):
                entries.append(_write_array(zf, i, array))
                _test_hook_mid_save(path)
            # NOTE: the manifest goes last, so it can carry the CRC-32 that zipfile
            # computed while streaming each array (one pass over the data, no copy).
            manifest = {"format": "cupynet", "version": FORMAT_VERSION, "tree": tree, "arrays": entries,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            zf.writestr("manifest.json", json.dumps(manifest))

    atomic_write(path, write)


def _write_array(zf, index, array):
    host = _host_array(array)
    name = f"arrays/{index}.bin"
    with zf.open(zipfile.ZipInfo(name), mode="w", force_zip64=host.nbytes > 2 ** 31) as out:
        out.write(memoryview(host.reshape(-1).view(numpy.uint8)))
    info = zf.getinfo(name)
    return {"file": name, "dtype": str(host.dtype), "shape": list(host.shape), "nbytes": int(host.nbytes),
            "crc32": info.CRC, "device": str(backend.device_of_array(array))}


def _test_hook_mid_save(path):
    # NOTE: tests set CUPYNET_TEST_SAVE_STALL to a file name: the save announces
    # that it is mid-write by creating the file, then stalls, so a test can
    # SIGKILL it at exactly this point. Unset (always, in real use) it costs one lookup.
    flag = os.environ.get("CUPYNET_TEST_SAVE_STALL")
    if flag and not os.path.exists(flag):
        with open(flag, "w") as f:
            f.write(str(path))
        time.sleep(60)


def atomic_write(path, write_fn):
    """Write a file atomically: temp file beside it, flush + fsync, rename over ``path``, fsync the directory.

    Args:
        path: the destination.
        write_fn: called with an open binary file object to write the content.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}{TEMP_MARKER}", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories; the rename is still atomic
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---- reading --------------------------------------------------------------------------------------
def load(path, map_location=None):
    """Load an object saved by ``save``; nothing in the file is executed.

    Args:
        path: the checkpoint file.
        map_location: ``"cpu"``, ``"cuda"``, a Device, or None to restore each array to the device it was
            saved from (a clear error if that device is not available here).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load: {path} does not exist or is not a file")
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"PK\x03\x04":
        raise CheckpointError(f"load: {path} is not a cupynet checkpoint ({_describe_head(head)}); "
                              "cupynet never unpickles files")
    size = os.path.getsize(path)
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = _read_manifest(zf, path)
            arrays = [_read_array(zf, path, entry, i, size) for i, entry in enumerate(manifest["arrays"])]
            target = backend.device(map_location) if map_location is not None else None
            return _Decoder(path, arrays, target).decode(manifest["tree"])
    except zipfile.BadZipFile as error:
        raise CheckpointError(f"load: {path} is damaged (truncated or corrupted archive: {error})") from None


def _describe_head(head):
    if head[:1] == b"\x80":
        return "it looks like a Python pickle"
    if not head:
        return "it is empty"
    return f"it starts with bytes {head!r}, not a ZIP archive"


def _read_manifest(zf, path):
    try:
        info = zf.getinfo("manifest.json")
    except KeyError:
        raise CheckpointError(f"load: {path} has no manifest.json; not a cupynet checkpoint") from None
    if info.file_size > 64 * 2 ** 20:
        raise CheckpointError(f"load: {path}: manifest.json claims {info.file_size} bytes (limit 64 MiB)")
    try:
        manifest = json.loads(zf.read(info).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"load: {path}: manifest.json is not valid JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "cupynet":
        raise CheckpointError(f"load: {path}: manifest.json is not a cupynet manifest")
    if manifest.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"load: {path}: format version {manifest.get('version')!r} is not supported "
                              f"(this cupynet reads version {FORMAT_VERSION})")
    if not isinstance(manifest.get("arrays"), list) or "tree" not in manifest:
        raise CheckpointError(f"load: {path}: manifest.json lacks 'arrays' or 'tree'")
    return manifest


def _read_array(zf, path, entry, index, archive_size):
    where = f"load: {path}: array {index}"
    if not isinstance(entry, dict):
        raise CheckpointError(f"{where}: manifest entry is not an object")
    name, dtype_name, shape = entry.get("file"), entry.get("dtype"), entry.get("shape")
    if name != f"arrays/{index}.bin":
        raise CheckpointError(f"{where}: manifest points at {name!r}, expected 'arrays/{index}.bin' inside the archive")
    if dtype_name not in _ALLOWED_DTYPES:
        raise CheckpointError(f"{where}: unsupported dtype {dtype_name!r}")
    if not isinstance(shape, list) or len(shape) > _MAX_NDIM or \
            not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise CheckpointError(f"{where}: invalid shape {shape!r}")
    dtype = _ALLOWED_DTYPES[dtype_name]
    nbytes = dtype.itemsize * math.prod(shape)
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise CheckpointError(f"{where}: {name} is missing from the archive") from None
    # NOTE: check every claimed size against the real file BEFORE reading, so a
    # hostile manifest cannot make us allocate more than the file's own size.
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != nbytes or info.compress_size != nbytes \
            or nbytes > archive_size:
        raise CheckpointError(f"{where}: shape {tuple(shape)} of {dtype_name} needs {nbytes} bytes but the archive "
                              f"holds {info.file_size} (stored {info.compress_size}, file size {archive_size})")
    raw = zf.read(info)  # zipfile verifies the entry's CRC-32 here
    if zlib.crc32(raw) != entry.get("crc32"):
        raise CheckpointError(f"{where}: checksum mismatch (the file is corrupted)")
    return numpy.frombuffer(raw, dtype=dtype).reshape(shape).copy(), entry.get("device", "cpu")


class _Decoder:
    """Rebuilds the saved object from tagged JSON and the arrays, on the requested device."""

    def __init__(self, path, arrays, target):
        self.path, self.arrays, self.target = path, arrays, target

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            raise CheckpointError(f"load: {self.path}: malformed tree (bare list)")
        if not isinstance(node, dict) or len(node) == 0:
            raise CheckpointError(f"load: {self.path}: malformed tree node {node!r:.80}")
        tag = next(iter(node))
        handler = getattr(self, "_" + tag.strip("_"), None) if tag.startswith("__") else None
        if handler is None:
            raise CheckpointError(f"load: {self.path}: unknown tree tag {tag!r}")
        return handler(node)

    def _list(self, node):
        return [self.decode(v) for v in node["__list__"]]

    def _tuple(self, node):
        return tuple(self.decode(v) for v in node["__tuple__"])

    def _dict(self, node):
        return {_hashable(self.decode(k)): self.decode(v) for k, v in node["__dict__"]}

    def _float(self, node):
        if node["__float__"] not in ("inf", "-inf", "nan"):
            raise CheckpointError(f"load: {self.path}: bad float {node['__float__']!r}")
        return float(node["__float__"])

    def _dtype(self, node):
        return dtypes.as_dtype(node["__dtype__"])

    def _scalar(self, node):
        if node["__scalar__"] not in _ALLOWED_DTYPES:
            raise CheckpointError(f"load: {self.path}: bad scalar dtype {node['__scalar__']!r}")
        return _ALLOWED_DTYPES[node["__scalar__"]].type(self.decode(node["value"]))

    def _array_at(self, index):
        if not isinstance(index, int) or not 0 <= index < len(self.arrays):
            raise CheckpointError(f"load: {self.path}: tree refers to array {index!r}, which does not exist")
        host, saved_device = self.arrays[index]
        device = self.target if self.target is not None else self._saved_device(saved_device)
        if device.type == "cpu":
            return host
        with device.xp.cuda.Device(device.index):
            return device.xp.asarray(host)

    def _saved_device(self, name):
        try:
            return backend.device(name)
        except (RuntimeError, ValueError) as error:
            raise RuntimeError(f"load: {self.path} holds arrays saved on {name}, which is not usable here "
                               f"({error}); pass map_location='cpu'") from None

    def _ndarray(self, node):
        return self._array_at(node["__ndarray__"])

    def _tensor(self, node):
        t = Tensor(self._array_at(node["__tensor__"]))
        if node.get("requires_grad"):
            t.requires_grad = True
        return t


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


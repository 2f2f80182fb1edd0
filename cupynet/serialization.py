"""``save`` / ``load``: checkpoints that are data, never code.

File format (version 1), documented in docs/checkpoints.md:

* a ZIP archive, entries stored uncompressed (``ZIP_STORED``);
* ``manifest.json``: ``{"format": "cupynet", "version": 2, "tree": ..., "arrays": [...]}``
  where ``tree`` is the saved object as tagged JSON (so int dict keys, tuples and
  non-finite floats survive) and each array entry gives ``file``, ``dtype``,
  ``shape``, ``nbytes``, ``crc32`` and the ``device`` it was saved from;
* ``arrays/N.bin``: the raw little-endian bytes of array N in C order. bfloat16
  and float16 are stored bit for bit.

Objects (a whole ``nn.Module``, ``torch.save(model, f)``) are data too: the tree names the
object's class by module and qualified name and holds its ``__dict__`` as a tree; a function or
class held as a value is a reference by name. Loading rebuilds an object only when its class is
allow-listed (``add_safe_globals`` / ``safe_globals``, as torch's ``weights_only`` loader does),
with ``cls.__new__(cls)`` and its ``__dict__`` filled in: no ``__init__``, no ``__setstate__``,
no ``__reduce__``. A tensor or object met twice is written once and referred to after
(``"memo"`` / ``__memo__``), so tied weights stay tied and cycles through objects survive.
Version 1 files (no objects, no OrderedDicts) are still read.

Loading never unpickles and never executes anything; every way a file can be
wrong is a ``CheckpointError`` naming the file. Every size, offset and shape is
checked against the file before any memory is allocated (compressed entries,
overlapping entries, oversized claims are refused), JSON nesting, integer
length and the number of JSON containers per byte of the file are bounded, and
the tree's tags are a fixed whitelist; so a hostile file cannot make us allocate
much more than its own size (docs/checkpoints.md states the measured bound).
Rebuilt ``nn.Module`` objects are checked too (``checkpoint_checks``): no cycles.

Writes are atomic (``cupynet._atomic``): a temporary file in the same directory,
flush + fsync, ``os.replace`` over the old file, fsync of the directory. A crash at
any moment leaves either the old file or the new one, plus at worst a
``.NAME.tmp-PID-...`` file, which the next save to NAME removes once process PID is gone.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import math
import os
import pathlib
import pickle
import re
import struct
import sys
import time
import types
import zipfile
import zlib
from collections import OrderedDict

import numpy

from . import backend, dtypes
from ._atomic import TEMP_MARKER, atomic_write, stall_point
from .nn.parameter import Parameter
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError", "WeightsOnlyError", "FORMAT_VERSION", "atomic_write", "TEMP_MARKER",
           "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)  # NOTE: version 2 added objects, global references, shared nodes, OrderedDict, set
_MAX_NDIM = 64  # NumPy's and CuPy's limit
_MAX_DEPTH = 100  # nesting of saved containers (a state dict needs about 6)
_MAX_INT_DIGITS = 4300  # Python's default limit for int("..."); also bounds the work of parsing one
_MAX_MANIFEST = 64 * 2 ** 20
# NOTE: \Z, not $: "$" also matches before a trailing newline ("cpu\n" would pass)
_DEVICE = re.compile(r"(cpu|cuda(:\d{1,4})?)\Z")
_ALLOWED_DTYPES = {str(d): d for d in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8,
                                       dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.bool_)}
_REFUSED_FLAGS = 0x1 | 0x20 | 0x40 | 0x2000  # ZIP general-purpose flags: encrypted, patched, strong encryption, masked
# NOTE: the errors zipfile (and the file underneath) raise on a damaged archive; only BadZipFile is documented
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError, RuntimeError,
               ValueError, struct.error, OverflowError, IndexError)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: names the file and what is wrong with it."""


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """A checkpoint names a class or function that ``load(weights_only=True)`` may not use (not allow-listed).

    NOTE: also a ``pickle.UnpicklingError``, the error torch raises here, so ``except`` clauses written
    for torch still catch it; nothing is ever unpickled.
    """


# ---- the allow-list (torch.serialization's safe globals) ---------------------------------------------
# NOTE: process-wide, as torch's is: add_safe_globals is meant for the whole program; the safe_globals
# context manager restores the list it found on exit.
_SAFE_GLOBALS = []
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")


def _global_name(obj) -> str:
    """``module.qualname`` of a class or function, the name a file records and the allow-list matches."""
    return f"{obj.__module__}.{obj.__qualname__}"


def _checked_safe_global(entry, caller):
    """``entry`` if it is a class or function (or an ``(object, "module.Name")`` pair), else a TypeError."""
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str) or not _DOTTED.match(entry[1]):
            raise TypeError(f"{caller}: a pair must be (object, 'module.Name') with a dotted name, got {entry!r:.120}")
        return entry
    if not isinstance(getattr(entry, "__module__", None), str) or \
            not isinstance(getattr(entry, "__qualname__", None), str):
        raise TypeError(f"{caller}: expected classes or functions (or (object, 'module.Name') pairs), got "
                        f"{type(entry).__name__} {entry!r:.80}")
    return entry


def _allowed_globals() -> dict:
    """{'module.qualname': object} of the allow-list, as load(weights_only=True) looks names up."""
    return {(e[1] if isinstance(e, tuple) else _global_name(e)): (e[0] if isinstance(e, tuple) else e)
            for e in _SAFE_GLOBALS}


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``load`` (weights_only=True) to rebuild objects of these classes and refer to these functions.

    Args:
        safe_globals: a list of classes and functions, or ``(object, "module.Name")`` pairs that allow
            ``object`` under a name other than its own. Each is checked before any is added.
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals: expected a list of classes or functions, got "
                        f"{type(safe_globals).__name__}")
    _SAFE_GLOBALS.extend([_checked_safe_global(e, "add_safe_globals") for e in safe_globals])


def get_safe_globals() -> list:
    """The allow-listed classes and functions (a copy of the list)."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Empty the allow-list."""
    _SAFE_GLOBALS.clear()


class safe_globals:  # noqa: N801 - torch.serialization's name
    """Context manager: allow-list ``safe_globals`` inside the block; on exit the list is as it was before.

    Args:
        safe_globals: a list of classes and functions (or ``(object, "module.Name")`` pairs), as
            ``add_safe_globals`` takes.
    """

    def __init__(self, safe_globals: list):
        if not isinstance(safe_globals, (list, tuple)):
            raise TypeError(f"safe_globals: expected a list of classes or functions, got "
                            f"{type(safe_globals).__name__}")
        self.safe_globals = [_checked_safe_global(e, "safe_globals") for e in safe_globals]
        self.before = None

    def __enter__(self):
        self.before = get_safe_globals()
        _SAFE_GLOBALS.extend(self.safe_globals)

    def __exit__(self, *exc):
        _SAFE_GLOBALS[:] = self.before
        return False


def _unrebuildable(cls):
    """Why instances of ``cls`` cannot be saved as ``__dict__`` and rebuilt with ``cls.__new__``; None if they can."""
    if not isinstance(cls, type):
        return f"{cls!r:.80} is not a class"
    for base in cls.__mro__[:-1]:
        if not base.__flags__ & (1 << 9):  # NOTE: Py_TPFLAGS_HEAPTYPE: a class written in Python
            return f"{cls.__name__} derives from the built-in type {base.__name__}"
        if [slot for slot in base.__dict__.get("__slots__", ()) if slot not in ("__dict__", "__weakref__")]:
            return f"{cls.__name__} keeps state in __slots__"
    if cls.__new__ is not object.__new__:
        return f"{cls.__name__} defines its own __new__"
    return None


# ---- writing --------------------------------------------------------------------------------------
class _Encoder:
    """Turns a nested object into tagged JSON plus a list of arrays."""

    def __init__(self):
        self.arrays = []
        self.seen = {}  # id -> (object, node): tensors and objects met so far, to write each once
        self.memos = 0
        self.in_object = 0  # how many objects' states are being encoded around the current node

    def encode(self, obj, path="obj", depth=0):
        if isinstance(obj, pathlib.PurePath):
            return {"__path__": [_path_kind(obj), str(obj)]}
        if isinstance(obj, dtypes.dtype):
            obj = obj.dtype  # NOTE: a Tensor's dtype object is saved as the NumPy dtype it stands for
        if isinstance(obj, Tensor) or _is_instance_object(obj):
            return self._once(obj, path, depth)
        if depth > _MAX_DEPTH:
            raise ValueError(f"save: {path} is nested more than {_MAX_DEPTH} containers deep (a cycle?)")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            if obj.bit_length() > 14000:  # NOTE: about 4214 digits, within what load accepts
                raise ValueError(f"save: the integer at {path} has more than {_MAX_INT_DIGITS} digits")
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"__float__": repr(float(obj))}
        if isinstance(obj, numpy.generic):
            self._check_dtype(obj.dtype, path)
            return {"__scalar__": str(obj.dtype), "value": self.encode(obj.item(), path, depth + 1)}
        if _is_array(obj):
            return {"__ndarray__": self._add(obj, path)}
        if isinstance(obj, numpy.dtype):
            self._check_dtype(obj, path)
            return {"__dtype__": str(obj)}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]
            return {"__list__": items} if isinstance(obj, list) else {"__tuple__": items}
        if isinstance(obj, (set, dict)):
            return self._mapping(obj, path, depth)
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            return {"__global__": self._name(obj, path)}
        raise TypeError(f"save: cannot save {path} of type {type(obj).__name__}; checkpoints hold tensors, arrays, "
                        "numbers, strings, None, lists, tuples, dicts, sets, module-level functions and classes, "
                        "and objects of Python classes (as their __dict__; no pickled objects)")

    def _mapping(self, obj, path, depth):
        if isinstance(obj, set):
            return {"__set__": [self.encode(v, f"{path} item", depth + 1) for v in obj]}
        if self.in_object and type(obj) not in (dict, OrderedDict):
            raise TypeError(f"save: cannot save {path} of type {type(obj).__name__} inside an object: it would load "
                            "as a plain dict; save the object's state_dict() instead, if it has one")
        pairs = [[self.encode(k, f"{path} key", depth + 1), self.encode(v, f"{path}[{k!r}]", depth + 1)]
                 for k, v in obj.items()]
        # NOTE: outside objects, other dict subclasses (defaultdict) are saved as plain dicts, as version 1 did
        return {"__odict__": pairs} if isinstance(obj, OrderedDict) else {"__dict__": pairs}

    def _once(self, obj, path, depth):
        """A tensor or object the first time it is met; after that a reference to it (``__memo__``)."""
        if id(obj) in self.seen:
            node = self.seen[id(obj)][1]
            if "memo" not in node:  # NOTE: only nodes met twice get a number, so plain files stay as before
                node["memo"], self.memos = self.memos, self.memos + 1
            return {"__memo__": node["memo"]}
        if depth > _MAX_DEPTH:
            raise ValueError(f"save: {path} is nested more than {_MAX_DEPTH} containers deep")
        if isinstance(obj, Tensor):
            node = {"__tensor__": self._add(obj.array, path), "requires_grad": obj.requires_grad}
            if isinstance(obj, Parameter):
                node["parameter"] = True
            self.seen[id(obj)] = (obj, node)
            return node
        reason = _unrebuildable(type(obj))
        if reason is not None or not hasattr(obj, "__dict__"):
            raise TypeError(f"save: cannot save {path} of type {type(obj).__name__}: {reason or 'it has no __dict__'}"
                            f" (objects are saved as their class name and __dict__)")
        node = {"__object__": self._name(type(obj), path)}
        self.seen[id(obj)] = (obj, node)  # NOTE: before the state, so a cycle back to obj becomes a reference
        self.in_object += 1
        node["state"] = self.encode(vars(obj), f"{path}.__dict__", depth + 1)
        self.in_object -= 1
        return node

    @staticmethod
    def _name(obj, path):
        """[module, qualname] of a module-level class or function, checked to find ``obj`` again."""
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        found = sys.modules.get(module) if isinstance(module, str) and isinstance(qualname, str) else None
        for part in qualname.split(".") if found is not None else ():
            found = getattr(found, part, None)
        if found is not obj:
            raise TypeError(f"save: cannot save {path} of type {type(obj).__name__}: {obj!r:.80} cannot be found "
                            f"again by its name {module}.{qualname} (a lambda, a local function or class?); only "
                            "module-level functions and classes are saved, by name")
        return [module, qualname]

    def _add(self, array, path):
        self._check_dtype(array.dtype, path)
        self.arrays.append(array)
        return len(self.arrays) - 1

    @staticmethod
    def _check_dtype(dtype, path):
        if str(dtype) not in _ALLOWED_DTYPES:
            raise TypeError(f"save: {path} has dtype {dtype}, which checkpoints do not support "
                            f"(supported: {', '.join(_ALLOWED_DTYPES)})")


# NOTE: filesystem paths are data (a flavour and a string), so a checkpoint holding a program's options (YOLOv5's
# `opt` namespace with Path values) saves and loads back the same Path type, without naming a class to import
_PATH_TYPES = {cls.__name__: cls for cls in (pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath,
                                            pathlib.Path, pathlib.PosixPath, pathlib.WindowsPath)}


def _path_kind(path) -> str:
    """The pathlib class a path is saved as: its own, or for a subclass the nearest pathlib one."""
    return next(cls.__name__ for cls in type(path).__mro__ if _PATH_TYPES.get(cls.__name__) is cls)


def _is_instance_object(obj):
    """True for an instance of a Python class that the tree holds as class name + ``__dict__`` (a Module, ...)."""
    return type(obj).__flags__ & (1 << 9) and not _is_array(obj) and not isinstance(obj, (
        type, types.FunctionType, int, float, str, list, tuple, dict, set, numpy.generic, numpy.dtype))


def _is_array(obj):
    return isinstance(obj, numpy.ndarray) or backend.is_device_array(obj)


def _host_array(array):
    # NOTE: not numpy.ascontiguousarray, which turns a 0-d array into shape (1,)
    host = numpy.asarray(backend.to_numpy(array), order="C")
    if host.dtype.byteorder == ">":
        host = host.astype(host.dtype.newbyteorder("<"))
    return host


def save(obj, f, pickle_module=None, pickle_protocol=None, *, _use_new_zipfile_serialization=True):
    """Save tensors, arrays, numbers, strings and None in nested dicts/lists/tuples/sets, or whole objects, to ``f``.

    An object of a Python class (a model: ``torch.save(model, f)``) is written as data: its class's
    module and qualified name, and its ``__dict__``; a module-level function or class held as a value is
    written by name. Nothing is pickled. A tensor or object held twice is written once (tied weights
    stay tied). ``load`` rebuilds such objects only for allow-listed classes (``add_safe_globals``).

    A path is written atomically and gets the permissions ``open(path, "w")`` would give it (0666 less the
    umask), or the replaced file's permissions; temp files left by killed saves to it are removed. A binary
    file object (``open(p, "wb")``, ``io.BytesIO``) is written from its current position, as ``torch.save``
    does; atomicity is then the caller's.

    Args:
        obj: the object (state dicts of models, optimizers, schedulers, scalers, NumPy arrays, a model ...).
        f: the file to write (a path, replaced atomically if it exists, or a writable binary file object).
        pickle_module: accepted for ``torch.save`` compatibility; must be None (checkpoints are never pickled).
        pickle_protocol: likewise; ignored.
        _use_new_zipfile_serialization: likewise; must be True (the format is a ZIP archive).
    """
    if pickle_module is not None or not _use_new_zipfile_serialization:
        raise ValueError("save: cupynet checkpoints are a pickle-free ZIP format; pickle_module and "
                         "_use_new_zipfile_serialization=False are not supported")
    encoder = _Encoder()
    tree = encoder.encode(obj)
    from .checkpoint_checks import module_structure_problem, too_many_containers  # noqa: PLC0415 - on first use

    problem = module_structure_problem(obj for obj, _ in encoder.seen.values()) or too_many_containers(tree, encoder)
    if problem:
        raise ValueError(f"save: {problem}; load would refuse the file")
    where = f if _is_file_object(f) else os.fspath(f)

    def write(out):
        entries = []
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for i, array in enumerate(encoder.arrays):
                entries.append(_write_array(zf, i, array))
                stall_point(f"array:{i + 1}", where)
            # NOTE: the manifest goes last, so it can carry the CRC-32 that zipfile
            # computed while streaming each array (one pass over the data, no copy).
            manifest = {"format": "cupynet", "version": FORMAT_VERSION, "tree": tree, "arrays": entries,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            zf.writestr("manifest.json", json.dumps(manifest))

    if _is_file_object(f):
        if not callable(getattr(f, "write", None)) or isinstance(f, io.TextIOBase):
            raise TypeError(f"save: the file object {f!r} is not a writable binary file (open it with 'wb')")
        write(f)
        if callable(getattr(f, "flush", None)):
            f.flush()
    else:
        atomic_write(where, write)


def _is_file_object(f):
    """True for file-like objects (anything with read or write), False for paths (str, bytes, os.PathLike)."""
    return not isinstance(f, (str, bytes, os.PathLike)) and (hasattr(f, "write") or hasattr(f, "read"))


def _write_array(zf, index, array):
    host = _host_array(array)
    name = f"arrays/{index}.bin"
    with zf.open(zipfile.ZipInfo(name), mode="w", force_zip64=host.nbytes > 2 ** 31) as out:
        out.write(memoryview(host.reshape(-1).view(numpy.uint8)))
    info = zf.getinfo(name)
    return {"file": name, "dtype": str(host.dtype), "shape": list(host.shape), "nbytes": int(host.nbytes),
            "crc32": info.CRC, "device": str(backend.device_of_array(array))}


# ---- checks shared with safetensors_io -----------------------------------------------------------------
def _array_nbytes(shape, itemsize):
    """The byte size of an array of ``shape``, or None unless ``shape`` is a list of at most 64 non-negative
    ints that NumPy can allocate (the product of its non-zero dims times ``itemsize`` fits in an int64)."""
    if not isinstance(shape, list) or len(shape) > _MAX_NDIM:
        return None
    elements = 1
    for s in shape:
        if type(s) is not int or s < 0:  # NOTE: type(), not isinstance: True is not a dimension
            return None
        elements *= max(s, 1)  # NOTE: NumPy refuses (2**62, 2**62, 0) too, though it holds nothing
        if elements * itemsize > 2 ** 63 - 1:
            return None
    return itemsize * math.prod(shape)


def _parse_json(raw, where, what, file_size=None):
    """``json.loads`` with every failure a CheckpointError: bad UTF-8 or JSON, nesting, integers over 4300 digits,
    and (given ``file_size``) more containers than ``checkpoint_checks.container_limit`` allows, refused before
    parsing."""
    if file_size is not None:
        from .checkpoint_checks import too_many_json_containers  # noqa: PLC0415 - loaded on first use

        problem = too_many_json_containers(raw, file_size, what)
        if problem:
            raise CheckpointError(f"{where}: {problem}")

    def parse_int(text):
        if len(text) > _MAX_INT_DIGITS:
            raise CheckpointError(f"{where}: {what} holds an integer of {len(text)} digits "
                                  f"(limit {_MAX_INT_DIGITS})")
        return int(text)

    try:
        return json.loads(raw.decode("utf-8"), parse_int=parse_int)
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError(f"{where}: {what} is nested too deeply") from None
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CheckpointError(f"{where}: {what} is not valid JSON ({error})") from None


# ---- reading --------------------------------------------------------------------------------------
def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None):
    """Load an object saved by ``save``; nothing in the file is executed.

    Any defect of the file raises ``CheckpointError`` naming the file and the defect; memory use is
    bounded by a small multiple of the file's size.

    Args:
        f: the checkpoint: a path, or a readable binary file object (``open(p, "rb")``, ``io.BytesIO``), read
            from its current position; one that cannot seek is read into memory first.
        map_location: ``"cpu"``, ``"cuda"``, a Device, or None to restore each array to the device it was
            saved from (a clear error if that device is not available here).
        pickle_module: accepted for ``torch.load`` compatibility; must be None (nothing is unpickled).
        weights_only: True or None (torch's default): an object or function reference in the file must be
            allow-listed (``add_safe_globals``, ``safe_globals``), else ``WeightsOnlyError``. False: any
            class or function the file names is imported (the file is then as trusted as code: importing a
            module runs it); even then nothing else runs: objects get no ``__init__`` or ``__setstate__``.
        mmap: True to memory-map the arrays instead of reading them (``f`` must be a path): each CPU array is
            a copy-on-write view of the file (PyTorch's default ``MAP_PRIVATE``: writing to it never changes the
            file), read from disk when touched. The file's structure is checked as always, but the arrays'
            CRC-32 checksums are not (that would read every byte); arrays mapped to ``cuda`` are copied there.
    """
    if pickle_module is not None:
        raise ValueError("load: cupynet checkpoints are never unpickled; pickle_module is not supported")
    if mmap not in (None, True, False) or not isinstance(mmap, (bool, type(None))):
        raise TypeError(f"load: mmap must be True, False or None, got {mmap!r:.80}")
    if mmap and _is_file_object(f):
        raise ValueError("load: f must be a file path in order to use the mmap argument")
    if weights_only not in (None, True, False) or not isinstance(weights_only, (bool, type(None))):
        raise TypeError(f"load: weights_only must be True, False or None, got {weights_only!r:.80}")
    allowed = None if weights_only is False else _allowed_globals()
    if _is_file_object(f):
        return _load_file(_seekable(f), _file_name(f), map_location, allowed)
    path = os.fspath(f)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load: {path} does not exist or is not a file")
    with open(path, "rb") as opened:
        return _load_file(opened, path, map_location, allowed, mmap=bool(mmap))


def _file_name(f):
    name = getattr(f, "name", None)
    return name if isinstance(name, str) else f"<{type(f).__name__}>"


def _seekable(f):
    """``f`` itself when it can seek, else its remaining bytes in a BytesIO."""
    if not callable(getattr(f, "read", None)) or isinstance(f, io.TextIOBase) or \
            (callable(getattr(f, "readable", None)) and not f.readable()):
        raise TypeError(f"load: the file object {f!r} is not a readable binary file (open it with 'rb')")
    if callable(getattr(f, "seekable", None)) and f.seekable():
        return f
    return io.BytesIO(f.read())


class _Window(io.RawIOBase):
    """The bytes of ``f`` from its current position on, seen as a file that starts at 0 (what ZIP offsets mean).

    Args:
        f: a seekable binary file object.
    """

    def __init__(self, f):
        super().__init__()
        self.f, self.start = f, f.tell()
        self.size = f.seek(0, os.SEEK_END) - self.start
        f.seek(self.start)

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.f.tell() - self.start

    def seek(self, offset, whence=os.SEEK_SET):
        base = {os.SEEK_SET: self.start, os.SEEK_CUR: self.f.tell(), os.SEEK_END: self.start + self.size}[whence]
        return self.f.seek(max(base + offset, self.start)) - self.start

    def readinto(self, buffer):
        if hasattr(self.f, "readinto"):
            return self.f.readinto(buffer)
        data = self.f.read(len(buffer))  # NOTE: a file-like object with read() only
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)


def _load_file(f, path, map_location, allowed, mmap=False):
    """Load from the seekable binary file ``f`` (named ``path`` in errors), from its current position.

    Args:
        f: the file.
        path: its name, for errors (and the file mapped when ``mmap``).
        map_location: as ``load`` takes it.
        allowed: {name: object} of the globals the file may name, or None to import whatever it names.
        mmap: map the arrays copy-on-write from ``path`` instead of reading them.
    """
    f, size, manifest, specs = _open_checked(f, path)
    arrays = [_map_array(f, path, size, spec) if mmap else _read_array(f, path, size, spec) for spec in specs]
    f.seek(size)  # NOTE: the archive runs to the end of the file (its directory is at the end); leave f there
    target = backend.device(map_location) if map_location is not None else None
    return _Decoder(path, arrays, target, allowed).decode_root(manifest["tree"])


def _open_checked(f, path):
    """The file seen from its current position, its size, its manifest and the checked array entries.

    Args:
        f: a seekable binary file.
        path: its name, for errors.
    """
    f = _Window(f)
    size = f.size
    head = f.read(4)
    f.seek(0)
    if head != b"PK\x03\x04":
        raise CheckpointError(f"load: {path} is not a cupynet checkpoint ({_describe_head(head)}); "
                              "cupynet never unpickles files")
    with _zip_errors(path):
        zf = zipfile.ZipFile(f)
    with zf:
        infos = _check_archive(zf, f, path, size)
        manifest = _read_manifest(zf, infos, path, size)
        specs = [_check_array_entry(path, entry, i, infos) for i, entry in enumerate(manifest["arrays"])]
    return f, size, manifest, specs


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The classes and functions a checkpoint names that the allow-list does not have (sorted ``module.qualname``).

    Reads the manifest only: nothing is imported or built. What ``load(f)`` would refuse with
    ``WeightsOnlyError``, all at once.

    Args:
        f: a path, or a readable binary file object (read from its current position, left there).
    """
    if _is_file_object(f):
        start = f.tell() if callable(getattr(f, "tell", None)) else None
        manifest = _open_checked(_seekable(f), _file_name(f))[2]
        if start is not None:
            f.seek(start)
    else:
        with open(os.fspath(f), "rb") as opened:
            manifest = _open_checked(opened, os.fspath(f))[2]
    allowed, found, stack = _allowed_globals(), set(), [manifest["tree"]]
    while stack:  # NOTE: a stack, not recursion: the JSON parser already bounded the nesting
        node = stack.pop()
        if isinstance(node, dict):
            for tag in ("__object__", "__global__"):
                name = node.get(tag)
                if isinstance(name, list) and len(name) == 2 and all(isinstance(v, str) for v in name):
                    found.add(".".join(name))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found - set(allowed))


@contextlib.contextmanager
def _zip_errors(path):
    try:
        yield
    except CheckpointError:
        raise
    except _ZIP_ERRORS as error:
        raise CheckpointError(f"load: {path} is damaged (truncated or corrupted archive: "
                              f"{type(error).__name__}: {error})") from None


def _describe_head(head):
    if head[:1] == b"\x80":
        return "it looks like a Python pickle"
    if not head:
        return "it is empty"
    return f"it starts with bytes {head!r}, not a ZIP archive"


def _local_header_length(f, info, path, size):
    """The length of ``info``'s local header as the file has it: 30 bytes + name length + extra length.

    NOTE: the central directory's extra field may differ from the local one, so the local header is read.
    """
    if info.header_offset + 30 > size:
        raise CheckpointError(f"load: {path}: entry {info.filename!r} has its local header past the end of the "
                              f"{size}-byte file")
    f.seek(info.header_offset)
    name_length, extra_length = struct.unpack("<2H", f.read(30)[26:30])
    return 30 + name_length + extra_length


def _check_archive(zf, f, path, size):
    """Check every entry's declared layout against the file before anything is read; returns {name: info}."""
    infos, spans = {}, []
    for info in zf.infolist():
        where = f"load: {path}: entry {info.filename!r}"
        if info.filename in infos:
            raise CheckpointError(f"{where} appears twice in the archive")
        if info.compress_type != zipfile.ZIP_STORED:
            raise CheckpointError(f"{where} is compressed (method {info.compress_type}); cupynet checkpoints "
                                  "store every entry uncompressed")
        if info.flag_bits & _REFUSED_FLAGS:
            raise CheckpointError(f"{where} is encrypted or patched (ZIP flags {info.flag_bits:#x})")
        if info.file_size != info.compress_size:
            raise CheckpointError(f"{where} claims {info.file_size} bytes but stores {info.compress_size}")
        # NOTE: an entry spans its local header (its real length, read from the file) and its data; spans that
        # overlap would let many entries claim the same bytes (a reader allocating many times the file's size,
        # or a memory-mapped array showing the bytes of the next entry).
        end = info.header_offset + _local_header_length(f, info, path, size) + info.compress_size
        spans.append((info.header_offset, end, info.filename))
        infos[info.filename] = info
    end_before = 0
    for begin, end, name in sorted(spans):
        if begin < end_before or end > size:
            raise CheckpointError(f"load: {path}: entry {name!r} (bytes {begin}..{end}) overlaps another entry or "
                                  f"runs past the end of the {size}-byte file")
        end_before = end
    return infos


def _read_manifest(zf, infos, path, size):
    info = infos.get("manifest.json")
    if info is None:
        raise CheckpointError(f"load: {path} has no manifest.json; not a cupynet checkpoint")
    if info.file_size > _MAX_MANIFEST:
        raise CheckpointError(f"load: {path}: manifest.json claims {info.file_size} bytes (limit 64 MiB)")
    with _zip_errors(path):
        raw = zf.read(info)  # zipfile verifies the entry's CRC-32 here
    manifest = _parse_json(raw, f"load: {path}", "manifest.json", size)
    if not isinstance(manifest, dict) or manifest.get("format") != "cupynet":
        raise CheckpointError(f"load: {path}: manifest.json is not a cupynet manifest")
    version = manifest.get("version")
    if type(version) is not int or version not in _READABLE_VERSIONS:
        raise CheckpointError(f"load: {path}: format version {version!r:.80} is not supported "
                              f"(this cupynet reads versions {', '.join(map(str, _READABLE_VERSIONS))})")
    if not isinstance(manifest.get("arrays"), list) or "tree" not in manifest:
        raise CheckpointError(f"load: {path}: manifest.json lacks 'arrays' or 'tree'")
    return manifest


def _check_array_entry(path, entry, index, infos):
    where = f"load: {path}: array {index}"
    if not isinstance(entry, dict):
        raise CheckpointError(f"{where}: manifest entry is not an object")
    name, dtype_name, shape = entry.get("file"), entry.get("dtype"), entry.get("shape")
    if name != f"arrays/{index}.bin":
        raise CheckpointError(f"{where}: manifest points at {name!r:.80}, expected 'arrays/{index}.bin' inside "
                              "the archive")
    if not isinstance(dtype_name, str) or dtype_name not in _ALLOWED_DTYPES:
        raise CheckpointError(f"{where}: unsupported dtype {dtype_name!r:.80}")
    dtype = _ALLOWED_DTYPES[dtype_name]
    nbytes = _array_nbytes(shape, dtype.itemsize)
    if nbytes is None:
        raise CheckpointError(f"{where}: invalid shape {shape!r:.200} (at most {_MAX_NDIM} non-negative ints)")
    crc, device = entry.get("crc32"), entry.get("device", "cpu")
    if type(crc) is not int or not 0 <= crc < 2 ** 32:
        raise CheckpointError(f"{where}: invalid crc32 {crc!r:.80}")
    if not isinstance(device, str) or not _DEVICE.match(device):
        raise CheckpointError(f"{where}: invalid device {device!r:.80}")
    info = infos.get(name)
    if info is None:
        raise CheckpointError(f"{where}: {name} is missing from the archive")
    if info.file_size != nbytes:  # NOTE: checked before anything is allocated
        raise CheckpointError(f"{where}: shape {tuple(shape)} of {dtype_name} needs {nbytes} bytes but the archive "
                              f"holds {info.file_size}")
    if "nbytes" in entry and (type(entry["nbytes"]) is not int or entry["nbytes"] != nbytes):
        raise CheckpointError(f"{where}: nbytes {entry['nbytes']!r:.80} disagrees with shape {shape} of {dtype_name}")
    return index, info, dtype, tuple(shape), crc, device


def _data_start(f, path, size, spec):
    """Where the bytes of array ``spec`` start in ``f``, after checking its local header against the directory."""
    index, info = spec[0], spec[1]
    where = f"load: {path}: array {index}"
    f.seek(info.header_offset)
    fixed = f.read(30)
    if len(fixed) < 30:
        raise CheckpointError(f"{where}: local header is truncated")
    signature, _, flags, method, _, _, _, _, _, name_length, extra_length = struct.unpack("<4s5H3L2H", fixed)
    if signature != b"PK\x03\x04" or f.read(name_length) != info.filename.encode() or method != zipfile.ZIP_STORED \
            or flags & _REFUSED_FLAGS:
        raise CheckpointError(f"{where}: local header of {info.filename} does not match the central directory")
    start = info.header_offset + 30 + name_length + extra_length
    if start + info.file_size > size:
        raise CheckpointError(f"{where}: data of {info.filename} runs past the end of the {size}-byte file")
    return start


def _map_array(f, path, size, spec):
    """One array as a copy-on-write memory map of its bytes in ``path`` (nothing read until it is touched)."""
    _, info, dtype, shape, _, device = spec
    start = _data_start(f, path, size, spec)
    if info.file_size == 0:  # NOTE: an empty range cannot be mapped
        return numpy.empty(shape, dtype), device
    mapped = numpy.memmap(path, dtype=dtype, mode="c", offset=f.start + start, shape=shape)
    return mapped.view(numpy.ndarray), device  # NOTE: a plain ndarray whose base keeps the map alive


def _read_array(f, path, size, spec):
    """Read one array straight into its final buffer (one copy of the data, the CRC computed once)."""
    index, info, dtype, shape, crc, device = spec
    where = f"load: {path}: array {index}"
    start = _data_start(f, path, size, spec)
    host = numpy.empty(shape, dtype)
    flat, done = host.reshape(-1).view(numpy.uint8), 0
    f.seek(start)
    while done < flat.size:
        got = f.readinto(flat[done:])
        if not got:
            raise CheckpointError(f"{where}: {info.filename} is truncated")
        done += got
    running = zlib.crc32(flat)
    if running != crc or running != info.CRC:
        raise CheckpointError(f"{where}: checksum mismatch (the file is corrupted)")
    return host, device


class _Decoder:
    """Rebuilds the saved object from tagged JSON and the arrays, on the requested device.

    The tags are a fixed whitelist (``self.handlers``); each node may carry only its tag and the keys listed
    with it, each array is referenced exactly once, and nesting is bounded.
    """

    def __init__(self, path, arrays, target, allowed):
        self.path, self.arrays, self.target, self.used = path, arrays, target, set()
        self.allowed, self.memo, self.objects = allowed, {}, []
        # NOTE: the whitelist: each tag, the function that decodes it and the other keys its node may have
        self.handlers = {"__list__": (self._list, ()), "__tuple__": (self._tuple, ()), "__dict__": (self._dict, ()),
                         "__odict__": (self._odict, ()), "__set__": (self._set, ()),
                         "__float__": (self._float, ()), "__dtype__": (self._dtype, ()),
                         "__scalar__": (self._scalar, ("value",)), "__ndarray__": (self._ndarray, ()),
                         "__tensor__": (self._tensor, ("requires_grad", "parameter", "memo")),
                         "__object__": (self._object, ("state", "memo")), "__global__": (self._global, ()),
                         "__memo__": (self._memo_ref, ()), "__path__": (self._path, ())}

    def fail(self, message):
        raise CheckpointError(f"load: {self.path}: {message}")

    def decode_root(self, tree):
        try:
            obj = self.decode(tree, 0)
        except CheckpointError:
            raise
        except RecursionError as error:
            self.fail(f"malformed tree ({type(error).__name__}: {error})")
        except RuntimeError:  # NOTE: a saved device not usable here: not a defect of the file
            raise
        except (ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as error:
            # NOTE: a safety net: the checks above mean to catch every bad value by name first
            self.fail(f"malformed tree ({type(error).__name__}: {error})")
        if len(self.used) != len(self.arrays):
            self.fail(f"array {min(set(range(len(self.arrays))) - self.used)} is not referenced by the tree")
        from .checkpoint_checks import module_structure_problem  # noqa: PLC0415 - loaded on first use

        problem = module_structure_problem(self.objects)
        if problem:
            self.fail(problem)
        return obj

    def decode(self, node, depth):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if depth > _MAX_DEPTH:
            self.fail(f"tree is nested more than {_MAX_DEPTH} containers deep")
        if not isinstance(node, dict):
            self.fail(f"malformed tree node {node!r:.80} (bare list)")
        tags = [key for key in node if key in self.handlers]
        if len(tags) != 1:
            self.fail(f"unknown tree tag {next(iter(node), None)!r:.80}" if not tags else f"tree node with tags {tags}")
        handler, extra = self.handlers[tags[0]]
        if not set(node) <= {tags[0], *extra}:
            self.fail(f"tree node {tags[0]} has unexpected keys {sorted(set(node) - {tags[0], *extra})!r:.80}")
        return handler(node[tags[0]], node, depth + 1)

    def _items(self, value, tag):
        if not isinstance(value, list):
            self.fail(f"{tag} holds {type(value).__name__}, not a list")
        return value

    def _list(self, value, node, depth):
        return [self.decode(v, depth) for v in self._items(value, "__list__")]

    def _tuple(self, value, node, depth):
        return tuple(self.decode(v, depth) for v in self._items(value, "__tuple__"))

    def _dict(self, value, node, depth, out=None, tag="__dict__"):
        out = {} if out is None else out
        for pair in self._items(value, tag):
            if not isinstance(pair, list) or len(pair) != 2:
                self.fail(f"__dict__ item {pair!r:.80} is not a [key, value] pair")
            key = _hashable(self.decode(pair[0], depth))
            try:
                if key in out:
                    self.fail(f"dict key {key!r:.80} appears twice")
            except TypeError:
                self.fail(f"dict key of type {type(key).__name__} is not hashable")
            out[key] = self.decode(pair[1], depth)
        return out

    def _odict(self, value, node, depth):
        return self._dict(value, node, depth, OrderedDict(), "__odict__")

    def _set(self, value, node, depth):
        items = [_hashable(self.decode(v, depth)) for v in self._items(value, "__set__")]
        try:
            return set(items)
        except TypeError:
            self.fail("__set__ holds an item that is not hashable")

    def _remember(self, node, obj):
        """Record ``obj`` under the node's ``"memo"`` number, if it has one (it is referred to again)."""
        number = node.get("memo")
        if number is None:
            return obj
        if type(number) is not int or number < 0 or number in self.memo:
            self.fail(f"memo number {number!r:.80} is not a new non-negative int")
        self.memo[number] = obj
        return obj

    def _memo_ref(self, value, node, depth):
        if type(value) is not int or value not in self.memo:
            self.fail(f"__memo__ refers to {value!r:.80}, which no earlier node defines")
        return self.memo[value]

    def _resolve(self, value, tag):
        """The class or function named by ``[module, qualname]``: from the allow-list, or imported if allowed=None."""
        if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) for v in value):
            self.fail(f"{tag} holds {value!r:.80}, not a [module, qualname] pair of strings")
        module, qualname = value
        if not _DOTTED.match(module) or not _DOTTED.match(qualname):
            self.fail(f"{tag} names {module!r:.80}.{qualname!r:.80}, not a dotted Python name")
        name = f"{module}.{qualname}"
        if self.allowed is not None:
            if name not in self.allowed:
                raise WeightsOnlyError(
                    f"load: {self.path}: weights-only load failed: Unsupported global: GLOBAL {name} was not an "
                    f"allowed global by default. Please use `torch.serialization.add_safe_globals([{name}])` or the "
                    f"`torch.serialization.safe_globals([{name}])` context manager (cupynet.serialization under "
                    "cupynet's own name) to allowlist this global if you trust this class/function; or, if you "
                    "trust the whole file, load it with weights_only=False")
            return self.allowed[name]
        return self._import(module, qualname)

    def _import(self, module, qualname):
        try:
            found = importlib.import_module(module)
        except ImportError as error:
            raise CheckpointError(f"load: {self.path}: cannot import module {module!r:.80} that the file names "
                                  f"({error})") from None
        for part in qualname.split("."):
            if not hasattr(found, part):
                self.fail(f"module {module} has no {qualname}")
            found = getattr(found, part)
        return found

    def _path(self, value, node, depth):
        """A pathlib path of the saved flavour; a concrete one this system cannot make loads as its pure flavour."""
        if not isinstance(value, list) or len(value) != 2 or value[0] not in _PATH_TYPES or \
                not isinstance(value[1], str):
            self.fail(f"__path__ holds {value!r:.80}, not a [pathlib class name, path string] pair")
        cls = _PATH_TYPES[value[0]]
        try:
            return cls(value[1])
        except NotImplementedError:  # NOTE: a WindowsPath on Linux (or a PosixPath on Windows)
            return (pathlib.PureWindowsPath if issubclass(cls, pathlib.PureWindowsPath) else
                    pathlib.PurePosixPath)(value[1])

    def _global(self, value, node, depth):
        return self._resolve(value, "__global__")

    def _object(self, value, node, depth):
        cls = self._resolve(value, "__object__")
        reason = _unrebuildable(cls)
        if reason is not None:
            self.fail(f"cannot rebuild an object of {value[0]}.{value[1]}: {reason}")
        if "state" not in node:
            self.fail(f"__object__ {value[0]}.{value[1]} has no state")
        obj = self._remember(node, cls.__new__(cls))  # NOTE: object.__new__ (checked): no __init__ runs
        self.objects.append(obj)
        state = self.decode(node["state"], depth)
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            self.fail(f"state of {value[0]}.{value[1]} is {type(state).__name__}, not a dict of attribute names")
        vars(obj).update(state)  # NOTE: straight into __dict__: no __setattr__ or __setstate__ runs
        return obj

    def _float(self, value, node, depth):
        if not isinstance(value, str) or value not in ("inf", "-inf", "nan"):
            self.fail(f"bad float {value!r:.80}")
        return float(value)

    def _dtype(self, value, node, depth):
        if not isinstance(value, str) or value not in _ALLOWED_DTYPES:
            self.fail(f"bad dtype {value!r:.80}")
        return dtypes.public(_ALLOWED_DTYPES[value])  # NOTE: as torch.load gives torch.float32: a dtype object

    def _scalar(self, value, node, depth):
        if not isinstance(value, str) or value not in _ALLOWED_DTYPES or "value" not in node:
            self.fail(f"bad scalar dtype {value!r:.80}")
        dtype, number = _ALLOWED_DTYPES[value], self.decode(node["value"], depth)
        kind = bool if dtype.kind == "b" else int if dtype.kind in "iu" else float
        if type(number) is not kind and not (kind is float and type(number) is int):
            self.fail(f"scalar of {value} holds {number!r:.80}")
        if kind is int and not numpy.iinfo(dtype).min <= number <= numpy.iinfo(dtype).max:
            self.fail(f"scalar {number} is out of the range of {value}")
        if kind is float and type(number) is int and abs(number) > sys.float_info.max:
            # NOTE: float(10**400) raises OverflowError; no float dtype holds such a value exactly
            self.fail(f"scalar {str(number)[:12]}... ({len(str(abs(number)))} digits) is out of the range of {value}")
        with numpy.errstate(all="ignore"):
            scalar = dtype.type(number)
        if kind is float and float(scalar) != number and not (math.isnan(number) and math.isnan(scalar)):
            self.fail(f"scalar {number!r} is not a {value} value")
        return scalar

    def _array_at(self, index):
        if type(index) is not int or not 0 <= index < len(self.arrays):
            self.fail(f"tree refers to array {index!r:.80}, which does not exist")
        if index in self.used:
            self.fail(f"tree refers to array {index} twice")
        self.used.add(index)
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

    def _ndarray(self, value, node, depth):
        return self._array_at(value)

    def _tensor(self, value, node, depth):
        requires_grad = node.get("requires_grad", False)
        if type(requires_grad) is not bool:
            self.fail(f"requires_grad is {requires_grad!r:.80}, not a bool")
        parameter = node.get("parameter", False)
        if parameter is not True and parameter is not False:
            self.fail(f"parameter is {parameter!r:.80}, not a bool")
        array = self._array_at(value)
        if requires_grad and not dtypes.is_floating(array.dtype):
            self.fail(f"a tensor of {array.dtype} cannot require gradients")
        t = Parameter(array, requires_grad=requires_grad) if parameter else Tensor(array)
        t.requires_grad = requires_grad
        return self._remember(node, t)


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key

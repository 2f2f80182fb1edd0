"""Export and import model weights as ``.safetensors`` (the format of Hugging Face's ``safetensors``).

The format is tiny and needs no dependency: an 8-byte little-endian header
length N, N bytes of JSON ``{name: {"dtype": "F32", "shape": [...],
"data_offsets": [begin, end]}, "__metadata__": {str: str}}``, then the raw
little-endian tensor bytes. Writing it natively keeps bfloat16 exact; the tests
check that the ``safetensors`` package (and PyTorch) read our files and that we
read theirs. Writes are atomic like ``cupynet.save``.
"""

from __future__ import annotations

import json
import os
import struct

import numpy

from . import backend, dtypes
from ._atomic import atomic_write
from .serialization import CheckpointError, _array_nbytes, _parse_json
from .tensor import Tensor

__all__ = ["save_safetensors", "load_safetensors"]

_CODES = {dtypes.float16: "F16", dtypes.bfloat16: "BF16", dtypes.float32: "F32", dtypes.float64: "F64",
          dtypes.int8: "I8", dtypes.uint8: "U8", dtypes.int16: "I16", dtypes.int32: "I32", dtypes.int64: "I64",
          dtypes.bool_: "BOOL"}
_DTYPES = {code: dt for dt, code in _CODES.items()}
_MAX_HEADER = 100 * 2 ** 20


def save_safetensors(tensors, path, metadata=None):
    """Write a flat ``{name: Tensor or array}`` mapping (e.g. ``model.state_dict()``) to a .safetensors file.

    Args:
        tensors: mapping of string names to Tensors or NumPy/CuPy arrays.
        path: the file to write (atomically).
        metadata: optional ``{str: str}`` stored in the header.
    """
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("save_safetensors: metadata must map strings to strings")
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        value = tensors[name]
        if not isinstance(name, str) or name == "__metadata__":
            raise TypeError(f"save_safetensors: tensor names must be strings other than '__metadata__', "
                            f"got {name!r}")
        # NOTE: not numpy.ascontiguousarray, which turns a 0-d array into shape (1,)
        array = numpy.asarray(backend.to_numpy(value.array if isinstance(value, Tensor) else value), order="C")
        if array.dtype not in _CODES:
            raise TypeError(f"save_safetensors: {name} has unsupported dtype {array.dtype}")
        raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _CODES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = dict(metadata)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # NOTE: pad so tensor data starts 8-byte aligned

    def write(f):
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for raw in blobs:
            f.write(raw)

    atomic_write(path, write)


def load_safetensors(path, device=None):
    """Read a .safetensors file into ``{name: Tensor}``, validating the whole header before allocating.

    As the reference (Rust) implementation requires, the tensors, sorted by offset, must tile the data
    buffer exactly (no overlap, no gap, nothing after the last) and ``__metadata__`` must map strings to
    strings; any defect raises ``CheckpointError`` naming the file. Memory is one copy of the data plus
    the parsed header.

    Args:
        path: the file.
        device: where the tensors go (default: the CPU).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_safetensors: {path} does not exist or is not a file")
    where = f"load_safetensors: {path}"
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) < 8:
            raise CheckpointError(f"{where} is too short to be a .safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > min(_MAX_HEADER, size - 8):
            raise CheckpointError(f"{where}: header length {n} is larger than the file allows")
        header = _parse_json(f.read(n), where, "header", size)
        entries = _check_header(where, header, size - 8 - n)
        out = {}
        for name, begin, end, dtype, shape in entries:
            host = numpy.empty(shape, dtype)
            f.seek(8 + n + begin)
            if f.readinto(host.reshape(-1).view(numpy.uint8)) != end - begin:
                raise CheckpointError(f"{where}: tensor {name!r} is truncated (the file shrank while being read)")
            out[name] = _on_device(host, device)
    return out


def _check_header(where, header, data_size):
    """Validate the parsed header; returns (name, begin, end, dtype, shape) in header order."""
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: header is a JSON {type(header).__name__}, not an object")
    metadata = header.get("__metadata__")
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(v, str) for v in metadata.values())):
        raise CheckpointError(f"{where}: __metadata__ must map strings to strings, got {metadata!r:.80}")
    entries = [(name, *_check_entry(where, name, entry, data_size)) for name, entry in header.items()
               if name != "__metadata__"]
    # NOTE: sorted by offset, the tensors must tile the data exactly: an overlap would let many tensors
    # claim the same bytes (300 entries on one 8 MB block: 2.4 GB allocated), a gap hides bytes.
    position = 0
    for name, begin, end, _, _ in sorted(entries, key=lambda e: (e[1], e[2])):
        if begin != position:
            what = "overlaps the previous tensor" if begin < position else f"leaves a gap after byte {position}"
            raise CheckpointError(f"{where}: tensor {name!r} at data_offsets [{begin}, {end}] {what}")
        position = end
    if position != data_size:
        raise CheckpointError(f"{where}: the tensors cover {position} data bytes but the file holds {data_size}")
    return entries


def _check_entry(where, name, entry, data_size):
    where = f"{where}: tensor {name!r:.200}"
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str) or entry["dtype"] not in _DTYPES:
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        raise CheckpointError(f"{where}: missing or unsupported dtype {dtype!r:.80}")
    dtype, shape, offsets = _DTYPES[entry["dtype"]], entry.get("shape"), entry.get("data_offsets")
    nbytes = _array_nbytes(shape, dtype.itemsize)
    if nbytes is None:
        raise CheckpointError(f"{where}: invalid shape {shape!r:.200}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
        raise CheckpointError(f"{where}: invalid data_offsets {offsets!r:.80}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_size or end - begin != nbytes:
        raise CheckpointError(f"{where}: offsets {offsets} do not match shape {shape} of {entry['dtype']} "
                              f"({nbytes} bytes) within {data_size} data bytes")
    return begin, end, dtype, tuple(shape)


def _on_device(host, device):
    dev = backend.device(device) if device is not None else backend.device("cpu")
    if dev.type == "cpu":
        return Tensor(host)
    with dev.xp.cuda.Device(dev.index):
        return Tensor(dev.xp.asarray(host))

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
import math
import os
import struct

import numpy

from . import backend, dtypes
from .serialization import CheckpointError, atomic_write
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
        if not isinstance(name, str):
            raise TypeError(f"save_safetensors: tensor names must be strings, got {name!r}")
        # NOTE: not numpy.ascontiguousarray, which turns a 0-d array into shape (1,)
        array = numpy.asarray(backend.to_numpy(value.data if isinstance(value, Tensor) else value), order="C")
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
    """Read a .safetensors file into ``{name: Tensor}`` (validating every offset and size first).

    Args:
        path: the file.
        device: where the tensors go (default: the CPU).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_safetensors: {path} does not exist or is not a file")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise CheckpointError(f"load_safetensors: {path} is too short to be a .safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > min(_MAX_HEADER, size - 8):
            raise CheckpointError(f"load_safetensors: {path}: header length {n} is larger than the file allows")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CheckpointError(f"load_safetensors: {path}: header is not valid JSON ({error})") from None
        data_size = size - 8 - n
        out = {}
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end, dtype, shape = _check_entry(path, name, entry, data_size)
            f.seek(8 + n + begin)
            host = numpy.frombuffer(f.read(end - begin), dtype=dtype).reshape(shape).copy()
            out[name] = _on_device(host, device)
    return out


def _check_entry(path, name, entry, data_size):
    where = f"load_safetensors: {path}: tensor {name!r}"
    if not isinstance(entry, dict) or entry.get("dtype") not in _DTYPES:
        raise CheckpointError(f"{where}: missing or unsupported dtype")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise CheckpointError(f"{where}: invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
        raise CheckpointError(f"{where}: invalid data_offsets {offsets!r}")
    dtype = _DTYPES[entry["dtype"]]
    begin, end = offsets
    if not 0 <= begin <= end <= data_size or end - begin != dtype.itemsize * math.prod(shape):
        raise CheckpointError(f"{where}: offsets {offsets} do not match shape {shape} of {entry['dtype']} within "
                              f"{data_size} data bytes")
    return begin, end, dtype, shape


def _on_device(host, device):
    dev = backend.device(device) if device is not None else backend.device("cpu")
    if dev.type == "cpu":
        return Tensor(host)
    with dev.xp.cuda.Device(dev.index):
        return Tensor(dev.xp.asarray(host))

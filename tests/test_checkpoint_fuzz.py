"""Fuzz the loaders: mutated checkpoints and .safetensors files load correctly or raise CheckpointError.

Every example is also held to a memory bound: the loader's tracemalloc peak may not exceed a small
multiple of the file's size plus a constant (NumPy reports its array allocations to tracemalloc).
Mutations are of two kinds: bytes (flips, overwrites, truncation, splices, aimed at the ZIP headers as
well as anywhere) and structure (a node of the manifest or header replaced by another JSON value,
entries compressed, duplicated or dropped, and the archive rebuilt with valid CRCs so the loader's own
checks are reached). For .safetensors files the Rust reference implementation (``safetensors.deserialize``)
is the oracle: a file it refuses we must refuse, and a file we accept must give its tensors bit for bit.

Hypothesis runs derandomized (a fixed sequence of examples) with no deadline.
"""

import io
import json
import struct
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cupynet as cn
from cupynet.safetensors_io import load_safetensors, save_safetensors
from cupynet.serialization import CheckpointError, load, save

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=1000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLACK = 512 * 1024  # NOTE: the constant of the bound: zipfile/json bookkeeping, Tensor objects, error texts


def sample():
    cn.manual_seed(0)
    return {"model": {"w": cn.randn(8, 4), "b": cn.randn(4).half(), "n": cn.tensor(5), "h": cn.randn(3).bfloat16()},
            "opt": {"state": {0: {"step": cn.tensor(3.0), "m": cn.zeros(0, 3)}},
                    "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]},
            "rng": {"state": 35399562948360463058890781895381311971, "x": np.float32(1.5), "i": np.int8(-3)},
            "misc": [None, True, "text", float("inf"), np.dtype("float16"), np.arange(6).reshape(2, 3)]}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    save(sample(), root / "base.ckpt")
    cn.manual_seed(1)
    save_safetensors({"w": cn.randn(4, 3), "h": cn.randn(5).bfloat16(), "i": cn.arange(3), "e": cn.zeros(0, 2),
                      "s": cn.tensor(2.5), "b": cn.tensor([True, False])}, root / "base.safetensors",
                     metadata={"framework": "cupynet"})
    return root, (root / "base.ckpt").read_bytes(), (root / "base.safetensors").read_bytes()


def measured(fn, path, size):
    """Call ``fn(path)``; returns (result or the CheckpointError, tracemalloc peak in bytes above the start)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        try:
            result = fn(path)
        except CheckpointError as error:
            assert str(path) in str(error), f"the error does not name the file: {error}"
            result = error
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert peak <= 3 * size + SLACK, f"peak {peak} bytes for a {size}-byte file"
    return result


# ---- byte mutations ------------------------------------------------------------------------------
def zip_hotspots(data):
    """Offsets of the ZIP structures (local headers, central directory, end records), where flips matter most."""
    spots = [data.rfind(b"PK\x05\x06"), data.rfind(b"PK\x06\x06"), data.rfind(b"PK\x06\x07")]
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        spots += [info.header_offset for info in zf.infolist()]
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        spots.append(at)
        at = data.find(b"PK\x01\x02", at + 1)
    return sorted(s for s in spots if s >= 0)


BYTES = st.one_of(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]), st.sampled_from(b'0123456789-.e[]{}",: '),
                  st.integers(0, 255))


def byte_mutation(size, spots):
    position = st.one_of(st.integers(0, size - 1),
                         st.builds(lambda s, d: min(size - 1, s + d), st.sampled_from(spots), st.integers(0, 60)))
    overwrite = st.tuples(st.just("set"), st.lists(st.tuples(position, BYTES), min_size=1, max_size=6))
    truncate = st.tuples(st.just("cut"), st.integers(0, size - 1))
    splice = st.tuples(st.just("splice"), st.tuples(position, st.integers(0, 64), st.binary(max_size=64)))
    return st.one_of(overwrite, truncate, splice)


def apply_bytes(data, mutation):
    kind, arg = mutation
    if kind == "cut":
        return data[:arg]
    if kind == "splice":
        at, drop, insert = arg
        return data[:at] + insert + data[at + drop:]
    out = bytearray(data)
    for at, value in arg:
        out[at] = value
    return bytes(out)


# ---- structure mutations -------------------------------------------------------------------------
TAGS = ["__list__", "__tuple__", "__dict__", "__float__", "__dtype__", "__scalar__", "__ndarray__", "__tensor__",
        "__array_at__", "__saved_device__", "__init__", "requires_grad", "value", "dtype", "shape", "data_offsets",
        "__metadata__", "file", "crc32", "nbytes", "device", "version", "format", "tree", "arrays"]
ATOMS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True),
                  st.text(max_size=8),
                  st.sampled_from([0, 1, -1, 2 ** 31, 2 ** 63, 2 ** 64 + 1, 10 ** 30, "float16", "bfloat16", "int8",
                                   "bool", "object", "F32", "BF16", "I64", "BOOL", "U16", "cpu", "cuda:0", "nan",
                                   "inf", "arrays/0.bin", "arrays/1.bin", "../manifest.json", "cupynet", True]))
JSON = st.recursive(ATOMS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(TAGS) | st.text(max_size=4), inner, max_size=3)),
    max_leaves=8)


def nodes(value, path=()):
    """Every (path, node) in a JSON value, the root first."""
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from nodes(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from nodes(child, (*path, i))


def replaced(value, path, new, delete=False):
    if not path:
        return new
    value = json.loads(json.dumps(value))
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return value


@st.composite
def json_mutation(draw, document):
    """``document`` with 1-3 edits: a node replaced by random JSON (a tag, a huge int, a list...) or deleted,
    an int nudged by a little (near-valid offsets, shapes, indices), or a dict entry copied under a new key
    (two tensors claiming the same bytes, an array referenced twice)."""
    for _ in range(draw(st.integers(1, 3))):
        # NOTE: reversed, so that Hypothesis's preference for early choices favours deep leaves, not the root
        path, node = draw(st.sampled_from(list(nodes(document))[::-1]))
        edit = draw(st.sampled_from(["replace", "delete", "nudge", "copy"]))
        if edit == "nudge" and type(node) is int:
            document = replaced(document, path, node + draw(st.integers(-3, 3).filter(bool)))
        elif edit == "copy" and isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
            document = replaced(document, (*path, key + draw(st.sampled_from(["2", "_", "x"]))), node[key])
        elif edit == "delete" and path:
            document = replaced(document, path, None, delete=True)
        else:
            document = replaced(document, path, draw(JSON))
    return document


def rebuild_zip(entries, compress, extra):
    """A ZIP of ``entries`` ({name: bytes}) with valid CRCs; ``compress`` names deflated entries."""
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as zf:
        warnings.simplefilter("ignore")  # NOTE: "Duplicate name": duplicated entries are one of the mutations
        for name, raw in list(entries.items()) + extra:
            zf.writestr(zipfile.ZipInfo(name), raw,
                        compress_type=zipfile.ZIP_DEFLATED if name in compress else zipfile.ZIP_STORED)
    return out.getvalue()


def entries_of(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


# ---- the properties ------------------------------------------------------------------------------
def check_checkpoint(root, data):
    path = root / "mutant.ckpt"
    path.write_bytes(data)
    result = measured(lambda p: load(p, map_location="cpu"), path, len(data))
    if not isinstance(result, CheckpointError):
        assert isinstance(result, (dict, list, tuple, int, float, str, bool, cn.Tensor, np.ndarray, np.generic,
                                   np.dtype, type(None)))
    return result


def test_byte_mutated_checkpoints(files):
    root, base, _ = files
    assert load(root / "base.ckpt")["model"]["w"].shape == (8, 4)

    @FUZZ
    @given(byte_mutation(len(base), zip_hotspots(base)))
    def run(mutation):
        check_checkpoint(root, apply_bytes(base, mutation))

    run()


def test_structure_mutated_checkpoints(files):
    root, base, _ = files
    entries = entries_of(base)
    manifest = json.loads(entries["manifest.json"])
    names = sorted(entries)

    @FUZZ
    @given(json_mutation(manifest), st.sets(st.sampled_from(names), max_size=2),
           st.lists(st.tuples(st.sampled_from([*names, "arrays/99.bin", "evil.py"]), st.binary(max_size=40)),
                    max_size=2), st.integers(0, 3))
    def run(document, compress, extra, manifest_only):
        mutated = dict(entries, **{"manifest.json": json.dumps(document).encode()})
        if manifest_only:  # NOTE: mostly the manifest alone, so the checks behind the archive's are reached
            compress, extra = set(), []
        check_checkpoint(root, rebuild_zip(mutated, compress, extra))

    run()


def reference_safetensors(data):
    """What the Rust implementation reads from ``data``: {name: (dtype code, shape, bytes)}, or None if refused."""
    import safetensors

    try:
        return {name: (t["dtype"], list(t["shape"]), bytes(t["data"])) for name, t in safetensors.deserialize(data)}
    except Exception:  # noqa: BLE001 - SafetensorError and the errors of its header parsing
        return None


CODES = {"F16": cn.float16, "BF16": cn.bfloat16, "F32": cn.float32, "F64": cn.float64, "I8": cn.int8,
         "U8": cn.uint8, "I16": cn.int16, "I32": cn.int32, "I64": cn.int64, "BOOL": cn.bool_}


def check_safetensors(root, data):
    pytest.importorskip("safetensors")
    path = root / "mutant.safetensors"
    path.write_bytes(data)
    mine = measured(load_safetensors, path, len(data))
    theirs = reference_safetensors(data)
    if isinstance(mine, CheckpointError):
        # NOTE: the one file the reference reads and we refuse: a dtype cupynet lacks (U16, F8_*, ...)
        assert theirs is None or any(code not in CODES for code, _, _ in theirs.values()), \
            f"the reference reads a file we refuse: {mine}"
        return
    assert theirs is not None, f"we read a file the reference refuses: {sorted(mine)}"
    assert sorted(mine) == sorted(theirs)
    for name, tensor in mine.items():
        code, shape, raw = theirs[name]
        array = tensor.numpy()
        assert (array.dtype, list(array.shape)) == (CODES[code], shape)
        assert array.tobytes() == raw


def test_byte_mutated_safetensors(files):
    root, _, base = files
    n = struct.unpack("<Q", base[:8])[0]
    spots = [0, 8] + [8 + i for i, c in enumerate(base[8:8 + n]) if c in b'[],:{}"'][::3] + [8 + n]

    @FUZZ
    @given(byte_mutation(len(base), spots))
    def run(mutation):
        check_safetensors(root, apply_bytes(base, mutation))

    run()


def test_structure_mutated_safetensors(files):
    root, _, base = files
    n = struct.unpack("<Q", base[:8])[0]
    header, data = json.loads(base[8:8 + n]), base[8 + n:]

    @FUZZ
    @given(json_mutation(header), st.one_of(st.just(0), st.integers(-8, 8)))
    def run(document, data_change):
        raw = json.dumps(document).encode()
        body = data[:len(data) + data_change] if data_change < 0 else data + b"\x01" * data_change
        check_safetensors(root, struct.pack("<Q", len(raw)) + raw + body)

    run()

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

import cupynet as cn
from cupynet.safetensors_io import load_safetensors, save_safetensors
from cupynet.serialization import CheckpointError, load, save

SLACK = 512 * 1024  # NOTE: the constant of the bound: zipfile/json bookkeeping, Tensor objects, error texts


def mutations():
    """The Hypothesis strategies (tests/checkpoint_mutations.py); skips the test when hypothesis is missing."""
    pytest.importorskip("hypothesis", reason="the checkpoint fuzz tests need hypothesis (pip install hypothesis)")
    import checkpoint_mutations  # noqa: PLC0415 - imports hypothesis, so only once it is known to be there

    return checkpoint_mutations


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
    m = mutations()
    root, base, _ = files
    assert load(root / "base.ckpt")["model"]["w"].shape == (8, 4)

    @m.FUZZ
    @m.given(m.byte_mutation(len(base), zip_hotspots(base)))
    def run(mutation):
        check_checkpoint(root, apply_bytes(base, mutation))

    run()


def test_structure_mutated_checkpoints(files):
    m = mutations()
    root, base, _ = files
    entries = entries_of(base)
    manifest = json.loads(entries["manifest.json"])
    names = sorted(entries)

    @m.FUZZ
    @m.given(m.json_mutation(manifest), m.st.sets(m.st.sampled_from(names), max_size=2),
           m.st.lists(m.st.tuples(m.st.sampled_from([*names, "arrays/99.bin", "evil.py"]), m.st.binary(max_size=40)),
                    max_size=2), m.st.integers(0, 3))
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
    m = mutations()
    pytest.importorskip("safetensors", reason="the reference reader is the safetensors package")
    root, _, base = files
    n = struct.unpack("<Q", base[:8])[0]
    spots = [0, 8] + [8 + i for i, c in enumerate(base[8:8 + n]) if c in b'[],:{}"'][::3] + [8 + n]

    @m.FUZZ
    @m.given(m.byte_mutation(len(base), spots))
    def run(mutation):
        check_safetensors(root, apply_bytes(base, mutation))

    run()


def test_structure_mutated_safetensors(files):
    m = mutations()
    pytest.importorskip("safetensors", reason="the reference reader is the safetensors package")
    root, _, base = files
    n = struct.unpack("<Q", base[:8])[0]
    header, data = json.loads(base[8:8 + n]), base[8 + n:]

    @m.FUZZ
    @m.given(m.json_mutation(header), m.st.one_of(m.st.just(0), m.st.integers(-8, 8)))
    def run(document, data_change):
        raw = json.dumps(document).encode()
        body = data[:len(data) + data_change] if data_change < 0 else data + b"\x01" * data_change
        check_safetensors(root, struct.pack("<Q", len(raw)) + raw + body)

    run()

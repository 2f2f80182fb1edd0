"""The checkpoint decoder's limits: every manifest value is a CheckpointError, never another exception; the
JSON containers a file may hold are bounded by its size (so the memory and time of a load are too);
ZIP entries may not share bytes through a long local header; names match whole strings; loaded modules are
checked (no cycles, stores of the right types) and behave as torch's when a store is missing.
"""

import json
import struct
import subprocess
import sys
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import cupynet as cn
import cupynet.nn as nn
from cupynet import checkpoint_checks, serialization
from cupynet.serialization import CheckpointError, load, save

MIB = 2 ** 20


def manifest_file(path, tree):
    """A checkpoint holding ``tree`` (tagged JSON text) and no arrays."""
    text = '{"format": "cupynet", "version": 2, "arrays": [], "tree": ' + tree + "}"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", text)
    return path


def peak_and_seconds(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start, began = tracemalloc.get_traced_memory()[0], time.perf_counter()
        try:
            result = fn()
        except CheckpointError as error:
            result = error
        return result, tracemalloc.get_traced_memory()[1] - start, time.perf_counter() - began
    finally:
        tracemalloc.stop()


# ---- scalars ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, value", [("float32", 10 ** 400), ("float64", 10 ** 309), ("float16", -(10 ** 400)),
                                          ("bfloat16", 2 ** 1100)])
def test_a_float_scalar_holding_a_huge_integer_is_a_checkpoint_error(tmp_path, dtype, value):
    path = manifest_file(tmp_path / "s.ckpt", json.dumps({"__scalar__": dtype, "value": value}))
    with pytest.raises(CheckpointError, match=f"is out of the range of {dtype}") as info:
        load(path)
    assert str(path) in str(info.value)


def test_a_float_scalar_holding_a_large_integer_that_is_exact_still_loads(tmp_path):
    path = manifest_file(tmp_path / "s.ckpt", json.dumps({"__scalar__": "float64", "value": 2 ** 1000}))
    assert load(path) == np.float64(2.0 ** 1000)


# ---- amplification ---------------------------------------------------------------------------------------
def sets_tree(count):
    return '{"__list__": [' + ", ".join(['{"__set__": []}'] * count) + "]}"


def test_six_hundred_thousand_empty_sets_are_refused_before_parsing(tmp_path):
    # NOTE: the file: about 9 MB that took 213 MB and several seconds to load
    path = manifest_file(tmp_path / "sets.ckpt", sets_tree(600_000))
    size = path.stat().st_size
    result, peak, _ = peak_and_seconds(lambda: load(path))
    assert isinstance(result, CheckpointError) and str(path) in str(result)
    assert "JSON objects and arrays" in str(result)
    assert f"at most {checkpoint_checks.container_limit(size)}" in str(result)
    assert peak < 2 * size + MIB, f"peak {peak} bytes for a {size}-byte file"


@pytest.mark.parametrize("node", ['{"__set__": []}', '{"__list__": []}', '{"__dict__": [[1, {"__set__": []}]]}'])
def test_a_file_at_the_container_limit_loads_within_the_documented_memory(tmp_path, node):
    """The worst trees the limit lets through: as many tiny containers as a file of that size may hold.

    docs/checkpoints.md states the bound measured here and below: at most 17 x the file's size + 20 MiB.
    """
    per_node = node.count("{") + node.count("[")
    count = (checkpoint_checks.container_limit(0) + 100_000) // per_node
    tree = '{"__list__": [' + ", ".join([node] * count) + "]}"
    # NOTE: the file gets just the size its containers need from a long string beside them (4 more containers:
    # the tuple, its list, the manifest and its "arrays")
    containers = per_node * count + 2 + 4
    size_needed = (containers - checkpoint_checks.container_limit(0)) * checkpoint_checks.BYTES_PER_CONTAINER
    filler = max(0, size_needed - len(tree))
    tree = '{"__tuple__": [' + tree + ', "' + "x" * filler + '"]}'
    path = manifest_file(tmp_path / "limit.ckpt", tree)
    size = path.stat().st_size
    assert containers <= checkpoint_checks.container_limit(size) < containers + 100
    result, peak, seconds = peak_and_seconds(lambda: load(path))
    assert not isinstance(result, CheckpointError), result
    assert len(result[0]) == count
    print(f"{node}: {count} nodes, file {size / MIB:.2f} MiB, peak {peak / MIB:.1f} MiB, {seconds:.2f} s")
    assert peak <= 17 * size + 20 * MIB, f"peak {peak / MIB:.1f} MiB for a {size / MIB:.1f} MiB file"


@pytest.mark.parametrize("item", ['"ab"', '"\u4e00"', "1000", "1.5"])
def test_a_long_list_of_small_scalars_loads_within_the_documented_memory(tmp_path, item):
    """Scalars are not limited (a vocabulary is a legitimate list of short strings): JSON's own cost per byte,
    up to about 16 x for one-character CJK strings (a 76-byte str and two 8-byte pointers for 6 bytes of file)."""
    path = manifest_file(tmp_path / "scalars.ckpt", '{"__list__": [' + ",".join([item] * 250_000) + "]}")
    size = path.stat().st_size
    result, peak, seconds = peak_and_seconds(lambda: load(path))
    assert len(result) == 250_000
    print(f"{item}: file {size / MIB:.2f} MiB, peak {peak / MIB:.1f} MiB ({peak / size:.1f} x), {seconds:.2f} s")
    assert peak <= 17 * size + 20 * MIB, f"peak {peak / MIB:.1f} MiB for a {size / MIB:.1f} MiB file"


def test_a_safetensors_header_with_too_many_containers_is_refused(tmp_path):
    from cupynet.safetensors_io import load_safetensors

    text = '{"__metadata__": {}, "x": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "y": [' + \
           ", ".join(["[]"] * 100_000) + "]}"
    path = tmp_path / "m.safetensors"
    path.write_bytes(len(text).to_bytes(8, "little") + text.encode() + bytes(4))
    result, peak, _ = peak_and_seconds(lambda: load_safetensors(path))
    assert isinstance(result, CheckpointError) and str(path) in str(result)
    assert "header holds up to 100006 JSON objects and arrays" in str(result)
    # NOTE: refused before parsing: parsed, the 100000 lists alone would take 6.4 MB
    assert peak < 2 * path.stat().st_size + MIB


# ---- ZIP layout ------------------------------------------------------------------------------------------
def local_header(name, data, extra_length):
    return struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data),
                       len(name), extra_length) + name


def central_header(name, data, offset):
    return struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data),
                       len(name), 0, 0, 0, 0, 0, offset) + name


def sharing_archive(mmap_shape):
    """Two arrays whose entries overlap: array 0's local header claims an extra field that covers array 1's
    local header, so both data start at the same byte (and carry the same CRC): two tensors from one range."""
    data = np.arange(4, dtype=np.float32).tobytes()
    a, b = b"arrays/0.bin", b"arrays/1.bin"
    # layout: [A header][4 bytes][B header][data]; A's extra length reaches exactly to B's data
    gap = len(data) - len(a)
    b_offset = 30 + len(a) + gap
    extra = gap + 30 + len(b)
    body = local_header(a, data, extra) + b"\0" * gap + local_header(b, data, 0) + data
    entry = {"dtype": "float32", "shape": list(mmap_shape), "nbytes": len(data), "crc32": zlib.crc32(data),
             "device": "cpu"}
    manifest = json.dumps({"format": "cupynet", "version": 2, "tree": {"__dict__": [
        ["a", {"__tensor__": 0, "requires_grad": False}], ["b", {"__tensor__": 1, "requires_grad": False}]]},
        "arrays": [dict(entry, file="arrays/0.bin"), dict(entry, file="arrays/1.bin")]}).encode()
    m_offset = len(body)
    body += local_header(b"manifest.json", manifest, 0) + manifest
    directory = (central_header(a, data, 0) + central_header(b, data, b_offset)
                 + central_header(b"manifest.json", manifest, m_offset))
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 3, 3, len(directory), len(body), 0)
    return body + directory + end


@pytest.mark.parametrize("mmap", [False, True])
def test_a_local_header_longer_than_its_30_bytes_cannot_make_entries_share_bytes(tmp_path, mmap):
    path = tmp_path / "shared.ckpt"
    path.write_bytes(sharing_archive([4]))
    with pytest.raises(CheckpointError, match="overlaps another entry") as info:
        load(path, mmap=mmap)
    assert str(path) in str(info.value)


# ---- names -----------------------------------------------------------------------------------------------
def test_a_device_name_with_a_trailing_newline_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "d.ckpt"
    save({"w": cn.ones(3)}, path)
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(entries["manifest.json"])
    manifest["arrays"][0]["device"] = "cpu\n"
    entries["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, raw in entries.items():
            zf.writestr(name, raw)
    with pytest.raises(CheckpointError, match="invalid device 'cpu\\\\n'"):
        load(path)


def test_a_safe_global_name_with_a_trailing_newline_is_refused():
    with pytest.raises(TypeError, match="dotted name"):
        serialization.add_safe_globals([(len, "builtins.len\n")])
    assert (len, "builtins.len\n") not in serialization.get_safe_globals()


# ---- modules ---------------------------------------------------------------------------------------------
def module_file(path, change):
    save(nn.Sequential(nn.ReLU()), path)
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(entries["manifest.json"])
    change(manifest["tree"])
    entries["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, raw in entries.items():
            zf.writestr(name, raw)
    return path


def state_of(node):
    return dict((k, v) for k, v in node["state"]["__dict__"])


def set_state(node, key, value=None, delete=False):
    pairs = node["state"]["__dict__"]
    node["state"]["__dict__"] = [[k, value if k == key else v] for k, v in pairs if not (delete and k == key)]


SAFE = [nn.Sequential, nn.ReLU]


def test_a_sequential_containing_itself_is_refused_at_load(tmp_path):
    def cycle(tree):
        tree["memo"] = 0
        set_state(tree, "_modules", {"__odict__": [["0", {"__memo__": 0}]]})

    path = module_file(tmp_path / "cycle.ckpt", cycle)
    with serialization.safe_globals(SAFE), pytest.raises(CheckpointError, match="module structure is cyclic") as info:
        load(path)
    assert str(path) in str(info.value)


def test_a_module_cycle_through_a_child_is_refused_at_load(tmp_path):
    def cycle(tree):
        tree["memo"] = 0
        child = state_of(tree)["_modules"]["__odict__"][0][1]
        set_state(child, "_modules", {"__odict__": [["back", {"__memo__": 0}]]})

    path = module_file(tmp_path / "cycle2.ckpt", cycle)
    with serialization.safe_globals(SAFE), pytest.raises(CheckpointError, match="Sequential -> ReLU -> Sequential"):
        load(path)


def test_save_refuses_a_module_containing_itself(tmp_path):
    seq = nn.Sequential(nn.ReLU())
    seq.add_module("again", seq)
    with pytest.raises(ValueError, match="module structure is cyclic"):
        save(seq, tmp_path / "x.ckpt")
    assert not (tmp_path / "x.ckpt").exists()


def test_a_loaded_module_without_parameters_store_answers_attribute_error_as_torch(tmp_path):
    path = module_file(tmp_path / "nop.ckpt", lambda tree: set_state(tree, "_parameters", delete=True))
    with serialization.safe_globals(SAFE):
        model = load(path)
    assert isinstance(model[0], nn.ReLU)  # the submodule is still found through _modules
    assert model._modules["0"] is model[0]
    with pytest.raises(AttributeError, match="'Sequential' object has no attribute 'weight'"):
        getattr(model, "weight")  # noqa: B009 - the attribute access under test
    with pytest.raises(AttributeError, match="'Sequential' object has no attribute '_parameters'"):
        list(model.parameters())


@pytest.mark.parametrize("store, value, message", [
    ("_parameters", {"__list__": []}, "Sequential._parameters is list, not a dict"),
    ("_modules", {"__odict__": [["0", 3]]}, r"Sequential._modules\['0'\] holds int, expected Module or None"),
    ("_buffers", {"__odict__": [["b", "x"]]}, r"Sequential._buffers\['b'\] holds str, expected Tensor or None"),
])
def test_a_loaded_module_with_a_store_of_the_wrong_type_is_refused(tmp_path, store, value, message):
    path = module_file(tmp_path / "bad.ckpt", lambda tree: set_state(tree, store, value))
    with serialization.safe_globals(SAFE), pytest.raises(CheckpointError, match=message):
        load(path)


def test_a_temp_file_name_with_a_trailing_newline_is_not_taken_for_a_stale_temp_file(tmp_path):
    from cupynet import _atomic

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # NOTE: a pid that no longer runs, as a killed writer's
    stale = f".c.ckpt.tmp-{dead.pid}-{_atomic._host_tag()}-0123abcd"
    for name in (stale, stale + "\n"):
        (tmp_path / name).write_bytes(b"x")
    removed = _atomic.remove_stale_temp_files(tmp_path, lambda target: target == "c.ckpt")
    assert removed == [str(tmp_path / stale)]
    assert (tmp_path / (stale + "\n")).exists()


def test_save_refuses_what_the_container_limit_would_refuse_and_writes_nothing(tmp_path):
    path = tmp_path / "many.ckpt"
    with pytest.raises(ValueError, match="more than a file of its size may hold"):
        save([(i,) for i in range(200_000)], path)  # NOTE: 2 containers a tuple in about 16 bytes
    assert not path.exists()
    save([(i,) for i in range(20_000)], path)  # under the base: loads
    assert load(path)[-1] == (19_999,)

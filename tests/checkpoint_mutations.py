"""Hypothesis strategies for the checkpoint fuzz tests (test_checkpoint_fuzz.py imports this only when
hypothesis is installed, so the suite collects without it)."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = ["FUZZ", "given", "st", "byte_mutation", "json_mutation"]

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=1000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


BYTES = st.one_of(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]), st.sampled_from(b'0123456789-.e[]{}",: '),
                  st.integers(0, 255))


def byte_mutation(size, spots):
    position = st.one_of(st.integers(0, size - 1),
                         st.builds(lambda s, d: min(size - 1, s + d), st.sampled_from(spots), st.integers(0, 60)))
    overwrite = st.tuples(st.just("set"), st.lists(st.tuples(position, BYTES), min_size=1, max_size=6))
    truncate = st.tuples(st.just("cut"), st.integers(0, size - 1))
    splice = st.tuples(st.just("splice"), st.tuples(position, st.integers(0, 64), st.binary(max_size=64)))
    return st.one_of(overwrite, truncate, splice)


TAGS = ["__list__", "__tuple__", "__dict__", "__float__", "__dtype__", "__scalar__", "__ndarray__", "__tensor__",
        "__array_at__", "__saved_device__", "__init__", "requires_grad", "value", "dtype", "shape", "data_offsets",
        "__metadata__", "file", "crc32", "nbytes", "device", "version", "format", "tree", "arrays"]
ATOMS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True),
                  st.text(max_size=8),
                  st.sampled_from([0, 1, -1, 2 ** 31, 2 ** 63, 2 ** 64 + 1, 10 ** 30, "float16", "bfloat16", "int8",
                                   "bool", "object", "F32", "BF16", "I64", "BOOL", "U16", "cpu", "cuda:0", "nan",
                                   "inf", "arrays/0.bin", "arrays/1.bin", "../manifest.json", "cupynet", True,
                                   10 ** 400, -(10 ** 309), "cpu\n", "float32", "float64"]))
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

"""What ``save`` and ``load`` check beyond the file format: nn.Module structure and the JSON container limit.

Loaded on first use (by ``cupynet.serialization``), not at ``import cupynet``. See docs/checkpoints.md.
"""

from __future__ import annotations

import json

from .nn.module import Module
from .tensor import Tensor

__all__ = ["container_limit", "too_many_json_containers", "module_structure_problem", "too_many_containers"]

# NOTE: the JSON containers ("{" and "[") a file may hold: each costs up to about 260 bytes once parsed and
# decoded (an empty __set__ node: a dict, a list and a set), so this many per byte of the file keeps them
# within about 8 times its size; a real checkpoint has one per 60 bytes or more (its arrays' bytes and ZIP
# headers count too). The base lets small files hold small trees freely.
BYTES_PER_CONTAINER = 32
BASE_CONTAINERS = 2 ** 16


def container_limit(file_size: int) -> int:
    """How many JSON containers (objects and arrays) the manifest or header of a ``file_size``-byte file may hold.

    Args:
        file_size: the whole file's size in bytes.
    """
    return BASE_CONTAINERS + file_size // BYTES_PER_CONTAINER


def too_many_json_containers(raw: bytes, file_size: int, what: str) -> str | None:
    """Why ``raw`` JSON holds too many containers for its file (before parsing it), or None.

    The count is of brackets, those inside strings included: an overestimate, never an underestimate.

    Args:
        raw: the JSON text, undecoded.
        file_size: the size of the whole file it came from.
        what: its name in the message (``"manifest.json"``, ``"header"``).
    """
    found, limit = raw.count(b"{") + raw.count(b"["), container_limit(file_size)
    if found <= limit:
        return None
    return (f"{what} holds up to {found} JSON objects and arrays; a {file_size}-byte file may hold at most {limit} "
            f"({BASE_CONTAINERS} + one per {BYTES_PER_CONTAINER} bytes), which bounds the memory and time a load "
            "takes")


_MODULE_STORES = (("_parameters", Tensor), ("_buffers", Tensor), ("_modules", Module))


def module_structure_problem(objects) -> str | None:
    """What is wrong with the ``nn.Module`` objects among ``objects`` (rebuilt by a load), or None.

    A store (``_parameters``, ``_buffers``, ``_modules``) that is present must map names to a Tensor (a
    Module for ``_modules``) or None; a missing store is accepted, as torch accepts it (attribute access
    then raises AttributeError). A module that contains itself, directly or through its children, is a
    problem: ``repr``, ``forward`` and ``apply`` would recurse without end.

    Args:
        objects: the objects to check (others than Modules are skipped).
    """
    modules = [obj for obj in objects if isinstance(obj, Module)]
    for module in modules:
        state = vars(module)
        for store, kind in _MODULE_STORES:
            if store not in state:
                continue
            entries = state[store]
            if not isinstance(entries, dict):
                return f"{type(module).__name__}.{store} is {type(entries).__name__}, not a dict"
            for name, value in entries.items():
                if not isinstance(name, str) or not (value is None or isinstance(value, kind)):
                    return (f"{type(module).__name__}.{store}[{name!r:.40}] holds {type(value).__name__}, expected "
                            f"{kind.__name__} or None")
    return _module_cycle(modules)


def _module_cycle(modules):
    """A description of a module reachable from itself through ``_modules``, or None (iterative DFS)."""
    done, active = set(), set()
    for root in modules:
        if id(root) in done:
            continue
        stack = [(root, iter(_children(root)))]
        active.add(id(root))
        while stack:
            module, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                active.discard(id(module))
                done.add(id(module))
            elif id(child) in active:
                path = " -> ".join(type(m).__name__ for m, _ in stack)
                return f"the module structure is cyclic: {path} -> {type(child).__name__} contains itself"
            elif id(child) not in done:
                active.add(id(child))
                stack.append((child, iter(_children(child))))
    return None


def _children(module):
    children = vars(module).get("_modules")
    return [c for c in children.values() if isinstance(c, Module)] if isinstance(children, dict) else []


def too_many_containers(tree, encoder) -> str | None:
    """Why load would refuse the file ``save`` is about to write for its JSON containers, or None.

    NOTE: counted as load counts them; the file's size is taken as its manifest plus its arrays' bytes, less
    than it will be (no ZIP headers), so a file this check passes always loads.

    Args:
        tree: the tagged-JSON tree ``save`` encoded.
        encoder: the encoder, holding the arrays the file will store.
    """
    text = json.dumps(tree)
    containers = text.count("{") + text.count("[") + 2 * len(encoder.arrays) + 2  # + each array entry and shape
    size = len(text) + sum(_host_nbytes(a) for a in encoder.arrays)
    if containers <= container_limit(size):
        return None
    return (f"the object makes {containers} JSON objects and arrays, more than a file of its size may hold "
            f"({container_limit(size)}: {BASE_CONTAINERS} + one per {BYTES_PER_CONTAINER} bytes); hold many small "
            "numbers in an array or tensor instead of lists, tuples or sets of them")


def _host_nbytes(array):
    return int(array.size) * array.dtype.itemsize

"""Run pytest as on a machine that has only the core packages: the GPU image's view of the suite.

    python tests/core_deps_only.py [--no-torch] [pytest arguments...]

Before pytest is imported, an import hook is put first on ``sys.meta_path`` that lets through only
the standard library, this repository's own modules, and the distributions (with everything they
require) that the project's GPU machine has: numpy, ml_dtypes, pytest, torch (unless ``--no-torch``)
and CuPy where it is installed. Any other top-level import (hypothesis, scikit-learn, safetensors,
matplotlib, mpi4py, tensorboard, pdoc, tqdm, ...) raises ``ModuleNotFoundError`` as if the package
were not installed, so a test that needs one must import it where ``pytest.importorskip`` can skip it.
Plugins that pytest would load from entry points are switched off (a blocked plugin is absent there).
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
CORE = ("numpy", "ml_dtypes", "pytest", "torch", "cupy", "cupy-cuda12x", "cupy-cuda13x")
"""The distributions a core-only machine has (those not installed here are simply not allowed)."""


def _required(dist: str, seen: set) -> None:
    """Add ``dist`` and, recursively, the installed distributions it requires (markers evaluated) to ``seen``."""
    key = _canonical(dist)
    if key in seen:
        return
    try:
        meta = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return
    seen.add(key)
    for requirement in meta.requires or ():
        name, _, marker = requirement.partition(";")
        if marker and not _marker_holds(marker):
            continue
        _required(re.split(r"[\s<>=!~\[(]", name.strip(), maxsplit=1)[0], seen)


def _marker_holds(marker: str) -> bool:
    """Whether an environment marker applies here; extras (``extra == "..."``) never do."""
    if "extra" in marker:
        return False
    try:
        from packaging.markers import Marker  # noqa: PLC0415 - pytest requires packaging
    except ImportError:
        return True
    return Marker(marker.strip()).evaluate()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def allowed_modules(core) -> set:
    """Top-level module names that belong to the distributions ``core`` and what they require."""
    dists = set()
    for name in core:
        _required(name, dists)
    return {module for module, owners in importlib.metadata.packages_distributions().items()
            if any(_canonical(owner) in dists for owner in owners)}


class CoreOnlyFinder:
    """A meta-path finder that refuses every top-level module outside the allowed set (see the module doc)."""

    def __init__(self, allowed):
        self.allowed = set(allowed) | set(sys.stdlib_module_names) | set(sys.builtin_module_names)
        self.blocked = set()

    def is_blocked(self, name) -> bool:
        """Whether importing ``name`` is refused here."""
        top = name.partition(".")[0]
        # NOTE: _sysconfigdata_* is the standard library's per-platform module (not in stdlib_module_names)
        return not (top in self.allowed or top.startswith("_sysconfigdata") or self._in_repository(top))

    def find_spec(self, name, path=None, target=None):
        if not self.is_blocked(name):
            return None  # NOTE: None defers to the ordinary finders
        top = name.partition(".")[0]
        self.blocked.add(top)
        raise ModuleNotFoundError(f"No module named {top!r} (not a core package: tests/core_deps_only.py "
                                  "blocks it)", name=top)

    def _in_repository(self, top):
        spec = importlib.machinery.PathFinder.find_spec(top)
        origin = spec.origin if spec and spec.origin else (list(spec.submodule_search_locations or [""])[0]
                                                           if spec else "")
        if not origin:
            return False
        where = pathlib.Path(origin).resolve()
        # NOTE: a virtual environment may sit inside the repository (.venv): its packages are not ours
        return where.is_relative_to(REPO) and "site-packages" not in where.parts


def install(no_torch: bool = False) -> CoreOnlyFinder:
    """Put the blocking finder first on ``sys.meta_path`` and return it.

    Args:
        no_torch: also block torch (a machine without the oracle).
    """
    core = [name for name in CORE if not (no_torch and name == "torch")]
    finder = CoreOnlyFinder(allowed_modules(core) | {"cupynet"})
    sys.meta_path.insert(0, finder)
    find_spec = importlib.util.find_spec

    def find_spec_unless_blocked(name, package=None):
        # NOTE: where a package is not installed, importlib.util.find_spec answers None (no error)
        return None if finder.is_blocked(importlib.util.resolve_name(name, package)) else find_spec(name, package)

    importlib.util.find_spec = find_spec_unless_blocked
    return finder


def main(argv) -> int:
    no_torch = "--no-torch" in argv
    argv = [a for a in argv if a != "--no-torch"]
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # NOTE: subprocesses of the tests inherit it too
    sys.path[0] = os.getcwd()  # NOTE: what `python -m pytest` puts first (tests import `tests.op_harness`)
    install(no_torch)
    import pytest  # noqa: PLC0415 - after the finder, so pytest's own imports pass through it

    return pytest.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Where the CUDA half-precision headers are, so a kernel compile failure is explained before it happens.

Every ``.cu`` file of cupynet includes ``common.cuh``, which includes
``cuda_fp16.h`` and ``cuda_bf16.h``. NVRTC does not ship them: CuPy bundles the
fp16 header but not the bf16 one (NVIDIA did not make it redistributable), so
they come from a CUDA toolkit or from NVIDIA's header wheels (what the
``cupy-cuda12x[ctk]`` / ``cupy-cuda13x[ctk]`` extras install). This module looks
where CuPy looks (``CUDA_PATH``, ``CUDA_HOME``, the toolkit of ``nvcc`` on PATH,
``/usr/local/cuda``, the wheels' ``nvidia/.../include`` folders) and says which
headers it found; ``cupynet info`` prints it, and a compile error about a missing
header is re-raised with :data:`FIX_HINT`.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

__all__ = ["HEADERS", "FIX_HINT", "candidate_include_dirs", "find_headers", "headers_report",
           "is_missing_header_error"]

HEADERS = ("cuda_fp16.h", "cuda_bf16.h")
"""The headers ``common.cuh`` includes and NVRTC does not provide by itself."""

FIX_HINT = ('install the CUDA headers: pip install "cupy-cuda12x[ctk]" (or "cupy-cuda13x[ctk]", matching your '
            "CuPy), or a CUDA toolkit, and set CUDA_PATH to it")
"""How to make the kernels compile when a header is missing."""

_WHEEL_INCLUDE_DIRS = ("nvidia/cuda_runtime/include", "nvidia/cu13/include", "nvidia/cu12/include")


def candidate_include_dirs(environ=None, path_entries=None) -> list:
    """The folders searched for the headers, in order (missing folders included; they are skipped later).

    Args:
        environ: the environment to read ``CUDA_PATH``/``CUDA_HOME``/``PATH`` from (default ``os.environ``).
        path_entries: the Python import path whose ``nvidia/...`` wheel folders are searched (default ``sys.path``).
    """
    environ = os.environ if environ is None else environ
    roots = [environ.get("CUDA_PATH"), environ.get("CUDA_HOME")]
    nvcc = shutil.which("nvcc", path=environ.get("PATH", ""))
    roots.append(str(pathlib.Path(nvcc).resolve().parent.parent) if nvcc else None)
    roots.append("/usr/local/cuda")
    dirs = [pathlib.Path(root) / "include" for root in roots if root]
    for entry in sys.path if path_entries is None else path_entries:
        dirs += [pathlib.Path(entry or ".") / sub for sub in _WHEEL_INCLUDE_DIRS]
    return dirs


def find_headers(dirs=None) -> dict:
    """``{header: path of the first folder that has it, or None}`` for each of :data:`HEADERS`.

    Args:
        dirs: the folders to search (default :func:`candidate_include_dirs`).
    """
    dirs = candidate_include_dirs() if dirs is None else dirs
    found = {}
    for header in HEADERS:
        found[header] = next((str(d / header) for d in dirs if (d / header).is_file()), None)
    return found


def headers_report(dirs=None) -> dict:
    """What ``cupynet info`` prints: each header's path, whether the kernels can compile, and the fix if not.

    Args:
        dirs: the folders to search (default :func:`candidate_include_dirs`).
    """
    found = find_headers(dirs)
    complete = all(found.values())
    return {**found, "kernels_can_compile": complete, "fix": None if complete else FIX_HINT}


def is_missing_header_error(error: Exception) -> bool:
    """Whether a compile error is NVRTC's "cannot open source file" for one of :data:`HEADERS`.

    Args:
        error: the exception CuPy raised while compiling.
    """
    text = str(error)
    return "cannot open source file" in text and any(header in text for header in HEADERS)

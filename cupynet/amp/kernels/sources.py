"""The CUDA sources of cupynet's AMP kernels, and the instantiations the launcher asks for.

This module imports neither CuPy nor anything that needs a GPU: the launcher
(``launch.py``) builds its ``cupy.RawModule`` objects from it, and the compile
test (``tests/test_kernels_compile.py``) feeds the very same text and the very
same template instantiations to ``nvcc --ptx``. A kernel that would fail to
compile at run time therefore fails in CI, on a machine without a GPU.

Each ``.cu`` file is compiled as its own module. Its text is prefixed with the
launch constants below (as ``#define``) and with ``common.cuh`` (helpers shared
by every kernel), so the Python side and the CUDA side can never disagree on
the chunk size or the block size.
"""

from __future__ import annotations

import functools
import pathlib

from cupynet import dtypes

__all__ = [
    "CHUNK_SIZE", "BLOCK_THREADS", "NVRTC_OPTIONS", "CTYPE_OF_DTYPE", "SUPPORTED_DTYPES",
    "NAME_EXPRESSIONS", "kernel_name", "kernel_source", "source_files",
]

CHUNK_SIZE = 65536
"""Elements handled by one thread block of a multi-tensor kernel (PyTorch uses the same)."""

BLOCK_THREADS = 256
"""Threads per block of every multi-tensor kernel and of the l2norm finalize kernel."""

NVRTC_OPTIONS = ("-std=c++17",)
"""Options the launcher passes to ``cupy.RawModule`` (CuPy itself adds ``-ftz=true`` and ``-arch``)."""

CTYPE_OF_DTYPE = {
    dtypes.float32: "float",
    dtypes.float16: "__half",
    dtypes.bfloat16: "__nv_bfloat16",
}
"""The CUDA element type that serves each NumPy dtype in the templated kernels."""

SUPPORTED_DTYPES = tuple(CTYPE_OF_DTYPE)
"""Dtypes the multi-tensor kernels accept for gradients (and the l2norm inputs)."""

_HERE = pathlib.Path(__file__).resolve().parent
_COMMON_HEADER = "common.cuh"


def _per_dtype(kernel: str) -> tuple[str, ...]:
    return tuple(f"{kernel}<{ctype}>" for ctype in CTYPE_OF_DTYPE.values())


NAME_EXPRESSIONS: dict[str, tuple[str, ...]] = {
    "unscale.cu": _per_dtype("non_finite_check_and_unscale_kernel"),
    "scale_update.cu": ("update_scale_kernel", "increment_step_kernel", "clear_flag_kernel"),
    "sgd.cu": _per_dtype("fused_sgd_kernel"),
    "adam.cu": _per_dtype("fused_adam_kernel"),
    "l2norm.cu": _per_dtype("l2norm_partial_kernel") + ("l2norm_finalize_kernel",),
}
"""For every ``.cu`` file, every kernel the launcher fetches from it, spelled as a name expression.

The launcher passes exactly this tuple as ``name_expressions`` and looks kernels
up by these strings; the compile test instantiates exactly these.
"""


def kernel_name(kernel: str, dtype=None) -> str:
    """The name expression of a kernel, for one element dtype when the kernel is a template.

    Args:
        kernel: the kernel's name in the ``.cu`` file, e.g. ``"fused_sgd_kernel"``.
        dtype: a NumPy dtype from :data:`SUPPORTED_DTYPES`, or None for a non-template kernel.
    """
    if dtype is None:
        return kernel
    return f"{kernel}<{CTYPE_OF_DTYPE[dtype]}>"


def source_files() -> tuple[str, ...]:
    """The ``.cu`` files of this package, in a stable order.

    Args:
        None.
    """
    return tuple(NAME_EXPRESSIONS)


@functools.cache
def kernel_source(filename: str) -> str:
    """The full text compiled for one ``.cu`` file: launch constants, ``common.cuh``, then the file.

    Args:
        filename: one of :func:`source_files`, e.g. ``"unscale.cu"``.
    """
    if filename not in NAME_EXPRESSIONS:
        raise ValueError(f"kernel_source: unknown kernel file {filename!r}; expected one of {source_files()}")
    defines = (
        f"#define CUPYNET_CHUNK_SIZE {CHUNK_SIZE}\n"
        f"#define CUPYNET_BLOCK_THREADS {BLOCK_THREADS}\n"
    )
    common = (_HERE / _COMMON_HEADER).read_text()
    body = (_HERE / filename).read_text()
    return f"{defines}\n// ---- {_COMMON_HEADER} ----\n{common}\n// ---- {filename} ----\n{body}"

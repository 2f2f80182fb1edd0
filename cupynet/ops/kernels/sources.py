"""The CUDA sources of cupynet's fused hot-op kernels, and the instantiations the launcher asks for.

This module imports neither CuPy nor anything that needs a GPU: ``launch.py`` builds its
``cupy.RawModule`` objects from :func:`kernel_source` and :data:`NAME_EXPRESSIONS`, and
``tests/test_fused_compile.py`` feeds the very same text and instantiations to ``nvcc --ptx``
for sm_75/80/90, so a kernel that would not compile at run time fails in CI, without a GPU.

Each ``.cu`` file is one module, prefixed with ``fused_common.cuh``. Every kernel is a template
on its element type ``T``: ``float``, ``__half`` or ``__nv_bfloat16``; float64 arrays take the
NumPy-style reference path (``reference.py``, written with ``xp`` so it runs on CuPy too).
"""

from __future__ import annotations

import functools
import pathlib

from ... import dtypes

__all__ = ["BLOCK_THREADS", "NVRTC_OPTIONS", "CTYPE_OF_DTYPE", "KERNEL_DTYPES", "NAME_EXPRESSIONS",
           "kernel_name", "kernel_source", "source_files"]

BLOCK_THREADS = 256
"""Threads per block of the element-wise (grid-stride) kernels."""

NVRTC_OPTIONS = ("-std=c++17",)
"""Options the launcher passes to ``cupy.RawModule`` (CuPy itself adds ``-ftz=true`` and ``-arch``)."""

CTYPE_OF_DTYPE = {
    dtypes.float32: "float",
    dtypes.float16: "__half",
    dtypes.bfloat16: "__nv_bfloat16",
}
"""The CUDA element type of each NumPy dtype the kernels are instantiated for."""

KERNEL_DTYPES = tuple(CTYPE_OF_DTYPE)
"""Dtypes with a CUDA kernel; other float dtypes (float64) use the reference on any backend."""

_HERE = pathlib.Path(__file__).resolve().parent
_COMMON_HEADER = "fused_common.cuh"


def _per_dtype(*kernels: str) -> tuple[str, ...]:
    return tuple(f"{k}<{ctype}>" for k in kernels for ctype in CTYPE_OF_DTYPE.values())


NAME_EXPRESSIONS: dict[str, tuple[str, ...]] = {
    "softmax_xent.cu": _per_dtype("softmax_xent_forward_kernel", "softmax_xent_backward_kernel"),
    "layer_norm.cu": _per_dtype("layer_norm_forward_kernel", "layer_norm_backward_kernel",
                                "layer_norm_param_grad_kernel"),
    "bias_act.cu": _per_dtype("bias_gelu_forward_kernel", "bias_gelu_backward_kernel", "bias_relu_forward_kernel",
                              "bias_relu_backward_kernel"),
    "im2col.cu": _per_dtype("im2col_2d_kernel", "col2im_2d_kernel"),
}
"""For every ``.cu`` file, every kernel the launcher fetches from it, spelled as a name expression."""


def kernel_name(kernel: str, dtype) -> str:
    """The name expression of a templated kernel for one element dtype.

    Args:
        kernel: the kernel's name in its ``.cu`` file, e.g. ``"layer_norm_forward_kernel"``.
        dtype: a NumPy dtype from :data:`KERNEL_DTYPES`.
    """
    return f"{kernel}<{CTYPE_OF_DTYPE[dtype]}>"


def source_files() -> tuple[str, ...]:
    """The ``.cu`` files of this package, in a stable order.

    Args:
        None.
    """
    return tuple(NAME_EXPRESSIONS)


@functools.cache
def kernel_source(filename: str) -> str:
    """The full text compiled for one ``.cu`` file: ``fused_common.cuh``, then the file.

    Args:
        filename: one of :func:`source_files`, e.g. ``"softmax_xent.cu"``.
    """
    if filename not in NAME_EXPRESSIONS:
        raise ValueError(f"kernel_source: unknown kernel file {filename!r}; expected one of {source_files()}")
    common = (_HERE / _COMMON_HEADER).read_text()
    body = (_HERE / filename).read_text()
    return f"// ---- {_COMMON_HEADER} ----\n{common}\n// ---- {filename} ----\n{body}"

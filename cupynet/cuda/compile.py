"""From ``.cu`` files to kernel functions: the source text, the template instantiations, the compiled modules.

Every kernel package of cupynet (``amp/kernels``, ``optim/kernels``, ``ops/kernels``)
describes its ``.cu`` files with one :class:`KernelLibrary`: for each file, the
kernels the launcher fetches from it, spelled as NVRTC name expressions
(``"fused_sgd_kernel<__half>"``). The library builds the text that is compiled
(launch constants, ``common.cuh``, then the file), compiles each file into one
``cupy.RawModule`` on first use and caches it, and looks kernels up by name
expression, per device.

Nothing here needs a GPU until a kernel is fetched: the compile tests feed the
very same text and name expressions to ``nvcc --ptx`` and NVRTC, and the
CUDA-on-CPU harness compiles the very same text with g++, so a kernel that would
not compile at run time fails in CI.
"""

from __future__ import annotations

import pathlib
import threading

import numpy

from cupynet import dtypes
from cupynet.cuda import device, headers
from cupynet.cuda.multi_tensor import BLOCK_THREADS, CHUNK_SIZE

__all__ = ["NVRTC_OPTIONS", "CTYPE_OF_DTYPE", "KERNEL_DTYPES", "COMMON_HEADER", "KernelLibrary", "per_dtype",
           "kernel_name"]

NVRTC_OPTIONS = ("-std=c++17",)
"""Options passed to ``cupy.RawModule`` (CuPy itself adds ``-ftz=true`` and ``-arch``)."""

CTYPE_OF_DTYPE = {
    dtypes.float32: "float",
    dtypes.float16: "__half",
    dtypes.bfloat16: "__nv_bfloat16",
}
"""The CUDA element type that serves each NumPy dtype in the templated kernels."""

KERNEL_DTYPES = tuple(CTYPE_OF_DTYPE)
"""Dtypes the templated kernels are instantiated for (float64 always takes a NumPy-style reference)."""

COMMON_HEADER = pathlib.Path(__file__).resolve().parent / "common.cuh"
"""The header every ``.cu`` file of cupynet is compiled with."""

_DEFINES = {"CUPYNET_CHUNK_SIZE": CHUNK_SIZE, "CUPYNET_BLOCK_THREADS": BLOCK_THREADS}


def per_dtype(*kernels: str) -> tuple[str, ...]:
    """The name expressions of templated kernels, one per dtype of :data:`KERNEL_DTYPES`.

    Args:
        *kernels: kernel names, e.g. ``"fused_sgd_kernel"``.
    """
    return tuple(f"{kernel}<{ctype}>" for kernel in kernels for ctype in CTYPE_OF_DTYPE.values())


def kernel_name(kernel: str, dtype=None) -> str:
    """The name expression of a kernel, for one element dtype when the kernel is a template.

    Args:
        kernel: the kernel's name in its ``.cu`` file.
        dtype: a dtype of :data:`KERNEL_DTYPES`, or None for a kernel that is not a template.
    """
    return kernel if dtype is None else f"{kernel}<{CTYPE_OF_DTYPE[numpy.dtype(dtype)]}>"


class KernelLibrary:
    """The ``.cu`` files of one kernel package: their text, their instantiations, their compiled modules.

    Args:
        directory: the folder of the ``.cu`` files.
        name_expressions: ``{filename: (name expression, ...)}``: every kernel the launcher fetches
            from each file; the compile tests instantiate exactly these.
    """

    options = NVRTC_OPTIONS

    def __init__(self, directory, name_expressions: dict):
        self.directory = pathlib.Path(directory).resolve()
        self.name_expressions = {f: tuple(names) for f, names in name_expressions.items()}
        self._sources: dict = {}
        self._modules: dict = {}
        self._kernels: dict = {}
        self._lock = threading.Lock()

    def source_files(self) -> tuple[str, ...]:
        """The ``.cu`` files, in a stable order."""
        return tuple(self.name_expressions)

    def kernel_source(self, filename: str) -> str:
        """The full text compiled for one ``.cu`` file: launch constants, ``common.cuh``, then the file.

        Args:
            filename: one of :meth:`source_files`, e.g. ``"unscale.cu"``.
        """
        if filename not in self.name_expressions:
            raise ValueError(f"kernel_source: unknown kernel file {filename!r}; expected one of {self.source_files()}")
        if filename not in self._sources:
            defines = "".join(f"#define {name} {value}\n" for name, value in _DEFINES.items())
            common, body = COMMON_HEADER.read_text(), (self.directory / filename).read_text()
            self._sources[filename] = (f"{defines}\n// ---- {COMMON_HEADER.name} ----\n{common}\n"
                                       f"// ---- {filename} ----\n{body}")
        return self._sources[filename]

    def module(self, filename: str):
        """The ``cupy.RawModule`` of one file, compiled on first use with all its name expressions, then cached.

        Args:
            filename: one of :meth:`source_files`.
        """
        with self._lock:
            if filename not in self._modules:
                self._modules[filename] = device.cupy().RawModule(
                    code=self.kernel_source(filename), options=self.options,
                    name_expressions=list(self.name_expressions[filename]))
            return self._modules[filename]

    def get_kernel(self, filename: str, kernel: str, dtype=None):
        """The kernel function for the current device, by its name expression (cached).

        Args:
            filename: the ``.cu`` file, e.g. ``"sgd.cu"``.
            kernel: the kernel's name, e.g. ``"fused_sgd_kernel"``.
            dtype: the element dtype of a templated kernel, or None.
        """
        name = kernel_name(kernel, dtype)
        key = (device.cupy().cuda.runtime.getDevice(), filename, name)
        function = self._kernels.get(key)
        if function is None:
            function = self._kernels[key] = self._compiled_function(filename, name)
        return function

    def _compiled_function(self, filename: str, name: str):
        # NOTE: CuPy compiles a RawModule lazily, at the first get_function
        try:
            return self.module(filename).get_function(name)
        except Exception as error:
            if headers.is_missing_header_error(error):
                raise RuntimeError(f"cupynet could not compile {filename}: a CUDA header is missing "
                                   f"({headers.find_headers()}); {headers.FIX_HINT}") from error
            raise

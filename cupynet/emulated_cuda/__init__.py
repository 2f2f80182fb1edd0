"""The emulated CUDA device: cupynet's GPU path, run on the CPU by CuPy's rules.

Select it with ``CUPYNET_DEVICE=cuda-emulated`` (any program, ``cupynet train`` included) or
``pytest --device cuda-emulated``. Then "cuda" means this device: ``.to("cuda")``,
``cupynet.cuda.is_available()``, ``autocast("cuda")`` and ``GradScaler("cuda")`` all take it, and
every array-module call that would be CuPy on a GPU goes to a stand-in for CuPy that

* holds NumPy memory in an array type that is not ``numpy.ndarray`` (:class:`array.ndarray`);
* exposes only the names and keyword arguments of CuPy's API, read from a table generated from the
  real ``cupy`` package (``cupy_api.json``, :mod:`api`);
* enforces the CuPy rules that bite: implicit conversion to NumPy raises ``TypeError``; ``ufunc.at``
  and ``cupyx.scatter_*`` take only CuPy's dtypes; no ``initial=``; reductions return 0-d device
  arrays; ``reduce``/``accumulate`` only where CuPy has them; NumPy arrays are refused as arguments;
  a host read during a CUDA graph capture is CUDA's error;
* counts every device-to-host read (:func:`host_syncs`) and every kernel launch (:func:`launches`);
* runs cupynet's own RawKernels on the CPU (compiled with g++, :mod:`kernels`) and its cuBLAS call
  through a host-memory GEMM.

What it cannot tell you: speed, numerics of CuPy's own kernels (the math is NumPy's), or anything
about real memory, streams and concurrency. It exists so that the first run on a real GPU meets only
what a real GPU can raise. docs/emulated_device.md is the user's guide.
"""

from __future__ import annotations

from .counters import host_syncs, launches, recording_syncs, sync_log

__all__ = ["host_syncs", "launches", "sync_log", "recording_syncs", "cupy", "cupyx", "cublas", "NAME",
           "unavailable_reason"]

NAME = "cuda-emulated"
"""The value of ``CUPYNET_DEVICE`` (and of ``pytest --device``) that selects this device."""


def unavailable_reason():
    """Why the emulated device cannot run here (None when it can): its kernels need g++ on Linux x86-64/AArch64."""
    from .kernels import unavailable_reason as reason  # noqa: PLC0415

    return reason()


def cupy():
    """The emulated ``cupy`` module."""
    from .module import cupy_module  # noqa: PLC0415 - built on first use

    return cupy_module()


def cupyx():
    """The emulated ``cupyx`` module (``scatter_add/max/min``, ``scipy.special.erf/erfinv``)."""
    from .module import cupyx_module  # noqa: PLC0415

    return cupyx_module()


def cublas():
    """The stand-in for ``cupy_backends.cuda.libs.cublas`` (its batched GEMM, on host memory)."""
    from .kernels import fake_cublas  # noqa: PLC0415

    return fake_cublas()

"""CUDA on the CPU, for the kernel tests: cupynet's own kernels, from their real source, through their real launchers.

Every launcher of cupynet gets CuPy from one function, ``cupynet.cuda.device.cupy()``.
:func:`install` puts :class:`EmulatedCupy` there, and nothing else changes: the launchers build
their arguments, chunk tables and grids as on a GPU, and ``cupy.RawModule(code=...,
name_expressions=...)`` receives the exact text it would hand to NVRTC. Compiling and launching are
the package's (``cupynet.emulated_cuda.kernels``, which the emulated CUDA device uses too); this
harness adds what only tests need:

* device arrays sit between guard bytes; a kernel that writes outside its arrays fails;
* unwritten memory is NaN / -1, so reading it is loud;
* any host read of a device array fails the test (that would be a sync).

Device memory is host memory here (:class:`DeviceArray`, a NumPy array with ``.data.ptr``), so a
test reads results with ``numpy.asarray``.
"""

from __future__ import annotations

import contextlib
import sys
import types
import weakref

import numpy

from cupynet.amp.kernels import launch as amp_launch
from cupynet.cuda import device, multi_tensor
from cupynet.emulated_cuda import kernels
from cupynet.emulated_cuda.kernels import EXECUTED, GXX, KernelError, compile_source, fake_gemm_strided_batched_ex
from cupynet.ops.kernels import launch as ops_launch
from cupynet.optim.kernels import launch as optim_launch

__all__ = ["GXX", "LIBRARIES", "EXECUTED", "KernelError", "DeviceArray", "EmulatedCupy", "install",
           "install_fake_cublas", "compile_source", "fake_gemm_strided_batched_ex"]

LIBRARIES = {"amp": amp_launch.KERNELS, "optim": optim_launch.KERNELS, "ops": ops_launch.KERNELS}
"""Every kernel library of cupynet, by package."""

GUARD = 256
"""Guard bytes before and after every device array (an out-of-bounds write changes them)."""

_EMPTY = 0xFF  # NOTE: what cupy.empty holds here: NaN (floats) or -1 (ints), so reading it unwritten is loud
_GUARD = 0x7F  # NOTE: 3.4e38 as fp32, NaN as fp16: an out-of-bounds read is loud, and any value written changes it


# ----------------------------------------------------------------------------- device arrays


class DeviceArray(numpy.ndarray):
    """Emulated device memory: a NumPy array with CuPy's ``.data.ptr`` and ``.device``; host reads fail."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    @property
    def device(self):
        return types.SimpleNamespace(id=0)

    def _host_read(self, *args):
        raise AssertionError("a launcher read a device value on the host (that would be a sync)")

    get = item = __bool__ = __float__ = __int__ = _host_read


class EmulatedCupy:
    """The part of the ``cupy`` module cupynet's launchers use, on host memory, with kernels run on the CPU."""

    ndarray = DeviceArray

    def __init__(self):
        self.launches: list = []
        self.uploads = 0
        self._allocations: list = []
        self.stream = types.SimpleNamespace(ptr=0, capturing=False)
        self.stream.is_capturing = lambda: self.stream.capturing  # NOTE: tests flip it to mimic graph capture
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0),
                                          Device=lambda device_id=0: contextlib.nullcontext(),
                                          get_current_stream=lambda: self.stream)

    # -- memory

    def _allocate(self, shape, dtype) -> DeviceArray:
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        dtype = numpy.dtype(dtype)
        nbytes = int(numpy.prod(shape, dtype=numpy.int64)) * dtype.itemsize
        raw = numpy.full(nbytes + 2 * GUARD + 256, _GUARD, numpy.uint8)
        start = GUARD + (-(raw.ctypes.data + GUARD) % 256)  # NOTE: 256-byte aligned, as cudaMalloc
        raw[start:start + nbytes] = _EMPTY
        self._allocations.append((weakref.ref(raw), start, nbytes))
        return raw[start:start + nbytes].view(dtype).reshape(shape).view(DeviceArray)

    def check_guards(self, name: str) -> None:
        """Raise :class:`KernelError` if a kernel wrote into the guard bytes of any live array."""
        alive = []
        for ref, start, nbytes in self._allocations:
            raw = ref()
            if raw is None:
                continue
            alive.append((ref, start, nbytes))
            before, after = raw[:start], raw[start + nbytes:]
            if (before != _GUARD).any() or (after != _GUARD).any():
                where = "before" if (before != _GUARD).any() else "after"
                raise KernelError(f"{name} wrote out of bounds, {where} an array of {nbytes} bytes")
        self._allocations = alive

    def empty(self, shape, dtype=numpy.float64) -> DeviceArray:
        return self._allocate(shape, dtype)

    def empty_like(self, a) -> DeviceArray:
        return self._allocate(a.shape, a.dtype)

    def zeros(self, shape, dtype=numpy.float64) -> DeviceArray:
        out = self._allocate(shape, dtype)
        out.view(numpy.ndarray)[...] = 0
        return out

    def full(self, shape, value, dtype=None) -> DeviceArray:
        out = self._allocate(shape, dtype if dtype is not None else numpy.asarray(value).dtype)
        out.view(numpy.ndarray)[...] = value
        return out

    def asarray(self, a, dtype=None) -> DeviceArray:
        """A device copy of host data (counted in ``uploads``), or ``a`` itself when it already is one."""
        if isinstance(a, DeviceArray) and (dtype is None or a.dtype == dtype):
            return a
        host = numpy.asarray(a, dtype=dtype)
        out = self._allocate(host.shape, host.dtype)
        out.view(numpy.ndarray)[...] = host
        self.uploads += 1
        return out

    def ascontiguousarray(self, a, dtype=None) -> DeviceArray:
        if not isinstance(a, DeviceArray):
            raise TypeError(f"ascontiguousarray: expected a device array, got {type(a).__name__} (CuPy refuses it)")
        if a.flags.c_contiguous and (dtype is None or a.dtype == dtype):
            return a
        out = self._allocate(a.shape, dtype if dtype is not None else a.dtype)
        out.view(numpy.ndarray)[...] = numpy.asarray(a)
        return out

    # -- kernels

    def RawModule(self, code, options=(), name_expressions=()):  # noqa: N802 - CuPy's name
        kernels.check_options(options)
        module = compile_source(code, list(name_expressions))
        return types.SimpleNamespace(get_function=lambda name: kernels.KernelFunction(
            module, name, lambda a: isinstance(a, DeviceArray), before=self.launches.append,
            after=self.check_guards))


def install(monkeypatch) -> EmulatedCupy:
    """Make every launcher of cupynet run on an :class:`EmulatedCupy` (for one test); return it.

    Only ``cupynet.cuda.device.cupy`` is replaced; the caches that hold CuPy objects (compiled
    modules, kernels, device constants, chunk tables) start empty so nothing from a real GPU is reused.

    Args:
        monkeypatch: pytest's monkeypatch fixture (undoes all of it after the test).
    """
    emulated = EmulatedCupy()
    monkeypatch.setattr(device, "cupy", lambda: emulated)
    monkeypatch.setattr(device, "_constants", {})
    monkeypatch.setattr(multi_tensor, "TABLE_CACHE", multi_tensor.TableCache())
    for library in LIBRARIES.values():
        monkeypatch.setattr(library, "_modules", {})
        monkeypatch.setattr(library, "_kernels", {})
    return emulated


# ---- cuBLAS, emulated on host memory (the half-precision batched GEMM's one call) ------------------------

def install_fake_cublas(monkeypatch, capability=(9, 0)):
    """Make ``cupy_backends.cuda.libs.cublas`` the host-memory GEMM above, and the GPU an sm_90 (for one test).

    Args:
        monkeypatch: pytest's monkeypatch fixture.
        capability: the compute capability ``cupynet.cuda.device`` reports (bf16 GEMM needs 8.0).
    """
    cublas = kernels.fake_cublas()
    monkeypatch.setattr(device, "cublas", lambda: cublas)  # NOTE: the emulated device would hand out its own
    package = types.SimpleNamespace(cuda=types.SimpleNamespace(libs=types.SimpleNamespace(cublas=cublas)))
    monkeypatch.setitem(sys.modules, "cupy_backends", package)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda", package.cuda)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", package.cuda.libs)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", cublas)
    monkeypatch.setattr(device, "get_device_capability", lambda index=0: capability)
    return cublas

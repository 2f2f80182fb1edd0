"""CUDA on the CPU: cupynet's own kernels, from their real source, run through their real launchers.

Every launcher of cupynet gets CuPy from one function, ``cupynet.cuda.device.cupy()``.
:func:`install` puts :class:`EmulatedCupy` there, and nothing else changes: the
launchers build their arguments, chunk tables and grids as on a GPU, and
``cupy.RawModule(code=..., name_expressions=...)`` receives the exact text it would
hand to NVRTC. The emulator compiles that text as C++ with g++ and a small shim
(``cuda_runtime.h``, ``cuda_fp16.h``, ``cuda_bf16.h`` in this folder), exports
each name expression, and runs a launch as one ``std::thread`` per CUDA thread,
block after block (see ``cuda_runtime.h`` for how barriers, warps, shared memory
and flush-to-zero are mirrored).

What it checks on every launch, besides running the kernel:

* each argument's byte size and kind against the kernel's C signature, with CuPy's
  packing rules (a Python ``int`` is an 8-byte ``long long``, a Python ``float`` an
  8-byte ``double``; arrays are pointers, and their item size must match the pointee);
* a divergent ``__syncthreads``, a divergent or broken warp shuffle, and a block that
  can never finish (deadlock) are errors (:class:`KernelError`);
* device arrays sit between guard bytes; a kernel that writes outside its arrays fails.

Device memory is host memory here (:class:`DeviceArray`, a NumPy array with
``.data.ptr``), so a test reads results with ``numpy.asarray``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import types
import weakref

import numpy

from cupynet import dtypes
from cupynet.amp.kernels import launch as amp_launch
from cupynet.cuda import device, multi_tensor
from cupynet.ops.kernels import launch as ops_launch
from cupynet.optim.kernels import launch as optim_launch

__all__ = ["GXX", "LIBRARIES", "EXECUTED", "KernelError", "DeviceArray", "EmulatedCupy", "install",
           "compile_source"]

HERE = pathlib.Path(__file__).resolve().parent
GXX = shutil.which("g++") if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64") else None
"""The compiler, or None where the harness cannot run: it needs g++ on Linux, on a CPU whose flush-to-zero mode
``cuda_runtime.h`` knows how to set (x86-64, AArch64)."""

CXXFLAGS = ("-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-ffp-contract=off", "-fno-fast-math")
"""C++20 for std::atomic_ref (NVRTC compiles the same text as C++17); no contraction: a*b+c rounds twice."""

LIBRARIES = {"amp": amp_launch.KERNELS, "optim": optim_launch.KERNELS, "ops": ops_launch.KERNELS}
"""Every kernel library of cupynet, by package."""

EXECUTED: set = set()
"""``(.cu file, name expression)`` of every kernel launched through the harness in this process."""

GUARD = 256
"""Guard bytes before and after every device array (an out-of-bounds write changes them)."""

_EMPTY = 0xFF  # NOTE: what cupy.empty holds here: NaN (floats) or -1 (ints), so reading it unwritten is loud
_GUARD = 0x7F  # NOTE: 3.4e38 as fp32, NaN as fp16: an out-of-bounds read is loud, and any value written changes it


class KernelError(RuntimeError):
    """A kernel broke a rule of CUDA, wrote out of bounds, or was launched with arguments that do not fit it."""


# ----------------------------------------------------------------------------- compiling


def _marked_files(code: str) -> list:
    """``[(first line, file name)]`` of the ``// ---- name ----`` markers the sources carry."""
    return [(n, m.group(1)) for n, line in enumerate(code.splitlines(), 1)
            if (m := re.match(r"// ---- (\S+) ----$", line))]


def _where(code: str, line: int) -> str:
    """``file:line`` of a line of the compiled text."""
    name, first = "launch constants", 0
    for start, marked in _marked_files(code):
        if start < line:
            name, first = marked, start
    return f"{name}:{line - first}"


def _with_places(code: str, text: str) -> str:
    return re.sub(r"source line (\d+)", lambda m: _where(code, int(m.group(1))), text)


class CompiledModule:
    """One ``.cu`` text compiled for the CPU: a shared library exporting each name expression.

    Args:
        path: the shared library.
        code: the text it was compiled from.
        name_expressions: the kernels it exports, in export order.
    """

    def __init__(self, path, code, name_expressions):
        self.library = ctypes.CDLL(str(path))
        self.code = code
        self.names = list(name_expressions)
        self.file = _marked_files(code)[-1][1] if _marked_files(code) else "<source>"
        self.signatures = [self._signature(i) for i in range(len(self.names))]

    def _signature(self, index):
        capacity = 64
        sizes, kinds = (ctypes.c_longlong * capacity)(), ctypes.create_string_buffer(capacity)
        pointee_sizes, pointee_kinds = (ctypes.c_longlong * capacity)(), ctypes.create_string_buffer(capacity)
        n = getattr(self.library, f"cupynet_emu_signature_{index}")(sizes, kinds, pointee_sizes, pointee_kinds,
                                                                    capacity)
        return [(sizes[i], kinds.raw[i:i + 1].decode(), pointee_sizes[i], pointee_kinds.raw[i:i + 1].decode())
                for i in range(n)]

    def launch(self, index, grid, block, argv) -> str:
        """Run one launch; return the kernel's error message, or '' when it completed."""
        message = ctypes.create_string_buffer(4096)
        function = getattr(self.library, f"cupynet_emu_launch_{index}")
        status = function((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), argv, message, len(message))
        return _with_places(self.code, message.value.decode(errors="replace")) if status else ""


_compiled: dict = {}
_compile_lock = threading.Lock()


@functools.cache
def _cache_dir() -> pathlib.Path:
    """Where compiled kernels are kept between runs: a folder of this user's that nobody else can write."""
    uid = os.getuid()
    path = pathlib.Path(tempfile.gettempdir()) / f"cupynet-cuda-emulation-{uid}"
    path.mkdir(mode=0o700, exist_ok=True)
    status = path.stat()
    if status.st_uid != uid or status.st_mode & 0o022:  # NOTE: never load a library someone else could plant
        path = pathlib.Path(tempfile.mkdtemp(prefix="cupynet-cuda-emulation-"))
    return path


def _translation_unit(code, name_expressions) -> str:
    exports = "\n".join(f"CUPYNET_EMU_EXPORT({i}, {name})" for i, name in enumerate(name_expressions))
    return f"{code}\n// ---- the harness's exports ----\n{exports}\n"


def compile_source(code: str, name_expressions) -> CompiledModule:
    """Compile a kernel text for the CPU (cached on disk by content), exporting these name expressions.

    Args:
        code: the text ``cupy.RawModule`` would receive.
        name_expressions: the kernels to export, e.g. ``["fused_sgd_kernel<float>"]``.
    """
    if GXX is None:
        raise RuntimeError("the CUDA-on-CPU harness needs g++ on an x86-64 or AArch64 CPU")
    unit = _translation_unit(code, name_expressions)
    shim = "".join((HERE / f).read_text() for f in ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h"))
    key = hashlib.sha256("\0".join([unit, shim, GXX, *CXXFLAGS]).encode()).hexdigest()[:24]
    with _compile_lock:
        if key not in _compiled:
            target = _cache_dir() / f"{key}.so"
            if not target.exists():
                _build(unit, target, code)
            _compiled[key] = CompiledModule(target, code, name_expressions)
        return _compiled[key]


def _build(unit, target, code):
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        source, output = pathlib.Path(work) / "module.cpp", pathlib.Path(work) / "module.so"
        source.write_text(unit)
        command = [GXX, *CXXFLAGS, "-include", str(HERE / "cuda_runtime.h"), f"-I{HERE}", str(source), "-o",
                   str(output)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            log = re.sub(r"module\.cpp:(\d+)", lambda m: _where(unit, int(m.group(1))), result.stderr)
            raise KernelError(f"g++ could not compile the kernel source:\n{log[-6000:]}")
        os.replace(output, target)  # NOTE: atomic: a concurrent run sees the whole library or none


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


_DEVICE_KIND = {numpy.dtype(d): "f" for d in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)}


def _kind_of_dtype(dtype) -> str:
    dtype = numpy.dtype(dtype)
    return _DEVICE_KIND.get(dtype, "i" if dtype.kind in "biu" else "?")


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
        unknown = set(options) - {"-std=c++17"}
        if unknown:
            raise KernelError(f"RawModule: the harness does not know the options {sorted(unknown)}")
        module = compile_source(code, list(name_expressions))
        return types.SimpleNamespace(get_function=lambda name: _Function(self, module, name))


def _as_cupy_packs_it(arg):
    """The scalar CuPy would pass for ``arg``: numpy scalars as they are, Python ints and floats widened."""
    if isinstance(arg, numpy.generic):
        return arg, type(arg).__name__
    if isinstance(arg, int):  # NOTE: bool too: CuPy tests isinstance(x, int) first
        return numpy.int64(arg), "a Python int, which CuPy passes as an 8-byte long long"
    if isinstance(arg, float):
        return numpy.float64(arg), "a Python float, which CuPy passes as an 8-byte double"
    raise TypeError(f"CuPy cannot pass a {type(arg).__name__} to a kernel")


class _Function:
    """One kernel of a compiled module, called as CuPy calls a RawKernel: ``f(grid, block, args)``."""

    def __init__(self, cupy, module, name):
        if name not in module.names:
            raise KernelError(f"get_function: {name!r} is not one of the module's name expressions {module.names}")
        self.cupy, self.module, self.name = cupy, module, name
        self.index = module.names.index(name)

    def _argument(self, i, arg, param):
        size, kind, pointee_size, pointee_kind = param
        where = f"{self.name}: argument {i}"
        if kind == "p":
            if arg is None:
                return ctypes.c_void_p(0)
            if not isinstance(arg, DeviceArray):
                raise KernelError(f"{where} is a pointer; got {type(arg).__name__} (device arrays or None only)")
            if pointee_size and (arg.dtype.itemsize != pointee_size or _kind_of_dtype(arg.dtype) != pointee_kind):
                raise KernelError(f"{where} points to {pointee_size}-byte '{pointee_kind}' values; got a "
                                  f"{arg.dtype} array")
            return ctypes.c_void_p(arg.data.ptr)
        if isinstance(arg, numpy.ndarray) or arg is None:
            raise KernelError(f"{where} is a {size}-byte scalar; got {'None' if arg is None else 'an array'}")
        value, what = _as_cupy_packs_it(arg)
        if value.nbytes != size or _kind_of_dtype(value.dtype) != kind:
            raise KernelError(f"{where} is a {size}-byte '{kind}' scalar; got {what} ({value.nbytes} bytes): "
                              "wrap it in cupynet.cuda.args.c_int / c_float / ...")
        return ctypes.create_string_buffer(value.tobytes(), size)

    def __call__(self, grid, block, args):
        grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
        params = self.module.signatures[self.index]
        if len(args) != len(params):
            raise KernelError(f"{self.name} takes {len(params)} arguments; got {len(args)}")
        if min(grid) < 1 or min(block) < 1 or numpy.prod(block) > 1024:
            raise KernelError(f"{self.name}: invalid launch grid {grid} / block {block}")
        buffers = [self._argument(i, a, p) for i, (a, p) in enumerate(zip(args, params))]
        argv = (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])
        self.cupy.launches.append(self.name)
        EXECUTED.add((self.module.file, self.name))
        error = self.module.launch(self.index, grid, block, argv)
        if error:
            raise KernelError(f"{self.name}: {error}")
        self.cupy.check_guards(self.name)


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

def _read(ptr, dtype, count):
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return numpy.frombuffer(buffer, dtype=dtype, count=count)


def fake_gemm_strided_batched_ex(handle, transa, transb, m, n, k, alpha, a_ptr, a_type, lda, stride_a, b_ptr, b_type,
                                 ldb, stride_b, beta, c_ptr, c_type, ldc, stride_c, batch, compute, algo):
    """cuBLAS semantics: C_i = op(A_i) op(B_i), column-major with leading dims, i-th matrix at ptr + i * stride."""
    dtype = {2: numpy.dtype(numpy.float16), 14: numpy.dtype(dtypes.bfloat16)}[a_type]
    assert a_type == b_type == c_type and compute == 68 and algo == 99
    f32 = numpy.dtype(numpy.float32)
    assert _read(alpha, f32, 1)[0] == 1.0 and _read(beta, f32, 1)[0] == 0.0

    def matrix(ptr, ld, rows, cols, op, i, stride):
        r, c = (rows, cols) if op == 0 else (cols, rows)  # stored shape before op
        flat = _read(ptr + i * stride * dtype.itemsize, dtype, ld * (c - 1) + r).astype(numpy.float32)
        stored = numpy.lib.stride_tricks.as_strided(flat, (r, c), (4, 4 * ld))
        return stored if op == 0 else stored.T

    out_type = dtype
    for i in range(batch):
        product = matrix(a_ptr, lda, m, k, transa, i, stride_a) @ matrix(b_ptr, ldb, k, n, transb, i, stride_b)
        target = (ctypes.c_char * (ldc * n * out_type.itemsize)).from_address(c_ptr + i * stride_c * out_type.itemsize)
        view = numpy.frombuffer(target, dtype=out_type).reshape(n, ldc).T  # column-major (ldc, n)
        view[:m, :n] = product.astype(out_type)


def install_fake_cublas(monkeypatch, capability=(9, 0)):
    """Make ``cupy_backends.cuda.libs.cublas`` the host-memory GEMM above, and the GPU an sm_90 (for one test).

    Args:
        monkeypatch: pytest's monkeypatch fixture.
        capability: the compute capability ``cupynet.cuda.device`` reports (bf16 GEMM needs 8.0).
    """
    cublas = types.SimpleNamespace(CUBLAS_OP_N=0, CUBLAS_OP_T=1, CUBLAS_COMPUTE_32F=68,
                                   CUBLAS_GEMM_DEFAULT_TENSOR_OP=99, setStream=lambda handle, stream: None,
                                   gemmStridedBatchedEx=fake_gemm_strided_batched_ex)
    package = types.SimpleNamespace(cuda=types.SimpleNamespace(libs=types.SimpleNamespace(cublas=cublas)))
    monkeypatch.setitem(sys.modules, "cupy_backends", package)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda", package.cuda)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", package.cuda.libs)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", cublas)
    monkeypatch.setattr(device, "get_device_capability", lambda index=0: capability)
    return cublas

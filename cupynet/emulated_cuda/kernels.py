"""CUDA on the CPU: cupynet's own kernels, from their real source, compiled with g++ and run as fibers.

``RawModule(code=..., name_expressions=...)`` receives the exact text CuPy would hand to NVRTC. It is
compiled as C++ with g++ and a small shim (``cuda_runtime.h``, ``cuda_fp16.h``, ``cuda_bf16.h`` beside
this file), each name expression is exported, and a launch runs one fiber (a ``ucontext_t`` with its
own stack, on the calling OS thread) per CUDA thread, block after block; a fiber runs until it waits at
a barrier or shuffle, then the next one (``cuda_runtime.h`` says how barriers, warps, shared memory and
flush-to-zero are mirrored). The emulated CUDA device uses it for every RawKernel launch; the test harness
(tests/cuda_emulation) adds guard bytes around its arrays on top.

What every launch checks, besides running the kernel:

* each argument's byte size and kind against the kernel's C signature, with CuPy's packing rules (a
  Python ``int`` is an 8-byte ``long long``, a Python ``float`` an 8-byte ``double``; arrays are
  pointers, and their item size must match the pointee);
* a divergent ``__syncthreads``, a divergent or broken warp shuffle, and a block that can never finish
  (deadlock) are errors (:class:`KernelError`).

It needs g++ on Linux, on x86-64 or AArch64 (whose flush-to-zero mode the shim sets); elsewhere
:data:`GXX` is None and compiling raises a clear error.
"""

from __future__ import annotations

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

import ml_dtypes
import numpy

__all__ = ["GXX", "EXECUTED", "KernelError", "CompiledModule", "compile_source", "RawModule", "RawKernel",
           "KernelFunction", "fake_gemm_strided_batched_ex", "fake_cublas", "unavailable_reason"]

HERE = pathlib.Path(__file__).resolve().parent
GXX = shutil.which("g++") if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64") else None
"""The compiler, or None where kernels cannot run here (they need g++ on Linux, on x86-64 or AArch64)."""

CXXFLAGS = ("-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-ffp-contract=off", "-fno-fast-math")
"""C++20 for std::atomic_ref (NVRTC compiles the same text as C++17); no contraction: a*b+c rounds twice."""

EXECUTED: set = set()
"""``(.cu file, name expression)`` of every kernel launched on the CPU in this process."""


class KernelError(RuntimeError):
    """A kernel broke a rule of CUDA, wrote out of bounds, or was launched with arguments that do not fit it."""


def unavailable_reason():
    """Why kernels cannot run on this machine, or None when they can."""
    if GXX is not None:
        return None
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")):
        return f"the CUDA-on-CPU kernels need Linux on x86-64 or AArch64 (this is {sys.platform} {platform.machine()})"
    return "the CUDA-on-CPU kernels need g++ (not found on PATH): install it (e.g. apt-get install g++)"


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
        raise RuntimeError(unavailable_reason())
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


# ----------------------------------------------------------------------------- launching


_DEVICE_KIND = {numpy.dtype(d): "f" for d in (numpy.float16, ml_dtypes.bfloat16, numpy.float32, numpy.float64)}


def _kind_of_dtype(dtype) -> str:
    dtype = numpy.dtype(dtype)
    return _DEVICE_KIND.get(dtype, "i" if dtype.kind in "biu" else "?")


def _as_cupy_packs_it(arg):
    """The scalar CuPy would pass for ``arg``, and how to name it in an error.

    As CuPy packs kernel arguments: NumPy scalars go as they are; a Python bool as a 1-byte bool, an int
    as an 8-byte ``long long`` (``unsigned long long`` from 2**63), a float as an 8-byte ``double``; a
    NumPy array of one element goes by value, a larger one is CuPy's ``TypeError``.
    """
    if isinstance(arg, numpy.generic):
        return arg, type(arg).__name__
    if isinstance(arg, numpy.ndarray):
        if arg.size != 1:
            raise TypeError(f"You are trying to pass a numpy.ndarray of shape {arg.shape} as a kernel parameter. "
                            "Only numpy.ndarrays of size one can be passed by value. If you meant to pass a "
                            "pointer to __global__ memory, you need to pass a cupy.ndarray instead.")
        return arg.reshape(())[()], f"a one-element {arg.dtype} numpy.ndarray"
    if type(arg) is bool:
        return numpy.bool_(arg), "a Python bool, which CuPy passes as a 1-byte bool"
    if type(arg) is int:
        value = numpy.uint64(arg) if arg >= 2**63 else numpy.int64(arg)
        return value, "a Python int, which CuPy passes as an 8-byte long long"
    if type(arg) is float:
        return numpy.float64(arg), "a Python float, which CuPy passes as an 8-byte double"
    if type(arg) is complex:
        return numpy.complex128(arg), "a Python complex, which CuPy passes as a 16-byte complex double"
    raise TypeError(f"Unsupported type {type(arg)}")


class KernelFunction:
    """One kernel of a compiled module, called as CuPy calls a RawKernel: ``f(grid, block, args)``.

    Args:
        module: the :class:`CompiledModule`.
        name: the name expression.
        is_device_array: what counts as a device array argument (passed as its ``.data.ptr``).
        before: called with the kernel's name just before each launch (counting).
        after: called with the kernel's name after each launch that completed (checks).
    """

    def __init__(self, module, name, is_device_array, before=None, after=None):
        if name not in module.names:
            raise KernelError(f"get_function: {name!r} is not one of the module's name expressions {module.names}")
        self.module, self.name = module, name
        self.index = module.names.index(name)
        self.is_device_array, self.before, self.after = is_device_array, before, after

    def _argument(self, i, arg, param):
        size, kind, pointee_size, pointee_kind = param
        where = f"{self.name}: argument {i}"
        if kind == "p":
            if arg is None:
                return ctypes.c_void_p(0)
            if not self.is_device_array(arg):
                raise KernelError(f"{where} is a pointer; got {type(arg).__name__} (device arrays or None only)")
            if pointee_size and (arg.dtype.itemsize != pointee_size or _kind_of_dtype(arg.dtype) != pointee_kind):
                raise KernelError(f"{where} points to {pointee_size}-byte '{pointee_kind}' values; got a "
                                  f"{arg.dtype} array")
            return ctypes.c_void_p(arg.data.ptr)
        if arg is None or self.is_device_array(arg):
            raise KernelError(f"{where} is a {size}-byte scalar; got {'None' if arg is None else 'a device array'}")
        value, what = _as_cupy_packs_it(arg)
        if value.nbytes != size or _kind_of_dtype(value.dtype) != kind:
            raise KernelError(f"{where} is a {size}-byte '{kind}' scalar; got {what} ({value.nbytes} bytes): "
                              "wrap it in cupynet.cuda.args.c_int / c_float / ...")
        return ctypes.create_string_buffer(value.tobytes(), size)

    def __call__(self, grid, block, args, shared_mem=0, stream=None, enable_cooperative_groups=False):
        """Launch: ``grid`` and ``block`` are tuples (as CuPy's ``Function`` demands), ``args`` the arguments.

        Args:
            grid: blocks per grid, a tuple of up to three.
            block: threads per block, a tuple of up to three.
            args: the kernel's arguments.
            shared_mem: dynamic shared memory in bytes (not emulated: must be 0).
            stream: ignored (one stream).
            enable_cooperative_groups: ignored.
        """
        if shared_mem:
            raise NotImplementedError(f"{self.name}: dynamic shared memory (shared_mem={shared_mem}) is not "
                                      "emulated on the CPU")
        for what, value in (("grid", grid), ("block", block)):
            if not isinstance(value, tuple):
                raise TypeError(f"Argument '{what}' has incorrect type (expected tuple, got {type(value).__name__})")
        grid, block = (grid + (1, 1))[:3], (block + (1, 1))[:3]
        params = self.module.signatures[self.index]
        if len(args) != len(params):
            raise KernelError(f"{self.name} takes {len(params)} arguments; got {len(args)}")
        if min(grid) < 1 or min(block) < 1 or numpy.prod(block) > 1024:
            raise KernelError(f"{self.name}: invalid launch grid {grid} / block {block}")
        buffers = [self._argument(i, a, p) for i, (a, p) in enumerate(zip(args, params))]
        argv = (ctypes.c_void_p * max(1, len(buffers)))(*[ctypes.addressof(b) for b in buffers])
        if self.before is not None:
            self.before(self.name)
        EXECUTED.add((self.module.file, self.name))
        error = self.module.launch(self.index, grid, block, argv)
        if error:
            raise KernelError(f"{self.name}: {error}")
        if self.after is not None:
            self.after(self.name)




def check_options(options):
    """Refuse NVRTC options the CPU build does not mirror.

    Args:
        options: the options given to ``RawModule``.
    """
    unknown = set(options) - {"-std=c++17"}
    if unknown:
        raise KernelError(f"RawModule: the CUDA-on-CPU build does not know the options {sorted(unknown)}")


def _is_emulated_array(arg):
    from .array import ndarray  # noqa: PLC0415 - array is the emulated device's; this module also serves tests

    return isinstance(arg, ndarray)


def _count(name):
    from .counters import count_launch  # noqa: PLC0415

    count_launch()


class RawModule:
    """``cupy.RawModule`` on the emulated device: the code compiled for the CPU, kernels run on threads.

    Args:
        code: the CUDA C++ text.
        options: NVRTC options (only ``-std=c++17`` is known).
        name_expressions: the kernels to export.
    """

    def __init__(self, *, code=None, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=None):
        if (code is None) == (path is None):
            raise TypeError("Exactly one of `code` and `path` keyword arguments must be given.")
        if code is None:
            raise NotImplementedError("cuda-emulated: RawModule(path=...) (a cubin) cannot run on the CPU")
        if not isinstance(options, tuple):  # NOTE: CuPy's `tuple options` refuses a list
            raise TypeError(f"Argument 'options' has incorrect type (expected tuple, got {type(options).__name__})")
        check_options(options)
        self.module = compile_source(code, list(name_expressions or ()))

    def get_function(self, name):
        """The kernel ``name`` (one of the name expressions).

        Args:
            name: the name expression.
        """
        return KernelFunction(self.module, name, _is_emulated_array, before=_count)


class RawKernel:
    """``cupy.RawKernel``: one ``extern "C"`` kernel of ``code``, named ``name``.

    Args:
        code: the CUDA C++ text.
        name: the kernel's name.
        options: NVRTC options.
    """

    def __init__(self, code, name, options=(), backend="nvrtc", *, translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=None):
        self._function = RawModule(code=code, options=options, name_expressions=[name]).get_function(name)

    def __call__(self, grid, block, args, **kwargs):
        return self._function(grid, block, args)


# ---- cuBLAS, emulated on host memory (the half-precision batched GEMM's one call) ------------------------

def _read(ptr, dtype, count):
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return numpy.frombuffer(buffer, dtype=dtype, count=count)


def fake_gemm_strided_batched_ex(handle, transa, transb, m, n, k, alpha, a_ptr, a_type, lda, stride_a, b_ptr, b_type,
                                 ldb, stride_b, beta, c_ptr, c_type, ldc, stride_c, batch, compute, algo):
    """cuBLAS semantics: C_i = op(A_i) op(B_i), column-major with leading dims, i-th matrix at ptr + i * stride."""
    dtype = {2: numpy.dtype(numpy.float16), 14: numpy.dtype(ml_dtypes.bfloat16)}[a_type]
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




def fake_cublas():
    """A stand-in for ``cupy_backends.cuda.libs.cublas`` with the one call cupynet makes (on host memory)."""
    import types  # noqa: PLC0415

    return types.SimpleNamespace(CUBLAS_OP_N=0, CUBLAS_OP_T=1, CUBLAS_COMPUTE_32F=68,
                                 CUBLAS_GEMM_DEFAULT_TENSOR_OP=99, setStream=lambda handle, stream: None,
                                 gemmStridedBatchedEx=fake_gemm_strided_batched_ex)

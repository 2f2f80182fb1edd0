"""Compiling a kernel package's CUDA sources with ``nvcc --ptx`` for several archs (shared by the compile tests).

A kernel package is described by its ``cupynet.cuda.compile.KernelLibrary`` (``library``).
The text compiled is exactly what the launcher hands to ``cupy.RawModule``: each file's
source plus a host table taking ``&kernel<T>`` for every name expression, which is
what NVRTC's name expressions do, so nvcc emits exactly the kernels the launcher looks up.
"""

import concurrent.futures
import os
import re
import shutil
import subprocess

import pytest

ARCHS = (70, 75, 80, 90)
"""sm_70, sm_80 and sm_90 as asked; sm_75 because CUDA 13 dropped sm_70 and 75 is its oldest target."""

NVCC = shutil.which("nvcc")


def instantiating_source(library, filename):
    """The launcher's source of ``filename`` plus the instantiation table of its name expressions."""
    addresses = ", ".join(f"(void*)&{e}" for e in library.name_expressions[filename])
    return f"{library.kernel_source(filename)}\nstatic void* const cupynet_instantiations[] = {{{addresses}}};\n"


def supported_archs():
    """The compute capabilities this nvcc can target."""
    listing = subprocess.run([NVCC, "--list-gpu-arch"], capture_output=True, text=True, check=True).stdout
    return {int(m) for m in re.findall(r"compute_(\d+)", listing)}


def compile_arch(library, arch, directory):
    """Compile every source file of ``library`` for ``compute_<arch>`` into ``directory/sm_<arch>``."""
    out = directory / f"sm_{arch}"
    out.mkdir()
    files = []
    for filename in library.source_files():
        (out / filename).write_text(instantiating_source(library, filename))
        files.append(str(out / filename))
    # NOTE: -ftz=true because CuPy adds it at run time
    command = [NVCC, "--ptx", f"-arch=compute_{arch}", "-ftz=true", *library.options, "-diag-suppress",
               "177", "-Werror", "all-warnings", *files, "-odir", str(out)]
    return subprocess.run(command, capture_output=True, text=True, cwd=out)


def compile_all(library, directory):
    """Compile for every arch in ARCHS this nvcc supports, in parallel: {arch: (result, dir)}."""
    if NVCC is None:
        pytest.skip("nvcc is not on PATH: the CUDA kernels cannot be compiled here")
    archs = sorted(set(ARCHS) & supported_archs())
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(archs), os.cpu_count() or 1))) as pool:
        results = dict(zip(archs, pool.map(lambda a: compile_arch(library, a, directory), archs)))
    return {arch: (result, directory / f"sm_{arch}") for arch, result in results.items()}


def _nvrtc12_paths():
    """(libnvrtc.so.12, CUDA include dir) from the pip packages nvidia-cuda-nvrtc-cu12 / -runtime-cu12, or None."""
    try:
        import nvidia.cuda_nvrtc
        import nvidia.cuda_runtime
    except ImportError:
        return None
    lib = os.path.join(list(nvidia.cuda_nvrtc.__path__)[0], "lib", "libnvrtc.so.12")
    include = os.path.join(list(nvidia.cuda_runtime.__path__)[0], "include")
    return (lib, include) if os.path.exists(lib) and os.path.isdir(include) else None


NVRTC12 = _nvrtc12_paths()


def nvrtc12_compile(source, name, name_expressions, options, arch):
    """Compile ``source`` with NVRTC 12 (what CuPy uses at run time) for ``compute_<arch>``: (ok, log).

    NOTE: CUDA 13's nvcc cannot target sm_70 (Volta was dropped); NVRTC from CUDA 12 still
    can, so this is how the sm_70 build of every kernel is checked without a GPU.
    """
    import ctypes
    lib_path, include = NVRTC12
    lib = ctypes.CDLL(lib_path)
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None) != 0:
        return False, "nvrtcCreateProgram failed"
    for expression in name_expressions:
        lib.nvrtcAddNameExpression(prog, expression.encode())
    opts = [f"--gpu-architecture=compute_{arch}", f"-I{include}", "-ftz=true", *options]
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return status == 0, log.value.decode(errors="replace")

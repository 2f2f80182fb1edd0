"""The device questions of scripts/gpu_check.sh: is the device usable (``probe``), and what is it (``report``).

Run from the repository root with ``PYTHONPATH=.``:

    python scripts/gpu_env.py probe [--emulated]   # "<device name>\\t<CuPy version>", or exit 1 and the reason
    python scripts/gpu_env.py report [--emulated]  # versions, device properties, cupy.show_config()

``--emulated`` asks about cupynet's emulated CUDA device (``CUPYNET_DEVICE=cuda-emulated``, on the CPU):
the probe then needs ``cupynet.emulated_cuda`` and one operation on that device; the report leaves out
what only real hardware has (device properties, ``cupy.show_config()``, PyTorch's CUDA).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys


def probe_gpu():
    """The name of GPU 0 and CuPy's version, after one real kernel (NVRTC, launch, copy back)."""
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("cupy.cuda.runtime.getDeviceCount() is 0")
    if int((cupy.arange(4) + 1).sum()) != 10:
        raise RuntimeError("a trivial CuPy kernel returned a wrong result")
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name), cupy.__version__


def probe_emulated():
    """The emulated device's name and its CuPy stand-in's version, after one operation on it."""
    import importlib

    try:
        emulated = importlib.import_module("cupynet.emulated_cuda")
    except ImportError as error:
        raise RuntimeError(f"cupynet.emulated_cuda is not importable ({error})") from None
    import cupynet as cn

    ones = cn.ones(4)  # NOTE: on the default device, which CUPYNET_DEVICE=cuda-emulated makes the emulated one
    if ones.device.type == "cpu":
        raise RuntimeError(f"CUPYNET_DEVICE={os.environ.get('CUPYNET_DEVICE')!r} puts new tensors on the CPU")
    if float((ones + 1).sum().item()) != 8.0:
        raise RuntimeError("one addition on the emulated device returned a wrong result")
    version = getattr(emulated, "__version__", None) or "none (the emulated device's CuPy stand-in)"
    return "emulated CUDA device (cupynet.emulated_cuda, on the CPU)", version


def report(emulated):
    import ml_dtypes
    import numpy

    print(f"python: {platform.python_version()} | numpy: {numpy.__version__} | ml_dtypes: {ml_dtypes.__version__}")
    try:
        import torch
        print(f"torch: {torch.__version__} | torch CUDA: {torch.version.cuda} | cuda available: "
              f"{torch.cuda.is_available()}")
    except ImportError:
        print("torch: not installed")
    if emulated:
        name, version = probe_emulated()
        print(f"device: {name} | cupy: {version}")
        print("EMULATED: no nvidia-smi, no device properties, no cupy.show_config(), no PyTorch on the GPU")
        return
    import cupy

    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"device: {name} | count: {runtime.getDeviceCount()} | compute capability: {props['major']}.{props['minor']}"
          f" | memory: {props['totalGlobalMem'] / 2**30:.1f} GiB | SMs: {props['multiProcessorCount']}")
    print(f"driver (CUDA API): {runtime.driverGetVersion()} | CUDA runtime: {runtime.runtimeGetVersion()} | "
          f"cupy: {cupy.__version__}")
    sys.stdout.flush()
    cupy.show_config()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("probe", "report"))
    parser.add_argument("--emulated", action="store_true",
                        help="the emulated CUDA device (CUPYNET_DEVICE=cuda-emulated)")
    args = parser.parse_args(argv)
    if args.what == "report":
        report(args.emulated)
        return 0
    try:
        name, version = probe_emulated() if args.emulated else probe_gpu()
    except Exception as error:  # NOTE: any failure is the answer: not installed, no device, a broken driver
        print(f"{type(error).__name__}: {error}".strip().splitlines()[0])
        return 1
    print(f"{name}\t{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

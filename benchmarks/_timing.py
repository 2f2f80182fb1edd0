"""Shared timing helpers for the benchmarks: median of repeated runs, synchronised on the GPU."""

from __future__ import annotations

import json
import platform
import statistics
import time


def sync(device_type):
    """Wait for the GPU when timing GPU work (a no-op on the CPU).

    Args:
        device_type: "cpu" or "cuda".
    """
    if device_type == "cuda":
        import cupy
        cupy.cuda.Device().synchronize()


def median_time(fn, repeats=50, warmup=5, device_type="cpu", torch_sync=False):
    """Median wall time of ``fn()`` in seconds over ``repeats`` runs after ``warmup`` runs.

    Args:
        fn: the function to time.
        repeats: timed runs.
        warmup: untimed runs first.
        device_type: synchronise the GPU around each run when "cuda".
        torch_sync: synchronise torch's CUDA stream instead of CuPy's.
    """
    def wait():
        if torch_sync:
            import torch
            torch.cuda.synchronize()
        else:
            sync(device_type)

    for _ in range(warmup):
        fn()
    wait()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        wait()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def environment():
    """Versions and machine facts to print with every result.

    Args:
        None.
    """
    import numpy

    import cupynet
    env = {"python": platform.python_version(), "numpy": numpy.__version__, "cupynet": cupynet.__version__,
           "machine": platform.machine(), "processor": platform.processor() or "unknown",
           "device": str(cupynet.default_device())}
    try:
        import torch
        env["torch"] = torch.__version__
    except ImportError:
        env["torch"] = None
    return env


def print_json(name, payload):
    """Print one JSON line tagged with the benchmark name.

    Args:
        name: the benchmark.
        payload: a JSON-able dict.
    """
    print(json.dumps({"benchmark": name, **payload}))

"""Shared timing helpers for the benchmarks: medians of repeated runs and paired comparisons, GPU-synchronised."""

from __future__ import annotations

import json
import platform
import statistics
import time


def sync(device_type):
    """Wait for the GPU when timing GPU work (a no-op on the CPU).

    NOTE: through ``cupynet.cuda.synchronize``, not CuPy directly, so that the emulated CUDA device
    (``CUPYNET_DEVICE=cuda-emulated``) is waited for the same way.

    Args:
        device_type: "cpu" or "cuda".
    """
    if device_type == "cuda":
        import cupynet.cuda
        cupynet.cuda.synchronize()


def _waiter(device_type, torch_sync):
    """A function that waits for the GPU work timed: torch's stream, CuPy's device, or nothing on the CPU."""
    def wait():
        if torch_sync:
            import torch
            torch.cuda.synchronize()
        else:
            sync(device_type)
    return wait


def median_time(fn, repeats=50, warmup=5, device_type="cpu", torch_sync=False):
    """Median wall time of ``fn()`` in seconds over ``repeats`` runs after ``warmup`` runs.

    Args:
        fn: the function to time.
        repeats: timed runs.
        warmup: untimed runs first.
        device_type: synchronise the GPU around each run when "cuda".
        torch_sync: synchronise torch's CUDA stream instead of CuPy's.
    """
    wait = _waiter(device_type, torch_sync)
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


def paired_times(fn_a, fn_b, pairs=500, warmup=20, device_type="cpu", torch_sync_b=False):
    """Time ``fn_a`` and ``fn_b`` alternately, one call each per pair, and compare them pair by pair.

    NOTE: shared machines drift (other tenants, clock changes) by more than the
    differences being measured; two calls made back to back see the same
    conditions, so the median of the per-pair ratios is far steadier than a
    ratio of two medians measured one after the other.

    Args:
        fn_a: the first function (cupynet).
        fn_b: the second function (the reference, e.g. PyTorch).
        pairs: timed pairs.
        warmup: untimed pairs first.
        device_type: synchronise CuPy's device after ``fn_a`` (and ``fn_b`` unless ``torch_sync_b``) when "cuda".
        torch_sync_b: synchronise torch's CUDA stream after ``fn_b`` instead.

    Returns:
        dict with ``a_s`` and ``b_s`` (median seconds per call), ``ratio`` (median of a/b over the pairs) and
        ``ratio_q1``/``ratio_q3`` (its quartiles).
    """
    if pairs < 2:
        raise ValueError(f"paired_times: pairs must be at least 2 (for quartiles), got {pairs}")

    wait_a, wait_b = _waiter(device_type, False), _waiter(device_type, torch_sync_b)
    for _ in range(warmup):
        fn_a()
        fn_b()
    wait_a()
    wait_b()
    times_a, times_b = [], []
    for _ in range(pairs):
        start = time.perf_counter()
        fn_a()
        wait_a()
        middle = time.perf_counter()
        fn_b()
        wait_b()
        times_a.append(middle - start)
        times_b.append(time.perf_counter() - middle)
    ratios = sorted(a / b for a, b in zip(times_a, times_b))
    quartiles = statistics.quantiles(ratios, n=4)
    return {"a_s": statistics.median(times_a), "b_s": statistics.median(times_b),
            "ratio": statistics.median(ratios), "ratio_q1": quartiles[0], "ratio_q3": quartiles[2]}


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

"""BLAS threads for ``cupynet train`` on the CPU: ``--threads N``, a default for small models, a warning.

NOTE (why one thread by default for small models): a GEMM of a digits MLP (batch 64, 64x128 weights) takes
microseconds; splitting it across threads buys little when the machine is idle and costs a great deal when it
is not. On a loaded 2-core machine (other processes busy) OpenBLAS's spinning worker threads wait for cores
they do not get: the digits MLP's training step ran at a median 10.5k samples/s with one BLAS thread and 1.4k
with two (load average ~11), and at 4.1k against 141 with two more busy processes
(benchmarks/results/threads-cpu-2core-20261123.txt, benchmarks/bench_threads.py). So on the CPU a model below
``SMALL_MODEL_PARAMETERS`` trains with one BLAS thread unless ``--threads`` says otherwise; bigger models keep
the library's own default. On a GPU the setting only affects host-side NumPy work and is left alone.

threadpoolctl (pure Python) reads and limits the BLAS pools NumPy loaded; without it the thread count is
reported as unknown and ``--threads`` is an error naming the package to install.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["BlasThreads", "SMALL_MODEL_PARAMETERS", "blas_pools"]

SMALL_MODEL_PARAMETERS = 1_000_000


def blas_pools() -> list:
    """The BLAS thread pools of this process: ``[{"internal_api": "openblas", "num_threads": 2, ...}]``.

    Returns [] when threadpoolctl is not installed (or no BLAS is loaded).
    """
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    import numpy  # noqa: F401  NOTE: NumPy's BLAS is loaded with NumPy; make sure it is there to be found
    return [pool for pool in threadpool_info() if pool.get("user_api") == "blas"]


def _cpus_available() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class BlasThreads:
    """Decide and apply the BLAS thread count of one run; ``with`` it around the training.

    Args:
        requested: ``--threads N`` (a positive int) or None for the default.
        device_type: "cpu" or "cuda".
        parameters: the model's parameter count (small models get one thread on the CPU).
    """

    def __init__(self, requested, device_type, parameters):
        if requested is not None and (isinstance(requested, bool) or not isinstance(requested, int)
                                      or requested < 1):
            raise ValueError(f"--threads must be a positive integer, got {requested!r}")
        self.pools = blas_pools()
        if requested is not None and not self.pools:
            raise ImportError("--threads needs threadpoolctl to set the BLAS threads: pip install threadpoolctl")
        self.library_default = max((p["num_threads"] for p in self.pools), default=None)
        self.limit, self.reason = self._choose(requested, device_type, parameters)
        self._stack = None

    def _choose(self, requested, device_type, parameters):
        if requested is not None:
            return requested, "--threads"
        if not self.pools:
            return None, "threadpoolctl not installed; the BLAS library's default"
        if device_type == "cpu" and parameters < SMALL_MODEL_PARAMETERS and self.library_default > 1:
            return 1, f"default for models under {SMALL_MODEL_PARAMETERS:,} parameters on the CPU; --threads N"
        return None, "the BLAS library's default; --threads N to change"

    @property
    def threads(self):
        """The BLAS threads the run uses (None when unknown)."""
        return self.limit if self.limit is not None else self.library_default

    def describe(self) -> str:
        """One line for the run header: "1 (openblas, default for ...)"."""
        libraries = ",".join(sorted({p.get("internal_api", "?") for p in self.pools})) or "BLAS"
        count = "unknown" if self.threads is None else str(self.threads)
        return f"{count} ({libraries}; {self.reason})"

    def oversubscription(self):
        """A warning when the BLAS threads look oversubscribed, else None (cheap: affinity and load average).

        NOTE: threads beyond the cores this process may use, or a 1-minute load average that leaves fewer idle
        cores than threads, make BLAS workers spin-wait for each other; one thread is then faster.
        """
        threads = self.threads
        if threads is None or threads <= 1:
            return None
        cpus = _cpus_available()
        if threads > cpus:
            return (f"warning: {threads} BLAS threads on {cpus} available core(s) oversubscribe the CPU; "
                    f"try --threads {cpus}")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        if load + threads > cpus + 0.5:
            return (f"warning: {threads} BLAS threads with a load average of {load:.1f} on {cpus} core(s): the "
                    "BLAS pool looks oversubscribed and small matrix products may slow down a lot; try --threads 1")
        return None

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        if self.limit is not None and self.pools:
            from threadpoolctl import threadpool_limits
            self._stack.enter_context(threadpool_limits(limits=self.limit, user_api="blas"))
        return self

    def __exit__(self, *exc):
        self._stack.close()
        return False

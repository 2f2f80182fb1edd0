"""Data-parallel training on the CPU: step time at 1 and 2 processes, the all-reduce share, bucket overlap.

Run: PYTHONPATH=. python benchmarks/bench_distributed.py [--nproc 1 2] [--steps 60]
It starts itself under ``mpiexec -n N`` for each N (Open MPI from the ``distributed`` extra) and prints
one JSON line per (model, N, bucket setting) from rank 0. The global batch is fixed (strong scaling):
1 process runs all of it, 2 processes half each, one BLAS thread per process.

Measured, per step (median over the timed steps):
- ``step_s``: forward + backward (with the bucket all-reduces inside it) + SGD step;
- ``reduce_s``: time inside the bucket all-reduces, *waiting for the other rank included* (a rank that
  finishes its backward first waits there); ``reduce_share`` = reduce_s / step_s;
- ``allreduce_alone_s``: one all-reduce of a gradient-sized buffer after a barrier (the transport alone);
- ``in_backward``: the share of buckets reduced while backward still had gradients to compute (overlap). With
  blocking MPI on the CPU that is interleaving, not concurrency: the rank computes nothing during a
  reduction. ``buckets=1`` (bucket_cap_mb large) reduces everything once at the end, for comparison.
"""

from __future__ import annotations

import os

# NOTE: one BLAS thread per process, as in the other CPU benchmarks: set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("CUPYNET_DEVICE", "cpu")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

GLOBAL_BATCH = 128
MODELS = {"mlp": (1, 8, 8), "cnn": (1, 28, 28)}
BUCKETS = {"25MB": 25.0, "small": 0.05}


def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _environment():
    import mpi4py  # noqa: PLC0415

    return {"benchmark": "environment", "cores": os.cpu_count(), "load_average_1_5_15": os.getloadavg(),
            "numpy": np.__version__, "mpi4py": mpi4py.__version__, "python": sys.version.split()[0],
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}


def launch(nprocs, steps):
    """Run this script under mpiexec for each process count; print rank 0's JSON lines."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print(json.dumps(_environment()), flush=True)
    for n in nprocs:
        cmd = [_mpiexec(), "-n", str(n), "--oversubscribe", "--bind-to", "core", sys.executable, __file__,
               "--worker", "--steps", str(steps)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise SystemExit(done.stdout + done.stderr)
        print(done.stdout, end="", flush=True)
    print(json.dumps({**_environment(), "benchmark": "environment-after"}), flush=True)


def _median(values):
    return statistics.median(values) if values else 0.0


def measure(model_name, cap, steps):
    """Time ``steps`` DDP training steps of one model; returns rank 0's row."""
    import cupynet as cn  # noqa: PLC0415
    from cupynet import distributed as dist  # noqa: PLC0415
    from cupynet import nn, optim  # noqa: PLC0415
    from cupynet.models import build_model  # noqa: PLC0415
    from cupynet.nn.parallel import DistributedDataParallel  # noqa: PLC0415

    rank, world = dist.get_rank(), dist.get_world_size()
    cn.manual_seed(0)
    model = DistributedDataParallel(build_model(model_name, MODELS[model_name], 10), bucket_cap_mb=cap)
    opt = optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(rank)
    local = GLOBAL_BATCH // world
    x = cn.tensor(rng.standard_normal((local,) + MODELS[model_name]).astype(np.float32))
    y = cn.tensor(rng.integers(0, 10, local))
    step_times, reduce_times, in_backward = [], [], []
    for i in range(steps + 5):
        stats = dict(model.reducer.stats)
        dist.barrier()
        start = time.perf_counter()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        elapsed = time.perf_counter() - start
        if i >= 5:                     # NOTE: the first steps warm caches and allocators
            new = model.reducer.stats
            step_times.append(elapsed)
            reduce_times.append(new["reduce_seconds"] - stats["reduce_seconds"])
            done = new["buckets_overlapped"] - stats["buckets_overlapped"]
            in_backward.append(done / len(model.reducer.buckets))
    params = sum(p.array.size for p in model.parameters())
    flat = np.ones(params, np.float32)
    alone = []
    for _ in range(20):
        dist.barrier()
        start = time.perf_counter()
        dist.collectives.reduce_array_(flat)
        alone.append(time.perf_counter() - start)
    return {"benchmark": "distributed", "model": model_name, "nproc": world, "buckets": len(model.reducer.buckets),
            "bucket_cap_mb": cap, "global_batch": GLOBAL_BATCH, "parameters": params,
            "step_s": _median(step_times), "reduce_s": _median(reduce_times),
            "reduce_share": _median(reduce_times) / _median(step_times),
            "allreduce_alone_s": _median(alone), "in_backward": _median(in_backward)}


def worker(steps):
    """One MPI rank: all models and bucket settings."""
    from cupynet import distributed as dist  # noqa: PLC0415

    dist.init_process_group("mpi")
    for model_name in MODELS:
        for cap in BUCKETS.values():
            if dist.get_world_size() == 1 and cap != BUCKETS["25MB"]:
                continue
            row = measure(model_name, cap, steps)
            if dist.get_rank() == 0:
                print(json.dumps(row), flush=True)
    dist.destroy_process_group()


def main():
    """Parse the arguments; launch the ranks, or be one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.steps)
    else:
        launch(args.nproc, args.steps)


if __name__ == "__main__":
    main()

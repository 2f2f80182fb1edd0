"""``cupynet train`` in several processes: ``--nproc N`` starts N through ``mpiexec``; under MPI every
rank trains a DistributedDataParallel replica on its shard of the training set, and rank 0 alone
prints, writes metrics and saves checkpoints (all ranks resume from them).

``--batch-size`` is per process, as in PyTorch: the global batch is N times it (the header says both).
The training loss and accuracy printed, written to ``--metrics`` and kept in the checkpoints are rank 0's,
measured on its shard: one set of numbers everywhere; validation and test use the whole sets.
Run as root, ``--nproc`` passes Open MPI's ``--allow-run-as-root`` and the header says so. A Ctrl-C or
SIGTERM sent to ``cupynet train --nproc N`` reaches every rank as SIGUSR1, and the ranks stop after the same
step (``agree_to_stop``), so rank 0's checkpoint resumes like a one-process run's. ``--nproc`` limits each
rank's BLAS threads to cores / N; with a bare ``mpiexec`` set ``OMP_NUM_THREADS`` yourself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys

__all__ = ["mpi_world_size", "relaunch", "data_parallel", "rank0_output", "launch_note", "agree_to_stop"]

_WORLD_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE")
AS_ROOT_VARIABLE = "CUPYNET_MPI_AS_ROOT"  # set by --nproc for its ranks when it started mpiexec as root


def mpi_world_size() -> int:
    """How many processes ``mpiexec`` started with this one (1 when it was not started by MPI)."""
    for name in _WORLD_SIZE_VARIABLES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


def _mpiexec() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        raise ImportError('--nproc needs mpiexec: pip install -e ".[distributed]" (mpi4py and Open MPI)')
    return found


def relaunch(argv, nproc: int) -> int:
    """Run ``cupynet`` with ``argv`` (less ``--nproc``) in ``nproc`` processes through mpiexec; its exit status.

    Args:
        argv: the command line after ``cupynet``.
        nproc: the number of processes.
    """
    if mpi_world_size() > 1:
        raise ValueError("--nproc inside mpiexec: give the process count once (mpiexec -n N or --nproc N)")
    rest, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            rest.append(arg)
    # NOTE: oversubscribe: N may exceed the cores (a CPU run on a laptop); no binding, so the OS places ranks
    cmd = [_mpiexec(), "-n", str(nproc), "--oversubscribe", "--bind-to", "none"]
    env = _thread_limits(nproc)
    from .stopping import LAUNCHED_VARIABLE  # noqa: PLC0415
    env[LAUNCHED_VARIABLE] = "1"
    if _is_root():
        # NOTE: Open MPI refuses to start as root unless told (containers usually run as root); as Horovod's
        # launcher does, say so: the run's header names it (AS_ROOT_VARIABLE)
        cmd.append("--allow-run-as-root")
        env[AS_ROOT_VARIABLE] = "1"
    # NOTE: mpiexec in its own session: a Ctrl-C on the terminal reaches this process only (mpiexec would kill
    # the job on SIGINT or SIGTERM); this process passes a first signal on as SIGUSR1, which Open MPI forwards
    # to every rank as it is, and the ranks stop together after one step and save (agree_to_stop). A second
    # signal is passed on as SIGTERM: mpiexec then ends the job at once.
    launched = subprocess.Popen([*cmd, sys.executable, "-m", "cupynet.cli", *rest], env=env,
                                start_new_session=True)
    received = []

    def forward(signum, frame):
        received.append(signum)
        launched.send_signal(signal.SIGUSR1 if len(received) == 1 else signal.SIGTERM)

    previous = {number: signal.signal(number, forward) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = launched.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if received:
        return 128 + received[0]  # NOTE: the status of the signal this command was sent: 130 or 143
    return 128 - status if status < 0 else status  # NOTE: killed by signal N: the shell's 128 + N


def agree_to_stop(trainer, requested: bool) -> bool:
    """Whether any rank wants to stop now (one small all-reduce); ``requested`` itself in one process.

    NOTE: every rank must stop after the same step, or the ones still training wait forever in DDP's
    gradient all-reduce; a signal reaches the ranks at slightly different steps.

    Args:
        trainer: the Trainer (its rank count and device).
        requested: this rank's wish.
    """
    if mpi_world_size() <= 1:
        return requested
    import cupynet as cn  # noqa: PLC0415
    from cupynet import distributed as dist  # noqa: PLC0415
    flag = cn.tensor([1.0 if requested else 0.0], device=trainer.device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item() > 0)


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def launch_note():
    """How this process was started, for the run header: "2 processes (mpiexec ...)", or None in one process."""
    world = mpi_world_size()
    if world <= 1:
        return None
    note = f"{world} processes (mpiexec, data-parallel; rank 0 reports and writes)"
    if os.environ.get(AS_ROOT_VARIABLE) == "1":
        note += "; running as root: started with Open MPI's --allow-run-as-root"
    return note


def _thread_limits(nproc: int) -> dict:
    """The environment with BLAS/OpenMP threads per rank set to cores // nproc, unless the user set them.

    NOTE: each NumPy process would otherwise start one BLAS thread per core; N processes then fight over
    the cores (torchrun sets OMP_NUM_THREADS=1 for the same reason).
    """
    threads = str(max(1, (os.cpu_count() or 1) // nproc))
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, threads)
    return env


def data_parallel(trainer) -> None:
    """Under MPI: join the process group, wrap the model in DDP and give this rank its shard of the data.

    Sets ``trainer.net`` (what the training step calls) and ``trainer.rank``; a no-op in one process.

    Args:
        trainer: the Trainer, with its model and loader built.
    """
    trainer.net, trainer.rank = trainer.model, 0
    if mpi_world_size() <= 1:
        return
    from cupynet import distributed as dist  # noqa: PLC0415
    from cupynet.data import DataLoader, DistributedSampler, Subset  # noqa: PLC0415
    from cupynet.nn.parallel import DistributedDataParallel  # noqa: PLC0415

    if not dist.is_initialized():
        dist.init_process_group("nccl" if trainer.device.type == "cuda" else "mpi")
    trainer.rank = dist.get_rank()
    trainer.net = DistributedDataParallel(trainer.model)
    # NOTE: equal shards (drop_last) so every rank runs the same number of steps per epoch; each rank
    # shuffles its shard with the run's seed
    shard = DistributedSampler(trainer.train_set, shuffle=False, drop_last=True)
    cfg = trainer.config
    trainer.loader = DataLoader(Subset(trainer.train_set, list(shard)), batch_size=cfg.batch_size, shuffle=True,
                                seed=cfg.seed, device=trainer.device)
    if trainer.rank != 0:
        # NOTE: the other ranks still resume from the checkpoint (--resume); they only never write one
        cfg.progress, cfg.metrics, cfg.save_every = False, None, None


@contextlib.contextmanager
def rank0_output(trainer, out):
    """Yield where summary lines go: ``out`` on rank 0; on the other ranks nowhere (stdout silenced too).

    Args:
        trainer: the Trainer.
        out: rank 0's destination (None: stdout).
    """
    if trainer.rank == 0:
        yield out
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield sink

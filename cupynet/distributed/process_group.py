"""The default process group: ``init_process_group`` and the questions about it (rank, world size).

One group per process, as PyTorch's default group: MPI starts the processes
(``mpiexec -n N``) and is the rendezvous; when torchrun's variables (RANK,
WORLD_SIZE) are set they must agree with MPI, so a script written for torchrun
runs unchanged under mpiexec and a wrong launch fails with the reason.
"""

from __future__ import annotations

import importlib.util
import os

from cupynet.distributed.mpi_backend import MPIBackend, import_mpi
from cupynet.distributed.nccl_backend import NCCLBackend, import_nccl

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available", "get_rank",
           "get_world_size", "get_backend", "default_backend", "resolve_ranks"]

NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."
_BACKENDS = ("mpi", "nccl", "gloo")


class _World:
    """The process-wide default group (NOTE: per process, not per thread, as in PyTorch)."""

    backend = None


_WORLD = _World()


def is_available() -> bool:
    """True when ``cupynet.distributed`` can start a group here (mpi4py is installed)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_initialized() -> bool:
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return _WORLD.backend is not None


def default_backend():
    """The backend object of the default group (raises the PyTorch error when there is none)."""
    if _WORLD.backend is None:
        raise ValueError(NOT_INITIALIZED)
    return _WORLD.backend


def get_rank(group=None) -> int:
    """This process's rank in the default group.

    Args:
        group: must be None (the default group; the only one cupynet has).
    """
    _check_group(group)
    return default_backend().rank


def get_world_size(group=None) -> int:
    """The number of processes in the default group.

    Args:
        group: must be None (the default group).
    """
    _check_group(group)
    return default_backend().size


def get_backend(group=None) -> str:
    """The default group's backend name: "mpi" or "nccl".

    Args:
        group: must be None (the default group).
    """
    _check_group(group)
    return default_backend().name


def _check_group(group) -> None:
    if group is not None:
        raise ValueError(f"cupynet.distributed has only the default group: pass group=None, got {group!r}")


def _env_int(environ, name):
    text = environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"init_process_group: environment variable {name}={text!r} is not an integer") from None


def resolve_ranks(mpi_rank: int, mpi_size: int, world_size: int = -1, rank: int = -1, environ=None) -> tuple:
    """``(rank, world_size)`` from MPI, checked against the arguments and torchrun's RANK/WORLD_SIZE.

    Args:
        mpi_rank: this process's rank in MPI_COMM_WORLD.
        mpi_size: the size of MPI_COMM_WORLD.
        world_size: the caller's world size (-1: take MPI's).
        rank: the caller's rank (-1: take MPI's).
        environ: the environment (default os.environ).
    """
    environ = os.environ if environ is None else environ
    claims = [("world_size=", world_size if world_size != -1 else None, mpi_size),
              ("rank=", rank if rank != -1 else None, mpi_rank),
              ("WORLD_SIZE=", _env_int(environ, "WORLD_SIZE"), mpi_size),
              ("RANK=", _env_int(environ, "RANK"), mpi_rank)]
    for what, claimed, actual in claims:
        if claimed is not None and claimed != actual:
            raise RuntimeError(
                f"init_process_group: {what}{claimed} but MPI started this process as rank {mpi_rank} of "
                f"{mpi_size}; launch with `mpiexec -n N python script.py` (cupynet's rendezvous is MPI's, "
                "torchrun alone cannot start the ranks)")
    return mpi_rank, mpi_size


def _local_rank(comm, mpi, environ) -> int:
    local = _env_int(environ, "LOCAL_RANK")
    if local is None:
        local = _env_int(environ, "OMPI_COMM_WORLD_LOCAL_RANK")
    if local is None:
        local = comm.Split_type(mpi.COMM_TYPE_SHARED).Get_rank()
    return local


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", device_id=None) -> None:
    """Join the default process group of the processes ``mpiexec`` started.

    Args:
        backend: "mpi" (NumPy arrays; also accepts PyTorch's CPU name "gloo") or "nccl"
            (CuPy arrays on one GPU per rank); None picks "mpi".
        init_method: None or "env://" (MPI is the rendezvous; URLs of other stores are refused).
        timeout: accepted for PyTorch compatibility; MPI collectives have no timeout.
        world_size: the expected world size (-1: MPI's); must equal MPI's.
        rank: the expected rank (-1: MPI's); must equal MPI's.
        store: must be None (no key-value store; MPI is the rendezvous).
        group_name: accepted for PyTorch compatibility.
        device_id: the GPU for backend "nccl" (default LOCAL_RANK, else the rank on this node).
    """
    del timeout, group_name
    name = "mpi" if backend is None else str(backend).lower()
    if name not in _BACKENDS:
        raise ValueError(f"init_process_group: backend must be one of 'mpi', 'nccl' ('gloo' means 'mpi'), "
                         f"got {backend!r}")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method must be None or 'env://' (MPI is the rendezvous), "
                         f"got {init_method!r}")
    if store is not None:
        raise ValueError("init_process_group: store must be None (cupynet's rendezvous is MPI's)")
    if _WORLD.backend is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    mpi = import_mpi()
    comm = mpi.COMM_WORLD
    resolve_ranks(comm.Get_rank(), comm.Get_size(), world_size, rank)
    group = MPIBackend(comm, mpi)
    if name == "nccl":
        cupy, nccl = import_nccl()
        device = device_id if device_id is not None else _local_rank(comm, mpi, os.environ)
        group = NCCLBackend(group, cupy, nccl, int(getattr(device, "index", device) or 0))
    _WORLD.backend = group


def destroy_process_group(group=None) -> None:
    """Leave the default group (a later ``init_process_group`` may start a new one).

    Args:
        group: must be None (the default group).
    """
    _check_group(group)
    default_backend().close()
    _WORLD.backend = None

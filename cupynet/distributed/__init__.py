"""``cupynet.distributed``: process groups and collectives, PyTorch's ``torch.distributed`` names.

Processes are started by MPI (``mpiexec -n N python train.py``), which is also the
rendezvous. Two backends: ``mpi`` (NumPy arrays, through mpi4py) and ``nccl`` (CuPy
arrays, through ``cupy.cuda.nccl``, its unique id sent over MPI). Install with
``pip install -e ".[distributed]"``; without it cupynet works as before and only
``init_process_group`` says what is missing. Read top-down:

1. ``process_group.py``: init / destroy, rank and world size (MPI's, checked against torchrun's variables);
2. ``collectives.py``: the collectives on Tensors and their cross-rank checks;
3. ``mpi_backend.py`` and ``nccl_backend.py``: the two transports, on raw arrays;
4. ``reduce_op.py``: ``ReduceOp``.

DistributedDataParallel (``cupynet.nn.parallel``) and DistributedSampler
(``cupynet.data.distributed``) are built on this package (docs/distributed.md).
"""

from cupynet.distributed.collectives import Work, all_gather, all_reduce, barrier, broadcast, reduce_scatter
from cupynet.distributed.process_group import (
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
)
from cupynet.distributed.reduce_op import ReduceOp

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available", "get_rank",
           "get_world_size", "get_backend", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier",
           "ReduceOp", "Work"]

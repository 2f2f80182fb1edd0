"""The ``nccl`` backend: collectives on CuPy arrays through ``cupy.cuda.nccl``, bootstrapped over MPI.

Rank 0 creates NCCL's unique id, MPI broadcasts it, and every rank builds one
``NcclCommunicator`` on its local GPU. Collectives are queued on the current CuPy
stream: no host sync. Small metadata (shape checks, the barrier) still goes over MPI.

NOTE: written against CuPy's ``cupy.cuda.nccl`` API and tested with fakes of that
module on the CPU; it has not yet run on a multi-GPU machine (docs/distributed.md).
"""

from __future__ import annotations

from cupynet.distributed.reduce_op import ReduceOp

__all__ = ["NCCLBackend", "import_nccl"]

_DTYPES = {"float16": "NCCL_FLOAT16", "bfloat16": "NCCL_BFLOAT16", "float32": "NCCL_FLOAT32",
           "float64": "NCCL_FLOAT64", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
           "int64": "NCCL_INT64", "bool": "NCCL_UINT8"}
_OPS = {ReduceOp.SUM: "NCCL_SUM", ReduceOp.AVG: "NCCL_SUM", ReduceOp.PRODUCT: "NCCL_PROD",
        ReduceOp.MAX: "NCCL_MAX", ReduceOp.MIN: "NCCL_MIN"}


def import_nccl():
    """``(cupy, cupy.cuda.nccl)``, or an ImportError naming what to install."""
    try:
        import cupy  # noqa: PLC0415
        from cupy.cuda import nccl  # noqa: PLC0415
    except ImportError as e:
        raise ImportError("backend 'nccl' needs CuPy with NCCL (pip install cupy-cuda12x nvidia-nccl-cu12); "
                          f"use backend='mpi' on the CPU ({e})") from e
    if not getattr(nccl, "available", True):
        raise ImportError("backend 'nccl': CuPy was built without NCCL (pip install nvidia-nccl-cu12)")
    return cupy, nccl


class NCCLBackend:
    """NCCL collectives on CuPy arrays, in place; MPI carries the unique id and small metadata.

    Args:
        mpi_backend: the MPIBackend of the same ranks (bootstrap and metadata).
        cupy: the ``cupy`` module.
        nccl: the ``cupy.cuda.nccl`` module.
        device: the local GPU index this rank uses.
    """

    name = "nccl"

    def __init__(self, mpi_backend, cupy, nccl, device: int):
        self.mpi, self.cupy, self.nccl = mpi_backend, cupy, nccl
        self.rank, self.size, self.device = mpi_backend.rank, mpi_backend.size, device
        cupy.cuda.Device(device).use()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = mpi_backend.broadcast_object(uid, 0)
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)

    def gather_objects(self, obj) -> list:
        """Every rank's ``obj`` (small metadata), over MPI."""
        return self.mpi.gather_objects(obj)

    def broadcast_object(self, obj, src: int = 0):
        """Rank ``src``'s ``obj`` (small metadata) on every rank, over MPI."""
        return self.mpi.broadcast_object(obj, src)

    def barrier(self) -> None:
        """Wait for this rank's queued NCCL work, then for every rank (over MPI)."""
        self.cupy.cuda.get_current_stream().synchronize()
        self.mpi.barrier()

    def all_reduce(self, array, op: ReduceOp) -> None:
        """Reduce ``array`` across ranks in place, on the current stream."""
        self._check(array)
        ptr = array.data.ptr
        self.comm.allReduce(ptr, ptr, array.size, self._dtype(array), self._op(op), self._stream())

    def broadcast(self, array, src: int) -> None:
        """Copy rank ``src``'s ``array`` into every rank's, in place."""
        self._check(array)
        self.comm.bcast(array.data.ptr, array.size, self._dtype(array), src, self._stream())

    def all_gather(self, out, array) -> None:
        """Fill ``out`` (``size`` blocks, rank order) with every rank's ``array``."""
        self._check(array)
        self._check(out)
        self.comm.allGather(array.data.ptr, out.data.ptr, array.size, self._dtype(array), self._stream())

    def reduce_scatter(self, out, flat, op: ReduceOp) -> None:
        """Reduce ``flat`` (``size`` blocks) across ranks; block ``rank`` lands in ``out``."""
        self._check(flat)
        self._check(out)
        self.comm.reduceScatter(flat.data.ptr, out.data.ptr, out.size, self._dtype(out), self._op(op),
                                self._stream())

    def close(self) -> None:
        """Destroy the NCCL communicator."""
        self.comm.destroy()

    def _check(self, array) -> None:
        if not isinstance(array, self.cupy.ndarray):
            raise RuntimeError(f"backend 'nccl': Tensors must be CUDA and dense (got a {type(array).__name__} "
                               "on the CPU); use backend='mpi' for CPU tensors")

    def _dtype(self, array):
        name = _DTYPES.get(array.dtype.name)
        if name is None or not hasattr(self.nccl, name):
            raise TypeError(f"backend 'nccl': dtype {array.dtype.name} is not supported")
        return getattr(self.nccl, name)

    def _op(self, op):
        return getattr(self.nccl, _OPS[op])

    def _stream(self):
        return self.cupy.cuda.get_current_stream().ptr

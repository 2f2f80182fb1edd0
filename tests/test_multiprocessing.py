"""torch.multiprocessing (issue 13): tensors in shared memory, what crosses a process boundary (fork and
spawn), their lifetime, ``spawn`` and its failures, Hogwild training, and spawned children of ``cupynet run``.

Every test that starts processes starts at most two, each doing a few small steps (the CI machine has 2 cores).
"""

import gc
import multiprocessing
import os
import subprocess
import sys
import textwrap
from multiprocessing.reduction import ForkingPickler

import ml_dtypes
import numpy as np
import pytest

import cupynet as cn
import cupynet.multiprocessing as cmp
from cupynet import nn, optim
from cupynet.shared_memory import block_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ["fork", "spawn"]


def _mapped_blocks() -> int:
    """How many mappings of cupynet's shared memory files this process holds (Linux: /proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        return maps.read().count("cupynet-shared")


def _round_trip(obj):
    """``obj`` pickled and unpickled as multiprocessing sends it (in this process)."""
    return ForkingPickler.loads(ForkingPickler.dumps(obj))


# ---- share_memory_ / is_shared ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.int64, np.bool_])
def test_share_memory_keeps_dtype_shape_and_values(dtype):
    values = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    t = cn.Tensor(values[:, ::2].copy())
    old = t.array
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    assert t.array is not old and t.array.dtype == old.dtype and t.array.shape == old.shape
    np.testing.assert_array_equal(t.array, old)
    same = t.array
    assert t.share_memory_().array is same  # NOTE: a shared tensor is left as it is


def test_share_memory_of_a_non_contiguous_and_an_empty_tensor():
    t = cn.Tensor(np.arange(12.0).reshape(3, 4).T)
    np.testing.assert_array_equal(t.share_memory_().array, np.arange(12.0).reshape(3, 4).T)
    empty = cn.zeros(0, 3).share_memory_()
    assert empty.is_shared() and empty.shape == (0, 3)


def test_views_of_a_shared_tensor_are_shared_and_write_through():
    t = cn.zeros(4, 3).share_memory_()
    views = (t[1], t[:, 1:], t.reshape(12), t.T, t.detach(), t.data)
    assert all(v.is_shared() for v in views)
    t[1].array[...] = 7.0
    assert t.array[1].tolist() == [7.0, 7.0, 7.0]
    assert not (t + 1).is_shared()  # NOTE: results of ops are new memory


def test_grad_stays_process_local_and_requires_grad_is_kept():
    w = cn.ones(3, requires_grad=True).share_memory_()
    (w * 2).sum().backward()
    assert w.requires_grad and w.grad is not None and not w.grad.is_shared()


@pytest.mark.cuda
def test_share_memory_of_a_cuda_tensor_names_cuda_ipc():
    t = cn.ones(2, device="cuda")
    with pytest.raises(NotImplementedError, match="CUDA IPC"):
        t.share_memory_()
    assert not t.is_shared()


def test_module_share_memory_shares_parameters_and_buffers_in_place():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    params = list(model.parameters())
    assert model.share_memory() is model
    assert list(model.parameters()) == params  # NOTE: the same Parameter objects (optimizers keep working)
    assert all(p.is_shared() for p in params) and all(b.is_shared() for b in model.buffers())
    assert all(p.grad is None for p in params)


# ---- what crosses a process boundary ---------------------------------------------------------------------------

def test_a_shared_tensor_is_sent_by_reference_and_a_plain_one_by_value():
    shared, plain = cn.arange(6.0).share_memory_(), cn.arange(6.0)
    got_shared, got_plain = _round_trip((shared[2:], plain))
    got_shared.array[0] = -1.0
    got_plain.array[0] = -1.0
    assert shared.array[2] == -1.0 and got_shared.is_shared()
    assert plain.array[0] == 0.0 and not got_plain.is_shared()


def test_two_views_of_one_block_in_one_message_map_it_once():
    t = cn.zeros(4).share_memory_()
    a, b = _round_trip([t[:2], t[2:]])
    assert block_of(a.array) is block_of(b.array) is not block_of(t.array)


def test_parameters_stay_parameters_with_requires_grad_and_without_grad():
    p = nn.Parameter(cn.ones(2)).share_memory_()
    p.grad = cn.ones(2)
    frozen = nn.Parameter(cn.ones(2), requires_grad=False)
    got, got_frozen = _round_trip((p, frozen))
    assert type(got) is nn.Parameter and got.requires_grad and got.grad is None and got.is_shared()
    assert type(got_frozen) is nn.Parameter and not got_frozen.requires_grad


def test_a_non_leaf_that_requires_grad_is_refused_with_torchs_text():
    y = cn.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(y)
    assert not _round_trip(y.detach()).requires_grad


def _add_rank_and_send_back(rank, tensor, queue, done):
    tensor.array += rank + 1
    queue.put(tensor)
    done.wait()  # NOTE: a sender stays alive until its shared tensor is received (the descriptor is served by it)


@pytest.mark.parametrize("method", METHODS)
def test_a_child_writes_into_the_parents_shared_tensor_and_sends_it_back(method):
    ctx = multiprocessing.get_context(method)
    t = cn.zeros(3).share_memory_()
    queue, done = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_add_rank_and_send_back, args=(1, t[1:], queue, done))
    child.start()
    back = queue.get(timeout=60)
    done.set()
    child.join(60)
    assert child.exitcode == 0 and t.array.tolist() == [0.0, 2.0, 2.0]
    back.array[0] = 5.0  # NOTE: what came back maps the same memory
    assert t.array.tolist() == [0.0, 5.0, 2.0]


def test_shared_memory_is_released_with_its_last_tensor_and_never_named_in_dev_shm():
    before_shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    gc.collect()
    before = _mapped_blocks()
    t = cn.ones(1000).share_memory_()
    received = _round_trip(t)
    assert _mapped_blocks() == before + 2
    del t
    gc.collect()
    assert _mapped_blocks() == before + 1 and received.array.sum() == 1000.0
    del received
    gc.collect()
    assert _mapped_blocks() == before
    if os.path.isdir("/dev/shm"):
        assert set(os.listdir("/dev/shm")) == before_shm


def test_without_memfd_an_unlinked_temporary_file_holds_the_block(monkeypatch):
    # NOTE: macOS and the BSDs have no memfd_create
    monkeypatch.delattr(os, "memfd_create")
    before_shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    t = cn.arange(5.0).share_memory_()
    got = _round_trip(t)
    got.array[0] = 9.0
    assert t.is_shared() and t.array.tolist() == [9.0, 1.0, 2.0, 3.0, 4.0]
    if os.path.isdir("/dev/shm"):
        assert set(os.listdir("/dev/shm")) == before_shm


# ---- Hogwild: one shared model trained by two processes ------------------------------------------------------

def _hogwild_steps(rank, model, lock, steps):
    # NOTE: loss = sum(w * x) has gradient x whatever w is, so every SGD step subtracts lr * x exactly; the lock
    # only keeps the test exact (Hogwild itself takes none: a lost update is a race it accepts)
    opt = optim.SGD(model.parameters(), lr=0.5)
    x = cn.full((1, 2), float(rank + 1))
    for _ in range(steps):
        with lock:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


def test_hogwild_two_spawned_processes_train_the_parents_model():
    ctx = multiprocessing.get_context("spawn")
    model = nn.Linear(2, 1, bias=False)
    model.weight.array[...] = 10.0
    model.share_memory()
    lock, steps = ctx.Lock(), 3
    children = [ctx.Process(target=_hogwild_steps, args=(rank, model, lock, steps)) for rank in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
    assert [child.exitcode for child in children] == [0, 0]
    # rank 0 subtracts 0.5 * 1 and rank 1 subtracts 0.5 * 2, three times each
    assert model.weight.array.tolist() == [[10.0 - steps * 0.5 * (1 + 2)] * 2]
    assert model.weight.grad is None


# ---- spawn --------------------------------------------------------------------------------------------------

def _write_rank(i, tensor):
    tensor.array[i] = i + 1


def _fail_on_rank_1(i):
    if i == 1:
        raise ValueError("rank one is broken")


def _exit_3(i):
    sys.exit(3)


def test_spawn_runs_fn_with_the_rank_and_args():
    t = cn.zeros(2).share_memory_()
    assert cmp.spawn(_write_rank, args=(t,), nprocs=2) is None
    assert t.array.tolist() == [1.0, 2.0]


def test_spawn_raises_a_childs_exception_naming_its_rank():
    with pytest.raises(cmp.ProcessRaisedException, match="Process 1 terminated with the following error") as info:
        cmp.spawn(_fail_on_rank_1, nprocs=2, start_method="fork")
    assert "ValueError: rank one is broken" in str(info.value) and info.value.error_index == 1


def test_spawn_raises_a_non_zero_exit_status_and_join_false_gives_the_context():
    context = cmp.spawn(_exit_3, nprocs=1, join=False, start_method="fork")
    assert isinstance(context, cmp.ProcessContext) and len(context.pids()) == 1
    context.processes[0].join(60)  # NOTE: a process that ended before join() is looked at too (was missed once)
    with pytest.raises(cmp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        while not context.join():
            pass
    assert info.value.exit_code == 3


@pytest.mark.parametrize("kwargs, error, text", [
    ({"nprocs": 0}, ValueError, "nprocs must be a positive int.*got 0"),
    ({"nprocs": -2}, ValueError, "got -2"),
    ({"nprocs": 1.5}, ValueError, "got 1.5"),
    ({"nprocs": True}, ValueError, "got True"),
    ({"fn": 3}, TypeError, "fn must be callable.*got int"),
    ({"args": 5}, TypeError, "args must be a tuple.*got int"),
    ({"start_method": "thread"}, ValueError, "start_method must be one of .*got 'thread'"),
])
def test_spawn_bad_arguments_fail_before_any_process_starts(kwargs, error, text):
    call = {"fn": _write_rank, "args": (), "nprocs": 1, **kwargs}
    before = multiprocessing.active_children()
    with pytest.raises(error, match=text):
        cmp.spawn(**call)
    assert multiprocessing.active_children() == before


def test_python_multiprocessing_names_and_the_sharing_strategy():
    assert cmp.Process is multiprocessing.Process and cmp.get_context is multiprocessing.get_context
    assert cmp.get_sharing_strategy() == "file_descriptor" and cmp.get_all_sharing_strategies() == {"file_descriptor"}
    cmp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file descriptor only.*got 'file_system'"):
        cmp.set_sharing_strategy("file_system")


# ---- spawned children of `cupynet run` -----------------------------------------------------------------------

HOGWILD_SCRIPT = """
    import torch
    import torch.multiprocessing as mp
    import torch.nn as nn

    def train(rank, model):
        # NOTE: the child's torch is cupynet's alias, not a real torch that may be installed beside it
        assert type(torch.ones(1)).__module__ == "cupynet.tensor", torch
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        opt.zero_grad()
        (model.weight.sum() * (rank + 1)).backward()
        opt.step()

    if __name__ == "__main__":
        mp.set_start_method("spawn", force=True)
        model = nn.Linear(2, 1, bias=False)
        with torch.no_grad():
            model.weight.fill_(10.0)
        model.share_memory()
        processes = [mp.Process(target=train, args=(rank, model)) for rank in range(2)]
        for p in processes:
            p.start()
        for p in processes:
            p.join()
        print("exit codes", [p.exitcode for p in processes])
        print("weight", model.weight.tolist())
"""


def test_spawned_children_of_cupynet_run_import_torch_and_train_the_shared_model(tmp_path):
    path = tmp_path / "hogwild.py"
    path.write_text(textwrap.dedent(HOGWILD_SCRIPT))
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    out = subprocess.run([sys.executable, "-m", "cupynet.run", str(path)], capture_output=True, text=True, env=env,
                         timeout=180, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    # each child's gradient of weight.sum() * (rank + 1) is rank + 1 per element: 10 - 1 - 2
    assert "exit codes [0, 0]" in out.stdout and "weight [[7.0, 7.0]]" in out.stdout, out.stdout + out.stderr


def test_a_stand_in_on_sys_path_becomes_the_runners_alias():
    # a spawned child whose script imports torchvision first: that stand-in installs the finder, torch then uses it
    code = ("import sys; from cupynet import run; sys.path.insert(0, run.STAND_INS); import torchvision, torch; "
            "print(type(torchvision).__name__, type(torch).__name__, torchvision.models.resnet18.__module__, "
            "sum(isinstance(f, run.TorchFinder) for f in sys.meta_path))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["TorchAlias", "TorchAlias", "cupynet.vision.models", "1"]

"""Worker for tests/test_distributed_mpi.py: ``mpiexec -n N python tests/_distributed_worker.py SCENARIO OUT``.

The training recipe (``make_model``, ``step_data``, ``train``) is imported by the test itself for the
1-process reference, so both sides run literally the same code; only the batch each rank sees differs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys

import numpy

import cupynet as cn
from cupynet import distributed as dist
from cupynet import nn, optim
from cupynet.amp import GradScaler, autocast
from cupynet.data import DistributedSampler
from cupynet.models import build_model
from cupynet.nn.parallel import DistributedDataParallel

STEPS, GLOBAL_BATCH, LR = 20, 16, 0.05
SHAPES = {"mlp": (1, 8, 8), "cnn": (1, 8, 8)}


def make_model(kind):
    """The model every run starts from (seeded, so rank 0 and the reference agree)."""
    cn.manual_seed(0)
    return build_model(kind, SHAPES[kind], 10)


def dataset(steps=STEPS):
    """(inputs, labels) of ``steps`` global batches, as NumPy arrays."""
    rng = numpy.random.default_rng(1)
    x = rng.standard_normal((steps * GLOBAL_BATCH,) + SHAPES["mlp"]).astype(numpy.float32)
    return x, rng.integers(0, 10, steps * GLOBAL_BATCH).astype(numpy.int64)


def step_data(data, order, step, accumulate, rank, world):
    """This rank's micro-batches of global step ``step``: ``order`` holds the global sample order."""
    x, y = data
    idx = numpy.asarray(order[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH])
    # NOTE: micro-batch m of the global batch is split across ranks, so the union of the ranks' m-th
    # micro-batches is the reference's m-th micro-batch
    micro = idx.reshape(accumulate, world, -1)[:, rank]
    return [(cn.tensor(x[m]), cn.tensor(y[m])) for m in micro]


def train(net, opt, scaler, batches_of_step, steps, amp, ddp=None, on_step=None, start=0, poison=None):
    """Run ``steps`` optimizer steps; ``batches_of_step(s)`` gives the micro-batches of step s."""
    for s in range(start, steps):
        micro = batches_of_step(s)
        for k, (x, y) in enumerate(micro):
            if poison is not None and poison(s, k):
                x = x.clone()
                x.array[0] = numpy.inf
            sync = ddp is None or k == len(micro) - 1
            with contextlib.nullcontext() if sync else ddp.no_sync():
                with autocast("cpu", dtype="float16", enabled=amp):
                    loss = nn.functional.cross_entropy(net(x), y)
                scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        if on_step is not None:
            on_step(s + 1)


def new_optimizer(model, amp):
    return optim.SGD(model.parameters(), lr=LR), GradScaler("cpu", init_scale=2.0**10, enabled=amp)


def _params(model):
    return {k: v.array for k, v in model.state_dict().items()}


def _save_result(out, rank, model, scaler, extra=None):
    arrays = {f"p:{k}": v for k, v in _params(model).items()}
    numpy.savez(os.path.join(out, f"rank{rank}.npz"), **arrays)
    info = {"scaler": {k: (v if not hasattr(v, "item") else v.item()) for k, v in scaler.state_dict().items()},
            "skipped": scaler.skipped_steps() if scaler.is_enabled() else 0, **(extra or {})}
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(info, f)


def parity(out, kind, amp, accumulate):
    """DDP training; the test compares rank 0's result with the 1-process reference."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(kind)
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.004)
    opt, scaler = new_optimizer(model, amp)
    data = dataset()
    order = list(range(len(data[1])))
    train(ddp, opt, scaler, lambda s: step_data(data, order, s, accumulate, rank, world), STEPS, amp, ddp)
    _save_result(out, rank, model, scaler, {"stats": ddp.reducer.stats, "buckets": len(ddp.reducer.buckets)})


def overflow(out):
    """Only rank 1's inputs hold an inf at step 3: every rank must skip that step and back off the scale."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model("mlp")
    ddp = DistributedDataParallel(model)
    opt, scaler = new_optimizer(model, True)
    data = dataset()
    order = list(range(len(data[1])))
    train(ddp, opt, scaler, lambda s: step_data(data, order, s, 1, rank, world), 6, True, ddp,
          poison=lambda s, k: rank == 1 and s == 3)
    _save_result(out, rank, model, scaler)


def found_inf(out):
    """No DDP: rank 1's own gradient is inf. GradScaler's all-reduced found_inf makes both ranks skip."""
    rank = dist.get_rank()
    model = make_model("mlp")
    opt, scaler = new_optimizer(model, True)
    x, y = (cn.tensor(a[:4]) for a in dataset())
    if rank == 1:
        x.array[0] = numpy.inf
    with autocast("cpu", dtype="float16"):
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    _save_result(out, rank, model, scaler)


def mismatch(out):
    """Ranks that disagree (a tensor's shape, the model) get an error on every rank, not a hang."""
    rank = dist.get_rank()
    errors = []
    for attempt in (lambda: dist.all_reduce(cn.zeros(2 + rank)),
                    lambda: DistributedDataParallel(nn.Linear(3, 3 + rank))):
        try:
            attempt()
        except RuntimeError as e:
            errors.append(str(e))
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(errors, f)


def checkpoint_path(out):
    return os.path.join(out, "ckpt.cnpt")


def sampler_batches(data, world, rank):
    """This rank's batches in its DistributedSampler share: step s reads share[s*B:(s+1)*B], B = GLOBAL_BATCH/world.

    NOTE: the ranks' batches of one step together are global positions [s*GLOBAL_BATCH, (s+1)*GLOBAL_BATCH) of
    the epoch's order, for every world size: that is what lets a run resume at another world size.
    """
    sampler = DistributedSampler(data[1], num_replicas=world, rank=rank, shuffle=True, seed=7)
    sampler.set_epoch(0)
    share, b = numpy.asarray(list(sampler)), GLOBAL_BATCH // world
    return lambda s: [(cn.tensor(data[0][share[s * b:(s + 1) * b]]), cn.tensor(data[1][share[s * b:(s + 1) * b]]))]


def resume(out, kill_at, stop_at):
    """Train in the DistributedSampler's order, checkpoint every 5 steps (rank 0, atomic); optionally die."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model("mlp")
    opt, scaler = new_optimizer(model, False)
    start = 0
    if os.path.exists(checkpoint_path(out)):
        state = cn.load(checkpoint_path(out))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        scaler.load_state_dict(state["scaler"])
        start = int(state["step"])
    ddp = DistributedDataParallel(model)
    data = dataset()

    def on_step(step):
        if step % 5 == 0:
            if rank == 0:
                cn.save({"model": model.state_dict(), "optim": opt.state_dict(), "scaler": scaler.state_dict(),
                         "step": step}, checkpoint_path(out))
            dist.barrier()
        if step == kill_at and rank == world - 1:
            os.kill(os.getpid(), signal.SIGKILL)

    train(ddp, opt, scaler, sampler_batches(data, world, rank), stop_at, False, ddp, on_step=on_step, start=start)
    _save_result(out, rank, model, scaler, {"start": start})


SYNCBN_SPLIT = (3, 5)  # NOTE: uneven shares: the counts must be all-reduced too


def syncbn_model():
    """Conv + two BatchNorm2d (one with a cumulative average), float64; the 1-process reference keeps them."""
    cn.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.Tanh(), nn.BatchNorm2d(3, momentum=None))
    net.double()
    with cn.no_grad():
        net[1].weight.array[...] = [0.5, 1.5, -1.0]
        net[1].bias.array[...] = [0.1, -0.2, 0.3]
    return net


def syncbn_batches(step):
    """(inputs, output cotangents) of the whole batch of ``step``: mean far from 0 (the variance must not cancel)."""
    rng = numpy.random.default_rng(10 + step)
    x = rng.standard_normal((sum(SYNCBN_SPLIT), 2, 4, 5)) * 0.1 + 30.0
    return x, rng.standard_normal((sum(SYNCBN_SPLIT), 3, 4, 5))


def syncbn_run(net, rows):
    """Two forward/backward passes on ``rows`` of each step's batch; returns outputs and input gradients."""
    outs, grads = [], []
    for step in range(2):
        x, v = (a[rows] for a in syncbn_batches(step))
        xt = cn.tensor(x, requires_grad=True)
        y = net(xt)
        (y * cn.tensor(v)).sum().backward()
        outs.append(y.array)
        grads.append(xt.grad.array)
    return outs, grads


def syncbn(out):
    """SyncBatchNorm on this rank's share; the test compares with BatchNorm on the whole batch in one process."""
    rank = dist.get_rank()
    net = nn.SyncBatchNorm.convert_sync_batchnorm(syncbn_model())
    start = sum(SYNCBN_SPLIT[:rank])
    outs, grads = syncbn_run(net, slice(start, start + SYNCBN_SPLIT[rank]))
    arrays = {f"p:{k}": v.array for k, v in net.state_dict().items()}
    arrays.update({f"g:{k}": p.grad.array for k, p in net.named_parameters()})
    arrays.update({f"out{i}": o for i, o in enumerate(outs)})
    arrays.update({f"dx{i}": g for i, g in enumerate(grads)})
    numpy.savez(os.path.join(out, f"rank{rank}.npz"), **arrays)


def main(argv):
    scenario, out = argv[0], argv[1]
    dist.init_process_group("mpi")
    if scenario == "parity":
        parity(out, argv[2], argv[3] == "amp", int(argv[4]))
    elif scenario == "overflow":
        overflow(out)
    elif scenario == "mismatch":
        mismatch(out)
    elif scenario == "found_inf":
        found_inf(out)
    elif scenario == "syncbn":
        syncbn(out)
    elif scenario == "resume":
        resume(out, int(argv[2]), int(argv[3]))
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])

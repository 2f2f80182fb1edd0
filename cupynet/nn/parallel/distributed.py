"""``DistributedDataParallel``: one model replica per process, gradients averaged across them.

At construction rank 0's parameters and buffers are copied to every rank (so all
replicas start equal); each forward arms the Reducer (``reducer.py``), whose
hooks average the gradients bucket by bucket during backward. After backward
every rank holds the same averaged gradients, so the same optimizer step keeps
the replicas equal (and a GradScaler sees the same inf/NaN on every rank).
"""

from __future__ import annotations

import contextlib
import numbers

from cupynet.autograd.state import STATE
from cupynet.distributed.process_group import default_backend
from cupynet.nn.module import Module
from cupynet.nn.parallel.reducer import Reducer, broadcast_arrays

__all__ = ["DistributedDataParallel"]


def _check_device_ids(device_ids) -> None:
    if device_ids is None:
        return
    if not isinstance(device_ids, (list, tuple)) or len(device_ids) != 1:
        raise ValueError("DistributedDataParallel: device_ids must be None or a list of one device (one GPU per "
                         f"process), got {device_ids!r}")


def _check_same_model(module) -> None:
    """Raise on every rank when the ranks' parameters or buffers differ in name, shape or dtype."""
    mine = [(kind, name, tuple(t.shape), t.array.dtype.name)
            for kind, named in (("parameter", module.named_parameters()), ("buffer", module.named_buffers()))
            for name, t in named]
    seen = default_backend().gather_objects(mine)
    for rank, theirs in enumerate(seen):
        if theirs != seen[0]:
            diff = next((a, b) for a, b in zip(seen[0] + [None], theirs + [None]) if a != b)
            raise RuntimeError(f"DistributedDataParallel: rank {rank}'s model differs from rank 0's: rank 0 has "
                               f"{diff[0]}, rank {rank} has {diff[1]} (kind, name, shape, dtype); every rank must "
                               "build the same model")


class DistributedDataParallel(Module):
    """Wrap ``module`` so its gradients are averaged across all ranks of the default process group.

    Args:
        module: the model replica on this rank (same architecture on every rank).
        device_ids: None (CPU, or the current GPU) or a list of this process's one GPU.
        output_device: accepted for PyTorch compatibility (outputs stay where the module puts them).
        dim: the batch dimension; must be 0.
        broadcast_buffers: copy rank 0's buffers to every rank before each training forward.
        process_group: must be None (the default group).
        bucket_cap_mb: the size of a gradient bucket in MiB (None: 25).
        find_unused_parameters: allow parameters that a forward does not use.
        gradient_as_bucket_view: accepted for PyTorch compatibility (gradients are always bucket views).
        static_graph: accepted for PyTorch compatibility (the graph is walked after every forward).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        del output_device, gradient_as_bucket_view, static_graph
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a cupynet.nn.Module, got "
                            f"{type(module).__name__}")
        _check_device_ids(device_ids)
        if dim != 0:
            raise ValueError(f"DistributedDataParallel: dim must be 0 (the batch dimension), got {dim!r}")
        if process_group is not None:
            raise ValueError("DistributedDataParallel: cupynet.distributed has only the default group; pass "
                             "process_group=None")
        cap = 25 if bucket_cap_mb is None else bucket_cap_mb
        if not isinstance(cap, numbers.Real) or isinstance(cap, bool) or not cap > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a positive number, got {cap!r}")
        default_backend()
        _check_same_model(module)
        self.module = module
        self.broadcast_buffers = bool(broadcast_buffers)
        self.require_backward_grad_sync = True
        broadcast_arrays([t.array for t in module.parameters()] + [b.array for b in module.buffers()])
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self.reducer = Reducer([p for _, p in named], [n for n, _ in named], int(cap * 2**20),
                               find_unused_parameters)

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module and arm the gradient reduction of the next backward.

        Args:
            *inputs: passed to ``module``.
            **kwargs: passed to ``module``.
        """
        training = STATE.grad_enabled and self.module.training
        buffers = [b.array for b in self.module.buffers()]
        if training and self.broadcast_buffers and buffers:
            broadcast_arrays(buffers)
        outputs = self.module(*inputs, **kwargs)
        if STATE.grad_enabled and self.require_backward_grad_sync:
            self.reducer.prepare(outputs)
        else:
            self.reducer.disarm()
        return outputs

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, forwards arm no reduction: gradients accumulate locally until a forward outside it."""
        saved = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = saved

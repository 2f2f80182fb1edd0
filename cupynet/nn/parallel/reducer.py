"""The gradient reducer behind DistributedDataParallel: buckets, hooks, and averaging during backward.

The parameters are grouped into *buckets* (about ``bucket_cap_mb`` each), in reverse
registration order: backward produces the last layer's gradients first, so the first
bucket fills first. Every parameter has a post-accumulate-grad hook; when a
parameter's gradient is complete its bucket's count of missing gradients drops,
and a bucket with none missing is flattened into one array, all-reduced and
averaged, and copied back while the rest of backward still runs. Buckets are
reduced strictly in index order, so every rank calls the same collectives in the
same order even if its gradients arrive in another order. After the first
backward the buckets are rebuilt in the order the gradients actually became
ready there (rank 0's order, broadcast), as PyTorch does: reverse registration
order is only a guess (a layer's bias gradient, for one, comes after its weight's).

"Complete" is counted, not guessed: after each forward the reducer walks the new
graph from the outputs and counts the edges that reach each parameter (a shared
weight is reached more than once; an unused one zero times). A bucket whose
gradients never all arrive (the loss ignored an output, an op returned no
gradient) is reduced when backward ends (``engine.queue_callback``).
"""

from __future__ import annotations

import time

from cupynet.autograd.engine import leaf_edges, queue_callback
from cupynet.backend import get_array_module
from cupynet.distributed.collectives import reduce_array_
from cupynet.distributed.process_group import default_backend
from cupynet.distributed.reduce_op import ReduceOp
from cupynet.tensor import Tensor

__all__ = ["Bucket", "Reducer", "build_buckets", "count_leaf_edges", "broadcast_arrays"]


class Bucket:
    """Parameters whose gradients travel in one flat all-reduce.

    Args:
        indices: the parameters' positions in the reducer's list.
    """

    def __init__(self, indices):
        self.indices = list(indices)
        self.pending = len(self.indices)


def build_buckets(params, bucket_bytes: int, order=None) -> list:
    """Group parameter indices into buckets of at most ``bucket_bytes`` (one dtype and device each).

    Args:
        params: the parameters, in registration order.
        bucket_bytes: the size cap (a parameter larger than the cap gets a bucket of its own).
        order: the parameter indices in the order their gradients become ready (default: reversed).
    """
    buckets, open_by_kind = [], {}
    for i in (reversed(range(len(params))) if order is None else order):
        p = params[i]
        kind = (p.array.dtype.str, str(p.device))
        current = open_by_kind.get(kind)
        nbytes = p.array.nbytes
        if current is None or (current[1] + nbytes > bucket_bytes and current[1] > 0):
            current = open_by_kind[kind] = [[], 0]
            buckets.append(current)
        current[0].append(i)
        current[1] += nbytes
    return [Bucket(indices) for indices, _ in buckets]


def count_leaf_edges(outputs) -> dict:
    """``id(leaf) -> number of graph edges reaching it`` for the graph behind ``outputs``.

    Args:
        outputs: a Tensor or a (nested) list, tuple or dict of them.
    """
    counts = {}
    for leaf in leaf_edges(_tensors(outputs)):
        counts[id(leaf)] = counts.get(id(leaf), 0) + 1
    return counts


def _tensors(tree):
    if isinstance(tree, Tensor):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


def broadcast_arrays(arrays, src: int = 0) -> None:
    """Overwrite ``arrays`` on every rank with rank ``src``'s, in place, one collective per dtype and device.

    Args:
        arrays: arrays of the same shapes and dtypes on every rank (checked by the caller).
        src: the rank whose values win.
    """
    groups = {}
    for a in arrays:
        groups.setdefault((a.dtype.str, str(type(a))), []).append(a)
    backend = default_backend()
    for group in groups.values():
        flat = _flatten(group)
        backend.broadcast(flat, src)
        _unflatten(flat, group)


def _flatten(arrays):
    xp = get_array_module(arrays[0])
    flat = xp.empty(sum(a.size for a in arrays), dtype=arrays[0].dtype)
    offset = 0
    for a in arrays:
        flat[offset:offset + a.size] = a.ravel()
        offset += a.size
    return flat


def _unflatten(flat, arrays) -> None:
    offset = 0
    for a in arrays:
        a[...] = flat[offset:offset + a.size].reshape(a.shape)
        offset += a.size


class Reducer:
    """Averages the gradients of ``params`` across ranks in buckets, during backward.

    Args:
        params: the parameters that require grad, in registration order.
        names: their names (for error messages).
        bucket_bytes: the bucket size cap in bytes.
        find_unused_parameters: allow parameters the forward did not use (their buckets still reduce).
    """

    def __init__(self, params, names, bucket_bytes: int, find_unused_parameters: bool):
        self.params, self.names = list(params), list(names)
        self.find_unused = bool(find_unused_parameters)
        self.world, self.bucket_bytes = default_backend().size, bucket_bytes
        self._set_buckets(build_buckets(self.params, bucket_bytes))
        self.ready_order, self.rebuilt = [], False
        self.position = {id(p): i for i, p in enumerate(self.params)}
        self.expected = [0] * len(self.params)
        self.arrived = [0] * len(self.params)
        self.used = [True] * len(self.params)
        self.state = "idle"            # idle (no sync due) -> armed (forward ran) -> reduced (backward ended)
        self.next_bucket, self._queued = 0, False
        self.missing = 0               # gradient contributions the armed backward still has to deliver
        # NOTE: buckets_overlapped counts the reductions made while backward still had gradients to compute
        self.stats = {"backward_passes": 0, "buckets_in_backward": 0, "buckets_overlapped": 0, "buckets_at_end": 0,
                      "reduce_seconds": 0.0}
        self.handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in self.params]

    def _set_buckets(self, buckets) -> None:
        self.buckets = buckets
        self.bucket_of = [0] * len(self.params)
        for b, bucket in enumerate(buckets):
            for i in bucket.indices:
                self.bucket_of[i] = b

    def _rebuild_buckets(self) -> None:
        """Once, after the first backward: buckets in the order gradients became ready (rank 0's)."""
        self.rebuilt = True
        order = default_backend().broadcast_object(self.ready_order, 0)
        seen = set(order)
        rest = [i for i in reversed(range(len(self.params))) if i not in seen]
        self._set_buckets(build_buckets(self.params, self.bucket_bytes, list(order) + rest))

    # ---- forward: arm for the next backward --------------------------------------------------------
    def prepare(self, outputs) -> None:
        """Count the edges reaching each parameter in the graph of ``outputs`` and arm the buckets.

        Args:
            outputs: what the wrapped module returned.
        """
        counts = count_leaf_edges(outputs)
        self.expected = [counts.get(id(p), 0) for p in self.params]
        self.arrived = [0] * len(self.params)
        self.missing = sum(self.expected)
        self.ready_order = []
        unused = [self.names[i] for i, e in enumerate(self.expected) if e == 0]
        if unused and not self.find_unused:
            raise RuntimeError(
                f"DistributedDataParallel: parameters {unused} did not take part in producing the output, so "
                "their gradients would never be reduced; pass find_unused_parameters=True to "
                "DistributedDataParallel (or use every parameter in forward)")
        if self.find_unused and self.params:
            self.used = self._globally_used()
        for bucket in self.buckets:
            bucket.pending = sum(1 for i in bucket.indices if self.expected[i] > 0)
        self.next_bucket, self.state = 0, "armed"
        self.stats["backward_passes"] += 1
        self._reduce_ready(during_backward=True)

    def disarm(self) -> None:
        """Let the next backward accumulate gradients locally (``no_sync``, eval, no_grad forwards)."""
        self.state = "idle"

    def _globally_used(self) -> list:
        # NOTE: one small collective per forward (only with find_unused_parameters): a parameter no rank
        # used keeps grad None everywhere, as in PyTorch, instead of getting zeros
        xp = get_array_module(self.params[0].array)
        mask = xp.asarray([1.0 if e > 0 else 0.0 for e in self.expected], dtype="float32")
        reduce_array_(mask, ReduceOp.MAX)
        return [bool(v) for v in mask.tolist()]

    # ---- backward: the hooks -----------------------------------------------------------------------
    def _on_grad(self, param) -> None:
        if self.state == "idle":
            return
        if self.state == "reduced":
            raise RuntimeError("DistributedDataParallel: a second backward through the graph of one forward; "
                               "run forward again before each backward (PyTorch: Expected to mark a variable "
                               "ready only once)")
        if not self._queued:
            queue_callback(self._finish)
            self._queued = True
        i = self.position[id(param)]
        self.arrived[i] += 1
        self.missing -= 1
        if self.arrived[i] > self.expected[i]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[i]!r} received more gradients than the last "
                "forward's graph has edges to it (a backward through the graph of an earlier forward?); run one "
                "forward per backward (PyTorch: Expected to mark a variable ready only once)")
        if self.arrived[i] == self.expected[i]:
            if not self.rebuilt:
                self.ready_order.append(i)
            bucket = self.buckets[self.bucket_of[i]]
            bucket.pending -= 1
            if bucket.pending == 0:
                self._reduce_ready(during_backward=True)

    def _finish(self) -> None:
        """End of backward: reduce the buckets still waiting for gradients that never came."""
        self._queued = False
        for bucket in self.buckets[self.next_bucket:]:
            bucket.pending = 0
        self._reduce_ready(during_backward=False)
        self.state = "reduced"
        if not self.rebuilt:
            self._rebuild_buckets()

    def _reduce_ready(self, during_backward: bool) -> None:
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            start = time.perf_counter()
            self._reduce(self.buckets[self.next_bucket])
            self.stats["reduce_seconds"] += time.perf_counter() - start
            self.stats["buckets_in_backward" if during_backward else "buckets_at_end"] += 1
            self.stats["buckets_overlapped"] += during_backward and self.missing > 0
            self.next_bucket += 1

    def _reduce(self, bucket: Bucket) -> None:
        params = [self.params[i] for i in bucket.indices]
        xp = get_array_module(params[0].array)
        grads = [p.grad.array if p.grad is not None else xp.zeros(p.array.shape, p.array.dtype) for p in params]
        flat = _flatten(grads)
        # NOTE: sum over ranks, then divide by the world size: for a power-of-two world the division is exact,
        # so the average equals the gradient of the loss averaged over the concatenated batches up to the
        # rounding of the sums
        reduce_array_(flat, ReduceOp.AVG)
        offset = 0
        for i, p in zip(bucket.indices, params):
            if p.grad is not None or self.used[i]:
                p.grad = Tensor(flat[offset:offset + p.array.size].reshape(p.array.shape))
            offset += p.array.size

"""The collectives on Tensors: ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``, ``barrier``.

Each works in place on ``Tensor.array`` (PyTorch's semantics) and is synchronous:
``async_op=True`` returns a Work that is already complete. Before moving data,
every rank's (collective, shape, dtype) is compared through one small MPI
allgather, so ranks that disagree fail on every rank with each rank's values
named, instead of hanging or reading garbage. ``reduce_array_`` skips that check
for callers that checked the layout once (DistributedDataParallel's buckets).
"""

from __future__ import annotations

from cupynet.backend import get_array_module
from cupynet.checks import require_tensor
from cupynet.distributed.process_group import default_backend
from cupynet.distributed.reduce_op import ReduceOp
from cupynet.tensor import Tensor

__all__ = ["all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier", "reduce_array_", "Work"]


class Work:
    """What an ``async_op=True`` collective returns; the collective has already finished."""

    def wait(self, timeout=None) -> bool:
        """Return True (the work is complete).

        Args:
            timeout: ignored.
        """
        return True

    def is_completed(self) -> bool:
        """Return True."""
        return True


def _done(async_op):
    return Work() if async_op else None


def _check_op(where: str, op, dtype) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise ValueError(f"{where}: op must be a ReduceOp (SUM, AVG, PRODUCT, MAX, MIN), got {op!r}")
    if op is ReduceOp.AVG and dtype.kind not in "fV":
        raise ValueError(f"{where}: ReduceOp.AVG needs a floating dtype, got {dtype.name}")
    return op


def _check_group(where: str, group) -> None:
    if group is not None:
        raise ValueError(f"{where}: cupynet.distributed has only the default group; pass group=None")


def _begin(where: str, name: str, tensor, group, op=None):
    """The checks every collective starts with (before any transfer); returns the backend."""
    require_tensor(where, tensor, name)
    _check_group(where, group)
    if op is not None:
        _check_op(where, op, tensor.array.dtype)
    return default_backend()


def _agree(backend, where: str, *facts) -> None:
    """Raise on every rank when the ranks' ``facts`` (shapes, dtypes, arguments) differ."""
    seen = backend.gather_objects((where,) + facts)
    if any(s != seen[0] for s in seen):
        described = "; ".join(f"rank {r}: {s[0]} {', '.join(map(str, s[1:]))}" for r, s in enumerate(seen))
        raise RuntimeError(f"{where}: the ranks disagree ({described}); every rank must call the same "
                           "collective with tensors of the same shape and dtype")


def _layout(t: Tensor) -> str:
    return f"{t.array.dtype.name}{tuple(t.array.shape)}"


def _contiguous(array):
    """``array`` itself when C-contiguous, else a contiguous copy (written back by the caller)."""
    return array if array.flags.c_contiguous else array.copy()


def _write_back(t: Tensor, work) -> None:
    if work is not t.array:
        t.array[...] = work
    t._bump_version()


def reduce_array_(array, op: ReduceOp = ReduceOp.SUM) -> None:
    """Reduce a contiguous array across ranks in place, without the cross-rank layout check.

    Args:
        array: a C-contiguous NumPy/CuPy array with the same shape and dtype on every rank.
        op: the reduction.
    """
    backend = default_backend()
    backend.all_reduce(array, op)
    if op is ReduceOp.AVG:
        array /= backend.size


def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across ranks, in place on every rank.

    Args:
        tensor: the Tensor (same shape and dtype on every rank).
        op: ReduceOp.SUM, AVG, PRODUCT, MAX or MIN.
        group: must be None (the default group).
        async_op: return a (completed) Work instead of None.
    """
    backend = _begin("all_reduce", "tensor", tensor, group, op)
    _agree(backend, "all_reduce", _layout(tensor), op.name)
    work = _contiguous(tensor.array)
    reduce_array_(work, op)
    _write_back(tensor, work)
    return _done(async_op)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """Copy rank ``src``'s ``tensor`` into every rank's ``tensor``, in place.

    Args:
        tensor: the Tensor (same shape and dtype on every rank).
        src: the rank whose values are sent.
        group: must be None (the default group).
        async_op: return a (completed) Work instead of None.
    """
    backend = _begin("broadcast", "tensor", tensor, group)
    if not isinstance(src, int) or not 0 <= src < backend.size:
        raise ValueError(f"broadcast: src must be a rank in [0, {backend.size}), got {src!r}")
    _agree(backend, "broadcast", _layout(tensor), f"src={src}")
    work = _contiguous(tensor.array)
    backend.broadcast(work, src)
    _write_back(tensor, work)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[r]`` with rank r's ``tensor`` on every rank.

    Args:
        tensor_list: world-size Tensors, each of ``tensor``'s shape and dtype (written in place).
        tensor: this rank's contribution.
        group: must be None (the default group).
        async_op: return a (completed) Work instead of None.
    """
    backend = _begin("all_gather", "tensor", tensor, group)
    _check_list("all_gather", "tensor_list", tensor_list, tensor, backend.size)
    _agree(backend, "all_gather", _layout(tensor))
    xp_out = _stack_like(tensor.array, backend.size)
    backend.all_gather(xp_out, _contiguous(tensor.array))
    for r, out in enumerate(tensor_list):
        out.array[...] = xp_out[r]
        out._bump_version()
    return _done(async_op)


def reduce_scatter(output, input_list, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list[r]`` across ranks and leave the result in rank r's ``output``.

    Args:
        output: this rank's result Tensor (written in place).
        input_list: world-size Tensors of ``output``'s shape and dtype.
        op: ReduceOp.SUM, AVG, PRODUCT, MAX or MIN.
        group: must be None (the default group).
        async_op: return a (completed) Work instead of None.
    """
    backend = _begin("reduce_scatter", "output", output, group, op)
    _check_list("reduce_scatter", "input_list", input_list, output, backend.size)
    _agree(backend, "reduce_scatter", _layout(output), op.name)
    flat = get_array_module(output.array).concatenate([t.array.reshape(1, *t.array.shape) for t in input_list])
    work = _contiguous(output.array)
    backend.reduce_scatter(work, flat, op)
    if op is ReduceOp.AVG:
        work /= backend.size
    _write_back(output, work)
    return _done(async_op)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Return once every rank has called ``barrier``.

    Args:
        group: must be None (the default group).
        async_op: return a (completed) Work instead of None.
        device_ids: accepted for PyTorch compatibility.
    """
    del device_ids
    _check_group("barrier", group)
    default_backend().barrier()
    return _done(async_op)


def _check_list(where, name, tensors, like, size) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        got = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{where}: {name} must be a list of world_size={size} Tensors, got {got}")
    for r, t in enumerate(tensors):
        require_tensor(where, t, f"{name}[{r}]")
        if _layout(t) != _layout(like):
            raise ValueError(f"{where}: {name}[{r}] is {_layout(t)}, expected {_layout(like)} like the other "
                             "tensor")


def _stack_like(array, count):
    """An empty (count, *array.shape) array on ``array``'s device, of its dtype."""
    return get_array_module(array).empty((count,) + tuple(array.shape), dtype=array.dtype)

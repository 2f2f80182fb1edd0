"""How a Tensor crosses a process boundary: the reductions registered with ``ForkingPickler``.

``multiprocessing`` pickles everything it sends to another process (a ``Process``'s target and
arguments under spawn and forkserver, every ``Queue`` item) with ``multiprocessing.reduction.
ForkingPickler``, whose table of reductions torch extends for its tensors; cupynet does the same:

* a tensor whose values are in shared memory (``share_memory_()``) is sent as a reference to that memory
  (cupynet/shared_memory.py), so the receiver's tensor maps the same bytes;
* any other tensor is sent by value (a copy), CuPy arrays included (through the host);
* the class (``Tensor`` or ``Parameter``) and ``requires_grad`` travel with it; ``.grad`` and the graph do
  not (a non-leaf tensor that requires grad is refused, as torch refuses it).

Only these pickles change: ``pickle.dumps``, ``copy.deepcopy`` and checkpoints copy values as before.
"""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

from ..nn.parameter import Parameter
from ..shared_memory import portable
from ..tensor import Tensor

__all__ = ["reduce_tensor", "init_reductions"]


def reduce_tensor(tensor: Tensor):
    """The reduction of a Tensor or Parameter for ``ForkingPickler``: its class, array and ``requires_grad``.

    Args:
        tensor: the tensor being sent.
    """
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the "
                           "data, call detach() on the tensor before serializing (e.g., putting it on the queue).")
    return _rebuild_tensor, (type(tensor), portable(tensor.array), tensor.requires_grad)


def _rebuild_tensor(cls, array, requires_grad: bool):
    return cls(array, requires_grad=requires_grad)


def init_reductions() -> None:
    """Register ``reduce_tensor`` for ``Tensor`` and ``Parameter`` (the table is keyed by exact class)."""
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)

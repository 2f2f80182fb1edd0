"""``torch.utils``: ``data`` (cupynet's data loading under torch.utils.data's names), ``checkpoint``
(activation checkpointing) and ``tensorboard`` (scalars to TensorBoard event files), each loaded on first use."""

from cupynet import _lazy

__all__ = ["checkpoint", "data", "tensorboard"]

__getattr__, __dir__ = _lazy.lazy_names(__name__, {name: f"{__name__}.{name}" for name in __all__})

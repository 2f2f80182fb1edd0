"""``torch.utils``: ``data`` (cupynet's data loading under torch.utils.data's names), ``checkpoint``
(activation checkpointing) and ``tensorboard`` (scalars to TensorBoard event files)."""

from cupynet.utils import checkpoint, data, tensorboard

__all__ = ["checkpoint", "data", "tensorboard"]

"""``torch.utils``: ``data`` (cupynet's data loading under torch.utils.data's names) and ``checkpoint``
(activation checkpointing)."""

from cupynet.utils import checkpoint, data

__all__ = ["checkpoint", "data"]

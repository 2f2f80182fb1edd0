"""``torch.utils``: ``cupynet.utils.data`` is ``torch.utils.data`` (cupynet's data loading)."""

from cupynet.utils import data

__all__ = ["data"]

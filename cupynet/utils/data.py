"""``torch.utils.data``: the names of ``cupynet.data`` (Dataset, DataLoader, TensorDataset, random_split, ...)."""

from cupynet.data import *  # noqa: F403 - a re-export: this module is cupynet.data under torch's name
from cupynet.data import __all__  # noqa: F401

"""``cupynet.nn.parallel``: ``DistributedDataParallel`` (PyTorch's ``torch.nn.parallel`` name).

``distributed.py`` is the module wrapper; ``reducer.py`` holds the buckets and hooks
that average gradients during backward (docs/distributed.md). ``DataParallel``, torch's
single-process wrapper, is compatibility surface (cupynet/compat/data_parallel.py), read on first use.
"""

from cupynet import _lazy
from cupynet.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel"]

__getattr__, __dir__ = _lazy.lazy_names(__name__, {"DataParallel": "cupynet.compat.data_parallel:DataParallel"})

"""``cupynet.nn.parallel``: ``DistributedDataParallel`` (PyTorch's ``torch.nn.parallel`` name).

``distributed.py`` is the module wrapper; ``reducer.py`` holds the buckets and hooks
that average gradients during backward (docs/distributed.md).
"""

from cupynet.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]

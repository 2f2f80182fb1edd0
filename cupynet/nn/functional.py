"""``cupynet.nn.functional``: the functional ops of ``cupynet.ops`` under ``torch.nn.functional``'s names.

Nothing is computed here. Every op lives with its backward and AMP policy in
``cupynet/ops/<family>.py``; this module re-exports the public functions of
every family, so ``F.relu is cupynet.ops.relu`` and a layer and its functional
form share one definition. (PyTorch's ``torch.nn.functional`` holds fewer
names than ``cupynet.ops``; the extra ones, like ``F.exp``, are harmless.)
"""

from cupynet.ops import *  # noqa: F403 - the re-export is the point of this module
from cupynet.ops import __all__ as _ops_all

__all__ = [name for name in _ops_all if name not in ("TENSOR_METHODS", "OP_CLASSES")]

"""Automatic mixed precision: ``autocast`` regions, ``GradScaler``, ``custom_fwd``/``custom_bwd``, ``trace``.

Reading order: the package is a lesson, read top-down; each step builds on the ones above it
(``grad_scaler.py`` holds a ``diagnostics.py`` object; every loss-scaling call ends in ``kernels/``).

1. Autocast: which dtype ops run in, per region.
   ``autocast.py``  the regions: thread-local state (``cupynet.autograd.state``), nesting, the decorator
                    (before a cuda region it asks ``cupynet/cuda/capability.py`` whether the GPU runs the
                    dtype: a device question, so the device layer answers it; ``supports_fp16`` and
                    ``supports_bf16`` are re-exported here);
   ``custom.py``    ``custom_fwd`` / ``custom_bwd``: autocast for your own ``autograd.Function``.
2. Policy: what autocast does to each op.
   ``policy.py``    PyTorch's cast lists as data, and the one function that casts an op's inputs
                    (``Function.apply`` calls it); the generator of docs/amp_ops.md;
   ``trace.py``     records what the policy decided for each op, and why.
3. Loss scaling as functions.
   ``functional.py``  the stateless core, the scale passed explicitly, no host sync: scale, fused
                    check + unscale, the update rule, the step skipped on the device.
4. ``GradScaler``: the same, as PyTorch's stateful class.
   ``grad_scaler.py``  one class: lazy state, scale -> unscale_ -> step -> update, checkpoints;
   ``diagnostics.py``  what the scaler saw (``scaler.diagnostics``): overflowing tensors, history.
5. ``kernels/``: the fused CUDA kernels and their NumPy references (docs/kernels.md).

The older APIs are thin layers over ``functional.py`` that live with the rest of the compatibility
surface and load on first use: ``cupynet.amp.prototype`` (``cupynet/compat/amp_prototype.py``: the early
torch.amp prototype, ``add_amp_attributes``, ``enable_autocasting``, ``scale_outputs``) and
``cupynet.amp.netcl`` (``cupynet/compat/netcl.py``: netcl's ``GradScaler`` and ``autocast``).

docs/autocast.md explains autocast, docs/amp_ops.md lists every op's cast policy, and docs/amp.md
explains loss scaling and ``GradScaler``, the semantics the code follows, and runs the same loop in the
three APIs.
"""

from __future__ import annotations

from .. import _lazy
from ..cuda.capability import supports_bf16, supports_fp16
from . import functional
from .autocast import autocast, get_autocast_dtype, is_autocast_enabled
from .custom import custom_bwd, custom_fwd
from .grad_scaler import GradScaler
from .trace import trace

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "custom_fwd", "custom_bwd", "trace",
           "supports_fp16", "supports_bf16", "GradScaler", "functional", "prototype", "add_amp_attributes",
           "enable_autocasting", "scale_outputs", "netcl"]

# NOTE: the older APIs are compatibility surface (cupynet/compat/): they load on first use
__getattr__, __dir__ = _lazy.lazy_names(__name__, {
    "netcl": "cupynet.compat.netcl",
    "prototype": "cupynet.compat.amp_prototype",
    "add_amp_attributes": "cupynet.compat.amp_prototype:add_amp_attributes",
    "enable_autocasting": "cupynet.compat.amp_prototype:enable_autocasting",
    "scale_outputs": "cupynet.compat.amp_prototype:scale_outputs",
})

"""Automatic mixed precision: ``autocast`` regions, ``GradScaler``, ``custom_fwd``/``custom_bwd``, ``trace``.

See docs/autocast.md for what autocast does and docs/amp_ops.md for every op's cast policy. Two older
APIs run on the same core (docs/amp.md, "The same loop in three APIs"): the early torch.amp prototype
(``add_amp_attributes``, ``enable_autocasting``, ``scale_outputs``; module ``prototype``) and netcl's
(module ``netcl``).
"""

from __future__ import annotations

import importlib

from .autocast import autocast, get_autocast_dtype, is_autocast_enabled
from .custom import custom_bwd, custom_fwd
from .support import supports_bf16, supports_fp16
from .trace import trace

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "custom_fwd", "custom_bwd", "trace",
           "supports_fp16", "supports_bf16"]


def _optional(module_name: str):
    """Import ``cupynet.amp.<module_name>`` if it has been written yet, else None."""
    try:
        return importlib.import_module(f"{__name__}.{module_name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{module_name}":
            raise  # NOTE: the module exists but one of its own imports is missing: a real error
        return None


_grad_scaler = _optional("grad_scaler")
if _grad_scaler is not None:
    GradScaler = _grad_scaler.GradScaler
    __all__.append("GradScaler")

functional = _optional("functional")
if functional is not None:
    __all__.append("functional")

prototype = _optional("prototype")
if prototype is not None:
    from .prototype import add_amp_attributes, enable_autocasting, scale_outputs
    __all__ += ["prototype", "add_amp_attributes", "enable_autocasting", "scale_outputs"]

netcl = _optional("netcl")
if netcl is not None:
    __all__.append("netcl")

"""``torch.cuda.amp``: the older CUDA-only spellings of ``autocast`` and ``GradScaler``.

``cupynet.cuda.amp.autocast(...)`` is ``cupynet.amp.autocast("cuda", ...)``: float16 on the GPU, and
where no GPU is usable a warning and a disabled region, as PyTorch does. ``GradScaler(...)`` is
``cupynet.amp.GradScaler("cuda", ...)``: disabled, with a warning, without a GPU.

NOTE: torch puts this under ``torch.cuda``, but it is made of ``cupynet.amp``, a layer above the device
layer, so it lives with the compatibility surface: ``cupynet.cuda.amp`` (and ``torch.cuda.amp`` under
``cupynet run``) is this module, loaded on first use, and ``cupynet.cuda`` imports nothing from amp.
"""

from __future__ import annotations

from cupynet import amp as _amp
from cupynet import dtypes
from cupynet.cuda.capability import is_bf16_supported

custom_fwd, custom_bwd = _amp.custom_fwd, _amp.custom_bwd

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_bf16_supported"]


class autocast(_amp.autocast):  # noqa: N801 - PyTorch's name
    """``torch.cuda.amp.autocast``: an autocast region on the GPU (float16 by default).

    Args:
        enabled: False opens a region with autocast off.
        dtype: float16 (default) or bfloat16.
        cache_enabled: cache the cast of each fp32 weight for the outermost region.
    """

    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``torch.cuda.amp.GradScaler``: loss scaling on the GPU (disabled, with a warning, without one).

    Args:
        init_scale: the initial scale.
        growth_factor: multiplies the scale after ``growth_interval`` clean steps (> 1).
        backoff_factor: multiplies the scale after an overflow (in (0, 1)).
        growth_interval: clean steps between growths (int >= 1).
        enabled: when False every method is a no-op.
        **options: cupynet's keyword-only options of ``cupynet.amp.GradScaler`` (``hysteresis``, ...).
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True, **options):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled, **options)

"""``torch.utils.mobile_optimizer`` for ``cupynet run``: importable, so programs that import it for an
export path start; ``optimize_for_mobile`` itself needs TorchScript, which cupynet has not.

YOLOv5's export.py imports ``optimize_for_mobile`` at the top, and its val.py and detect.py import export.py,
so without this module neither starts. Calling ``optimize_for_mobile`` raises an error that says why
(``torch.jit.script`` and ``trace`` hand back the eager module here, which has no lite-interpreter form).
"""

from __future__ import annotations

__all__ = ["optimize_for_mobile", "MobileOptimizerType"]


class MobileOptimizerType:
    """The names of the passes torch's mobile optimizer can be told to skip (accepted, never run here)."""

    CONV_BN_FUSION = 1
    INSERT_FOLD_PREPACK_OPS = 2
    REMOVE_DROPOUT = 3
    FUSE_ADD_RELU = 4
    HOIST_CONV_PACKED_PARAMS = 5
    VULKAN_AUTOMATIC_GPU_TRANSFER = 6


def optimize_for_mobile(script_module, optimization_blocklist=None, preserved_methods=None, backend="CPU"):
    """``torch.utils.mobile_optimizer.optimize_for_mobile``: always refused, as cupynet has no TorchScript.

    Args:
        script_module: the scripted module torch would optimize.
        optimization_blocklist: the passes to skip (ignored).
        preserved_methods: the methods to keep (ignored).
        backend: "CPU", "Vulkan" or "Metal" (ignored).
    """
    del optimization_blocklist, preserved_methods, backend
    raise NotImplementedError(
        f"cupynet has no TorchScript, so no optimize_for_mobile: got a {type(script_module).__name__}, "
        "an eager module; export its weights with cupynet.save (or ONNX from real torch) instead")

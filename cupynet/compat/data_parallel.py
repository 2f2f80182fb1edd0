"""``torch.nn.DataParallel`` on one device: a wrapper whose ``.module`` runs every batch.

cupynet drives one GPU per process (``DistributedDataParallel`` is the multi-GPU path), so
``DataParallel`` behaves as torch's does with a single device: the forward calls ``module`` on the
whole batch, and the state dict's keys carry the ``module.`` prefix.
"""

from __future__ import annotations

from cupynet.nn.module import Module

__all__ = ["DataParallel"]


def _device_index(device) -> int:
    index = getattr(device, "index", device)
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"DataParallel: a device id must be an int or a cuda device, got {device!r}")
    return index


class DataParallel(Module):
    """Wrap ``module`` for data parallelism over ``device_ids``; with cupynet's one device, a plain call.

    Args:
        module: the module to run.
        device_ids: None (every visible GPU, here the current one; none on the CPU) or a list of one device.
        output_device: where outputs go (the first device); accepted, outputs stay where the module puts them.
        dim: the batch dimension the inputs would be scattered on.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be a cupynet.nn.Module, got {type(module).__name__}")
        from cupynet import cuda  # noqa: PLC0415 - the device layer, read when a wrapper is built
        if device_ids is None:
            device_ids = [cuda.current_device()] if cuda.is_available() else []
        ids = [_device_index(d) for d in device_ids]
        if len(ids) > 1:
            raise ValueError(f"DataParallel: cupynet runs one device per process, got device_ids={ids!r}; use "
                             "DistributedDataParallel (one process per GPU) for several")
        self.module = module
        self.device_ids = ids
        self.output_device = _device_index(output_device) if output_device is not None else (ids[0] if ids else None)
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """``module(*inputs, **kwargs)``: the whole batch on the one device.

        Args:
            *inputs: the module's positional inputs.
            **kwargs: its keyword inputs.
        """
        return self.module(*inputs, **kwargs)

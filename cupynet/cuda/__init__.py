"""``cupynet.cuda``: is a GPU usable, and the small layer every CUDA kernel of cupynet is built on.

The device questions (as ``torch.cuda``) are answered here; the kernel layer is in the submodules:

* ``device``: the device questions, and the one place the launchers get CuPy from;
* ``compile``: ``.cu`` text, name expressions, ``cupy.RawModule`` compilation and its cache;
* ``args``: scalar kernel arguments with their C type (``c_int``, ``c_float``, ...);
* ``multi_tensor``: chunk tables and multi-tensor launches;
* ``headers``: where ``cuda_fp16.h``/``cuda_bf16.h`` are (``cupynet info`` reports it);
* ``checks``: argument checks of the array-level kernel functions (metadata only, no sync);
* ``common.cuh``: the CUDA helpers every kernel includes; ``reference``: their NumPy twins.

The kernels themselves live beside the code that uses them: ``cupynet/amp/kernels``
(unscale, loss-scale update, L2 norm), ``cupynet/optim/kernels`` (SGD, Adam) and
``cupynet/ops/kernels`` (fused ops). See docs/kernels.md.
"""

from cupynet.cuda.device import device_count, get_device_capability, get_device_name, is_available, synchronize

__all__ = ["is_available", "device_count", "get_device_name", "get_device_capability", "synchronize"]

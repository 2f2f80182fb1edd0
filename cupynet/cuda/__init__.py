"""``cupynet.cuda``: is a GPU usable, and the small layer every CUDA kernel of cupynet is built on.

The device questions (as ``torch.cuda``) are answered here; the kernel layer is in the submodules:

* ``device``: the device questions, and the one place the launchers get CuPy from;
* ``capability``: which half dtypes a device runs (compute capability, CuPy version), and why not;
* ``compile``: ``.cu`` text, name expressions, ``cupy.RawModule`` compilation and its cache;
* ``args``: scalar kernel arguments with their C type (``c_int``, ``c_float``, ...);
* ``multi_tensor``: chunk tables and multi-tensor launches;
* ``headers``: where ``cuda_fp16.h``/``cuda_bf16.h`` are (``cupynet info`` reports it);
* ``checks``: argument checks of the array-level kernel functions (metadata only, no sync);
* ``common.cuh``: the CUDA helpers every kernel includes; ``reference``: their NumPy twins;
* ``memory``: ``torch.cuda``'s memory questions from CuPy's memory pool (0 / no-ops on the CPU);
* ``amp``: ``torch.cuda.amp`` (``autocast``, ``GradScaler``): ``cupynet/compat/cuda_amp.py``, loaded on first use;
* ``emulated``: the emulated CUDA device (``CUPYNET_DEVICE=cuda-emulated``), loaded on first use;
* ``Stream``, ``Event``, ``current_stream``, ``default_stream``, ``set_stream``, ``stream``: torch.cuda's
  streams and events, ``cupynet/compat/cuda_streams.py``, loaded on first use.

The kernels themselves live beside the code that uses them: ``cupynet/amp/kernels``
(unscale, loss-scale update, L2 norm), ``cupynet/optim/kernels`` (SGD, Adam) and
``cupynet/ops/kernels`` (fused ops). See docs/kernels.md.
"""

from cupynet import _lazy
from cupynet.cuda.capability import is_bf16_supported
from cupynet.cuda.device import (
    current_device,
    device_count,
    get_device_capability,
    get_device_name,
    is_available,
    is_initialized,
    manual_seed,
    manual_seed_all,
    synchronize,
)

__all__ = ["is_available", "is_initialized", "device_count", "current_device", "get_device_name",
           "get_device_capability", "synchronize", "manual_seed", "manual_seed_all", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "memory_stats", "empty_cache", "amp", "is_bf16_supported"]

# NOTE: torch.cuda.amp (which imports cupynet.amp, a layer above this one) is compatibility surface, the
# emulated device is needed only under CUPYNET_DEVICE=cuda-emulated, and the memory questions only when a
# program asks them: all load on first use
_MEMORY_QUESTIONS = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                     "reset_peak_memory_stats", "reset_max_memory_allocated", "memory_stats", "empty_cache")
__getattr__, __dir__ = _lazy.lazy_names(__name__, {
    "amp": "cupynet.compat.cuda_amp",
    "emulated": "cupynet.emulated_cuda",
    "memory": "cupynet.cuda.memory",
    **{name: f"cupynet.cuda.memory:{name}" for name in _MEMORY_QUESTIONS},
    **{name: f"cupynet.compat.cuda_streams:{name}" for name in ("Stream", "Event", "current_stream", "default_stream",
                                                                 "set_stream", "stream")},
})

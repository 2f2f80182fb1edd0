"""cupynet: a small, readable deep-learning framework on CuPy (NumPy without a GPU) built around AMP.

``import cupynet`` loads the core a model is made of: backend, dtypes, tensor, autograd, ops, amp, nn,
optim and the device layer ``cuda``. The rest keeps its name here but loads on first use (``_LAZY``
below): checkpoints (``save``/``load``, safetensors), the data pipeline (``cupynet.data``), ``linalg``,
the optional packages (distributions, distributed, multiprocessing, vision, models, utils, ...) and the
compatibility surface (``cupynet.compat``: the runner, the legacy constructors, ...).
"""

from . import _lazy, amp, autograd, backend, cuda, dtypes, host_memory, nn, ops, optim, random
from .amp import autocast
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .backend import Device, default_device, device
from .creation import (
                       arange,
                       as_tensor,
                       empty,
                       empty_like,
                       eye,
                       from_numpy,
                       full,
                       full_like,
                       linspace,
                       ones,
                       ones_like,
                       rand,
                       rand_like,
                       randint,
                       randn,
                       randn_like,
                       randperm,
                       tensor,
                       zeros,
                       zeros_like,
)
from .dtypes import dtype, get_default_dtype, set_default_dtype
from .ops import *  # noqa: F403 - the functional API: cupynet.matmul, cupynet.exp, ...
from .random import get_rng_state, initial_seed, manual_seed, set_rng_state
from .tensor import Size, Tensor

# NOTE: the dtypes a program sees are cupynet.dtypes.dtype objects (PyTorch's torch.dtype), each equal to the
# NumPy dtype of cupynet.dtypes it stands for; the internals compute with the NumPy dtypes themselves
float16, bfloat16, float32, float64, int8, uint8, int16, int32, int64, bool_, complex64, complex128 = (
    dtypes.public(d) for d in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8,
                               dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.bool_,
                               dtypes.complex64, dtypes.complex128))
half, double, long = float16, float64, int64
bool = bool_  # noqa: A001 - PyTorch's name: cupynet.bool
cfloat, cdouble = complex64, complex128
float = float32  # noqa: A001
int = int32  # noqa: A001
__version__ = "0.1.0"

# ---- PyTorch's names for the rest of the core (`cupynet run` maps torch.X to these) -------------------------
from . import settings  # noqa: E402
from .autograd import inference_mode, is_inference_mode_enabled  # noqa: E402
from .creation import is_tensor, logspace, numel, randint_like  # noqa: E402
from .dtypes import finfo, iinfo  # noqa: E402
from .random import Generator, default_generator, seed  # noqa: E402
from .settings import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    compile,  # noqa: A004 - PyTorch's name
    get_float32_matmul_precision,
    get_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    set_num_threads,
    set_printoptions,
    use_deterministic_algorithms,
)

# NOTE: freed NumPy memory stays mapped for the next training step (no page faults): host_memory.py
host_memory.tune()

# NOTE: names whose module loads on first use (cupynet/_lazy.py); the compatibility surface is cupynet/compat/
_LEGACY_TENSORS = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
                   "ShortTensor", "IntTensor", "LongTensor", "BoolTensor")
_LAZY_MODULES = ("serialization", "safetensors_io", "data", "linalg", "meta", "shared_memory", "utils", "models",
                 "train", "cli", "accelerator", "backends", "distributions", "distributed", "multiprocessing",
                 "vision", "compat", "run")
_LAZY = {**{name: f"cupynet.{name}" for name in _LAZY_MODULES},
         "save": "cupynet.serialization:save",
         "load": "cupynet.serialization:load",
         "load_safetensors": "cupynet.safetensors_io:load_safetensors",
         "save_safetensors": "cupynet.safetensors_io:save_safetensors",
         **{name: f"cupynet.compat.legacy_tensors:{name}" for name in _LEGACY_TENSORS},
         **{name: f"cupynet.ops.complex_math:{name}" for name in ops.COMPLEX_NAMES}}
__getattr__, __dir__ = _lazy.lazy_names(__name__, _LAZY)

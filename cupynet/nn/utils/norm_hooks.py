"""The older weight norm and spectral norm: ``nn.utils.weight_norm`` / ``spectral_norm`` and their ``remove_*``.

Each replaces ``module.weight`` by parameters it is computed from (``weight_g`` and ``weight_v``;
``weight_orig`` with power-iteration buffers ``weight_u`` and ``weight_v``) and recomputes the
weight in a forward pre-hook before every call, as PyTorch's ``torch.nn.utils.weight_norm`` module
does. The same math as parametrizations are in ``parametrizations.py`` (the form PyTorch recommends).
"""

from __future__ import annotations

import warnings

from ...autograd import no_grad
from ...ops import dot, mv, normalize
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter
from .parametrizations import matrix_view, norm_except_dim, weight_norm_value

__all__ = ["WeightNorm", "SpectralNorm", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm"]


class WeightNorm:
    """The forward pre-hook of ``weight_norm``: ``module.<name> = g * v / ||v||`` before each call.

    Args:
        name: the parameter's name.
        dim: the dimension whose slices keep their own magnitude (-1: one magnitude for the tensor).
    """

    def __init__(self, name: str, dim: int):
        self.name, self.dim = name, dim

    def compute_weight(self, module):
        """The weight from ``<name>_g`` and ``<name>_v``.

        Args:
            module: the Module.
        """
        return weight_norm_value(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"), self.dim)

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def _find_hook(module, kind, name):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key, hook
    return None, None


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Split ``module.<name>`` into ``<name>_g`` (magnitude) and ``<name>_v`` (direction) (deprecated in PyTorch).

    Args:
        module: the Module.
        name: the parameter's name.
        dim: the dimension whose slices keep their own magnitude (None: one magnitude for the tensor).
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    if _find_hook(module, WeightNorm, name)[1] is not None:
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    hook = WeightNorm(name, -1 if dim is None else dim)
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter named {name!r}")
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, hook.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Make ``module.<name>`` a plain parameter again, with its current value.

    Args:
        module: the Module.
        name: the parameter's name.
    """
    key, hook = _find_hook(module, WeightNorm, name)
    if hook is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    with no_grad():
        weight = hook.compute_weight(module)
    delattr(module, name)
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    module.register_parameter(name, Parameter(weight.detach()))
    del module._forward_pre_hooks[key]
    return module


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``: ``module.<name> = W / sigma(W)`` before each call.

    Args:
        name: the parameter's name.
        n_power_iterations: power-iteration steps per call in training mode (> 0).
        dim: the dimension taken as the matrix's rows.
        eps: the smallest norm when normalizing the vectors.
    """

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def compute_weight(self, module, do_power_iteration: bool):
        """``<name>_orig / sigma``; in training, first ``n_power_iterations`` steps on the ``_u``/``_v`` buffers.

        Args:
            module: the Module.
            do_power_iteration: update the vectors first (training mode).
        """
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = matrix_view(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                plain = matrix.detach()
                for _ in range(self.n_power_iterations):
                    v.array[...] = normalize(mv(plain.T, u), dim=0, eps=self.eps).array
                    u.array[...] = normalize(mv(plain, v), dim=0, eps=self.eps).array
        u, v = u.clone(), v.clone()  # NOTE: constants of this call (the buffers change in place)
        return weight / dot(u, mv(matrix, v))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value before every call (Miyato et al.).

    Args:
        module: the Module.
        name: the parameter's name.
        n_power_iterations: power-iteration steps per call in training mode.
        eps: the smallest norm when normalizing the vectors.
        dim: the rows' dimension (default 1 for transposed convolutions, else 0).
    """
    if _find_hook(module, SpectralNorm, name)[1] is not None:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter named {name!r}")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    hook = SpectralNorm(name, n_power_iterations, dim, eps)
    with no_grad():
        h, w = matrix_view(weight.detach(), dim).shape
        # NOTE: random start vectors from cupynet's generator (torch draws its own: load its state to match)
        u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps)
        v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Make ``module.<name>`` a plain parameter again, with its current (normalized) value.

    Args:
        module: the Module.
        name: the parameter's name.
    """
    key, hook = _find_hook(module, SpectralNorm, name)
    if hook is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    with no_grad():
        weight = hook.compute_weight(module, do_power_iteration=False)
    delattr(module, name)
    del module._parameters[name + "_orig"], module._buffers[name + "_u"], module._buffers[name + "_v"]
    module.register_parameter(name, Parameter(weight.detach()))
    del module._forward_pre_hooks[key]
    return module

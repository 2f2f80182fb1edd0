"""Every differentiable op, one family per module.

Each family module defines ``__all__`` (its public functions) and ``METHODS``
(the ones that are also ``Tensor`` methods, e.g. ``x.sum()``). This package
gathers both; ``Tensor.__getattr__`` looks methods up in ``TENSOR_METHODS``.
``OP_CLASSES`` lists every ``Function`` subclass, which is where the AMP op
reference (docs/amp_ops.md) is generated from.
"""

from __future__ import annotations

import importlib

from .. import _lazy
from ..autograd.function import Cast, Function

FAMILIES = ("shape", "arith", "compare", "inplace", "reduce", "unary", "trigonometric", "rounding", "clamping",
            "activation", "smooth_activation", "softmax_family", "indexing", "linalg", "contraction", "conv", "pool",
            "norm", "loss.classification", "loss.likelihood", "loss.regression", "loss.margin", "loss.distance",
            "attention", "embedding", "dropout", "resample", "sorting", "scattering", "ternary", "matrix",
            "cumulative", "arrange", "selection", "decomposition", "sampling", "grid", "sparse", "linear_relu",
            "linear_gelu")

TENSOR_METHODS = {}
_modules = []
for _family in FAMILIES:
    _module = importlib.import_module(f"{__name__}.{_family}")
    _modules.append(_module)
    TENSOR_METHODS.update(_module.METHODS)

# NOTE: bound after every family is imported: importing the submodule ``ops.norm``
# sets the package attribute ``norm`` to that module, which must not hide the
# function ``norm`` (vector norm) exported by ``ops.reduce``.
for _module in _modules:
    for _name in _module.__all__:
        globals()[_name] = getattr(_module, _name)


def _all_op_classes():
    seen, out = set(), [Cast]
    for module in _modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Function) and value is not Function \
                    and value.__module__ == module.__name__ and value not in seen \
                    and not value.__name__.startswith("_"):  # NOTE: private bases are not ops
                seen.add(value)
                out.append(value)
    return tuple(out)


OP_CLASSES = _all_op_classes()
__all__ = sorted({n for m in _modules for n in m.__all__}) + ["TENSOR_METHODS", "OP_CLASSES"]

# NOTE: complex tensors' own ops load on first use (complex_math.py): its functions are names of this package,
# and its Tensor methods forward to it
COMPLEX_NAMES = ("complex", "polar", "view_as_complex", "view_as_real", "real", "imag", "conj", "conj_physical",
                 "resolve_conj", "resolve_neg", "angle", "is_complex")


def _complex_method(name):
    def method(self, *args, **kwargs):
        from . import complex_math  # noqa: PLC0415 - loaded on first use
        return getattr(complex_math, name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``cupynet.{name}(self, ...)`` (complex_math.py)."
    return method


TENSOR_METHODS.update({name: _complex_method(name) for name in COMPLEX_NAMES[5:]})
__getattr__, __dir__ = _lazy.lazy_names(__name__, {name: f"cupynet.ops.complex_math:{name}" for name in COMPLEX_NAMES})

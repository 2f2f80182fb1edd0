"""``cupynet.nn.functional``: the ops of ``cupynet.ops`` under ``torch.nn.functional``'s names.

Nothing is computed here: every name is looked up in ``cupynet.ops`` on first
use (PEP 562 ``__getattr__``), so a family module that is not written yet makes
only its own names unavailable, with an error saying so, instead of breaking
``import cupynet.nn``. ``missing()`` lists the names not available yet.
"""

from __future__ import annotations

EXPECTED = (
    "linear", "bilinear", "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
    "adaptive_avg_pool2d", "dropout", "relu", "leaky_relu", "gelu", "silu", "tanh", "sigmoid", "softplus",
    "softmax", "log_softmax", "layer_norm", "batch_norm", "group_norm", "embedding",
    "scaled_dot_product_attention", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "pad", "one_hot", "normalize",
)
# NOTE: "bilinear", "pad", "one_hot", "normalize" are used by no layer here; they are
# re-exported when an op family provides them, and not counted as missing otherwise.
OPTIONAL = ("bilinear", "pad", "one_hot", "normalize")
__all__ = [name for name in EXPECTED if name not in OPTIONAL] + ["missing"]


def _ops():
    import cupynet.ops as ops  # noqa: PLC0415 - looked up late so a missing family breaks only its names
    return ops


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    fn = getattr(_ops(), name, None)
    if fn is None or not callable(fn):
        raise AttributeError(f"cupynet.nn.functional.{name} is not available: cupynet.ops has no op named "
                             f"'{name}' (its op family module is missing or does not define it)")
    globals()[name] = fn  # NOTE: later lookups are plain module attributes, without this call
    return fn


def missing() -> list:
    """The required functional names that ``cupynet.ops`` does not provide (yet)."""
    ops = _ops()
    return [name for name in EXPECTED if name not in OPTIONAL and not callable(getattr(ops, name, None))]

"""AMP cast policies: PyTorch's autocast lists as data, and the one mechanism that applies an op's policy.

Every op class names its policy in ``amp_policy`` (``lower``, ``fp32``,
``promote``, ``banned`` or None); ``Function.apply`` hands each op to
``apply_cast_policy`` while an autocast region (or a trace) is on, and nothing
here knows any op. For each positional Tensor argument (and each Tensor in a
list argument):

* *eligible* means: floating, on a device whose autocast region is on, not
  float64, and not already the target dtype (docs/amp.md, section 11, "Cast rules");
* ``lower`` casts eligible inputs to the region's dtype (fp16 / bf16);
* ``fp32`` casts them to float32;
* ``promote`` casts them to the widest floating dtype among the inputs;
* ``None`` leaves them alone (normal type promotion happens in the op);
* ``banned`` raises the op's ``banned_message``.

A cast of an fp32 leaf that requires grad to the lower dtype is cached for the
outermost region, keyed also by grad mode, so a cast made under ``no_grad``
(which has no graph) is never handed to a later grad-enabled op, which would
silently cut the weight out of the graph; PyTorch's cache, keyed by the weight
alone, can do that (docs/autocast.md).

The reference half of this file, ``REFERENCE``, spells out PyTorch's CUDA
autocast lists (summarised in docs/amp.md, section 11) with the op names
PyTorch uses (groups such as "upsample_*" and "lstm/gru/rnn cells" expanded;
``convolution``, the generic aten op, is in PyTorch's lower list too). cupynet
applies these CUDA lists on every device, the CPU included. ``render_markdown``
builds the op reference (docs/amp_ops.md) from the op classes themselves
(``cls.name()``, ``cls.amp_policy``, the docstring's first line), so the doc
cannot drift from the code without ``tests/test_amp_ops_doc.py`` failing.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Cast
from ..autograd.state import STATE
from ..tensor import Tensor

__all__ = [
    "apply_cast_policy", "REFERENCE", "POLICY_ORDER", "DOCUMENTED_DEVIATIONS", "reference_policy", "policy_rows",
    "deviations", "render_markdown", "public_op_classes",
]



def _device_type(t: Tensor) -> str:
    return "cpu" if type(t.array).__module__ == "numpy" else "cuda"


def _target_dtype(policy, args, region):
    """The dtype eligible inputs go to, or None when this op leaves them alone."""
    if policy == "lower":
        return region
    if policy == "fp32":
        return dtypes.float32
    if policy == "promote":
        floats = [t.dtype for t in _tensors(args) if t.dtype in dtypes.FLOATING and t.dtype != dtypes.float64]
        return dtypes.result_type(*floats) if floats else None
    return None


def _tensors(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))


def _region_dtype(args):
    """The autocast dtype for the device of the first tensor argument (None if that region is off)."""
    for t in _tensors(args):
        return STATE.autocast.get(_device_type(t))
    return None


def apply_cast_policy(cls, args):
    """Cast ``args`` as ``cls.amp_policy`` asks under the current autocast state; record traces.

    Args:
        cls: the Function subclass being applied.
        args: its positional arguments.
    """
    region = _region_dtype(args) if STATE.autocast else None
    policy = cls.amp_policy
    if region is not None and policy == "banned":
        raise RuntimeError(cls.banned_message or f"{cls.name()} is unsafe to autocast")
    target = _target_dtype(policy, args, region) if region is not None else None
    new_args = args if target is None else tuple(_cast_arg(a, target) for a in args)
    if STATE.tracers:
        _record(cls, args, new_args, region, target)
    return new_args


def _cast_arg(a, target):
    if isinstance(a, Tensor):
        return _cast_tensor(a, target)
    if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
        return type(a)(_cast_tensor(x, target) if isinstance(x, Tensor) else x for x in a)
    return a


def _eligible(t: Tensor, target) -> bool:
    return (t.dtype in dtypes.FLOATING and t.dtype != dtypes.float64 and t.dtype != target
            and _device_type(t) in STATE.autocast)


def _cast_tensor(t: Tensor, target):
    if not _eligible(t, target):
        return t
    cacheable = (STATE.autocast_cache_enabled and target in dtypes.LOW_PRECISION and t.dtype == dtypes.float32
                 and t.requires_grad and t.grad_fn is None)
    if not cacheable:
        STATE.cast_counter += 1
        return _untraced_cast(Cast, t, target)
    key = (id(t), target, STATE.grad_enabled)
    hit = STATE.cast_cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._version:
        return hit[2]
    STATE.cast_counter += 1
    cast = _untraced_cast(Cast, t, target)
    # NOTE: holding t keeps id(t) from being reused; the version makes an in-place
    # update of the weight (an optimizer step inside the region) refresh the cast.
    STATE.cast_cache[key] = (t, t._version, cast)
    return cast


def _untraced_cast(cast_cls, t, target):
    # NOTE: the casts autocast makes are part of the op being traced (its row
    # says "lower policy -> float16"); they get no rows of their own.
    tracers, STATE.tracers = STATE.tracers, []
    try:
        return cast_cls.apply(t, dtype=target)
    finally:
        STATE.tracers = tracers


def _record(cls, args, new_args, region, target):
    in_dtypes = tuple(str(t.dtype) for t in _tensors(args))
    out = [t.dtype for t in _tensors(new_args) if t.dtype in dtypes.FLOATING]
    run_dtype = str(dtypes.result_type(*out)) if out else (in_dtypes[0] if in_dtypes else "-")
    if region is None:
        reason = "autocast off"
    elif cls.amp_policy is None:
        reason = "unlisted: input dtypes with type promotion"
    elif target is None:
        reason = f"{cls.amp_policy}: no floating input"
    elif all(not _eligible(t, target) for t in _tensors(args)):
        reason = f"{cls.amp_policy}: inputs not eligible (float64, integer or already {target})"
    else:
        reason = f"{cls.amp_policy} policy -> {target}"
    for tracer in STATE.tracers:
        tracer.record(cls.name(), in_dtypes, run_dtype, reason)



POLICY_ORDER = ("lower", "fp32", "promote", "banned", None)


_POLICY_TITLES = {
    "lower": "`lower`: cast to the autocast dtype (float16 / bfloat16)",
    "fp32": "`fp32`: cast to float32",
    "promote": "`promote`: cast to the widest floating input dtype",
    "banned": "`banned`: an error under autocast",
    None: "unlisted: run in the input dtypes (normal type promotion)",
}


REFERENCE = {
    "lower": (
        "convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
        "prelu",
        "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linear", "addbmm", "baddbmm", "bmm",
        "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
        "scaled_dot_product_attention",
    ),
    "fp32": (
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
        "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "frobenius_norm",
        "nuclear_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
        "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
        "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
        "logsumexp", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_linear1d",
        "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d", "prod", "softmax", "log_softmax",
        "cumprod", "cumsum", "sum", "linalg_vector_norm", "linalg_matrix_norm", "cross_entropy",
    ),
    "promote": (
        "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sample", "index_put",
        "tensordot", "scatter_add", "cat", "stack",
    ),
    "banned": ("binary_cross_entropy",),
}


# Ops whose cupynet policy differs on purpose from the reference lists (name -> why). A policy that differs
# and is not listed here makes tests/test_amp_ops_doc.py fail.
DOCUMENTED_DEVIATIONS = {
    "conv_transpose": "the shared base class of conv_transpose1d/2d/3d (lower, like them); PyTorch has no "
                      "generic transposed-convolution op of that name",
    "normalize": "one op in cupynet; in PyTorch F.normalize is composite and its norm runs in fp32 under "
                 "autocast, so the effect is the same",
    "linear_gelu": "Linear then GELU fused into one op (a transformer layer's feed-forward); lower, as linear, "
                   "whose output GELU then takes in the half dtype, as unfused",
    "linear_relu": "Linear then ReLU fused into one op (what nn.Sequential runs for the pair); lower, as linear: "
                   "relu of a half tensor stays half, as unfused",
}


def reference_policy(name: str):
    """The policy PyTorch's CUDA lists give op ``name`` (None when unlisted).

    Args:
        name: an op name such as ``"matmul"``.
    """
    for policy, names in REFERENCE.items():
        if name in names:
            return policy
    return None


def public_op_classes(op_classes):
    """The op classes a user can reach by name: shared private bases (``_AddProduct``) are left out.

    Args:
        op_classes: the Function subclasses.
    """
    return [cls for cls in op_classes if not cls.name().startswith("_")]


def _summary(cls) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0].strip().replace("|", "\\|") if doc else "(no docstring)"


def policy_rows(op_classes):
    """Rows (policy, op name, class path, summary) for every op class, sorted deterministically.

    Args:
        op_classes: the Function subclasses (``cupynet.ops.OP_CLASSES``).
    """
    rows = {(cls.amp_policy, cls.name(), f"{cls.__module__}.{cls.__qualname__}", _summary(cls))
            for cls in public_op_classes(op_classes)}
    order = {p: i for i, p in enumerate(POLICY_ORDER)}
    return sorted(rows, key=lambda r: (order.get(r[0], len(order)), r[1], r[2]))


def deviations(op_classes):
    """(name, cupynet policy, reference policy) for ops whose policy differs from the reference, sorted.

    Args:
        op_classes: the Function subclasses.
    """
    out = {(cls.name(), cls.amp_policy, reference_policy(cls.name())) for cls in public_op_classes(op_classes)
           if cls.amp_policy != reference_policy(cls.name())}
    return sorted(out, key=lambda r: (r[0], str(r[1]), str(r[2])))


def _policy_section(policy, rows):
    lines = [f"## {_POLICY_TITLES[policy]}", ""]
    mine = [r for r in rows if r[0] == policy]
    if not mine:
        return lines + ["(no op in cupynet has this policy yet)", ""]
    lines += ["| op | class | summary |", "|---|---|---|"]
    lines += [f"| `{name}` | `{path}` | {summary} |" for _, name, path, summary in mine]
    return lines + [""]


def _missing_section(op_classes):
    have = {cls.name() for cls in op_classes}
    lines = ["## Reference ops cupynet does not implement (yet)", "",
             "Ops in PyTorch's CUDA autocast lists with no cupynet op class of that name.", ""]
    for policy in ("lower", "fp32", "promote", "banned"):
        missing = sorted(n for n in REFERENCE[policy] if n not in have)
        lines.append(f"- **{policy}** ({len(missing)}): " + (", ".join(f"`{n}`" for n in missing) or "none"))
    return lines + [""]


def _deviation_section(op_classes):
    lines = ["## cupynet policies that differ from the reference lists", ""]
    found = deviations(op_classes)
    if not found:
        return lines + ["None.", ""]
    lines += ["| op | cupynet | PyTorch CUDA list | why |", "|---|---|---|---|"]
    for name, mine, ref in found:
        why = DOCUMENTED_DEVIATIONS.get(name, "**undocumented**")
        lines.append(f"| `{name}` | {mine or 'unlisted'} | {ref or 'unlisted'} | {why} |")
    return lines + [""]


def render_markdown(op_classes) -> str:
    """The full text of docs/amp_ops.md for these op classes (deterministic: everything sorted).

    Args:
        op_classes: the Function subclasses (``cupynet.ops.OP_CLASSES``).
    """
    rows = policy_rows(op_classes)
    counts = ", ".join(f"{sum(1 for r in rows if r[0] == p)} {p or 'unlisted'}" for p in POLICY_ORDER)
    lines = [
        "# AMP op reference",
        "",
        "<!-- Generated by scripts/gen_amp_ops.py from cupynet.ops.OP_CLASSES; do not edit by hand. -->",
        "<!-- Regenerate: PYTHONPATH=. python scripts/gen_amp_ops.py -->",
        "",
        "Each op's cast policy under `cupynet.amp.autocast` (see docs/autocast.md). cupynet applies PyTorch's",
        "**CUDA** autocast lists on every device, the CPU included, so a CPU run reproduces GPU AMP numerics.",
        "Float64, integer and bool inputs are never cast. Shared private base classes (names starting with",
        "`_`) are left out.",
        "",
        f"{len(rows)} op classes: {counts}.",
        "",
    ]
    for policy in POLICY_ORDER:
        lines += _policy_section(policy, rows)
    lines += _missing_section(op_classes)
    lines += _deviation_section(op_classes)
    return "\n".join(lines).rstrip() + "\n"



"""Per-op autocast checks, table-driven from ``cupynet.ops.OP_CLASSES`` (port of torch's autocast op tests).

For every op class with a cast policy: under autocast (float16 and bfloat16 on the CPU) the op runs in the
dtype its policy says (checked on the output and on the op's own ``trace`` row), and its output equals
exactly the same op computed, with autocast off, on inputs cast by hand. ``SAMPLES`` must name every op
with a policy: ``test_every_policy_op_has_a_sample`` fails otherwise, so new ops are never silently skipped.
"""

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp
from cupynet.amp.policy import public_op_classes
from cupynet.autograd.function import Function
from cupynet.autograd.state import STATE

ABSTRACT_BASE = "abstract base: dispatched only through its subclasses"
_rng = np.random.default_rng(0)


def _t(*shape, low=-1.0, high=1.0, grad=False, dtype=cn.float32):
    return cn.tensor(_rng.uniform(low, high, size=shape), dtype=dtype, requires_grad=grad)


def _pos(*shape):
    return _t(*shape, low=0.5, high=2.0)


def _op(name):
    fn = getattr(cn.ops, name, None)
    if fn is None:
        raise AssertionError(f"cupynet.ops has an op class named {name!r} but no public function of that name; "
                             "fix the SAMPLES entry to call it another way")
    return fn


def _call(name, *args, **kwargs):
    return lambda: (_op(name), args, kwargs)


def _labels(n, classes):
    return cn.tensor(_rng.integers(0, classes, size=n), dtype=cn.int64)


# op name -> a factory returning (function, args, kwargs), built fresh per use. Entries for ops that do not
# exist yet are harmless (used only when an op class of that name appears).
def _sign(*shape):
    """A float32 tensor of +1/-1 labels (targets of the margin losses)."""
    return cn.tensor(np.where(np.random.default_rng(1).random(shape) > 0.5, 1.0, -1.0).astype(np.float32))


SAMPLES = {
    # lower
    "matmul": lambda: (_op("matmul"), (_t(3, 4), _t(4, 5, grad=True)), {}),
    "mm": lambda: (_op("mm"), (_t(3, 4), _t(4, 5)), {}),
    "bmm": lambda: (_op("bmm"), (_t(2, 3, 4), _t(2, 4, 5)), {}),
    "mv": lambda: (_op("mv"), (_t(3, 4), _t(4)), {}),
    "linear": lambda: (_op("linear"), (_t(2, 4), _t(3, 4, grad=True), _t(3, grad=True)), {}),
    "linear_relu": lambda: (_op("linear_relu"), (_t(2, 4), _t(3, 4, grad=True), _t(3, grad=True)), {}),
    "linear_gelu": lambda: (_op("linear_gelu"), (_t(2, 4), _t(3, 4, grad=True), _t(3, grad=True)), {}),
    "addmm": lambda: (_op("addmm"), (_t(3, 5), _t(3, 4), _t(4, 5)), {"beta": 0.5, "alpha": 2.0}),
    "addmv": lambda: (_op("addmv"), (_t(3), _t(3, 4), _t(4)), {}),
    "addr": lambda: (_op("addr"), (_t(3, 4), _t(3), _t(4)), {}),
    "baddbmm": lambda: (_op("baddbmm"), (_t(2, 3, 5), _t(2, 3, 4), _t(2, 4, 5)), {}),
    "addbmm": lambda: (_op("addbmm"), (_t(3, 5), _t(2, 3, 4), _t(2, 4, 5)), {}),
    "einsum": lambda: (_op("einsum"), ("ij,jk->ik", _t(3, 4), _t(4, 5)), {}),
    "convolution": ABSTRACT_BASE,
    "conv_transpose": ABSTRACT_BASE,
    "conv1d": lambda: (_op("conv1d"), (_t(2, 3, 8), _t(4, 3, 3), _t(4)), {"padding": 1}),
    "conv2d": lambda: (_op("conv2d"), (_t(2, 3, 5, 5), _t(4, 3, 3, 3), _t(4)), {"stride": 2}),
    "conv3d": lambda: (_op("conv3d"), (_t(1, 2, 4, 4, 4), _t(3, 2, 2, 2, 2), _t(3)), {}),
    "conv_transpose1d": lambda: (_op("conv_transpose1d"), (_t(2, 3, 5), _t(3, 4, 3), _t(4)), {}),
    "conv_transpose2d": lambda: (_op("conv_transpose2d"), (_t(2, 3, 4, 4), _t(3, 4, 3, 3), _t(4)), {"stride": 2}),
    "conv_transpose3d": lambda: (_op("conv_transpose3d"), (_t(1, 2, 3, 3, 3), _t(2, 3, 2, 2, 2), _t(3)), {}),
    "prelu": lambda: (_op("prelu"), (_t(2, 3, 4), _t(3)), {}),
    "scaled_dot_product_attention": lambda: (_op("scaled_dot_product_attention"),
                                             (_t(2, 3, 4), _t(2, 5, 4), _t(2, 5, 4)), {}),
    # fp32
    # fp32: the upsample ops (issue 13), one class per mode and dimension as in PyTorch's list
    "upsample_nearest1d": lambda: (_op("interpolate"), (_t(2, 3, 4),), {"scale_factor": 2}),
    "upsample_nearest2d": lambda: (_op("interpolate"), (_t(2, 3, 4, 4),), {"size": (5, 3)}),
    "upsample_nearest3d": lambda: (_op("interpolate"), (_t(1, 2, 2, 3, 2),), {"scale_factor": 2}),
    "upsample_linear1d": lambda: (_op("interpolate"), (_t(2, 3, 4),), {"size": 7, "mode": "linear"}),
    "upsample_bilinear2d": lambda: (_op("interpolate"), (_t(2, 3, 4, 4),), {"scale_factor": 2, "mode": "bilinear"}),
    "upsample_trilinear3d": lambda: (_op("interpolate"), (_t(1, 2, 2, 3, 2),), {"size": 3, "mode": "trilinear"}),
    "upsample_bicubic2d": lambda: (_op("interpolate"), (_t(1, 2, 4, 4),), {"size": 6, "mode": "bicubic"}),
    "pow": lambda: (_op("pow"), (_pos(3, 4), _t(3, 4)), {}),
    "sum": lambda: (_op("sum"), (_t(3, 4),), {"dim": 1}),
    "mean": lambda: (_op("mean"), (_t(3, 4),), {"dim": 1}),
    "prod": lambda: (_op("prod"), (_pos(3, 4),), {"dim": 1}),
    "cumsum": lambda: (_op("cumsum"), (_t(3, 4),), {"dim": 1}),
    "cumprod": lambda: (_op("cumprod"), (_pos(3, 4),), {"dim": 1}),
    "logsumexp": lambda: (_op("logsumexp"), (_t(3, 4),), {"dim": 1}),
    "exp": _call("exp", _t(3, 4)), "expm1": _call("expm1", _t(3, 4)),
    "log": _call("log", _pos(3, 4)), "log2": _call("log2", _pos(3, 4)), "log10": _call("log10", _pos(3, 4)),
    "log1p": _call("log1p", _pos(3, 4)), "rsqrt": _call("rsqrt", _pos(3, 4)),
    "reciprocal": _call("reciprocal", _pos(3, 4)), "tan": _call("tan", _t(3, 4)),
    "sinh": _call("sinh", _t(3, 4)), "cosh": _call("cosh", _t(3, 4)),
    "asin": lambda: (_op("asin"), (_t(3, 4, low=-0.9, high=0.9),), {}),
    "acos": lambda: (_op("acos"), (_t(3, 4, low=-0.9, high=0.9),), {}),
    "erfinv": lambda: (_op("erfinv"), (_t(3, 4, low=-0.9, high=0.9),), {}),
    "softplus": _call("softplus", _t(3, 4)),
    "softmax": lambda: (_op("softmax"), (_t(3, 4),), {"dim": 1}),
    "log_softmax": lambda: (_op("log_softmax"), (_t(3, 4),), {"dim": 1}),
    "layer_norm": lambda: (_op("layer_norm"), (_t(2, 3, 4), (4,), _t(4), _t(4)), {}),
    "group_norm": lambda: (_op("group_norm"), (_t(2, 4, 3), 2, _t(4), _t(4)), {}),
    "normalize": lambda: (_op("normalize"), (_t(3, 4),), {"dim": 1}),
    "norm": lambda: (_op("norm"), (_t(3, 4),), {}),
    "linalg_vector_norm": lambda: (_op("linalg_vector_norm"), (_t(3, 4),), {}),
    "cosine_similarity": lambda: (_op("cosine_similarity"), (_t(3, 4), _t(3, 4)), {}),
    "cdist": lambda: (_op("cdist"), (_t(3, 4), _t(2, 4)), {}),
    "dist": lambda: (_op("dist"), (_t(3, 4), _t(3, 4)), {}),
    "cross_entropy": lambda: (_op("cross_entropy"), (_t(4, 5), _labels(4, 5)), {}),
    "nll_loss": lambda: (_op("nll_loss"), (_t(4, 5, low=-3.0, high=-0.1), _labels(4, 5)), {}),
    "mse_loss": lambda: (_op("mse_loss"), (_t(3, 4), _t(3, 4)), {}),
    "l1_loss": lambda: (_op("l1_loss"), (_t(3, 4), _t(3, 4)), {}),
    "smooth_l1_loss": lambda: (_op("smooth_l1_loss"), (_t(3, 4), _t(3, 4)), {}),
    "hinge_embedding_loss": lambda: (_op("hinge_embedding_loss"), (_t(3, 4), _sign(3, 4)), {}),
    "margin_ranking_loss": lambda: (_op("margin_ranking_loss"), (_t(5), _t(5), _sign(5)), {}),
    "poisson_nll_loss": lambda: (_op("poisson_nll_loss"), (_t(3, 4), _t(3, 4).abs()), {}),
    "soft_margin_loss": lambda: (_op("soft_margin_loss"), (_t(3, 4), _sign(3, 4)), {}),
    "huber_loss": lambda: (_op("huber_loss"), (_t(3, 4), _t(3, 4)), {}),
    "kl_div": lambda: (_op("kl_div"), (_t(3, 4, low=-3.0, high=-0.1), _pos(3, 4)), {"reduction": "batchmean"}),
    "binary_cross_entropy_with_logits": lambda: (_op("binary_cross_entropy_with_logits"),
                                                 (_t(3, 4), _t(3, 4, low=0.0, high=1.0)), {}),
    # fp32: the losses of issue 13 (h-acts)
    "triplet_margin_loss": lambda: (_op("triplet_margin_loss"), (_t(3, 4), _t(3, 4), _t(3, 4)), {"swap": True}),
    "cosine_embedding_loss": lambda: (_op("cosine_embedding_loss"), (_t(5, 4), _t(5, 4), _sign(5)), {"margin": 0.1}),
    "multi_margin_loss": lambda: (_op("multi_margin_loss"), (_t(4, 5), _labels(4, 5)), {"weight": _pos(5)}),
    "multilabel_margin_loss": lambda: (_op("multilabel_margin_loss"),
                                       (_t(2, 4), cn.tensor([[3, 0, -1, 1], [1, 2, 0, 3]])), {}),
    # promote
    "dot": lambda: (_op("dot"), (_t(4), _t(4)), {}),
    "vdot": lambda: (_op("vdot"), (_t(4), _t(4)), {}),
    "tensordot": lambda: (_op("tensordot"), (_t(2, 3, 4), _t(3, 4, 5)), {"dims": 2}),
    "cat": lambda: (_op("cat"), ([_t(2, 3), _t(1, 3)],), {"dim": 0}),
    "stack": lambda: (_op("stack"), ([_t(2, 3), _t(2, 3)],), {"dim": 0}),
    "scatter_add": lambda: (_op("scatter_add"), (_t(3, 4), 0, cn.tensor([[0, 1, 2, 0], [2, 2, 1, 0]]), _t(2, 4)),
                            {}),
    "addcmul": lambda: (_op("addcmul"), (_t(3, 4), _t(3, 4), _t(3, 4)), {"value": 0.5}),
    "addcdiv": lambda: (_op("addcdiv"), (_t(3, 4), _t(3, 4), _pos(3, 4)), {"value": 0.5}),
    "atan2": lambda: (_op("atan2"), (_t(3, 4), _t(3, 4)), {}),
    "cross": lambda: (_op("cross"), (_t(2, 3), _t(2, 3)), {"dim": 1}),
    "bilinear": lambda: (_op("bilinear"), (_t(2, 3), _t(2, 4), _t(5, 3, 4), _t(5)), {}),
    # banned
    "binary_cross_entropy": lambda: (_op("binary_cross_entropy"),
                                     (_t(3, 4, low=0.1, high=0.9), _t(3, 4, low=0.0, high=1.0)), {}),
}

HALF_DTYPES = [cn.float16, cn.bfloat16]


def _policy_classes(*policies):
    return sorted((c for c in public_op_classes(cn.ops.OP_CLASSES) if c.amp_policy in policies),
                  key=lambda c: (c.name(), c.__qualname__))


def _concrete(classes):
    return [c for c in classes if SAMPLES.get(c.name()) is not ABSTRACT_BASE]


def _ids(classes):
    return [c.name() for c in classes]


LISTED = _concrete(_policy_classes("lower", "fp32", "promote"))
BANNED = _concrete(_policy_classes("banned"))


def test_every_policy_op_has_a_sample():
    missing = [c.name() for c in _policy_classes("lower", "fp32", "promote", "banned") if c.name() not in SAMPLES]
    assert not missing, f"add SAMPLES entries in tests/test_autocast_ops.py for these ops with a policy: {missing}"


def test_abstract_entries_really_are_bases():
    classes = public_op_classes(cn.ops.OP_CLASSES)
    for cls in classes:
        if SAMPLES.get(cls.name()) is ABSTRACT_BASE:
            subs = [c for c in classes if c is not cls and issubclass(c, cls)]
            assert subs, f"{cls.name()} is marked abstract in SAMPLES but no op class derives from it"


def _sample(cls):
    factory = SAMPLES.get(cls.name())
    if factory is None:
        pytest.fail(f"no SAMPLES entry for op {cls.name()!r} ({cls.__module__}.{cls.__qualname__}); add one")
    return factory()


def _tensors(args):
    for a in args:
        if isinstance(a, cn.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, cn.Tensor))


def _hand_cast(value, dtype):
    if isinstance(value, cn.Tensor):
        eligible = value.dtype in (cn.float16, cn.bfloat16, cn.float32)
        return value.detach().to(dtype) if eligible else value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(_hand_cast(v, dtype) for v in value)
    return value


def _outputs(out):
    return [o for o in (out if isinstance(out, tuple) else (out,)) if cn.dtypes.is_floating(o.dtype)]


def _expected_dtype(cls, autocast_dtype, args):
    if cls.amp_policy == "lower":
        return autocast_dtype
    if cls.amp_policy == "fp32":
        return cn.float32
    return cn.dtypes.result_type(*(t.dtype for t in _tensors(args) if cn.dtypes.is_floating(t.dtype)))


def _check_against_hand_cast(cls, autocast_dtype, fn, args, kwargs):
    expected = _expected_dtype(cls, autocast_dtype, args)
    with amp.autocast("cpu", dtype=autocast_dtype), amp.trace() as tr:
        out = fn(*args, **kwargs)
    rows = tr.ops(cls.name())
    assert rows, f"the sample for {cls.name()} never dispatched op {cls.name()}; trace:\n{tr}"
    assert rows[0].ran_in == str(expected), f"{cls.name()} ran in {rows[0].ran_in}, expected {expected}"
    control = fn(*_hand_cast(args, expected), **kwargs)
    for got, want in zip(_outputs(out), _outputs(control)):
        assert got.dtype == expected, f"{cls.name()}: output {got.dtype}, expected {expected}"
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.detach().numpy().astype(np.float64), want.detach().numpy().astype(np.float64),
                                      err_msg=f"{cls.name()} under autocast differs from casting by hand")


@pytest.mark.parametrize("autocast_dtype", HALF_DTYPES, ids=str)
@pytest.mark.parametrize("cls", LISTED, ids=_ids(LISTED))
def test_listed_op_runs_in_policy_dtype(cls, autocast_dtype):
    fn, args, kwargs = _sample(cls)
    _check_against_hand_cast(cls, autocast_dtype, fn, args, kwargs)


def _first_tensor_to(args, dtype):
    done, out = False, []
    for a in args:
        if not done and isinstance(a, cn.Tensor) and a.dtype == cn.float32:
            a, done = a.to(dtype), True
        elif not done and isinstance(a, list) and a and isinstance(a[0], cn.Tensor):
            a, done = [a[0].to(dtype), *a[1:]], True
        out.append(a)
    return tuple(out)


PROMOTE = [c for c in LISTED if c.amp_policy == "promote"]


@pytest.mark.parametrize("autocast_dtype", HALF_DTYPES, ids=str)
@pytest.mark.parametrize("cls", PROMOTE, ids=_ids(PROMOTE))
def test_promote_op_with_mixed_inputs(cls, autocast_dtype):
    fn, args, kwargs = _sample(cls)
    mixed = _first_tensor_to(args, autocast_dtype)
    _check_against_hand_cast(cls, autocast_dtype, fn, mixed, kwargs)  # half + fp32 -> fp32
    all_half = _hand_cast(args, autocast_dtype)
    _check_against_hand_cast(cls, autocast_dtype, fn, all_half, kwargs)  # all half stays half


@pytest.mark.parametrize("cls", BANNED, ids=_ids(BANNED))
def test_banned_op_raises_under_autocast(cls):
    fn, args, kwargs = _sample(cls)
    fn(*args, **kwargs)  # fine outside autocast
    with amp.autocast("cpu"):
        with pytest.raises(RuntimeError, match="unsafe to autocast") as info:
            fn(*args, **kwargs)
    assert "binary_cross_entropy_with_logits" in str(info.value)


class _Risky(Function):
    """A test-only op with the banned policy (exercises the mechanism before any banned op exists)."""

    op_name = "risky"
    amp_policy = "banned"
    banned_message = "risky is unsafe to autocast; use safe_risky instead"

    @staticmethod
    def forward(ctx, x):
        return x.array * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_banned_mechanism_raises_and_leaves_state():
    x = _t(3)
    assert _Risky.apply(x).dtype == cn.float32
    with amp.autocast("cpu"):
        with pytest.raises(RuntimeError, match="risky is unsafe to autocast; use safe_risky instead"):
            _Risky.apply(x)
        assert STATE.autocast == {"cpu": cn.bfloat16}
    with amp.autocast("cpu", enabled=False):
        assert _Risky.apply(x).dtype == cn.float32


UNLISTED_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "remainder", "fmod", "floor_divide"]


@pytest.mark.parametrize("autocast_dtype", HALF_DTYPES, ids=str)
@pytest.mark.parametrize("name", UNLISTED_BINARY)
def test_unlisted_op_keeps_input_dtypes_with_promotion(name, autocast_dtype):
    fn = _op(name)
    half, full = _t(3, 4, dtype=autocast_dtype), _t(3, 4)
    with amp.autocast("cpu", dtype=autocast_dtype), amp.trace() as tr:
        mixed, only_half, only_full = fn(half, full), fn(half, half), fn(full, full)
    assert (mixed.dtype, only_half.dtype, only_full.dtype) == (cn.float32, autocast_dtype, cn.float32)
    assert all(r.reason.startswith("unlisted") for r in tr.ops(name))
    np.testing.assert_array_equal(mixed.detach().numpy(), fn(half, full).detach().numpy())


@pytest.mark.parametrize("name", UNLISTED_BINARY)
def test_unlisted_ops_really_are_unlisted(name):
    classes = [c for c in cn.ops.OP_CLASSES if c.name() == name]
    assert classes and all(c.amp_policy is None for c in classes)


def test_float64_and_integer_inputs_are_never_cast():
    a, b = _t(3, 4, dtype=cn.float64), _t(4, 2, dtype=cn.float64)
    ints = cn.tensor([[1, 2], [3, 4]])
    with amp.autocast("cpu", dtype=cn.float16):
        assert (a @ b).dtype == cn.float64
        assert a.exp().dtype == cn.float64
        assert ints.sum().dtype == cn.int64
        assert (ints @ ints).dtype == ints.dtype


def test_lower_op_with_float64_and_float32_inputs():
    # NOTE: only the float32 input is eligible; the float64 one stays, so matmul sees mixed dtypes
    # and reports it, exactly as it would without autocast on (float16, float64) inputs.
    a, b = _t(3, 4, dtype=cn.float64), _t(4, 2)
    with amp.autocast("cpu", dtype=cn.float16):
        with pytest.raises(RuntimeError, match="matmul"):
            a @ b


@pytest.mark.parametrize("autocast_dtype", [cn.float16, cn.bfloat16])
@pytest.mark.parametrize("number", [1.0, 3.0, 2])
def test_number_divided_by_tensor_follows_reciprocal_policy(number, autocast_dtype):
    """``number / x`` is PyTorch's ``x.reciprocal() * number``: fp32 under autocast, as reciprocal is."""
    x = _pos(3, 4).to(autocast_dtype)
    with amp.autocast("cpu", dtype=autocast_dtype):
        out = number / x
        assert out.dtype == x.reciprocal().dtype == cn.float32
    assert (x / number).dtype == autocast_dtype  # tensor / number, outside autocast: the tensor's dtype
    np.testing.assert_array_equal(out.numpy(), (x.to(cn.float32).reciprocal() * number).numpy())


@pytest.mark.parametrize("number", [1.0, 3.0, -7.0])
def test_number_divided_by_tensor_rounds_and_differentiates_as_torch(number):
    torch = pytest.importorskip("torch")
    values = _rng.uniform(0.5, 9.0, size=64).astype(np.float32)
    x = cn.tensor(values, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    out, tout = number / x, number / tx
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())

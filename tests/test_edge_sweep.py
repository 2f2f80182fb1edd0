"""Edge-case sweep of every public op against PyTorch: 0-d, empty, views, broadcasting, every float dtype.

Each row of ``CASES`` is one op call on inputs described by ``In`` specs. A spec
has a shape, a value domain and a *layout*: ``c`` (contiguous), ``T`` and
``flip`` (a view made by the framework itself: ``transpose(-1, -2)``, and
``x[::-1]`` in cupynet / ``x.flip(0)`` in torch, a negatively strided array),
``npT`` / ``npflip`` (the cupynet tensor is built from a transposed or ``[::-1]``
NumPy view). Every case runs in float16, bfloat16, float32 and float64 and checks,
against PyTorch: the result's shape and dtype (torch run in that dtype), its values
(torch run in float64 on the same, exactly representable, inputs), that an error
is raised exactly where torch raises one, and the gradient of ``sum(out * v)``.

Tolerances: inputs are exact in every dtype (multiples of 1/64 within [-2, 2]),
so the only error is cupynet's own rounding: ``ulps * eps(dtype)``, relative to
each value and to the output's largest magnitude (cancellation), where ``ulps``
is a per-case condition factor (the number of roundings the op's formula makes,
times how much it amplifies them), listed with each row.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import cupynet as cn
import cupynet.nn.functional as cF
import cupynet.ops as ops

torch = pytest.importorskip("torch")

DTYPES = ("float16", "bfloat16", "float32", "float64")
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "float64": torch.float64}
# NOTE: value domains as integer numerators over 64: exact in bf16 (8 significant bits) and fp16,
# zero left out (the kinks of relu/abs/sign are conventions, tested in the family tests)
DOMAINS = {"sym": [k for k in range(-128, 129) if k], "pos": list(range(32, 129)),
           "unit": [k for k in range(-56, 57) if k], "prob": list(range(4, 61))}


class In:
    """One input: ``kind`` float (differentiated when ``grad``), long (indices below ``high``) or bool."""

    def __init__(self, shape, dom="sym", lay="c", grad=True, kind="float", high=None):
        self.shape, self.dom, self.lay, self.grad, self.kind, self.high = tuple(shape), dom, lay, grad, kind, high

    def values(self, rng):
        if self.kind == "long":
            return rng.integers(0, self.high, size=self.shape).astype(np.int64)
        if self.kind == "bool":
            return rng.random(self.shape) < 0.5
        pool = DOMAINS[self.dom]
        n = int(np.prod(self.shape))
        return rng.choice(pool, size=self.shape, replace=n > len(pool)).astype(np.float64) / 64.0


def X(*shape, dom="sym", lay="c", grad=True):
    """A float input (differentiated unless grad=False)."""
    return In(shape, dom, lay, grad)


def Idx(*shape, high):
    """An int64 index input with values in [0, high)."""
    return In(shape, kind="long", high=high, grad=False)


def Mask(*shape):
    """A bool input."""
    return In(shape, kind="bool", grad=False)


class Case:
    """An op call on inputs, with its forward and gradient condition factors (in ulps)."""

    def __init__(self, name, label, fn, inputs, fwd=4, bwd=8, dtypes=DTYPES, oracle_eps=0.0):
        self.name, self.label, self.fn, self.inputs = name, label, fn, tuple(inputs)
        self.fwd, self.bwd, self.dtypes, self.oracle_eps = fwd, bwd, dtypes, oracle_eps


CASES = []


def case(name, label, fn, *inputs, **kw):
    """Add a row; a repeated (name, label) gets a numbered label."""
    taken = {(c.name, c.label) for c in CASES}
    base, n = label, 1
    while (name, label) in taken:
        n += 1
        label = f"{base}#{n}"
    CASES.append(Case(name, label, fn, inputs, **kw))


# ----------------------------------------------------------------------------- running one case

def _np_dtype(dtype):
    return cn.dtypes.as_dtype(dtype)


def _leaf_array(spec, a):
    """The array a leaf is made from so that its layout view has the values ``a``."""
    if spec.lay == "T":
        return np.ascontiguousarray(np.swapaxes(a, -1, -2))
    if spec.lay == "flip":
        return a[::-1].copy()  # NOTE: not ascontiguousarray, which keeps a [::-1] of a length-1 axis as is
    return a


def _cn_input(spec, a, dtype):
    if spec.kind != "float":
        leaf = cn.tensor(a, dtype=a.dtype)
        return leaf, leaf
    dt = _np_dtype(dtype)
    if spec.lay == "npT":  # NOTE: from_numpy shares the array, so the op gets the transposed view itself
        leaf = cn.from_numpy(np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2), dtype=dt), -1, -2))
        leaf.requires_grad_(spec.grad)
        return leaf, leaf
    if spec.lay == "npflip":
        leaf = cn.from_numpy(a[::-1].astype(dt)[::-1]).requires_grad_(spec.grad)
        return leaf, leaf
    leaf = cn.tensor(_leaf_array(spec, a), dtype=dt, requires_grad=spec.grad)
    view = leaf.transpose(-1, -2) if spec.lay == "T" else leaf[::-1] if spec.lay == "flip" else leaf
    return leaf, view


def _torch_input(spec, a, tdtype, grad):
    if spec.kind != "float":
        leaf = torch.tensor(a)
        return leaf, leaf
    leaf = torch.tensor(_leaf_array(spec, a) if spec.lay in ("T", "flip") else a, dtype=tdtype,
                        requires_grad=grad and spec.grad)
    view = leaf.transpose(-1, -2) if spec.lay == "T" else leaf.flip(0) if spec.lay == "flip" else leaf
    return leaf, view


def _outs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _host(t):
    return np.asarray(cn.backend.to_numpy(t.array))


def _torch_np(t):
    t = t.detach()
    return (t.double() if t.is_floating_point() else t).numpy()


def _expected_dtype(t, dtype):
    if t.is_floating_point():
        return _np_dtype({torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
                          torch.float64: "float64"}[t.dtype])
    return np.dtype(str(t.dtype).replace("torch.", "").replace("bool", "bool"))


def _torch_in_dtype(c, arrays, dtype):
    """Torch's outputs in ``dtype`` (for dtypes/shapes), or None where torch's CPU kernel lacks the dtype."""
    try:
        with torch.no_grad():
            return _outs(c.fn(torch, *[_torch_input(s, a, TORCH_DTYPES[dtype], False)[1]
                                      for s, a in zip(c.inputs, arrays)]))
    except (RuntimeError, NotImplementedError) as error:
        if "not implemented for" in str(error):
            return None
        raise


def _check_view_layout(spec, view):
    """A layout case must really hand the op a non-contiguous array."""
    if spec.kind == "float" and spec.lay != "c":
        arr = view.array
        assert arr.size == 0 or not arr.flags.c_contiguous or any(s < 0 for s in arr.strides), \
            f"layout {spec.lay} is contiguous"
        assert spec.lay not in ("flip", "npflip") or arr.shape[0] > 1, "flip of a length-1 axis is no view"


def _close(got, want, ulps, dtype, what, floor=0.0):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, torch {want.shape}"
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    tol = max(ulps * EPS[dtype], floor)
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale, err_msg=what)


def run_case(c, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{c.name}-{c.label}".encode()))
    arrays = [s.values(rng) for s in c.inputs]
    t_leaves, t_views = zip(*[_torch_input(s, a, torch.float64, True) for s, a in zip(c.inputs, arrays)]) \
        if arrays else ((), ())
    try:
        t_out = _outs(c.fn(torch, *t_views))
    except Exception as error:  # noqa: BLE001 - torch refuses the case: cupynet must refuse it too
        with pytest.raises(Exception):  # noqa: B017, PT011
            c.fn(cn, *[_cn_input(s, a, dtype)[1] for s, a in zip(c.inputs, arrays)])
        return f"torch raises {type(error).__name__}"
    t_typed = _torch_in_dtype(c, arrays, dtype)
    leaves, views = zip(*[_cn_input(s, a, dtype) for s, a in zip(c.inputs, arrays)]) if arrays else ((), ())
    for s, v in zip(c.inputs, views):
        _check_view_layout(s, v)
    out = _outs(c.fn(cn, *views))
    assert len(out) == len(t_out), f"{len(out)} outputs, torch {len(t_out)}"
    for i, (o, t) in enumerate(zip(out, t_out)):
        want_dtype = _expected_dtype(t_typed[i], dtype) if t_typed is not None else (
            _np_dtype(dtype) if t.is_floating_point() else _expected_dtype(t, dtype))
        assert o.dtype == want_dtype, f"output {i}: dtype {o.dtype}, torch {want_dtype}"
        _close(_host(o), _torch_np(t), c.fwd, dtype, f"output {i} forward", floor=c.oracle_eps)
    _check_grads(c, dtype, rng, leaves, out, t_leaves, t_out)
    return None


def _check_grads(c, dtype, rng, leaves, out, t_leaves, t_out):
    pairs = [(o, t) for o, t in zip(out, t_out) if t.requires_grad]
    wrt = [i for i, s in enumerate(c.inputs) if s.kind == "float" and s.grad]
    if not pairs or not wrt:
        return
    for o, _ in pairs:
        assert o.requires_grad, "output does not require grad; torch's does"
    cots = [rng.choice(DOMAINS["sym"], size=o.shape).astype(np.float64) / 64.0 for o, _ in pairs]
    got = cn.autograd.grad([o for o, _ in pairs], [leaves[i] for i in wrt],
                           grad_outputs=[cn.tensor(v, dtype=o.dtype) for v, (o, _) in zip(cots, pairs)],
                           allow_unused=True)
    want = torch.autograd.grad([t for _, t in pairs], [t_leaves[i] for i in wrt],
                               grad_outputs=[torch.tensor(v) for v in cots], allow_unused=True)
    for i, g, w in zip(wrt, got, want):
        w = np.zeros(t_leaves[i].shape) if w is None else w.numpy()
        g_host = np.zeros(leaves[i].shape) if g is None else _host(g)
        if g is not None:
            assert g.dtype == leaves[i].dtype, f"grad {i}: dtype {g.dtype}, input {leaves[i].dtype}"
        _close(g_host, w, c.bwd, dtype, f"grad of input {i}", floor=c.oracle_eps)


# ----------------------------------------------------------------------------- the table

def nnf(lib):
    """``lib.nn.functional`` of cupynet or torch."""
    return lib.nn.functional


def _fn(name, **kw):
    """``lib.name(x, ..., **kw)``: the same spelling in cupynet and torch."""
    return lambda lib, *xs: getattr(lib, name)(*xs, **kw)


def _F(name, **kw):
    """``nnf(lib).name(x, ..., **kw)``."""
    return lambda lib, *xs: getattr(nnf(lib), name)(*xs, **kw)


def _elementwise(name, fn, dom="sym", fwd=4, bwd=8, **kw):
    """0-d, empty, framework views (transpose, negative strides) and NumPy views of one input."""
    for label, spec in (("0d", X(dom=dom)), ("empty", X(0, 3, dom=dom)), ("T", X(3, 4, dom=dom, lay="T")),
                        ("flip", X(4, 2, 3, dom=dom, lay="flip")), ("npT", X(2, 5, dom=dom, lay="npT")),
                        ("npflip", X(6, dom=dom, lay="npflip"))):
        case(name, label, fn, spec, fwd=fwd, bwd=bwd, **kw)


def _binary(name, fn, doms=("sym", "sym"), fwd=4, bwd=8, scalar=True):
    """0-d with 0-d and with a matrix (both orders), empty, broadcasting, views, a Python scalar."""
    a, b = doms
    for label, specs in (("0d", (X(dom=a), X(dom=b))), ("0d-mat", (X(dom=a), X(3, 4, dom=b))),
                         ("mat-0d", (X(2, 3, dom=a, lay="T"), X(dom=b))),
                         ("empty", (X(0, 3, dom=a), X(3, dom=b))), ("bcast", (X(3, 1, dom=a), X(1, 4, dom=b))),
                         ("views", (X(3, 4, dom=a, lay="T"), X(3, 4, dom=b, lay="flip"))),
                         ("np", (X(3, 4, dom=a, lay="npT"), X(4, dom=b, lay="npflip")))):
        case(name, label, fn, *specs, fwd=fwd, bwd=bwd)
    if not scalar:
        return
    number = {"sym": 1.5, "pos": 1.25, "unit": 0.5, "prob": 0.25}[b]
    case(name, "scalar", lambda lib, x: fn(lib, x, number), X(2, 3, dom=a, lay="T"), fwd=fwd, bwd=bwd)
    case(name, "0d-scalar", lambda lib, x: fn(lib, x, number), X(dom=a), fwd=fwd, bwd=bwd)


# --- arith, compare
for _name in ("add", "sub", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
              "logical_and", "logical_or"):
    # NOTE: torch.maximum/minimum/logical_and/logical_or take no Python number (cupynet does): no scalar rows
    _binary(_name, _fn(_name), scalar=_name not in ("maximum", "minimum", "logical_and", "logical_or"))
_binary("div", _fn("div"), bwd=16)  # NOTE: a / b**2 in the gradient: two more roundings
_binary("pow", _fn("pow"), doms=("pos", "sym"), fwd=8, bwd=16)  # NOTE: exp(b log a): log and exp amplify
# NOTE: the rounding divisions are exact on these inputs (fmod of multiples of 1/64 is one; the quotient
# an integer), in every dtype; floor_divide has no derivative in torch, so its rows differentiate nothing
_binary("remainder", _fn("remainder"), fwd=1, bwd=1)
_binary("fmod", _fn("fmod"), fwd=1, bwd=1)
for _label, _specs in (("0d", (X(grad=False), X(grad=False))), ("0d-mat", (X(grad=False), X(3, 4, grad=False))),
                       ("bcast", (X(3, 1, grad=False), X(1, 4, grad=False))),
                       ("views", (X(3, 4, lay="T", grad=False), X(3, 4, lay="flip", grad=False))),
                       ("empty", (X(0, 3, grad=False), X(3, grad=False)))):
    case("floor_divide", _label, _fn("floor_divide"), *_specs, fwd=1)
# NOTE: torch defines no derivative of remainder(number, tensor): the rmod row differentiates nothing (cupynet's
# gradient there, -grad * floor(number / x), is tested in tests/test_torch_program_gaps.py)
for _label, _f in (("mod", lambda lib, x: x % 1.5), ("rmod", lambda lib, x: 1.5 % x.detach()),
                   ("mod-neg", lambda lib, x: x % -0.75)):
    _elementwise("remainder", _f, fwd=1, bwd=1)
for _label, _f in (("floordiv", lambda lib, x: x.detach() // 1.5), ("rfloordiv", lambda lib, x: 1.5 // x.detach())):
    case("floor_divide", _label, _f, X(3, 4, lay="T"), fwd=1)
_binary("add", lambda lib, x, y: lib.add(x, y, alpha=0.5), fwd=4)
_binary("sub", lambda lib, x, y: lib.sub(x, y, alpha=2), fwd=4)
# NOTE: the reflected operators (a Python number on the left) take other paths than the named ops
for _label, _f, _dom in (("radd", lambda lib, x: 1.5 + x, "sym"), ("rsub", lambda lib, x: 1.5 - x, "sym"),
                         ("rmul", lambda lib, x: -2.5 * x, "sym"), ("rdiv", lambda lib, x: 1.5 / x, "pos"),
                         ("rpow", lambda lib, x: 1.5 ** x, "sym"), ("pow-number", lambda lib, x: x ** 3, "sym"),
                         ("pow-half", lambda lib, x: x ** 0.5, "pos")):
    _name = {"radd": "add", "rsub": "sub", "rmul": "mul", "rdiv": "div"}.get(_label, "pow")
    _elementwise(_name, _f, dom=_dom, fwd=8, bwd=16)
_elementwise("neg", _fn("neg"))
_elementwise("logical_not", _fn("logical_not"))
_elementwise("clone", _fn("clone"))
_elementwise("contiguous", lambda lib, x: x.contiguous() if lib is torch else lib.contiguous(x))
_elementwise("to_device", lambda lib, x: x.to("cpu") if lib is torch else lib.to_device(x, "cpu"))
for _to in ("float16", "bfloat16", "float32", "float64"):
    _elementwise("cast", lambda lib, x, _to=_to: x.to(TORCH_DTYPES[_to]) if lib is torch else lib.cast(x, _to),
                 fwd=256 if _to in ("float16", "bfloat16") else 4)  # NOTE: rounding to the target dtype

# --- unary: (name, domain, forward ulps, gradient ulps). NOTE: a transcendental function may be off by
# up to 4 ulps in NumPy (its SVML loops on AVX-512) and in the float64 oracle alike; the errors add: 8,
# and 16 for a gradient that evaluates one more such function or divides by one
for _name, _dom, _f, _b in (
        ("exp", "sym", 8, 16), ("log", "pos", 8, 16), ("sqrt", "pos", 4, 8), ("rsqrt", "pos", 4, 8),
        ("abs", "sym", 1, 1), ("sign", "sym", 1, 1), ("square", "sym", 2, 4), ("reciprocal", "pos", 2, 8),
        ("sin", "sym", 8, 16), ("cos", "sym", 8, 16), ("tan", "unit", 8, 16), ("sinh", "sym", 8, 16),
        ("cosh", "sym", 8, 16), ("asin", "unit", 8, 16), ("acos", "unit", 8, 16), ("atan", "sym", 8, 16),
        ("tanh", "sym", 8, 16), ("erf", "sym", 8, 16), ("erfinv", "unit", 8, 16), ("expm1", "sym", 8, 16),
        ("log2", "pos", 8, 16), ("log10", "pos", 8, 16), ("log1p", "pos", 8, 16), ("floor", "sym", 1, 1),
        ("ceil", "sym", 1, 1), ("round", "sym", 1, 1), ("trunc", "sym", 1, 1), ("isfinite", "sym", 1, 1),
        ("isnan", "sym", 1, 1), ("isinf", "sym", 1, 1), ("nan_to_num", "sym", 1, 1)):
    _elementwise(_name, _fn(_name), dom=_dom, fwd=_f, bwd=_b)
_elementwise("round", _fn("round", decimals=1), fwd=2, bwd=1)
for _name in ("clamp", "clip"):
    _elementwise(_name, _fn(_name, min=-0.7, max=1.3), bwd=1)
    _elementwise(_name, _fn(_name, min=-0.7), bwd=1)
    _elementwise(_name, _fn(_name, max=0.3), bwd=1)
    case(_name, "tensor-bounds", _fn(_name), X(3, 4, lay="T"), X(4, grad=False), X(3, 1, grad=False), bwd=1)
    case(_name, "0d-tensor-bounds", _fn(_name), X(), X(grad=False), X(grad=False), bwd=1)

# --- activation: (name, kwargs, forward ulps, gradient ulps); transcendental ones as in the unary table
for _name, _kw, _f, _b in (
        ("relu", {}, 1, 1), ("relu6", {}, 1, 1), ("leaky_relu", {"negative_slope": 0.2}, 2, 2),
        ("elu", {"alpha": 0.5}, 8, 16), ("gelu", {}, 8, 16), ("gelu", {"approximate": "tanh"}, 8, 16),
        ("silu", {}, 8, 16), ("mish", {}, 16, 32), ("sigmoid", {}, 8, 16), ("hardtanh", {"min_val": -0.5}, 1, 1),
        ("hardsigmoid", {}, 2, 2), ("hardswish", {}, 4, 4), ("softplus", {"beta": 2.0, "threshold": 3.0}, 8, 16),
        ("tanh", {}, 8, 16)):
    # NOTE: PyTorch's CPU hardsigmoid backward multiplies by 1/6 held in float32 even for float64 inputs:
    # the oracle itself is good to ~1 float32 ulp there (a floor on the forward and gradient tolerances)
    _elementwise(_name, _F(_name, **_kw), fwd=_f, bwd=_b, oracle_eps=EPS["float32"] if _name == "hardsigmoid" else 0.0)
for _name in ("softmax", "log_softmax"):
    # NOTE: exp, a sum of n terms and a division/log: ~n + 3 roundings in half precision
    for _label, _spec, _dim in (("0d", X(), 0), ("0d-neg", X(), -1), ("empty", X(0, 3), 1), ("empty-0", X(0, 3), 0),
                                ("T", X(3, 4, lay="T"), 0), ("flip", X(3, 4, lay="flip"), -1),
                                ("npT", X(2, 5, lay="npT"), 1), ("3d", X(2, 3, 4, lay="flip"), 1)):
        case(_name, _label, _F(_name, dim=_dim), _spec, fwd=8, bwd=16)
for _label, _specs in (("0d", (X(), X(1))), ("1d", (X(5), X(1))), ("empty", (X(0, 3), X(3))),
                       ("channels", (X(2, 3, 4, lay="flip"), X(3))), ("T", (X(3, 4, lay="T"), X(1)))):
    case("prelu", _label, _F("prelu"), *_specs)
for _label, _spec, _dim in (("1d", X(6), 0), ("empty", X(0, 4), 1), ("T", X(4, 3, lay="T"), 1),
                            ("flip", X(4, 3, lay="flip"), 0), ("npT", X(2, 4, lay="npT"), -1)):
    case("glu", _label, _F("glu", dim=_dim), _spec, fwd=4, bwd=8)
case("glu", "0d", _F("glu", dim=0), X())

# --- reduce. NOTE: a sum of n terms accumulates in fp32 and rounds once; a variance or norm adds
# a square, a division and a square root: a few ulps on top
_REDUCE_SHAPES = (("0d", X()), ("empty", X(0, 3)), ("T", X(3, 4, lay="T")), ("flip", X(2, 3, 4, lay="flip")),
                  ("npT", X(3, 5, lay="npT")), ("npflip", X(6, lay="npflip")))


def _reduction(name, fn, dims, fwd=4, bwd=8, dom="sym"):
    """``fn(lib, x, **kw)`` for each keyword set in ``dims`` on each of the standard shapes that admits it."""
    for label, spec in _REDUCE_SHAPES:
        spec = X(*spec.shape, lay=spec.lay, dom=dom)
        for kw in dims:
            tag = "-".join(f"{k}{v}" for k, v in kw.items()).replace(" ", "")
            case(name, f"{label}-{tag}" if tag else label, lambda lib, x, kw=kw: fn(lib, x, **kw), spec, fwd=fwd,
                 bwd=bwd)


_DIMS = ({}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": 1})
for _name in ("sum", "mean", "amax", "amin", "logsumexp"):
    _dims = _DIMS + ({"dim": (0, 2)},) if _name != "logsumexp" else ({"dim": 0}, {"dim": -1, "keepdim": True},
                                                                     {"dim": (0, 2)}, {"dim": 1})
    _reduction(_name, lambda lib, x, _n=_name, **kw: getattr(lib, _n)(x, **kw), _dims, fwd=8, bwd=8)
for _name in ("max", "min", "argmax", "argmin", "all", "any", "prod"):
    _reduction(_name, lambda lib, x, _n=_name, **kw: getattr(lib, _n)(x, **kw), _DIMS, fwd=8, bwd=16,
               dom="pos" if _name == "prod" else "sym")
for _name in ("var", "std"):
    _reduction(_name, lambda lib, x, _n=_name, **kw: getattr(lib, _n)(x, **kw),
               _DIMS + ({"dim": (0, 2)}, {"dim": 0, "correction": 0}, {"dim": -1, "unbiased": False}), fwd=16, bwd=32)
for _name in ("cumsum", "cumprod"):
    _reduction(_name, lambda lib, x, _n=_name, **kw: getattr(lib, _n)(x, **kw), ({"dim": 0}, {"dim": -1}, {"dim": 1}),
               fwd=8, bwd=16, dom="pos" if _name == "cumprod" else "sym")
_reduction("norm", lambda lib, x, **kw: lib.norm(x, **kw), ({}, {"dim": 1}, {"p": 1, "dim": 0},
                                                            {"dim": -1, "keepdim": True},
                                                        {"p": 3.0, "dim": (0, 2)}), fwd=16, bwd=32)
for _name in ("vector_norm", "linalg_vector_norm"):
    _reduction(_name, lambda lib, x, _n=_name,
               **kw: (torch.linalg.vector_norm if lib is torch else getattr(lib, _n))(x, **kw),
               ({}, {"ord": 1, "dim": 0}, {"ord": float("inf"), "dim": -1}, {"dim": (0, 2)}, {"ord": 3.0},
                {"ord": -math.inf, "dim": 0},
                {"dim": 1, "keepdim": True}), fwd=16, bwd=32)



def _dt(lib, name):
    """A dtype argument in lib's spelling."""
    return TORCH_DTYPES[name] if lib is torch else name


# NOTE: an explicit dtype= casts first and computes in it: the result has that dtype whatever the input's,
# and is only as precise as that dtype (oracle_eps). The norms refuse a narrowing dtype (in torch too, where
# the float64 oracle would refuse every float32 row): only float64 for them, and test_norm_dtype_must_not_narrow
for _name, _extra in (("sum", {}), ("mean", {}), ("cumsum", {"dim": 0}), ("cumprod", {"dim": -1}), ("prod", {}),
                      ("softmax", {"dim": 0}), ("log_softmax", {"dim": -1}), ("vector_norm", {}), ("norm", {})):
    for _to in ("float32", "float64") if "norm" not in _name else ("float64",):
        for _label, _spec in (("0d", X(dom="pos")), ("T", X(3, 4, dom="pos", lay="T")), ("empty", X(0, 3, dom="pos"))):
            _call = {"softmax": lambda lib: nnf(lib).softmax, "log_softmax": lambda lib: nnf(lib).log_softmax,
                     "vector_norm": lambda lib: torch.linalg.vector_norm if lib is torch else lib.vector_norm}.get(
                _name, lambda lib, n=_name: getattr(lib, n))
            case(_name, f"dtype-{_to}-{_label}", lambda lib, x, c=_call, kw=_extra, to=_to: c(lib)(
                x, **kw, dtype=_dt(lib, to)), _spec, fwd=8, bwd=16, oracle_eps=16 * EPS[_to])

# --- shape
for _label, _spec, _shape in (("0d", X(), (1,)), ("0d-0d", X(), ()), ("0d-neg", X(), (-1,)), ("empty", X(0, 3), (3, 0)),
                              ("empty-neg", X(0, 3), (-1, 6)), ("T", X(3, 4, lay="T"), (2, 6)),
                              ("flip", X(4, 3, lay="flip"), (-1,)), ("npT", X(2, 6, lay="npT"), (3, 4))):
    case("reshape", _label, lambda lib, x, s=_shape: lib.reshape(x, s), _spec)
    # NOTE: view of a layout PyTorch cannot view (a transpose flattened) copies, as reshape, instead of
    # raising (a deliberate difference: every PyTorch program that runs still runs): compared with reshape
    case("view", _label, lambda lib, x, s=_shape: x.reshape(s) if lib is torch else x.view(s), _spec)
case("transpose", "empty", _fn("transpose", dim0=0, dim1=1), X(0, 3))
case("transpose", "T", _fn("transpose", dim0=0, dim1=-1), X(2, 3, 4, lay="T"))
case("swapaxes", "flip", lambda lib, x: lib.swapaxes(x, 0, 1), X(3, 4, lay="flip"))
case("narrow", "T", lambda lib, x: lib.narrow(x, 1, 1, 2), X(3, 4, lay="T"))
case("narrow", "empty", lambda lib, x: lib.narrow(x, 0, 0, 0), X(0, 3))
case("t", "0d", lambda lib, x: lib.t(x), X())
case("t", "npT", lambda lib, x: lib.t(x), X(2, 3, lay="npT"))
case("swapaxes", "empty", lambda lib, x: lib.swapaxes(x, 0, 1), X(3, 0))
for _label, _spec in (("0d", X()), ("empty", X(0, 3)), ("T", X(3, 4, lay="T")), ("npT", X(2, 3, lay="npT"))):
    case("broadcast_to", _label, lambda lib, x: lib.broadcast_to(x, (2,) + x.shape), _spec)
    case("expand", _label, lambda lib, x: x.expand(2, *x.shape), _spec)
    case("expand_as", _label, lambda lib, x, y: x.expand_as(y), _spec, X(2, *_spec.shape, grad=False))
    case("sum_to", _label, lambda lib, x: x.expand(2, *x.shape).sum_to_size(x.shape) if lib is torch else
         lib.sum_to(lib.expand(x, 2, *x.shape), x.shape), _spec)
    case("flatten", _label, _fn("flatten"), _spec)
    case("unsqueeze", _label, _fn("unsqueeze", dim=0), _spec)
    case("unsqueeze", _label + "-last", _fn("unsqueeze", dim=-1), _spec)
    case("squeeze", _label, _fn("squeeze"), _spec)
    case("movedim", _label, lambda lib, x: lib.movedim(x, 0, -1), _spec)
case("expand", "bcast", lambda lib, x: x.expand(3, -1, 4), X(2, 1, lay="flip"))
case("broadcast_to", "empty-bcast", lambda lib, x: lib.broadcast_to(x, (0, 3)), X(1, 3))
case("squeeze", "dim", _fn("squeeze", dim=1), X(2, 1, 3, lay="flip"))
case("squeeze", "0d-dim", _fn("squeeze", dim=0), X())
case("squeeze", "empty-dim", _fn("squeeze", dim=0), X(0, 1))
case("flatten", "range", _fn("flatten", start_dim=1), X(2, 3, 4, lay="T"))
case("permute", "T", lambda lib, x: lib.permute(x, (2, 0, 1)), X(2, 3, 4, lay="T"))
case("permute", "0d", lambda lib, x: lib.permute(x, ()), X())
case("permute", "empty", lambda lib, x: lib.permute(x, (1, 0)), X(0, 3))
case("unflatten", "empty", _fn("unflatten", dim=1, sizes=(2, 3)), X(0, 6))
case("unflatten", "flip", _fn("unflatten", dim=0, sizes=(2, -1)), X(6, 2, lay="flip"))
case("unflatten", "npT", _fn("unflatten", dim=-1, sizes=(1, 4)), X(3, 4, lay="npT"))

# --- indexing, join, rearrange
for _label, _spec, _index in (("0d-empty-tuple", X(), ()), ("0d-ellipsis", X(), Ellipsis), ("0d-none", X(), None),
                              ("int", X(3, 4, lay="T"), 1), ("neg-int", X(3, 4, lay="flip"), -1),
                              ("slice", X(4, 3, lay="flip"), slice(1, 3)), ("step", X(5, 2, lay="npT"), slice(0, 5, 2)),
                              ("empty-slice", X(3, 4), slice(2, 2)), ("empty", X(0, 3), (Ellipsis, 1)),
                              ("tuple", X(3, 4, lay="T"), (slice(None), 2)), ("none", X(3, 4), (None, 1))):
    case("getitem", _label, lambda lib, x, i=_index: x[i], _spec)
case("getitem", "long", lambda lib, x, i: x[i], X(4, 3, lay="T"), Idx(5, high=4))  # NOTE: repeats accumulate
case("getitem", "long-0d", lambda lib, x, i: x[i], X(4, 3, lay="flip"), Idx(high=4))
case("getitem", "long-empty", lambda lib, x, i: x[i], X(4, 3), Idx(0, high=4))
case("getitem", "mask", lambda lib, x, m: x[m], X(3, 4, lay="T"), Mask(3, 4))
case("getitem", "mask-0d", lambda lib, x, m: x[m], X(), Mask())
case("getitem", "mask-empty", lambda lib, x, m: x[m], X(0, 2), Mask(0, 2))
for _label, _specs in (("0d", (X(grad=False), X(grad=False))), ("int", (X(3, 4, grad=False), X(4, grad=False))),
                       ("T", (X(3, 4, lay="T", grad=False), X(grad=False))),
                       ("empty", (X(0, 3, grad=False), X(3, grad=False)))):
    def _setitem(lib, x, v, _l=_label):
        x = x.clone()
        x[() if _l == "0d" else 1 if _l == "int" else (slice(None), 1) if _l == "T" else Ellipsis] = v
        return x
    case("setitem_", _label, _setitem, *_specs)
for _label, _specs, _dim in (("1d", (X(5), Idx(7, high=5)), 0), ("0d", (X(), Idx(high=1)), 0),
                             ("empty", (X(4, 3), Idx(0, 3, high=4)), 0), ("T", (X(3, 4, lay="T"), Idx(3, 2, high=4)),
                                                                          1),
                             ("flip", (X(4, 3, lay="flip"), Idx(2, 3, high=4)), 0)):
    case("gather", _label, lambda lib, x, i, d=_dim: lib.gather(x, d, i), *_specs)
    case("scatter_add", _label, lambda lib, x, i, s, d=_dim: lib.scatter_add(x, d, i, s), *_specs,
         X(*_specs[1].shape, lay="c"))
for _label, _specs, _dim in (("1d", (X(5), Idx(7, high=5)), 0), ("0d", (X(), Idx(1, high=1)), 0),
                             ("empty-index", (X(4, 3), Idx(0, high=4)), 0), ("empty", (X(0, 3), Idx(2, high=3)), 1),
                             ("T", (X(3, 4, lay="T"), Idx(5, high=4)), 1), ("npT", (X(3, 4, lay="npT"),
                                                                                    Idx(2, high=3)), 0)):
    case("index_select", _label, lambda lib, x, i, d=_dim: lib.index_select(x, d, i), *_specs)
for _label, _specs in (("0d", (Mask(), X(), X())), ("0d-cond", (Mask(), X(3, 4), X(3, 4, lay="T"))),
                       ("0d-operand", (Mask(2, 3), X(), X(2, 3, lay="flip"))), ("0d-other", (Mask(3), X(3), X())),
                       ("empty", (Mask(0, 3), X(0, 3), X(3))), ("bcast", (Mask(3, 1), X(1, 4), X(3, 4, lay="npT"))),
                       ("views", (Mask(3, 4), X(3, 4, lay="T"), X(3, 4, lay="flip")))):
    case("where", _label, _fn("where"), *_specs)
case("where", "scalar", lambda lib, m, x: lib.where(m, x, 0.5), Mask(3, 4), X(3, 4, lay="T"))
for _label, _specs in (("0d", (X(), Mask())), ("bcast", (X(3, 4, lay="T"), Mask(4))), ("empty", (X(0, 3), Mask(3))),
                       ("0d-mask", (X(2, 3, lay="flip"), Mask()))):
    case("masked_fill", _label, lambda lib, x, m: lib.masked_fill(x, m, -0.5), *_specs)
    case("masked_fill_", _label, lambda lib, x, m: x.clone().masked_fill_(m, -0.5) if lib is torch else
         lib.masked_fill_(lib.clone(x), m, -0.5), X(*_specs[0].shape, lay=_specs[0].lay, grad=False), _specs[1])
case("masked_fill", "tensor-value", lambda lib, x, m, v: lib.masked_fill(x, m, v), X(3, 4, lay="T"), Mask(3, 4),
     X(grad=False))
for _name in ("cat", "concat"):
    for _label, _specs, _dim in (("empty-1d", (X(0), X(3, lay="npflip")), 0), ("empty", (X(0, 3), X(2, 3, lay="T")), 0),
                                 ("views", (X(3, 4, lay="T"), X(3, 2, lay="flip")), 1),
                                 ("neg-dim", (X(2, 3, lay="npT"), X(2, 1)), -1), ("single", (X(2, 3, lay="flip"),), 0),
                                 ("0d", (X(), X()), 0)):
        case(_name, _label, lambda lib, *xs, d=_dim, n=_name: getattr(lib, n)(list(xs), dim=d), *_specs)
for _label, _specs, _dim in (("0d", (X(), X()), 0), ("empty", (X(0, 3), X(0, 3)), 1),
                             ("views", (X(3, 4, lay="T"), X(3, 4, lay="flip")), -1), ("npT", (X(2, 3, lay="npT"),), 0)):
    case("stack", _label, lambda lib, *xs, d=_dim: lib.stack(list(xs), dim=d), *_specs)
# NOTE: PyTorch's legacy rule: a 1-D empty tensor may be concatenated with a tensor of any shape
case("cat", "legacy-empty", lambda lib, a, b: lib.cat([a, b, a], dim=1), X(0), X(2, 3, lay="T"))
case("chunk", "more-chunks", lambda lib, x: lib.chunk(x, 5, dim=0), X(3, 2, lay="flip"))
case("split", "zero-size", lambda lib, x: lib.split(x, 0, dim=0), X(0, 2))
case("split", "bigger", lambda lib, x: lib.split(x, 5, dim=1), X(2, 3, lay="T"))
for _label, _spec, _arg, _dim in (("int", X(5, 3, lay="flip"), 2, 0), ("sections", X(3, 6, lay="T"), [1, 0, 5], 1),
                                  ("empty", X(0, 3), 2, 0), ("empty-dim1", X(0, 4), 2, 1), ("npT", X(2, 4, lay="npT"),
                                                                                            3, 1)):
    case("split", _label, lambda lib, x, a=_arg, d=_dim: lib.split(x, a, dim=d), _spec)
for _label, _spec, _arg, _dim in (("int", X(5, 3, lay="flip"), 2, 0), ("T", X(3, 6, lay="T"), 4, 1),
                                  ("empty", X(0, 4), 2, 1), ("npT", X(2, 4, lay="npT"), 3, 1)):
    case("chunk", _label, lambda lib, x, a=_arg, d=_dim: lib.chunk(x, a, dim=d), _spec)
for _label, _spec, _dim in (("1d", X(3), 0), ("T", X(3, 4, lay="T"), 1), ("empty", X(0, 3), 1),
                            ("empty-0", X(0, 3), 0), ("flip", X(2, 3, lay="flip"), 0)):
    case("unbind", _label, lambda lib, x, d=_dim: lib.unbind(x, dim=d), _spec)
for _name in ("tril", "triu"):
    for _label, _spec, _k in (("T", X(3, 4, lay="T"), 0), ("flip-k", X(4, 3, lay="flip"), 1),
                              ("batch", X(2, 3, 3, lay="npT"), -1), ("empty", X(0, 3), 0), ("empty-cols", X(3, 0), 0)):
        case(_name, _label, lambda lib, x, k=_k, n=_name: getattr(lib, n)(x, diagonal=k), _spec)
for _label, _spec, _reps in (("0d", X(), (2, 3)), ("0d-empty", X(), ()), ("empty", X(0, 3), (2, 1)),
                             ("T", X(3, 4, lay="T"), (2,)), ("flip", X(2, 3, lay="flip"), (1, 2, 1)),
                             ("zero-rep", X(2, 3), (0, 1))):
    case("tile", _label, lambda lib, x, r=_reps: lib.tile(x, r), _spec)
for _label, _spec, _dims in (("0d", X(), ()), ("0d-0", X(), (0,)), ("empty", X(0, 3), (0, 1)), ("T", X(3, 4, lay="T"),
                                                                                                (1,)),
                             ("flip", X(4, 3, lay="flip"), (0,)), ("npT", X(2, 3, lay="npT"), (-1, 0))):
    case("flip", _label, lambda lib, x, d=_dims: lib.flip(x, d), _spec)
for _label, _spec, _shifts, _dims in (("0d", X(), 1, None), ("flat", X(3, 4, lay="T"), 5, None),
                                      ("dims", X(4, 3, lay="flip"), (1, -2), (0, 1)), ("empty", X(0, 3), 2, 1),
                                      ("npT", X(2, 5, lay="npT"), -1, 1), ("0d-dim", X(), 1, 0)):
    case("roll", _label, lambda lib, x, s=_shifts, d=_dims: lib.roll(x, s, d), _spec)

# --- in-place, no graph (graph tensors and views are checked against torch in tests/test_inplace_views.py)
def _inplace(name, *args):
    return lambda lib, x, *ys: getattr(x.clone(), name)(*ys, *args)


for _name in ("add_", "sub_", "mul_", "div_"):
    for _label, _specs in (("0d", (X(grad=False), X(grad=False))), ("bcast", (X(3, 4, lay="T", grad=False), X(4))),
                           ("0d-other", (X(2, 3, lay="flip", grad=False), X())), ("empty", (X(0, 3, grad=False), X(3))),
                           ("np", (X(3, 4, lay="npT", grad=False), X(4, lay="npflip")))):
        case(_name, _label, _inplace(_name), X(*_specs[0].shape, lay=_specs[0].lay, grad=False),
             X(*_specs[1].shape, lay=_specs[1].lay, grad=False))
    case(_name, "scalar", lambda lib, x, n=_name: getattr(x.clone(), n)(1.5), X(3, 4, lay="T", grad=False))


def _through_view(name, *args):
    """In place on a transposed slice of a copy: the copy must change too (a view writes through, as in torch)."""
    def run(lib, x, *ys):
        base = x.clone()
        getattr(base[1:].transpose(0, 1), name)(*ys, *args)
        return base
    return run


for _name, _args, _others in (("add_", (), (X(2, grad=False),)), ("sub_", (), (X(grad=False),)),
                              ("mul_", (), (X(3, 1, grad=False),)), ("div_", (2.0,), ()), ("zero_", (), ()),
                              ("fill_", (0.25,), ()), ("copy_", (), (X(3, 2, grad=False),)),
                              ("masked_fill_", (-1.0,), (Mask(3, 2),))):
    case(_name, "through-view", _through_view(_name, *_args), X(3, 3, grad=False), *_others)
for _name in ("clamp_", "clip_"):
    case(_name, "through-view", _through_view(_name, -0.25, 0.5), X(3, 3, grad=False))
for _label, _spec in (("0d", X(grad=False)), ("empty", X(0, 3, grad=False)), ("T", X(3, 4, lay="T", grad=False))):
    case("zero_", _label, lambda lib, x: x.clone().zero_(), _spec)
    case("clamp_", _label, lambda lib, x: x.clone().clamp_(min=-0.5), _spec)
    case("clip_", _label, lambda lib, x: x.clone().clip_(max=0.25), _spec)
    case("fill_", _label, lambda lib, x: x.clone().fill_(-0.75), _spec)
    case("fill_", _label + "-0d-tensor", lambda lib, x, v: x.clone().fill_(v), _spec, X(grad=False))
    case("copy_", _label, lambda lib, x, y: x.clone().copy_(y), _spec, X(*_spec.shape[1:], lay="c", grad=False))

for _label, _spec, _dim in (("0d", X(grad=False), 0), ("T", X(1, 3, 4, lay="T", grad=False), 0),
                            ("empty", X(0, 3, grad=False), 1), ("flip", X(2, 1, lay="flip", grad=False), 1)):
    case("unsqueeze_", _label, lambda lib, x, d=_dim: x.clone().unsqueeze_(d), _spec)
    case("squeeze_", _label, lambda lib, x, d=_dim: x.clone().squeeze_(d), _spec)
    case("squeeze_", _label + "-all", lambda lib, x: x.clone().squeeze_(), _spec)
case("unsqueeze_", "bad-dim", lambda lib, x: x.clone().unsqueeze_(3), X(2, grad=False))

# --- linalg, contraction. NOTE: a dot product of k terms: fp32 accumulation, one final rounding
for _label, _specs in (("1d-1d", (X(4), X(4, lay="npflip"))), ("1d-2d", (X(3), X(3, 4, lay="T"))),
                       ("2d-1d", (X(3, 4, lay="flip"), X(4))), ("batch-bcast", (X(2, 1, 3, 4), X(3, 4, 2, lay="T"))),
                       ("empty-k", (X(3, 0), X(0, 2))), ("empty-m", (X(0, 3), X(3, 2, lay="npT"))),
                       ("empty-batch", (X(0, 2, 3), X(3, 4))), ("0d", (X(), X())), ("1d-empty", (X(0), X(0)))):
    case("matmul", _label, _fn("matmul"), *_specs, fwd=8, bwd=8)
for _label, _specs in (("plain", (X(3, 4, lay="T"), X(5, 4, lay="flip"), X(5))),
                       ("no-bias", (X(3, 4), X(2, 4, lay="npT"))),
                       ("1d", (X(4), X(3, 4), X(3))), ("empty-batch", (X(0, 4), X(3, 4), X(3))),
                       ("empty-in", (X(3, 0), X(2, 0), X(2))), ("batch", (X(2, 3, 4, lay="flip"), X(5, 4), X(5))),
                       ("0d-bias", (X(2, 4), X(3, 4), X()))):
    case("linear", _label, _F("linear"), *_specs, fwd=8, bwd=8)


def _fused_linear(activation):
    """cupynet's fused ``linear_<activation>`` op against torch's two ops (the unfused definition)."""
    def run(lib, *xs):
        if lib is cn:
            return getattr(cn.ops, f"linear_{activation}")(*xs)
        return getattr(lib.nn.functional, activation)(lib.nn.functional.linear(*xs))
    return run


for _label, _specs in (("plain", (X(3, 4, lay="T"), X(5, 4, lay="flip"), X(5))), ("no-bias", (X(3, 4), X(2, 4))),
                       ("empty-batch", (X(0, 4), X(3, 4), X(3))), ("batch", (X(2, 3, 4, lay="flip"), X(5, 4), X(5)))):
    for _activation in ("relu", "gelu"):
        case(f"linear_{_activation}", _label, _fused_linear(_activation), *_specs, fwd=8, bwd=8)
for _name, _label, _specs in (
        ("mm", "T", (X(3, 4, lay="T"), X(4, 2, lay="flip"))), ("mm", "empty-k", (X(3, 0), X(0, 2))),
        ("mm", "empty", (X(0, 3), X(3, 2, lay="npT"))), ("bmm", "views", (X(2, 3, 4, lay="T"), X(2, 4, 2, lay="flip"))),
        ("bmm", "empty", (X(0, 3, 4), X(0, 4, 2))), ("bmm", "empty-k", (X(2, 3, 0), X(2, 0, 2))),
        ("mv", "T", (X(3, 4, lay="T"), X(4, lay="npflip"))), ("mv", "empty", (X(0, 3), X(3))),
        ("mv", "empty-k", (X(3, 0), X(0))), ("dot", "flip", (X(5, lay="flip"), X(5, lay="npflip"))),
        ("dot", "empty", (X(0), X(0))), ("vdot", "flip", (X(5, lay="flip"), X(5))), ("vdot", "empty", (X(0), X(0))),
        ("outer", "flip", (X(3, lay="flip"), X(4, lay="npflip"))), ("outer", "empty", (X(0), X(4))),
        ("addmm", "T", (X(4), X(3, 5, lay="T"), X(5, 4, lay="flip"))), ("addmm", "0d", (X(), X(2, 3), X(3, 4))),
        ("addmm", "empty-k", (X(2, 3), X(2, 0), X(0, 3))), ("addmv", "T", (X(), X(3, 4, lay="T"), X(4))),
        ("addmv", "empty", (X(0), X(0, 2), X(2))), ("addr", "flip", (X(3, 1), X(3, lay="flip"), X(4))),
        ("addr", "empty", (X(0, 4), X(0), X(4))), ("baddbmm", "T", (X(3, 1), X(2, 3, 4, lay="T"), X(2, 4, 1))),
        ("baddbmm", "empty-k", (X(2, 3, 2), X(2, 3, 0), X(2, 0, 2))), ("addbmm", "flip", (X(2), X(2, 3, 4, lay="flip"),
                                                                                       X(2, 4, 2))),
        ("addbmm", "empty-batch", (X(3, 2), X(0, 3, 4), X(0, 4, 2)))):
    case(_name, _label, _fn(_name), *_specs, fwd=8, bwd=8)
for _name in ("addmm", "addmv", "addr", "baddbmm", "addbmm"):
    _first = next(c for c in CASES if c.name == _name)
    case(_name, "alpha-beta", lambda lib, *xs, n=_name: getattr(lib, n)(*xs, beta=0.5, alpha=-2.0), *_first.inputs,
         fwd=8, bwd=8)
    case(_name, "beta0", lambda lib, *xs, n=_name: getattr(lib, n)(*xs, beta=0), *_first.inputs, fwd=8, bwd=8)
for _label, _eq, _specs in (("matmul", "ij,jk->ik", (X(3, 4, lay="T"), X(4, 2, lay="flip"))),
                            ("trace", "ii->", (X(3, 3, lay="npT"),)),
                            ("diag", "ii->i", (X(3, 3, lay="T"),)),
                            ("0d", ",->", (X(), X())), ("0d-scale", "ij,->ji", (X(2, 3), X())),
                            ("empty", "bij,bjk->bik", (X(0, 2, 3), X(0, 3, 2))), ("empty-k", "ij,jk->ik",
                                                                                  (X(2, 0), X(0, 3))),
                            ("ellipsis", "...ij->...ji", (X(2, 3, 4, lay="flip"),)), ("sum", "ij->",
                                                                                      (X(3, 4, lay="T"),)),
                            ("outer", "i,j->ij", (X(3, lay="npflip"), X(2)))):
    case("einsum", _label, lambda lib, *xs, e=_eq: lib.einsum(e, *xs), *_specs, fwd=8, bwd=8)
for _label, _specs, _dims in (("2", (X(2, 3, 4, lay="T"), X(3, 4, 2)), 2), ("0", (X(2, 3), X(4, lay="flip")), 0),
                              ("lists", (X(3, 4, lay="flip"), X(4, 3, lay="npT")), ([0, 1], [1, 0])),
                              ("empty", (X(2, 0), X(0, 3)), 1), ("0d", (X(), X()), 0)):
    case("tensordot", _label, lambda lib, a, b, d=_dims: lib.tensordot(a, b, dims=d), *_specs, fwd=8, bwd=8)

# --- conv: (label, input, weight, bias or None, kwargs). NOTE: k-term dot products, one rounding
for _nd in (1, 2, 3):
    _sp = (5, 4, 3)[:_nd]
    _k = (3, 2, 2)[:_nd]
    for _label, _x, _w, _b, _kw in (
            ("plain", X(2, 3, *_sp), X(4, 3, *_k), X(4), {}),
            ("empty-batch", X(0, 3, *_sp), X(4, 3, *_k), X(4), {}),
            ("unbatched", X(3, *_sp), X(4, 3, *_k), None, {"padding": 1}),
            ("views", X(2, 3, *_sp, lay="flip"), X(4, 3, *_k, lay="T"), X(4, lay="npflip"), {"stride": 2}),
            ("npT", X(1, 4, *_sp, lay="npT"), X(4, 2, *_k, lay="flip"), None, {"groups": 2,
                                                                               "dilation": 2 if _nd == 1 else 1}),
            ("empty-out-ch", X(2, 3, *_sp), X(0, 3, *_k), X(0), {}),
            ("padding-same", X(1, 3, *_sp, lay="T"), X(2, 3, *_k), X(2), {"padding": "same"})):
        case(f"conv{_nd}d", _label, lambda lib, x, w, *b, n=_nd, kw=_kw: getattr(nnf(lib), f"conv{n}d")(
            x, w, b[0] if b else None, **kw), *((_x, _w) + ((_b,) if _b is not None else ())), fwd=8, bwd=8)
    for _label, _x, _w, _b, _kw in (
            ("plain", X(2, 3, *_sp), X(3, 2, *_k), X(2), {}),
            ("empty-batch", X(0, 3, *_sp), X(3, 2, *_k), X(2), {}),
            ("unbatched", X(3, *_sp), X(3, 2, *_k), None, {"padding": 1}),
            ("views", X(2, 3, *_sp, lay="flip"), X(3, 2, *_k, lay="T"), X(2, lay="npflip"),
             {"stride": 2, "output_padding": 1}),
            ("groups", X(1, 4, *_sp, lay="npT"), X(4, 1, *_k, lay="flip"), None, {"groups": 2, "dilation": 2})):
        case(f"conv_transpose{_nd}d", _label, lambda lib, x, w, *b, n=_nd, kw=_kw: getattr(
            nnf(lib), f"conv_transpose{n}d")(x, w, b[0] if b else None, **kw),
             *((_x, _w) + ((_b,) if _b is not None else ())), fwd=8, bwd=8)

# --- pool. NOTE: max is exact; an average of k terms rounds once or twice
for _nd in (1, 2, 3):
    _sp = (6, 5, 4)[:_nd]
    for _kind, _kws in (("max", ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                 {"kernel_size": 2, "ceil_mode": True}, {"kernel_size": 2, "dilation": 2})),
                        ("avg", ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                 {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
                                 {"kernel_size": 2, "ceil_mode": True}))):
        for _i, _kw in enumerate(_kws):
            for _label, _x in (("batched", X(2, 3, *_sp, lay="flip")), ("unbatched", X(3, *_sp, lay="T")),
                               ("empty-batch", X(0, 3, *_sp)), ("npT", X(1, 2, *_sp, lay="npT"))):
                case(f"{_kind}_pool{_nd}d", f"{_label}-{_i}", lambda lib, x, k=_kind, n=_nd, kw=_kw: getattr(
                    nnf(lib), f"{k}_pool{n}d")(x, **kw), _x, fwd=4, bwd=4)
    case(f"max_pool{_nd}d", "indices", lambda lib, x, n=_nd: getattr(nnf(lib), f"max_pool{n}d")(
        x, 2, return_indices=True), X(2, 2, *_sp, lay="flip"))
    for _label, _x, _out in (("batched", X(2, 3, *_sp, lay="flip"), 2), ("unbatched", X(3, *_sp, lay="T"), 3),
                             ("empty-batch", X(0, 3, *_sp), 2), ("npT", X(1, 2, *_sp, lay="npT"), 1),
                             ("uneven", X(1, 2, *_sp), 4)):
        case(f"adaptive_avg_pool{_nd}d", _label, lambda lib, x, n=_nd, o=_out: getattr(
            nnf(lib), f"adaptive_avg_pool{n}d")(x, o), _x, fwd=4, bwd=4)
        case(f"adaptive_max_pool{_nd}d", _label, lambda lib, x, n=_nd, o=_out: getattr(
            nnf(lib), f"adaptive_max_pool{n}d")(x, o, return_indices=True), _x, fwd=0, bwd=4)
    for _label, _x in (("batched", X(2, 3, *(2 * s for s in _sp), lay="flip")), ("unbatched", X(3, *_sp, lay="T")),
                       ("empty-batch", X(0, 3, *_sp)), ("npT", X(1, 2, *_sp, lay="npT"))):
        # NOTE: the indices come from max pooling the same input (exact), unpooling only moves values
        case(f"max_unpool{_nd}d", _label, lambda lib, x, n=_nd: getattr(nnf(lib), f"max_unpool{n}d")(
            *getattr(nnf(lib), f"max_pool{n}d")(x, 2, return_indices=True), 2, output_size=x.shape[-n:]),
             _x, fwd=0, bwd=0)

# --- norm: mean, variance and rsqrt in fp32, rounded once; the gradient has ~3 terms of that size
for _label, _specs, _shape in (("plain", (X(2, 3, 4, lay="flip"), X(4), X(4)), (4,)), ("no-affine",
                                                                                       (X(3, 4, lay="T"),), (4,)),
                               ("2d-shape", (X(2, 3, 4, lay="npT"), X(3, 4), X(3, 4, lay="T")), (3, 4)),
                               ("empty-batch", (X(0, 4), X(4), X(4)), (4,)), ("1d", (X(5), X(5), X(5)), (5,))):
    case("layer_norm", _label, lambda lib, x, *wb, s=_shape: nnf(lib).layer_norm(x, s, *wb), *_specs, fwd=16, bwd=64)
    case("rms_norm", _label, lambda lib, x, *wb, s=_shape: nnf(lib).rms_norm(x, s, *wb[:1]), *_specs[:2],
         fwd=16, bwd=64)
case("rms_norm", "eps", lambda lib, x: nnf(lib).rms_norm(x, (4,), eps=0.5), X(3, 4, lay="T"), fwd=16, bwd=64)
for _label, _specs, _g in (("plain", (X(2, 4, 3, lay="flip"), X(4), X(4)), 2), ("no-affine", (X(2, 4, 3, 2, lay="T"),),
                                                                                4),
                           ("empty-batch", (X(0, 4, 3), X(4), X(4)), 2), ("npT", (X(3, 6, lay="npT"), X(6), X(6)), 3)):
    case("group_norm", _label, lambda lib, x, *wb, g=_g: nnf(lib).group_norm(x, g, *wb), *_specs, fwd=16, bwd=64)
for _label, _specs in (("plain", (X(2, 3, 4, lay="flip"),)), ("2d", (X(1, 2, 3, 3, lay="T"),)),
                       ("affine", (X(2, 3, 4, lay="npT"), X(3), X(3)))):
    case("instance_norm", _label, lambda lib, x, *wb: nnf(lib).instance_norm(
        x, weight=wb[0] if wb else None, bias=wb[1] if wb else None), *_specs, fwd=16, bwd=64)
for _label, _x in (("train", X(4, 3, lay="T")), ("train-3d", X(2, 3, 4, lay="flip")),
                   ("train-4d", X(2, 3, 2, 2, lay="npT"))):
    case("batch_norm", _label, lambda lib, x, rm, rv, w, b: nnf(lib).batch_norm(x, rm, rv, w, b, training=True),
         _x, X(3, grad=False), X(3, dom="pos", grad=False), X(3), X(3), fwd=16, bwd=64)
    case("batch_norm", _label + "-no-stats", lambda lib, x: nnf(lib).batch_norm(x, None, None, training=True), _x,
         fwd=16, bwd=64)
for _label, _x in (("eval", X(4, 3, lay="T")), ("eval-empty", X(0, 3)), ("eval-3d", X(2, 3, 4, lay="flip"))):
    case("batch_norm", _label, lambda lib, x, rm, rv, w, b: nnf(lib).batch_norm(x, rm, rv, w, b, training=False),
         _x, X(3, grad=False), X(3, dom="pos", grad=False), X(3), X(3), fwd=16, bwd=32)
case("batch_norm", "train-empty", lambda lib, x, rm, rv: nnf(lib).batch_norm(x, rm, rv, training=True),
     X(0, 3), X(3, grad=False), X(3, dom="pos", grad=False))
case("batch_norm", "train-one", lambda lib, x: nnf(lib).batch_norm(x, None, None, training=True), X(1, 3))
for _label, _x, _kw in (("plain", X(3, 4, lay="T"), {}), ("p1-dim0", X(3, 4, lay="flip"), {"p": 1.0, "dim": 0}),
                        ("1d", X(5, lay="npflip"), {"dim": 0}), ("empty", X(0, 3), {}), ("0d", X(), {"dim": 0}),
                        ("eps", X(2, 3, lay="npT"), {"eps": 2.0})):
    case("normalize", _label, lambda lib, x, kw=_kw: nnf(lib).normalize(x, **kw), _x, fwd=8, bwd=32)

# --- losses. NOTE: a mean of n pointwise terms; log-sum-exp / log terms add a few roundings each
_REDUCTIONS = ("mean", "sum", "none")


def _loss(name, label, fn, *specs, fwd=16, bwd=32):
    for r in _REDUCTIONS:
        case(name, f"{label}-{r}", lambda lib, *xs, r=r: fn(lib, *xs, reduction=r), *specs, fwd=fwd, bwd=bwd)


# NOTE: a target of another shape is treated loss by loss as PyTorch does (issue 16): broadcast (with a warning for
# mse/l1/smooth_l1/huber), broadcast to the input's shape only (soft_margin), or refused (the binary cross-entropies);
# the "bcast" rows check values and gradients, test_loss_target_of_another_shape_as_torch (below) the messages
_POINTWISE_SHAPES = (("0d", ((), ())), ("empty", ((0, 3), (0, 3))), ("views", ((3, 4), (3, 4))),
                     ("bcast", ((3, 4), (4,))), ("bcast-input", ((4,), (2, 4))), ("bcast-both", ((3, 1), (1, 4))),
                     ("bcast-0d", ((3, 4), ())))
for _name, _kw, _tdom, _idom in (("mse_loss", {}, "sym", "sym"), ("l1_loss", {}, "sym", "sym"),
                                 ("smooth_l1_loss", {"beta": 0.5}, "sym", "sym"), ("huber_loss", {"delta": 0.5}, "sym",
                                                                                   "sym"),
                                 ("soft_margin_loss", {}, "sym", "sym"), ("binary_cross_entropy", {}, "prob", "prob"),
                                 ("binary_cross_entropy_with_logits", {}, "prob", "sym"),
                                 ("kl_div", {}, "prob", "sym"), ("kl_div", {"log_target": True}, "sym", "sym"),
                                 ("poisson_nll_loss", {}, "pos", "sym"), ("poisson_nll_loss", {"log_input": False},
                                                                          "pos", "pos"),
                                 ("poisson_nll_loss", {"full": True}, "pos", "sym")):
    for _label, (_s1, _s2) in _POINTWISE_SHAPES:
        _tag = "-".join(f"{k}{v}" for k, v in _kw.items())
        _views = _label == "views"
        _loss(_name, f"{_label}-{_tag}" if _tag else _label, lambda lib, x, t, n=_name, kw=_kw, **r: getattr(
            nnf(lib), n)(x, t, **kw, **r), X(*_s1, dom=_idom, lay="T" if _views else "c"),
              X(*_s2, dom=_tdom, lay="flip" if _views else "c", grad=_name != "soft_margin_loss"))
_loss("binary_cross_entropy", "weight", lambda lib, x, t, w, **r: nnf(lib).binary_cross_entropy(x, t, weight=w, **r),
      X(3, 4, dom="prob", lay="T"), X(3, 4, dom="prob", grad=False), X(4, dom="pos", grad=False))
_loss("binary_cross_entropy", "shape-mismatch", lambda lib, x, t, **r: nnf(lib).binary_cross_entropy(x, t, **r),
      X(3, 4, dom="prob"), X(4, dom="prob"))
_loss("binary_cross_entropy_with_logits", "pos-weight", lambda lib, x, t, w, p, **r:
      nnf(lib).binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=p, **r),
      X(3, 4, lay="flip"), X(3, 4, dom="prob"), X(4, dom="pos", grad=False), X(4, dom="pos", grad=False))
_loss("binary_cross_entropy_with_logits", "0d-pos-weight", lambda lib, x, t, p, **r:
      nnf(lib).binary_cross_entropy_with_logits(x, t, pos_weight=p, **r), X(), X(dom="prob"), X(dom="pos", grad=False))
for _name in ("hinge_embedding_loss", "soft_margin_loss"):
    _loss(_name, "pm1", lambda lib, x, m, n=_name, **r: getattr(nnf(lib), n)(x, lib.where(m, 1.0, -1.0).to(x.dtype)
                                                                                   if lib is torch else
                                                                                   lib.cast(lib.where(m, 1.0, -1.0),
                                                                                            x.dtype), **r),
          X(3, 4, lay="T"), Mask(3, 4))
_loss("hinge_embedding_loss", "0d", lambda lib, x, t, **r: nnf(lib).hinge_embedding_loss(x, t, margin=0.5, **r),
      X(), X())
_loss("hinge_embedding_loss", "empty", lambda lib, x, t, **r: nnf(lib).hinge_embedding_loss(x, t, **r),
      X(0, 3), X(0, 3))
for _label, _specs in (("plain", (X(5, lay="flip"), X(5), X(5))), ("0d", (X(), X(), X())),
                       ("empty", (X(0), X(0), X(0))),
                       ("bcast", (X(3, 4, lay="T"), X(4), X(3, 1)))):
    _loss("margin_ranking_loss", _label, lambda lib, a, b, t, **r: nnf(lib).margin_ranking_loss(
        a, b, t, margin=0.25, **r), *_specs)
for _label, _specs, _dim in (("plain", (X(3, 4, lay="T"), X(3, 4, lay="flip")), 1), ("bcast", (X(3, 4), X(4)), -1),
                             ("1d", (X(5), X(5, lay="npflip")), 0), ("empty", (X(0, 3), X(0, 3)), 1),
                             ("empty-dim", (X(3, 0), X(3, 0)), 1)):
    case("cosine_similarity", _label, lambda lib, a, b, d=_dim: nnf(lib).cosine_similarity(a, b, dim=d), *_specs,
         fwd=16, bwd=64)
for _name in ("cross_entropy", "nll_loss"):
    _inp = (lambda lib, x: x) if _name == "cross_entropy" else (
        lambda lib, x: nnf(lib).log_softmax(x, dim=min(x.ndim - 1, 1)))
    for _label, _specs, _kw in (
            ("plain", (X(4, 3, lay="T"), Idx(4, high=3)), {}), ("1d", (X(5, lay="npflip"), Idx(high=5)), {}),
            ("empty-batch", (X(0, 3), Idx(0, high=3)), {}), ("spatial", (X(2, 3, 4, lay="flip"), Idx(2, 4, high=3)),
                                                             {}),
            ("weight", (X(4, 3, lay="npT"), Idx(4, high=3), X(3, dom="pos", grad=False)), {}),
            ("ignore", (X(5, 3), Idx(5, high=2)), {"ignore_index": 1}),
            ("all-ignored", (X(3, 2), Idx(3, high=1)), {"ignore_index": 0})):
        _loss(_name, _label, lambda lib, x, t, *w, n=_name, kw=_kw, f=_inp, **r: getattr(nnf(lib), n)(
            f(lib, x), t, *w, **kw, **r), *_specs)
for _label, _specs, _kw in (("smoothing", (X(4, 3, lay="T"), Idx(4, high=3)), {"label_smoothing": 0.2}),
                            ("probs", (X(4, 3, lay="flip"), X(4, 3, dom="prob", grad=False)), {}),
                            ("probs-smoothing", (X(2, 3, 2, lay="npT"), X(2, 3, 2, dom="prob")),
                             {"label_smoothing": 0.1}),
                            ("probs-1d", (X(3), X(3, dom="prob")), {}), ("probs-empty", (X(0, 3), X(0, 3, dom="prob")),
                                                                         {})):
    _loss("cross_entropy", _label, lambda lib, x, t, kw=_kw, **r: nnf(lib).cross_entropy(x, t, **kw, **r), *_specs)

# --- attention: q k^T, softmax, times v: dot products and a softmax
for _label, _specs, _kw in (
        ("plain", (X(2, 3, 4, lay="flip"), X(2, 5, 4, lay="T"), X(2, 5, 2, lay="npT")), {}),
        ("causal", (X(2, 2, 4, 3), X(2, 2, 4, 3, lay="flip"), X(2, 2, 4, 3)), {"is_causal": True}),
        ("scale", (X(2, 3, 4), X(2, 3, 4), X(2, 3, 4, lay="T")), {"scale": 0.25}),
        ("empty-batch", (X(0, 3, 4), X(0, 5, 4), X(0, 5, 2)), {}), ("empty-query", (X(2, 0, 4), X(2, 5, 4),
                                                                                    X(2, 5, 2)), {}),
        ("2d", (X(3, 4), X(5, 4), X(5, 2)), {})):
    case("scaled_dot_product_attention", _label, lambda lib, q, k, v, kw=_kw: nnf(lib).scaled_dot_product_attention(
        q, k, v, **kw), *_specs, fwd=16, bwd=64)
case("scaled_dot_product_attention", "bool-mask", lambda lib, q, k, v, m: nnf(lib).scaled_dot_product_attention(
    q, k, v, attn_mask=lib.logical_or(m, lib.arange(5) == 0)), X(2, 3, 4), X(2, 5, 4), X(2, 5, 2), Mask(3, 5),
     fwd=16, bwd=64)
case("scaled_dot_product_attention", "float-mask", lambda lib, q, k, v, m: nnf(lib).scaled_dot_product_attention(
    q, k, v, attn_mask=m), X(2, 3, 4), X(2, 5, 4), X(2, 5, 2), X(3, 5), fwd=16, bwd=64)

# --- embedding, one_hot
for _label, _specs, _kw in (("plain", (Idx(3, 2, high=5), X(5, 3, lay="T")), {}), ("0d", (Idx(high=5), X(5, 3)), {}),
                            ("empty", (Idx(0, high=5), X(5, 3, lay="flip")), {}),
                            ("padding", (Idx(6, high=4), X(4, 2, lay="npT")), {"padding_idx": 1}),
                            ("padding-neg", (Idx(6, high=4), X(4, 2)), {"padding_idx": -1})):
    case("embedding", _label, lambda lib, i, w, kw=_kw: nnf(lib).embedding(i, w, **kw), *_specs, fwd=1, bwd=4)
for _label, _spec, _n in (("plain", Idx(4, high=3), 3), ("0d", Idx(high=3), 4), ("empty", Idx(0, high=3), 3),
                          ("infer", Idx(2, 3, high=4), -1), ("empty-infer", Idx(0, high=3), -1)):
    case("one_hot", _label, lambda lib, i, n=_n: nnf(lib).one_hot(i, n), _spec, dtypes=("float32",))

# --- dropout: deterministic settings only (p=0, or not training)
for _name in ("dropout", "dropout2d"):
    for _label, _spec in (("0d", X()), ("empty", X(0, 3, 2)), ("T", X(2, 3, 4, lay="T")),
                          ("flip", X(2, 3, 4, lay="flip"))):
        if _name == "dropout2d" and _label == "0d":
            continue
        case(_name, f"{_label}-p0", lambda lib, x, n=_name: getattr(nnf(lib), n)(x, p=0.0), _spec, fwd=1, bwd=1)
        case(_name, f"{_label}-eval", lambda lib, x, n=_name: getattr(nnf(lib), n)(x, p=0.5, training=False), _spec,
             fwd=1, bwd=1)

# --- channel dropout in 1-D and 3-D (issue 13): deterministic settings only
for _name, _spec in (("dropout1d", X(2, 3, 4, lay="T")), ("dropout1d", X(0, 3, 2)),
                     ("dropout3d", X(2, 2, 3, 2, 2, lay="flip")), ("dropout3d", X(3, 2, 2, 2, lay="npT"))):
    case(_name, f"{_spec.lay}-{_spec.shape}-p0", lambda lib, x, n=_name: getattr(nnf(lib), n)(x, p=0.0), _spec,
         fwd=1, bwd=1)
    case(_name, f"{_spec.lay}-{_spec.shape}-eval", lambda lib, x, n=_name: getattr(nnf(lib), n)(
        x, p=0.5, training=False), _spec, fwd=1, bwd=1)

# --- grid sampling (issue 13): coordinates are rounded in the dtype (a location error of ~size * eps moves
# each bilinear weight by as much), then four weighted taps; the grid's gradient is a difference of taps
for _label, _specs, _kw in (("bilinear-zeros", (X(2, 3, 4, 5, lay="flip"), X(2, 3, 2, 2, dom="unit")), {}),
                            ("nearest-border", (X(1, 2, 4, 4, lay="npT"), X(1, 2, 3, 2, dom="unit")),
                             {"mode": "nearest", "padding_mode": "border"}),
                            ("reflection-aligned", (X(1, 2, 3, 5), X(1, 4, 2, 2, dom="unit", lay="T")),
                             {"padding_mode": "reflection", "align_corners": True}),
                            ("empty-batch", (X(0, 2, 3, 3), X(0, 2, 2, 2, dom="unit")), {})):
    case("grid_sample", _label, lambda lib, x, g, kw=_kw: nnf(lib).grid_sample(x, g, **kw), *_specs, fwd=64, bwd=256)
for _label, _t, _size, _ac in (("plain", X(2, 2, 3, lay="flip"), (2, 3, 4, 5), False),
                               ("aligned", X(1, 2, 3, lay="npT"), (1, 1, 3, 3), True),
                               ("empty", X(0, 2, 3), (0, 1, 2, 2), False)):
    case("affine_grid", _label, lambda lib, t, s=_size, ac=_ac: nnf(lib).affine_grid(t, s, align_corners=ac), _t,
         fwd=8, bwd=16)

# --- resampling (issue 13): gathers are exact; interpolation weights add a few roundings (fp32 math, one rounding)
for _label, _x, _pad, _kw in (("const-flip", X(2, 3, 4, lay="flip"), (1, 2), {"value": 0.5}),
                              ("const-neg", X(2, 3, 4, lay="T"), (-1, 2, 1, -1), {}),
                              ("const-empty", X(0, 3, 4), (1, 1), {}),
                              ("reflect", X(2, 3, 5, lay="T"), (2, 1), {"mode": "reflect"}),
                              ("replicate", X(1, 2, 3, 4, lay="npT"), (1, 2, 0, 3), {"mode": "replicate"}),
                              ("circular", X(2, 4, 3, lay="flip"), (2, -1), {"mode": "circular"})):
    case("pad", _label, lambda lib, x, p=_pad, kw=_kw: nnf(lib).pad(x, p, **kw), _x, fwd=1, bwd=2)
for _label, _x, _kw in (("nearest", X(2, 2, 3, 4, lay="flip"), {"scale_factor": 2}),
                        ("nearest-exact", X(1, 2, 5, lay="T"), {"size": 3, "mode": "nearest-exact"}),
                        ("linear", X(2, 3, 4, lay="npT"), {"size": 7, "mode": "linear"}),
                        ("bilinear-ac", X(1, 2, 3, 3, lay="T"), {"size": (5, 4), "mode": "bilinear",
                                                                 "align_corners": True}),
                        ("bicubic", X(1, 1, 4, 4), {"scale_factor": 2, "mode": "bicubic"}),
                        ("trilinear", X(1, 1, 2, 3, 2), {"size": 3, "mode": "trilinear"}),
                        ("area", X(1, 2, 6, 4, lay="T"), {"size": (3, 2), "mode": "area"}),
                        ("empty-batch", X(0, 2, 3, 3), {"scale_factor": 2, "mode": "bilinear"})):
    case("interpolate", _label, lambda lib, x, kw=_kw: nnf(lib).interpolate(x, **kw), _x, fwd=8, bwd=16)
case("upsample", "bilinear", lambda lib, x: nnf(lib).upsample(x, scale_factor=2, mode="bilinear"), X(1, 2, 3, 3),
     fwd=8, bwd=16)
case("upsample_nearest", "plain", lambda lib, x: nnf(lib).upsample_nearest(x, size=(4, 5)), X(1, 2, 2, 3, lay="T"),
     fwd=1, bwd=2)
case("upsample_bilinear", "plain", lambda lib, x: nnf(lib).upsample_bilinear(x, scale_factor=2), X(1, 2, 3, 2),
     fwd=8, bwd=16)
# NOTE: no empty-batch row: torch's own PixelShuffleBackward returns a wrongly shaped gradient there
for _label, _x in (("plain", X(2, 8, 2, 3, lay="flip")), ("unbatched", X(4, 3, 2, lay="T"))):
    case("pixel_shuffle", _label, lambda lib, x: nnf(lib).pixel_shuffle(x, 2), _x, fwd=1, bwd=1)
for _label, _x in (("plain", X(2, 2, 4, 6, lay="flip")), ("unbatched", X(1, 4, 2, lay="T"))):
    case("pixel_unshuffle", _label, lambda lib, x: nnf(lib).pixel_unshuffle(x, 2), _x, fwd=1, bwd=1)
for _label, _x, _kw in (("plain", X(2, 3, 4, 5, lay="T"), {"kernel_size": 2}),
                        ("strided", X(3, 5, 4, lay="flip"), {"kernel_size": (2, 3), "padding": 1, "stride": 2})):
    case("unfold", _label, lambda lib, x, kw=_kw: nnf(lib).unfold(x, **kw), _x, fwd=1, bwd=4)
for _label, _x, _kw in (("plain", X(2, 12, 6, lay="T"), {"kernel_size": (2, 3), "padding": (1, 0), "stride": 2}),
                        ("unbatched", X(4, 9), {"kernel_size": 2})):
    case("fold", _label, lambda lib, x, kw=_kw: nnf(lib).fold(x, (4, 4) if x.shape[-1] == 9 else (5, 6), **kw), _x,
         fwd=4, bwd=1)
for _label, _x, _size in (("plain", X(2, 5, 3, lay="T"), 3), ("4d", X(2, 4, 2, 2, lay="flip"), 2)):
    case("local_response_norm", _label, lambda lib, x, n=_size: nnf(lib).local_response_norm(x, n, alpha=0.5), _x,
         fwd=16, bwd=64)

# --- creation from a tensor (cupynet/__init__.py): deterministic ones
for _label, _spec in (("0d", X()), ("empty", X(0, 3)), ("T", X(3, 4, lay="T"))):
    for _name in ("zeros_like", "ones_like"):
        case(_name, _label, _fn(_name), _spec)
    case("full_like", _label, lambda lib, x: lib.full_like(x, -1.5), _spec)


def _eye_of(x):
    """An identity the size of ``x``'s matrices, in cupynet or torch (whichever ``x`` is)."""
    n = x.shape[-1]
    return torch.eye(n, dtype=x.dtype) if isinstance(x, torch.Tensor) else cn.eye(n, dtype=x.dtype)


# --- issue 13: ordering, scattering, selection, cumulative, three-input, matrix, arranging, decompositions.
# NOTE: inputs are distinct values (ties would make the chosen indices implementation-defined); the picks
# are exact reads, so 1 ulp; decompositions run in float32/float64 only (torch refuses half there too).
_PICK_SPECS = (("0d", X()), ("empty", X(0, 3)), ("T", X(3, 4, lay="T")), ("flip", X(4, 3, lay="flip")),
               ("npT", X(2, 5, lay="npT")))
for _label, _spec in _PICK_SPECS:
    _d0 = -1 if _label in ("0d", "empty") else 0
    case("sort", _label, lambda lib, x: lib.sort(x, descending=True), _spec, fwd=1, bwd=1)
    case("argsort", _label, _fn("argsort"), _spec, fwd=1, bwd=1)
    case("msort", _label, _fn("msort"), _spec, fwd=1, bwd=1)
    case("topk", _label, lambda lib, x: lib.topk(x, min(1, x.shape[-1] if x.ndim else 1)), _spec, fwd=1, bwd=1)
    if _label != "empty":  # NOTE: torch's gradient of an empty cummax comes back requiring grad (can't compare)
        case("cummax", _label, lambda lib, x, d=_d0: lib.cummax(x, d), _spec, fwd=1, bwd=1)
        case("cummin", _label, lambda lib, x, d=_d0: lib.cummin(x, d), _spec, fwd=1, bwd=1)
    case("logcumsumexp", _label, lambda lib, x, d=_d0: lib.logcumsumexp(x, d), _spec, fwd=8, bwd=16)
    case("nonzero", _label, _fn("nonzero"), _spec)
    case("argwhere", _label, _fn("argwhere"), _spec)
    case("count_nonzero", _label, _fn("count_nonzero"), _spec)
    # NOTE: torch marks unique's values as requiring grad but has no derivative for them: compare values only
    case("unique", _label, lambda lib, x: lib.unique(x.detach(), return_inverse=True, return_counts=True), _spec,
         fwd=1)
    case("unique_consecutive", _label, lambda lib, x: lib.unique_consecutive(x.detach(), return_counts=True), _spec,
         fwd=1)
    case("clamp_min", _label, lambda lib, x: lib.clamp_min(x, 0.25), _spec, fwd=1, bwd=1)
    case("clamp_max", _label, lambda lib, x: lib.clamp_max(x, 0.25), _spec, fwd=1, bwd=1)
for _label, _spec in _PICK_SPECS[2:]:
    case("kthvalue", _label, lambda lib, x: lib.kthvalue(x, 2, 0), _spec, fwd=1, bwd=1)
    case("median", _label, lambda lib, x: lib.median(x, 1, keepdim=True), _spec, fwd=1, bwd=1)
    case("nanmedian", _label, lambda lib, x: lib.nanmedian(x, 0), _spec, fwd=1, bwd=1)
    case("median", _label + "-all", _fn("median"), _spec, fwd=1, bwd=1)
    case("diagonal", _label, lambda lib, x: lib.diagonal(x, 1), _spec, fwd=1, bwd=1)
    case("diag", _label, lambda lib, x: lib.diag(x, -1), _spec, fwd=1, bwd=1)
    case("trace", _label, _fn("trace"), _spec)
    case("rot90", _label, lambda lib, x: lib.rot90(x, 3), _spec, fwd=1, bwd=1)
    case("diff", _label, lambda lib, x: lib.diff(x, n=2, dim=0), _spec)
    case("atleast_3d", _label, _fn("atleast_3d"), _spec, fwd=1, bwd=1)
    case("masked_select", _label, lambda lib, x: lib.masked_select(x, x > 0), _spec, fwd=1, bwd=1)
    case("take_along_dim", _label, lambda lib, x: lib.take_along_dim(x, lib.argsort(x, 0), 0), _spec, fwd=1, bwd=1)
    case("repeat_interleave", _label, lambda lib, x: lib.repeat_interleave(x, 2, dim=1), _spec, fwd=1, bwd=1)
    case("kron", _label, lambda lib, x: lib.kron(x.contiguous(), x[:1].contiguous()), _spec)
    case("isin", _label, lambda lib, x: lib.isin(x, x[0]), _spec)
    case("histc", _label, lambda lib, x: lib.histc(x, 4, -1, 1), _spec)
    case("searchsorted", _label, lambda lib, x: lib.searchsorted(lib.sort(x[0])[0], x), _spec)
    case("bucketize", _label, lambda lib, x: lib.bucketize(x, lib.sort(x[0])[0], right=True), _spec)
for _label, _spec in (("0d", X()), ("1d", X(4, lay="flip")), ("empty", X(0))):
    case("atleast_1d", _label, _fn("atleast_1d"), _spec, fwd=1, bwd=1)
    case("atleast_2d", _label, _fn("atleast_2d"), _spec, fwd=1, bwd=1)
    case("diag_embed", _label, lambda lib, x: lib.diag_embed(x.reshape(1, -1), 1), _spec, fwd=1, bwd=1)
    case("cartesian_prod", _label, lambda lib, x: lib.cartesian_prod(x.reshape(-1), x.reshape(-1)), _spec, fwd=1)
    case("meshgrid", _label, lambda lib, x: lib.meshgrid(x.reshape(-1), x.reshape(-1)[:2], indexing="xy"), _spec,
         fwd=1, bwd=1)
    case("block_diag", _label, lambda lib, x: lib.block_diag(x, x.reshape(-1, 1)), _spec, fwd=1, bwd=1)
for _label, _specs in (("T", (X(3, 4, lay="T"), X(3, 4), X(3, 4, dom="pos"))),
                       ("bcast", (X(3, 1), X(4), X(3, 4, dom="pos"))), ("0d", (X(), X(), X(dom="pos"))),
                       ("empty", (X(0, 2), X(2), X(0, 1, dom="pos")))):
    case("lerp", _label, lambda lib, a, b, w: lib.lerp(a, b, w), *_specs)
    case("addcmul", _label, lambda lib, a, b, c: lib.addcmul(a, b, c, value=0.5), *_specs)
    case("addcdiv", _label, lambda lib, a, b, c: lib.addcdiv(a, b, c, value=0.5), *_specs, fwd=8, bwd=16)
for _label, _specs in (("T", (X(4, 3, lay="T"), X(4, 3))), ("flip", (X(2, 3, lay="flip"), X(2, 3, lay="npflip"))),
                       ("empty", (X(0, 3), X(0, 3)))):
    case("cross", _label, lambda lib, a, b: lib.cross(a, b, dim=1), *_specs)
    case("linalg_cross", _label,
         lambda lib, a, b: lib.linalg.cross(a, b) if lib is torch else lib.linalg_cross(a, b), *_specs)
for _label, _specs in (("T", (X(3, 4, lay="T"), X(2, 4))), ("batch", (X(2, 3, 2, lay="flip"), X(2, 4, 2))),
                       ("empty", (X(0, 3), X(2, 3)))):
    case("cdist", _label, _fn("cdist"), *_specs, fwd=16, bwd=64)
for _label, _spec in (("T", X(3, 3, lay="T")), ("batch", X(2, 3, 3, lay="flip")), ("empty", X(0, 2, 2)),
                      ("npT", X(4, 4, lay="npT"))):
    _sq = (lambda x: x + 4 * (x.shape[-1] > 0) * _eye_of(x))
    for _name in ("det", "inverse", "logdet"):
        case(_name, _label, lambda lib, x, n=_name, sq=_sq: getattr(lib, n)(sq(x)), _spec, fwd=64, bwd=256,
             dtypes=("float32", "float64"))
    case("slogdet", _label, lambda lib, x, sq=_sq: lib.slogdet(sq(x))[1], _spec, fwd=64, bwd=256,
         dtypes=("float32", "float64"))
    case("cholesky", _label, lambda lib, x, sq=_sq: lib.cholesky(sq(x) @ sq(x).mT), _spec, fwd=64, bwd=256,
         dtypes=("float32", "float64"))
    case("pinverse", _label, lambda lib, x, sq=_sq: lib.pinverse(sq(x)), _spec, fwd=256, bwd=1024,
         dtypes=("float32", "float64"))
    case("svd", _label, lambda lib, x: lib.svd(x)[1], _spec, fwd=64, bwd=256, dtypes=("float32", "float64"))
    case("qr", _label, lambda lib, x: lib.qr(x)[1].abs(), _spec, fwd=64, bwd=256, dtypes=("float32", "float64"))
for _label, _specs in (("plain", (X(3, 4), Idx(2, 4, high=3), X(2, 4, lay="flip"))),
                       ("T", (X(4, 3, lay="T"), Idx(2, 3, high=4), X(2, 3))), ("empty", (X(0, 3), Idx(0, 3, high=1),
                                                                                          X(0, 3)))):
    case("scatter_reduce", _label, lambda lib, a, i, s: lib.scatter_reduce(a, 0, i, s, "sum"), *_specs)
    case("scatter_reduce", _label + "-amax", lambda lib, a, i, s: lib.scatter_reduce(a, 0, i, s, "amax",
                                                                                      include_self=False), *_specs)
    case("scatter", _label, lambda lib, a, i, s: lib.scatter(a, 0, i, 0.5), *_specs[:2])
for _label, _specs in (("plain", (X(3, 4), Idx(5, high=3), X(5, 4, lay="flip"))),
                       ("T", (X(4, 3, lay="T"), Idx(2, high=4), X(2, 3))),
                       ("empty", (X(0, 3), Idx(0, high=1), X(0, 3)))):
    case("index_add", _label, lambda lib, a, i, s: lib.index_add(a, 0, i, s, alpha=2), *_specs)
    case("index_fill", _label, lambda lib, a, i, s: lib.index_fill(a, 0, i, -0.5), *_specs[:2])
    case("index_copy", _label, lambda lib, a, i, s: lib.index_copy(a, 0, i.unique()[:1], s[:1] if i.numel() else s),
         *_specs)
for _label, _specs in (("plain", (X(3, 4), Mask(3, 4), X(12, lay="flip"))), ("T", (X(4, 3, lay="T"), Mask(4, 3),
                                                                                   X(2, 6))),
                       ("broadcast", (X(3, 4), Mask(4), X(12))), ("empty", (X(0, 3), Mask(0, 3), X(0)))):
    case("masked_scatter", _label, lambda lib, a, m, s: lib.masked_scatter(a, m, s), *_specs)
for _label, _spec in (("plain", Idx(6, high=4)), ("empty", Idx(0, high=1))):
    case("bincount", _label, lambda lib, i: lib.bincount(i, minlength=5), _spec)
for _label, _args in (("square", (3, 3, 0)), ("wide", (3, 5, 1)), ("tall", (4, 2, -1))):
    case("triu_indices", _label, lambda lib, a=_args: lib.triu_indices(*a))
    case("tril_indices", _label, lambda lib, a=_args: lib.tril_indices(*a))

# --- issue 13 (h-acts): the remaining activations; random ones (rrelu in training, gumbel_softmax) are
# EXCLUDED below and checked statistically in tests/test_ops_activation_extra.py
for _name, _kw, _f, _b in (
        ("selu", {}, 8, 16), ("celu", {"alpha": 0.5}, 8, 16), ("softsign", {}, 4, 8), ("logsigmoid", {}, 8, 16),
        ("tanhshrink", {}, 8, 16), ("threshold", {"threshold": 0.25, "value": -0.5}, 1, 1),
        ("softshrink", {"lambd": 0.25}, 2, 1), ("hardshrink", {"lambd": 0.25}, 1, 1), ("rrelu", {}, 2, 2)):
    _elementwise(_name, _F(_name, **_kw), fwd=_f, bwd=_b)
for _label, _spec, _dim in (("0d", X(), 0), ("empty", X(0, 3), 1), ("T", X(3, 4, lay="T"), 0),
                            ("flip", X(3, 4, lay="flip"), -1)):
    case("softmin", _label, _F("softmin", dim=_dim), _spec, fwd=8, bwd=16)
# --- issue 13 (h-acts): embedding_bag; offsets [0, 2, 2) cut the flat input into bags with an empty one
for _mode in ("sum", "mean", "max"):
    for _label, _specs, _kw in (("2d", (Idx(3, 4, high=5), X(5, 3, lay="T")), {}),
                                ("offsets", (Idx(6, high=5), X(5, 3, lay="flip")), {"offsets": (0, 2, 2)}),
                                ("padding", (Idx(2, 5, high=4), X(4, 2, lay="npT")), {"padding_idx": 1}),
                                ("empty", (Idx(0, high=4), X(4, 2)), {"offsets": (0, 0)})):
        case("embedding_bag", f"{_label}-{_mode}", lambda lib, i, w, kw=_kw, m=_mode: nnf(lib).embedding_bag(
            i, w, **{k: lib.tensor(v) if k == "offsets" else v for k, v in kw.items()}, mode=m), *_specs, fwd=4, bwd=8)
case("embedding_bag", "per-sample-weights", lambda lib, i, w, p: nnf(lib).embedding_bag(
    i, w, lib.tensor([0, 3]), mode="sum", per_sample_weights=p), Idx(5, high=4), X(4, 3, lay="T"), X(5), fwd=4, bwd=8)
# --- issue 13 (h-acts): the remaining losses. NOTE: norms and cosines: a sum of squares, a root and a division
for _label, _specs in (("plain", (X(3, 4, lay="T"), X(3, 4, lay="flip"))), ("bcast", (X(3, 4), X(4))),
                       ("1d", (X(5), X(5, lay="npflip"))), ("empty", (X(0, 3), X(0, 3)))):
    case("pairwise_distance", _label, _F("pairwise_distance"), *_specs, fwd=16, bwd=64)
    case("pairwise_distance", _label + "-p1", _F("pairwise_distance", p=1.0, keepdim=True), *_specs, fwd=16, bwd=64)
for _label, _specs, _kw in (("plain", (X(3, 4, lay="T"), X(3, 4), X(3, 4, lay="flip")), {}),
                            ("swap-p1", (X(3, 4), X(3, 4, lay="npT"), X(3, 4)), {"swap": True, "p": 1}),
                            ("1d", (X(4), X(4), X(4)), {"margin": 2.0}), ("empty", (X(0, 3), X(0, 3), X(0, 3)), {})):
    _loss("triplet_margin_loss", _label, lambda lib, a, p, n, kw=_kw, **r: nnf(lib).triplet_margin_loss(
        a, p, n, **kw, **r), *_specs, fwd=16, bwd=64)
for _label, _specs in (("plain", (X(4, 3, lay="T"), X(4, 3, lay="flip"), Mask(4))), ("0d", (X(3), X(3), Mask())),
                       ("empty", (X(0, 3), X(0, 3), Mask(0)))):
    _loss("cosine_embedding_loss", _label, lambda lib, a, b, m, **r: nnf(lib).cosine_embedding_loss(
        a, b, lib.where(m, 1, -1), margin=0.25, **r), *_specs, fwd=16, bwd=64)
# NOTE: PyTorch's CPU multi_margin_loss and multilabel_margin_loss reduce an empty batch to uninitialised memory
# (cupynet: 0, docs/differences.md): their "empty" rows check reduction='none' only
for _label, _specs, _kw in (("plain", (X(4, 3, lay="T"), Idx(4, high=3)), {}), ("1d", (X(5), Idx(high=5)), {}),
                            ("p2-weight", (X(4, 3, lay="flip"), Idx(4, high=3), X(3, dom="pos", grad=False)),
                             {"p": 2, "margin": 0.5}), ("empty", (X(0, 3), Idx(0, high=3)), {})):
    for _r in ("none",) if _label == "empty" else _REDUCTIONS:
        case("multi_margin_loss", f"{_label}-{_r}", lambda lib, x, t, *w, kw=_kw, r=_r: nnf(lib).multi_margin_loss(
            x, t, weight=w[0] if w else None, reduction=r, **kw), *_specs, fwd=16, bwd=32)
for _label, _specs in (("plain", (X(4, 3, lay="T"), Idx(4, 3, high=3))), ("1d", (X(5), Idx(5, high=5))),
                       ("empty", (X(0, 3), Idx(0, 3, high=3)))):
    # NOTE: the target ends at its first -1; shift the drawn indices so that some rows stop early
    for _r in ("none",) if _label == "empty" else _REDUCTIONS:
        case("multilabel_margin_loss", f"{_label}-{_r}", lambda lib, x, t, r=_r: nnf(lib).multilabel_margin_loss(
            x, t - (t == 2).long() * 3, reduction=r), *_specs, fwd=16, bwd=32)
for _label, _specs in (("plain", (X(4, 3, lay="T"), X(4, 3, dom="prob", grad=False))),
                       ("weight", (X(4, 3), X(4, 3, dom="prob", lay="flip"), X(3, dom="pos", grad=False))),
                       ("1d", (X(5), X(5, dom="prob"))), ("empty", (X(0, 3), X(0, 3, dom="prob")))):
    _loss("multilabel_soft_margin_loss", _label, lambda lib, x, t, *w, **r: nnf(lib).multilabel_soft_margin_loss(
        x, t, weight=w[0] if w else None, **r), *_specs)
for _label, _specs, _kw in (("plain", (X(4, 3, lay="T"), X(4, 3), X(4, 3, dom="pos")), {}),
                            ("homo", (X(4, 3), X(4, 3, lay="flip"), X(4, dom="pos")), {"full": True}),
                            ("one", (X(4, 3), X(4, 3), X(4, 1, dom="pos")), {"eps": 0.6}),
                            ("empty", (X(0, 3), X(0, 3), X(0, 3, dom="pos")), {})):
    _loss("gaussian_nll_loss", _label, lambda lib, x, t, v, kw=_kw, **r: nnf(lib).gaussian_nll_loss(
        x, t, v, **kw, **r), *_specs)

# --- issue 13 (h-progs): sparse COO tensors, stored dense (gcn, gat); repeated indices of Idx accumulate
for _label, _specs, _size in (("plain", (Idx(2, 5, high=3), X(5, lay="flip")), (3, 3)),
                              ("dense-dim", (Idx(1, 4, high=3), X(4, 3, lay="T")), (3, 3)),
                              ("empty", (Idx(2, 0, high=3), X(0)), (3, 3))):
    case("sparse_coo_tensor", _label, lambda lib, i, v, s=_size: lib.sparse_coo_tensor(i, v, s).to_dense(),
         *_specs, fwd=4, bwd=1)
for _label, _specs in (("plain", (X(3, 4, lay="T"), X(4, 2, lay="flip"))), ("empty", (X(0, 3), X(3, 2))),
                       ("npT", (X(2, 3, lay="npT"), X(3, 1)))):
    case("spmm", _label, lambda lib, a, b: lib.spmm(a.to_sparse(), b), *_specs, fwd=16, bwd=16)

# --- torch names of round 3: comparisons as a whole, take, mode, bilinear.
# NOTE: isclose's tolerances and the inputs (multiples of 1/64) make |x - y| and atol + rtol * |y| exact in every
# dtype, so no comparison sits on a rounding; mode's inputs are distinct (each value once: the mode is the minimum)
for _label, _specs in (("T", (X(3, 4, lay="T", grad=False), X(3, 4, lay="flip", grad=False))),
                       ("bcast", (X(3, 4, grad=False), X(4, lay="npflip", grad=False))),
                       ("0d", (X(grad=False), X(grad=False))), ("empty", (X(0, 3, grad=False), X(3, grad=False)))):
    case("isclose", _label, lambda lib, x, y: lib.isclose(x, y, rtol=0.5, atol=0.125), *_specs)
    case("isclose", _label + "-atol", lambda lib, x, y: lib.isclose(x, y, rtol=0.0, atol=0.25), *_specs)
    case("allclose", _label, lambda lib, x, y: lib.tensor(lib.allclose(x, y, rtol=0.0, atol=4.0)), *_specs)
    case("allclose", _label + "-self", lambda lib, x, y: lib.tensor(lib.allclose(x, x.clone())), *_specs)
    case("allclose", _label + "-other", lambda lib, x, y: lib.tensor(x.allclose(y)), *_specs)
    case("equal", _label, lambda lib, x, y: lib.tensor(lib.equal(x, y)), *_specs)
    case("equal", _label + "-self", lambda lib, x, y: lib.tensor(lib.equal(x, x.clone())), *_specs)
for _label, _specs in (("T", (X(3, 4, lay="T"), Idx(2, 3, high=12))), ("flip", (X(4, 3, lay="flip"), Idx(5, high=12))),
                       ("0d", (X(), Idx(3, high=1))), ("empty-index", (X(3, 4, lay="npT"), Idx(0, high=12))),
                       ("0d-index", (X(6, lay="npflip"), Idx(high=6)))):
    case("take", _label, lambda lib, x, i: lib.take(x, i), *_specs, fwd=1, bwd=1)
    case("take", _label + "-negative", lambda lib, x, i: x.take(i - x.numel()), *_specs, fwd=1, bwd=1)
for _label, _spec in _PICK_SPECS:
    if _label != "empty":  # NOTE: an empty reduced dimension is an error in both (tested in test_torch_names.py)
        case("mode", _label, _fn("mode"), _spec, fwd=1, bwd=1)
        case("mode", _label + "-dim0", lambda lib, x: lib.mode(x, 0, keepdim=True), _spec, fwd=1, bwd=1)
case("mode", "empty-other", lambda lib, x: lib.mode(x, 1), X(0, 3), fwd=1, bwd=1)
# NOTE: one contraction of in1 * in2 products, computed in fp32 and rounded once (torch: float64 oracle)
for _label, _specs in (("plain", (X(2, 3, lay="T"), X(2, 4), X(5, 3, 4), X(5))),
                       ("batched", (X(2, 2, 3), X(2, 2, 4, lay="flip"), X(5, 3, 4, lay="npT"))),
                       ("1d", (X(3), X(4, lay="npflip"), X(2, 3, 4), X(2))),
                       ("empty", (X(0, 3), X(0, 4), X(5, 3, 4), X(5))),
                       ("bad-width", (X(2, 3), X(2, 5), X(5, 3, 4), X(5)))):
    case("bilinear", _label, _F("bilinear"), *_specs, fwd=16, bwd=16)


def _params():
    return [pytest.param(c, d, id=f"{c.name}-{c.label}-{d}") for c in CASES for d in c.dtypes]


@pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")  # NOTE: both libraries warn on the bcast rows
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")  # NOTE: kl_div, both too
@pytest.mark.parametrize(("c", "dtype"), _params())
def test_edge(c, dtype):
    run_case(c, dtype)


# Public names with no row, and why. Everything else in cupynet.ops, cupynet.nn.functional and the
# tensor-taking functions of cupynet must have at least one row.
EXCLUDED = {
    "multinomial": "random draws from cupynet's generator (a different stream from torch's); distributions and "
                   "refusals in tests/test_ops_selection.py",
    "randn_like": "random values: different streams from torch's (docs/differences.md); shape/dtype in creation tests",
    "rand_like": "random values, as randn_like",
    "normal_": "random values, as randn_like (tests/test_inplace_views.py checks the range and that p changes)",
    "uniform_": "random values, as randn_like (tests/test_inplace_views.py checks the range and that p changes)",
    "empty_like": "PyTorch's values are uninitialised memory: nothing to compare",
    **{name: "random values, as randn_like: statistics, dtypes, zero gradients and errors in tests/test_ops_sampling.py"
       for name in ("normal", "bernoulli", "poisson", "bernoulli_", "exponential_", "geometric_", "cauchy_",
                    "log_normal_", "random_")},
    "gumbel_softmax": "random Gumbel noise (another stream than torch's); one-hot/sum-to-1/straight-through and the "
                      "argmax distribution in tests/test_ops_activation_extra.py",
}
CREATION_FROM_TENSOR = ("zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like")


def public_op_names():
    """Every public op: cupynet.ops (each family's __all__), nn.functional's names and cupynet's *_like."""
    names = {n for n in ops.__all__ if n not in ("TENSOR_METHODS", "OP_CLASSES")}
    names |= set(cF.__all__)
    return names | set(CREATION_FROM_TENSOR)


def test_table_covers_every_public_op():
    covered = {c.name for c in CASES}
    assert not (covered - public_op_names()), f"rows for unknown names: {sorted(covered - public_op_names())}"
    missing = public_op_names() - covered - set(EXCLUDED)
    assert not missing, f"public ops with no edge-case row: {sorted(missing)}"
    assert not (set(EXCLUDED) & covered), "an excluded name has rows: take it off EXCLUDED"


def test_every_op_family_module_is_swept():
    # NOTE: a new family module (or a new name in one) shows up here before it ships unswept
    for module in ops._modules:
        assert set(module.__all__) <= {c.name for c in CASES} | set(EXCLUDED), module.__name__


@pytest.mark.parametrize("name", ["norm", "vector_norm"])
def test_norm_dtype_must_not_narrow(name):
    x64 = cn.tensor(np.ones(3), dtype="float64")
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        getattr(cn, name)(x64, dtype="float32")
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        getattr(cn, name)(cn.tensor(np.ones(3), dtype="bfloat16"), dtype="float16")


_TARGET_SHAPE_BEHAVIOUR = {
    # name: (warns, broadcasts a smaller target, broadcasts a smaller input, error class when refused)
    "mse_loss": (True, True, True, None), "l1_loss": (True, True, True, None),
    "smooth_l1_loss": (True, True, True, None), "huber_loss": (True, True, True, None),
    "soft_margin_loss": (False, True, False, RuntimeError), "kl_div": (False, True, True, None),
    "poisson_nll_loss": (False, True, True, None), "hinge_embedding_loss": (False, True, True, None),
    "binary_cross_entropy": (False, False, False, ValueError),
    "binary_cross_entropy_with_logits": (False, False, False, ValueError),
}


def _loss_call(lib, name, input_shape, target_shape):
    x = lib.full(input_shape, 0.5, dtype=lib.float32)
    t = lib.full(target_shape, 0.5 if name != "hinge_embedding_loss" else 1.0, dtype=lib.float32)
    return lambda: getattr(nnf(lib), name)(x, t, **({"reduction": "batchmean"} if name == "kl_div" else {}))


@pytest.mark.parametrize("name", list(_TARGET_SHAPE_BEHAVIOUR))
def test_loss_target_of_another_shape_as_torch(name):
    # NOTE: this used to be a deliberate difference (cupynet refused every other shape); now each loss does what
    # PyTorch does: warn and broadcast, broadcast silently, broadcast the target only, or refuse with torch's text
    import warnings  # noqa: PLC0415

    warns, target_side, input_side, error = _TARGET_SHAPE_BEHAVIOUR[name]
    for (si, st), ok in ((((3, 4), (4,)), target_side), (((4,), (3, 4)), input_side)):
        for lib in (torch, cn):
            call = _loss_call(lib, name, si, st)
            if not ok:
                with pytest.raises(error):
                    call()
                continue
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = call()
            texts = [str(w.message) for w in caught if w.category is UserWarning]
            assert bool(texts) == warns, (lib.__name__, texts)
            assert all(t.startswith("Using a target size ") and "Please ensure they have the same size." in t
                       for t in texts)
            assert tuple(out.shape) == ()
    if name == "binary_cross_entropy":
        with pytest.raises(ValueError, match=r"binary_cross_entropy: Using a target size \(4,\) that is different to "
                                             r"the input size \(3, 4\) is deprecated"):
            _loss_call(cn, name, (3, 4), (4,))()
    if name == "binary_cross_entropy_with_logits":
        with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits: Target size \(4,\) must be the same "
                                             r"as input size \(3, 4\)"):
            _loss_call(cn, name, (3, 4), (4,))()
    if not error:  # NOTE: shapes that do not broadcast: a RuntimeError in both, after the warning for some
        with pytest.raises(RuntimeError), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _loss_call(torch, name, (3, 4), (12,))()
        with pytest.raises(RuntimeError, match=rf"{name}: The size of input \(4\) must match the size of target "
                                               rf"\(12\) at non-singleton dimension 1"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _loss_call(cn, name, (3, 4), (12,))()

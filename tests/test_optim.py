"""Every element-wise optimizer (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop)
against torch.optim (the oracle), for every option combination.

NOTE on the oracle: cupynet computes each operation in fp32 in the order of
PyTorch's single-tensor code. PyTorch's SIMD CPU kernels fuse ``a + alpha * b``
into one FMA (one rounding instead of two), so its results depend on the CPU.
The oracle therefore runs in a subprocess with ``ATEN_CPU_CAPABILITY=default``
(no SIMD). On x86-64 that build has no FMA instructions at all, so SGD (only
adds and multiplies) must match bit for bit there; other CPUs may contract.

Adam and RMSprop also take a square root and divide, and neither PyTorch's CPU
``sqrt`` nor the order of its scalar math is pinned down across CPUs and
versions: the last bit of a step may differ, and 20 steps carry it forward.
The tolerance is a forward error bound, not a number that happened to pass:
each step rounds each quantity a few times, each rounding is at most half an
ulp of the largest value that quantity (or the term added to it) held, and
these optimizers' recurrences do not amplify old errors (their coefficients
are at most 1). So an element may differ by ``ROUNDINGS_PER_STEP * STEPS``
ulps of the largest magnitude it reached during the run, which the oracle
records. The final value alone is not enough: a parameter that cancelled to
near 0 has a tiny ulp but carries the rounding of the values of order 1 it was
computed from.
"""

import itertools
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from cupynet import optim
from cupynet.tensor import Tensor

torch = pytest.importorskip("torch")

STEPS = 20
ROUNDINGS_PER_STEP = 4
FMA_FREE_ORACLE = platform.machine().lower() in ("x86_64", "amd64")
SHAPES = ((3, 4), (5,))

_ORACLE = """
import json, sys
import numpy as np, torch
cases, out = json.loads(sys.stdin.read()), {}
for i, case in enumerate(cases):
    rng = np.random.default_rng(case["seed"])
    params = [torch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in case["shapes"]]
    kw = dict(case["kwargs"])
    if "betas" in kw:
        kw["betas"] = tuple(kw["betas"])
    opt = getattr(torch.optim, case["cls"])(params, foreach=False, **kw)
    peak = {}  # the largest magnitude each element held during the run

    def record():
        for j, p in enumerate(params):
            named = {"param": p.detach(), "grad": p.grad, **opt.state[p]}
            for key, value in named.items():
                if value is not None and key != "step":
                    now = np.abs(value.numpy().astype(np.float64))
                    peak[f"{j}/{key}"] = np.maximum(peak.get(f"{j}/{key}", now), now)

    for _ in range(case["steps"]):
        for p, s in zip(params, case["shapes"]):
            p.grad = torch.tensor(rng.standard_normal(s).astype(case["grad_dtype"]).astype(np.float32))
        record()
        opt.step()
        record()
    for j, p in enumerate(params):
        out[f"{i}/{j}/param"] = p.detach().numpy()
        for key, value in opt.state[p].items():
            out[f"{i}/{j}/{key}"] = value.numpy()
    for key, value in peak.items():
        out[f"peak:{i}/{key}"] = value
np.savez(sys.argv[1], **out)
"""


def _case(cls, kwargs, seed, steps=STEPS, grad_dtype="float32"):
    return dict(cls=cls.__name__, kwargs=kwargs, seed=seed, steps=steps, grad_dtype=grad_dtype,
                shapes=[list(s) for s in SHAPES])


def _run_ours(case):
    rng = np.random.default_rng(case["seed"])
    params = [Tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]
    opt = getattr(optim, case["cls"])(params, **case["kwargs"])
    for _ in range(case["steps"]):
        for p, s in zip(params, SHAPES):
            p.grad = Tensor(rng.standard_normal(s).astype(case["grad_dtype"]))
        opt.step()
    return opt, params


def _oracle(cases, tmp_path):
    out = tmp_path / "oracle.npz"
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    subprocess.run([sys.executable, "-c", _ORACLE, str(out)], input=json.dumps(cases), text=True, env=env,
                   check=True, timeout=120)
    return dict(np.load(out))


def _compare(cases, expected, exact=False):
    for i, case in enumerate(cases):
        opt, params = _run_ours(case)
        for j, p in enumerate(params):
            keys = [k.split("/", 2)[2] for k in expected if k.startswith(f"{i}/{j}/")]
            assert set(keys) == {"param", *opt.state[p]}, (case, keys)
            for key in keys:
                mine = p.array if key == "param" else opt.state[p][key].array
                theirs = expected[f"{i}/{j}/{key}"]
                assert mine.dtype == np.float32 and mine.shape == theirs.shape, (case, key)
                if exact:
                    np.testing.assert_array_equal(mine, theirs, err_msg=f"{case} {key}")
                    continue
                allowed = forward_error_bound(expected, f"{i}/{j}", key)
                off = np.abs(mine.astype(np.float64) - theirs)
                assert np.all(off <= allowed), (f"{case} {key}: off by {off.max():.3g} where at most "
                                                f"{allowed.ravel()[np.argmax(off - allowed)]:.3g} is allowed")


def forward_error_bound(expected, prefix, key):
    """``ROUNDINGS_PER_STEP * STEPS`` ulps of the largest magnitude the element (or what fed it) reached.

    The gradient feeds every state and the parameter, and the parameter feeds
    weight decay, so their peaks count for every key. A 0-d state (NAdam's
    ``mu_product``, ASGD's ``eta``/``mu``) is a function of the step count
    alone: only its own peak counts.
    """
    own = expected.get(f"peak:{prefix}/{key}")
    names = {key} if own is not None and own.ndim == 0 else {key, "param", "grad"}
    peaks = [expected[f"peak:{prefix}/{name}"] for name in names if f"peak:{prefix}/{name}" in expected]
    ulp = np.spacing(np.maximum.reduce(peaks).astype(np.float32)).astype(np.float64)
    return ROUNDINGS_PER_STEP * STEPS * ulp


SGD_CASES = [c for c in itertools.product([0.0, 0.9], [0.0, 0.1], [False, True], [0.0, 0.1], [False, True])
             if not (c[2] and (c[0] == 0 or c[1] != 0))]
ADAM_CASES = list(itertools.product([optim.Adam, optim.AdamW], [False, True], [0.0, 0.1], [False, True]))
RMS_CASES = list(itertools.product([False, True], [0.0, 0.9], [0.0, 0.1], [False, True]))


SGD_TORCH_CASES = [_case(optim.SGD, dict(lr=0.05, momentum=m, dampening=d, nesterov=n, weight_decay=wd,
                                         maximize=mx), seed=k) for k, (m, d, n, wd, mx) in enumerate(SGD_CASES)]
OTHER_TORCH_CASES = (
    [_case(cls, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-8, weight_decay=wd, amsgrad=ams, maximize=mx), seed=100 + k)
     for k, (cls, ams, wd, mx) in enumerate(ADAM_CASES)]
    + [_case(optim.RMSprop, dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=wd, momentum=m, centered=c,
                                 maximize=mx), seed=200 + k) for k, (c, m, wd, mx) in enumerate(RMS_CASES)]
    + [_case(optim.Adam, dict(lr=0.01), seed=300, steps=5, grad_dtype="float16")]
)
MORE_TORCH_CASES = (
    [_case(optim.Adagrad, dict(lr=0.05, lr_decay=ld, weight_decay=wd, initial_accumulator_value=acc, maximize=mx),
           seed=400 + k) for k, (ld, wd, acc, mx) in enumerate(itertools.product([0.0, 0.01], [0.0, 0.1],
                                                                                   [0.0, 0.5], [False, True]))]
    + [_case(optim.Adadelta, dict(lr=1.0, rho=rho, weight_decay=wd, maximize=mx), seed=500 + k)
       for k, (rho, wd, mx) in enumerate(itertools.product([0.9, 0.5], [0.0, 0.1], [False, True]))]
    + [_case(optim.Adamax, dict(lr=0.01, betas=(0.8, 0.99), weight_decay=wd, maximize=mx), seed=600 + k)
       for k, (wd, mx) in enumerate(itertools.product([0.0, 0.1], [False, True]))]
    + [_case(optim.NAdam, dict(lr=0.01, betas=(0.8, 0.99), weight_decay=wd, momentum_decay=md,
                               decoupled_weight_decay=dec, maximize=mx), seed=700 + k)
       for k, (wd, md, dec, mx) in enumerate(itertools.product([0.0, 0.1], [4e-3, 0.5], [False, True],
                                                                [False, True]))]
    + [_case(optim.RAdam, dict(lr=0.01, betas=(0.8, b2), weight_decay=wd, decoupled_weight_decay=dec, maximize=mx),
             seed=800 + k)
       # NOTE: beta2 = 0.9 makes rho_t cross 5 at step 6, so both branches of the rectification run
       for k, (b2, wd, dec, mx) in enumerate(itertools.product([0.9, 0.999], [0.0, 0.1], [False, True],
                                                                [False, True]))]
    + [_case(optim.ASGD, dict(lr=0.05, lambd=lam, alpha=0.75, t0=t0, weight_decay=wd, maximize=mx), seed=900 + k)
       for k, (lam, t0, wd, mx) in enumerate(itertools.product([1e-4, 0.1], [1e6, 5.0], [0.0, 0.1],
                                                                [False, True]))]
    + [_case(optim.Rprop, dict(lr=0.01, etas=etas, step_sizes=sizes, maximize=mx), seed=1000 + k)
       for k, (etas, sizes, mx) in enumerate(itertools.product([(0.5, 1.2), (0.3, 1.5)], [(1e-6, 50), (1e-3, 0.02)],
                                                               [False, True]))]
)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """torch.optim's results for every case, computed in one subprocess (one torch start-up)."""
    everything = _oracle(SGD_TORCH_CASES + OTHER_TORCH_CASES + MORE_TORCH_CASES, tmp_path_factory.mktemp("oracle"))
    n_sgd, n_other = len(SGD_TORCH_CASES), len(OTHER_TORCH_CASES)
    return (_cases_from(everything, 0, n_sgd), _cases_from(everything, n_sgd, n_sgd + n_other),
            _cases_from(everything, n_sgd + n_other, None))


def _cases_from(results, first, stop):
    """The oracle's results for cases first..stop-1, renumbered from 0 (peaks keep their prefix)."""
    out = {}
    for key, value in results.items():
        prefix, _, rest = key.rpartition(":")
        index, _, tail = rest.partition("/")
        if int(index) >= first and (stop is None or int(index) < stop):
            out[f"{prefix + ':' if prefix else ''}{int(index) - first}/{tail}"] = value
    return out


def test_sgd_matches_torch(oracle):
    """Bit for bit where the oracle has no FMA (x86-64 default build), else within the forward error bound."""
    _compare(SGD_TORCH_CASES, oracle[0], exact=FMA_FREE_ORACLE)


def test_adam_adamw_rmsprop_match_torch(oracle):
    _compare(OTHER_TORCH_CASES, oracle[1])
    opt, _ = _run_ours(OTHER_TORCH_CASES[0])
    step = next(iter(opt.state.values()))["step"]
    assert step.dtype == np.float32 and step.shape == () and float(step.array) == STEPS


@pytest.mark.parametrize("name", sorted({case["cls"] for case in MORE_TORCH_CASES}))
def test_more_optimizers_match_torch(oracle, name):
    """Same start weights and gradients as torch.optim, 20 steps, within the forward error bound."""
    chosen = [i for i, case in enumerate(MORE_TORCH_CASES) if case["cls"] == name]
    expected = {}
    for new, old in enumerate(chosen):
        expected.update(_cases_from(oracle[2], old, old + 1) if new == 0 else
                        {_renumber(k, new): v for k, v in _cases_from(oracle[2], old, old + 1).items()})
    _compare([MORE_TORCH_CASES[i] for i in chosen], expected)


def _renumber(key, index):
    prefix, _, rest = key.rpartition(":")
    return f"{prefix + ':' if prefix else ''}{index}/{rest.partition('/')[2]}"


def test_step_is_in_place_and_builds_no_graph():
    p = Tensor(np.ones(3, np.float32), requires_grad=True)
    before_array, before_version = p.array, p._version
    p.grad = Tensor(np.ones(3, np.float32))
    optim.SGD([p], lr=0.5).step()
    assert p.array is before_array and p.grad_fn is None and p._version == before_version + 1
    np.testing.assert_array_equal(p.array, np.full(3, 0.5, np.float32))


def test_params_without_grad_are_skipped_and_closure_is_called():
    a, b = Tensor(np.ones(2, np.float32), requires_grad=True), Tensor(np.ones(2, np.float32), requires_grad=True)
    a.grad = Tensor(np.ones(2, np.float32))
    opt = optim.Adam([a, b], lr=0.1)
    assert opt.step(closure=lambda: 42.0) == 42.0
    assert b not in opt.state and np.array_equal(b.array, np.ones(2, np.float32))
    assert not np.array_equal(a.array, np.ones(2, np.float32))


def test_zero_grad_variants():
    p = Tensor(np.ones(2, np.float32), requires_grad=True)
    p.grad = Tensor(np.ones(2, np.float32))
    opt = optim.SGD([p], lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert np.array_equal(p.grad.array, np.zeros(2, np.float32))
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_override_defaults():
    a, b = Tensor(np.ones(1, np.float32), requires_grad=True), Tensor(np.ones(1, np.float32), requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0}], lr=0.5)
    a.grad, b.grad = Tensor(np.ones(1, np.float32)), Tensor(np.ones(1, np.float32))
    opt.step()
    assert a.array[0] == 0.5 and b.array[0] == 0.0
    c = Tensor(np.ones(1, np.float32), requires_grad=True)
    opt.add_param_group({"params": [c], "momentum": 0.9})
    assert opt.param_groups[2]["lr"] == 0.5 and opt.param_groups[2]["momentum"] == 0.9


@pytest.mark.parametrize("make,message", [
    (lambda ps: optim.SGD(ps, lr=-1.0), "SGD: Invalid learning rate: -1.0"),
    (lambda ps: optim.SGD(ps, momentum=-0.5), "Invalid momentum value"),
    (lambda ps: optim.SGD(ps, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda ps: optim.SGD(ps, weight_decay=-1), "Invalid weight_decay value"),
    (lambda ps: optim.Adam(ps, betas=(1.0, 0.9)), "Adam: Invalid beta parameter at index 0: 1.0"),
    (lambda ps: optim.AdamW(ps, betas=(0.9, -0.1)), "AdamW: Invalid beta parameter at index 1"),
    (lambda ps: optim.Adam(ps, eps=-1e-8), "Invalid epsilon value"),
    (lambda ps: optim.Adam(ps, betas=(0.9,)), "betas must be a pair"),
    (lambda ps: optim.RMSprop(ps, alpha=-0.1), "RMSprop: Invalid alpha value"),
    (lambda ps: optim.SGD(ps, lr=float("nan")), "expected a real number"),
    (lambda ps: optim.SGD(ps, fused="yes"), "fused must be None, True or False"),
    (lambda ps: optim.Adagrad(ps, lr=-1), "Adagrad: Invalid learning rate: -1"),
    (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Adagrad: Invalid lr_decay value: -1"),
    (lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda ps: optim.Adagrad(ps, eps=-1), "Adagrad: Invalid epsilon value: -1"),
    (lambda ps: optim.Adadelta(ps, rho=1.5), "Adadelta: Invalid rho value: 1.5"),
    (lambda ps: optim.Adadelta(ps, weight_decay=-1), "Adadelta: Invalid weight_decay value: -1"),
    (lambda ps: optim.Adamax(ps, betas=(0.9, 1.0)), "Adamax: Invalid beta parameter at index 1: 1.0"),
    (lambda ps: optim.NAdam(ps, momentum_decay=-1), "NAdam: Invalid momentum_decay value: -1"),
    (lambda ps: optim.NAdam(ps, differentiable=True), "differentiable=True is not supported"),
    (lambda ps: optim.RAdam(ps, betas=(-0.1, 0.9)), "RAdam: Invalid beta parameter at index 0: -0.1"),
    (lambda ps: optim.RAdam(ps, foreach="yes"), "foreach must be None, True or False"),
    (lambda ps: optim.ASGD(ps, lr=-0.5), "ASGD: Invalid learning rate: -0.5"),
    (lambda ps: optim.Rprop(ps, etas=(1.5, 1.2)), "Rprop: Invalid eta values: 1.5, 1.2"),
    (lambda ps: optim.Rprop(ps, step_sizes=(1e-6,)), "step_sizes must be a pair"),
])
def test_bad_hyperparameters_are_rejected(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make([Tensor(np.ones(1, np.float32), requires_grad=True)])


def test_bad_params_are_rejected():
    p = Tensor(np.ones(1, np.float32), requires_grad=True)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got a Tensor"):
        optim.SGD(p)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([])
    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is ndarray"):
        optim.SGD([np.ones(2)])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2])
    with pytest.raises(TypeError, match="floating point"):
        optim.SGD([Tensor(np.ones(2, np.int64))])
    opt = optim.SGD([p])
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.add_param_group({"params": [Tensor(np.ones(1, np.float32))], "lr": -2})
    assert len(opt.param_groups) == 1


def test_required_lr_must_be_given_by_each_group():
    class Plain(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": optim.required})

    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Plain([Tensor(np.ones(1, np.float32))])
    with pytest.raises(NotImplementedError, match="must implement"):
        Plain([{"params": [Tensor(np.ones(1, np.float32))], "lr": 1.0}]).step()


def test_bad_grad_is_rejected_before_any_update():
    a, b = Tensor(np.ones(2, np.float32), requires_grad=True), Tensor(np.ones(3, np.float32), requires_grad=True)
    a.grad, b.grad = Tensor(np.ones(2, np.float32)), Tensor(np.ones(2, np.float32))
    opt = optim.Adam([a, b], lr=0.1)
    with pytest.raises(ValueError, match=r"Adam.step: parameter 1 has shape \(3,\) but its grad has shape \(2,\)"):
        opt.step()
    assert np.array_equal(a.array, np.ones(2, np.float32)) and len(opt.state) == 0

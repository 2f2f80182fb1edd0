"""The AMP hook of the optimizers: step(found_inf=...) skips on the device, no host sync; fused == unfused."""

import numpy as np
import pytest

import cupynet
from cupynet import optim
from cupynet.tensor import Tensor

SHAPES = ((4, 3), (7,), (2, 2, 2))


class NoSync(np.ndarray):
    """A found_inf that raises if anything reads its value on the host."""

    def _refuse(self, *args, **kwargs):
        raise AssertionError("host read of found_inf")

    __bool__ = __float__ = __int__ = __index__ = item = tolist = _refuse


def _flag(value):
    return np.array([value], np.float32).view(NoSync)


def _params(seed, grad_dtype=np.float32):
    rng = np.random.default_rng(seed)
    params = [Tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]
    for p in params:
        p.grad = Tensor(rng.standard_normal(p.shape).astype(grad_dtype))
    return params


def _regrad(params, seed, grad_dtype=np.float32):
    rng = np.random.default_rng(seed)
    for p in params:
        p.grad = Tensor(rng.standard_normal(p.shape).astype(grad_dtype))


def _snapshot(opt, params):
    state = {(i, k): np.array(v.array, copy=True) for i, p in enumerate(params)
             for k, v in opt.state.get(p, {}).items() if isinstance(v, Tensor)}
    return [np.array(p.array, copy=True) for p in params], state


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


MAKERS = {
    "sgd": lambda ps, fused=None: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01, fused=fused),
    "sgd_nesterov": lambda ps, fused=None: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, fused=fused),
    "sgd_plain": lambda ps, fused=None: optim.SGD(ps, lr=0.1, fused=fused),
    "adam": lambda ps, fused=None: optim.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True, fused=fused),
    "adamw": lambda ps, fused=None: optim.AdamW(ps, lr=0.01, maximize=True, fused=fused),
    "rmsprop": lambda ps, fused=None: optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    "adagrad": lambda ps: optim.Adagrad(ps, lr=0.05, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1),
    "adadelta": lambda ps: optim.Adadelta(ps, weight_decay=0.01, maximize=True),
    "adamax": lambda ps: optim.Adamax(ps, weight_decay=0.01),
    "nadam": lambda ps: optim.NAdam(ps, weight_decay=0.01, decoupled_weight_decay=True),
    "radam": lambda ps: optim.RAdam(ps, betas=(0.9, 0.9), weight_decay=0.01),
    "asgd": lambda ps: optim.ASGD(ps, lambd=0.1, t0=1.0, weight_decay=0.01),
    "rprop": lambda ps: optim.Rprop(ps, maximize=True),
}
NEW = ["adagrad", "adadelta", "adamax", "nadam", "radam", "asgd", "rprop"]


@pytest.fixture
def no_host_sync(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("host sync inside optimizer.step")

    for name in ("item", "__float__", "__bool__", "__int__", "tolist"):
        monkeypatch.setattr(cupynet.Tensor, name, refuse)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_found_inf_set_changes_nothing_bitwise(name, no_host_sync):
    params = _params(0)
    opt = MAKERS[name](params)
    opt.step(found_inf=_flag(0.0))  # state exists now
    _regrad(params, 1)
    params[0].grad.array[0, 0] = np.inf
    params[1].grad.array[3] = np.nan
    before = _snapshot(opt, params)
    opt.step(found_inf=_flag(1.0))
    after = _snapshot(opt, params)
    assert all(_same_bits(a, b) for a, b in zip(before[0], after[0]))
    assert before[1].keys() == after[1].keys()
    assert all(_same_bits(before[1][k], after[1][k]) for k in before[1])


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_found_inf_clear_equals_plain_step(name, no_host_sync):
    a, b = _params(2), _params(2)
    opt_a, opt_b = MAKERS[name](a), MAKERS[name](b)
    for seed in (3, 4, 5):
        opt_a.step(found_inf=_flag(0.0))
        opt_b.step()
        _regrad(a, seed)
        _regrad(b, seed)
    snap_a, snap_b = _snapshot(opt_a, a), _snapshot(opt_b, b)
    assert all(_same_bits(x, y) for x, y in zip(snap_a[0], snap_b[0]))
    for key, value in snap_b[1].items():
        assert _same_bits(snap_a[1][key], value), key


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop"] + NEW)
def test_skipped_first_step_then_taken_step_equals_one_plain_step(name):
    # NOTE: GradScaler often skips the very first steps; the buffers must then start as PyTorch's first step
    a, b = _params(6), _params(6)
    opt_a, opt_b = MAKERS[name](a), MAKERS[name](b)
    grads = [np.array(p.grad.array, copy=True) for p in a]
    for p in a:
        p.grad.array[...] = np.nan
    opt_a.step(found_inf=_flag(1.0))
    opt_a.step(found_inf=_flag(1.0))
    for p, g in zip(a, grads):
        p.grad = Tensor(g.copy())
    opt_a.step(found_inf=_flag(0.0))
    opt_b.step()
    for p, q in zip(a, b):
        assert _same_bits(p.array, q.array)
    if "step" in opt_b.state[b[0]]:
        assert float(opt_a.state[a[0]]["step"].array) == 1.0


def test_step_counter_advances_only_on_taken_steps():
    params = _params(7)
    opt = optim.Adam(params, lr=0.01)
    for flag in (0.0, 1.0, 1.0, 0.0, 1.0):
        opt.step(found_inf=_flag(flag))
    assert all(float(opt.state[p]["step"].array) == 2.0 for p in params)


def test_shared_step_is_copied_for_params_not_stepped():
    params = _params(8)
    opt = optim.Adam(params, lr=0.01)
    opt.step()
    params[1].grad = None
    opt.step()
    counts = [float(opt.state[p]["step"].array) for p in params]
    assert counts == [2.0, 1.0, 2.0]


def test_found_inf_is_validated():
    params = _params(9)
    opt = optim.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match=r"SGD.step: found_inf must be a float32 array of shape \(1,\)"):
        opt.step(found_inf=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="found_inf must be a float32"):
        opt.step(found_inf=np.zeros(1, np.float64))
    with pytest.raises(TypeError, match="found_inf must be a float32 array"):
        opt.step(found_inf=0.0)
    assert all(p._version == 0 for p in params)
    opt.step(found_inf=Tensor(np.zeros(1, np.float32)))  # a Tensor is accepted too
    assert all(p._version == 1 for p in params)


def test_step_supports_amp_scaling_flag():
    assert all(cls._step_supports_amp_scaling for cls in (optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop,
                                                          optim.Adagrad, optim.Adadelta, optim.Adamax, optim.NAdam,
                                                          optim.RAdam, optim.ASGD, optim.Rprop))
    assert not optim.Optimizer._step_supports_amp_scaling
    assert not optim.LBFGS._step_supports_amp_scaling  # needs a closure, which GradScaler.step refuses (as torch)


@pytest.mark.parametrize("name", NEW)
def test_grad_scaler_step_unscales_and_skips(name):
    """GradScaler.step: a finite step equals a plain step on the unscaled grads; an inf step changes nothing."""
    scaler = cupynet.amp.GradScaler("cpu", init_scale=4.0)
    scaled, plain = _params(12), _params(12)
    opt_s, opt_p = MAKERS[name](scaled), MAKERS[name](plain)
    scaler.scale(Tensor(np.ones((), np.float32)))  # the scale exists once a loss was scaled
    for p in scaled:
        p.grad = Tensor(p.grad.array * np.float32(4.0))  # what scale(loss).backward() leaves: exact (power of 2)
    scaler.step(opt_s)
    scaler.update()
    opt_p.step()
    assert all(_same_bits(p.array, q.array) for p, q in zip(scaled, plain))
    before = _snapshot(opt_s, scaled)
    _regrad(scaled, 13)
    scaled[0].grad.array[0, 0] = np.inf
    scaler.step(opt_s)
    scaler.update()
    after = _snapshot(opt_s, scaled)
    assert all(_same_bits(a, b) for a, b in zip(before[0], after[0]))
    assert all(_same_bits(before[1][k], after[1][k]) for k in before[1])
    assert scaler.get_scale() == 2.0


FUSED = ["sgd", "sgd_nesterov", "sgd_plain", "adam", "adamw"]


@pytest.mark.parametrize("name", FUSED)
@pytest.mark.parametrize("grad_dtype", [np.float32, np.float16])
def test_fused_reference_path_matches_unfused(name, grad_dtype, monkeypatch):
    kernels = pytest.importorskip("cupynet.optim.kernels")
    calls = []
    for fn in ("fused_sgd_", "fused_adam_"):
        real = getattr(kernels, fn)
        monkeypatch.setattr(kernels, fn, lambda *a, _real=real, **k: calls.append(1) or _real(*a, **k))
    fused_params, plain_params = _params(10, grad_dtype), _params(10, grad_dtype)
    fused, plain = MAKERS[name](fused_params, fused=True), MAKERS[name](plain_params, fused=False)
    flags = (0.0, 1.0, 0.0, 0.0, 1.0, 0.0)
    for k, flag in enumerate(flags):
        fused.step(found_inf=np.array([flag], np.float32))
        plain.step(found_inf=np.array([flag], np.float32))
        _regrad(fused_params, 20 + k, grad_dtype)
        _regrad(plain_params, 20 + k, grad_dtype)
    assert len(calls) >= len(flags)  # the fused kernels (their NumPy reference on the CPU) really ran
    for p, q in zip(fused_params, plain_params):
        np.testing.assert_allclose(p.array, q.array, rtol=1e-6, atol=1e-7)
        for key, value in plain.state[q].items():
            np.testing.assert_allclose(fused.state[p][key].array, value.array, rtol=1e-6, atol=1e-7, err_msg=key)


def test_fused_true_needs_fp32_params():
    pytest.importorskip("cupynet.optim.kernels")
    half = Tensor(np.ones(3, np.float16), requires_grad=True)
    with pytest.raises(ValueError, match="fused=True requires contiguous float32 parameters"):
        optim.Adam([half], fused=True)


def test_fused_none_on_cpu_uses_per_parameter_path(monkeypatch):
    kernels = pytest.importorskip("cupynet.optim.kernels")

    def boom(*args, **kwargs):
        raise AssertionError("fused kernel called for CPU params with fused=None")

    monkeypatch.setattr(kernels, "fused_adam_", boom)
    params = _params(11)
    optim.Adam(params).step()


def test_fp16_params_keep_dtype_with_fp32_state():
    p = Tensor(np.ones(4, np.float16), requires_grad=True)
    p.grad = Tensor(np.full(4, 0.5, np.float16))
    opt = optim.Adam([p], lr=0.1)
    opt.step()
    assert p.dtype == np.float16 and opt.state[p]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(p.array.astype(np.float32), np.full(4, 0.9, np.float32), rtol=1e-3)

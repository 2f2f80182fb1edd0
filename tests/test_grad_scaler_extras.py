"""GradScaler beyond PyTorch: hysteresis, min/max scale, on_min_scale, history, overflow attribution, replay."""

import numpy as np
import pytest
from op_harness import DEVICES

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler
from cupynet.amp.diagnostics import ScalerDiagnostics, format_overflow


def _iteration(scaler, model, opt, bad=None, value=np.inf):
    """One AMP iteration; ``bad`` names a parameter whose gradient gets ``value`` planted."""
    opt.zero_grad()
    scaler.scale(model(cn.ones(2, 4)).sum()).backward()
    if bad is not None:
        dict(model.named_parameters())[bad].grad.array.reshape(-1)[0] = value
    result = scaler.step(opt)
    scaler.update()
    return result


def _model():
    cn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3))
    return model, optim.SGD(model.parameters(), lr=0.01)


def test_hysteresis_backs_off_only_after_consecutive_overflows():
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=64.0, growth_interval=100, hysteresis=2)
    trace = []
    for bad in ("0.weight", None, "0.weight", "0.weight", "0.weight", "0.weight"):
        _iteration(scaler, model, opt, bad)
        trace.append(scaler.get_scale())
    # overflow (1 of 2), clean resets, two in a row -> back off, again two in a row -> back off
    assert trace == [64.0, 64.0, 64.0, 32.0, 32.0, 16.0]
    assert scaler.skipped_steps() == 5


def test_min_and_max_scale_bounds():
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=4.0, growth_interval=1, min_scale=1.0, max_scale=16.0)
    for _ in range(4):
        _iteration(scaler, model, opt)
    assert scaler.get_scale() == 16.0
    for _ in range(6):
        _iteration(scaler, model, opt, "2.bias")
    assert scaler.get_scale() == 1.0


@pytest.mark.parametrize("action", ["warn", "raise"])
def test_on_min_scale_is_reported_at_the_next_host_read(action):
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=2.0, min_scale=1.0, on_min_scale=action)
    _iteration(scaler, model, opt, "0.bias")  # 2 -> 1: no clamp
    assert scaler.get_scale() == 1.0
    _iteration(scaler, model, opt, "0.bias")  # would go to 0.5: clamped
    if action == "warn":
        with pytest.warns(RuntimeWarning, match="Minimum loss scale reached"):
            assert scaler.get_scale() == 1.0
        scaler.check_min_scale()  # reported once only
    else:
        with pytest.raises(FloatingPointError, match="probably diverging.*lower.*learning rate.*bfloat16"):
            scaler.check_min_scale()


def test_ignore_never_reads_min_hit():
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=1.0, min_scale=1.0)
    _iteration(scaler, model, opt, "0.bias")
    scaler.check_min_scale()
    assert scaler.get_scale() == 1.0


def test_history_ring_buffer_keeps_last_n_steps():
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=8.0, growth_interval=1, history_size=3)
    for bad in (None, "0.weight", None, None, "2.weight"):
        _iteration(scaler, model, opt, bad)
    assert scaler.history() == [(3, 8.0, False), (4, 16.0, False), (5, 32.0, True)]
    with pytest.raises(RuntimeError, match="history_size=N"):
        GradScaler("cpu").history()


def test_last_overflow_names_the_layer_from_a_registered_model():
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=8.0)
    scaler.register_model(model)
    assert scaler.last_overflow() == []
    _iteration(scaler, model, opt, "2.weight", np.inf)
    report = scaler.last_overflow()
    assert report == [("2.weight", 1, 0)] and report.step == 1
    _iteration(scaler, model, opt)  # a clean step keeps the last overflow
    opt.zero_grad()
    scaler.scale(model(cn.ones(2, 4)).sum()).backward()
    model[0].bias.grad.array[:2] = np.nan
    model[2].bias.grad.array[0] = -np.inf
    scaler.step(opt)  # read before update(): the current iteration counts
    report = scaler.last_overflow()
    assert sorted(report) == [("0.bias", 0, 2), ("2.bias", 1, 0)] and report.step == 3
    assert format_overflow(report).startswith("overflow at step 3 in 2 tensors: ")
    assert format_overflow([]) == "no overflow recorded"


def test_last_overflow_name_sources():
    model, _ = _model()
    named = list(model.named_parameters())
    opt = optim.SGD([{"params": [p for _, p in named], "param_names": [f"net.{n}" for n, _ in named]}], lr=0.1)
    scaler = GradScaler("cpu")
    _iteration(scaler, model, opt, "0.weight")
    assert scaler.last_overflow() == [("net.0.weight", 1, 0)]  # the optimizer's param_names win
    opt2 = optim.SGD(model.parameters(), lr=0.1)
    scaler2 = GradScaler("cpu")
    _iteration(scaler2, model, opt2, "2.bias")
    assert scaler2.last_overflow() == [("param[3]", 1, 0)]
    assert scaler2.last_overflow(model.named_parameters()) == [("2.bias", 1, 0)]
    with pytest.raises(TypeError, match="named_parameters"):
        scaler2.register_model(42)


@pytest.mark.parametrize("device", DEVICES)
def test_overflow_steps_count_every_overflowing_step_between_two_reads(device):
    """Several overflowing steps between reads: each layer's count is the number of steps it overflowed in."""
    cn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)).to(device)
    opt = optim.SGD(model.parameters(), lr=0.01)
    scaler = GradScaler(device, init_scale=2.0**10, growth_interval=1000)
    scaler.register_model(model)
    assert scaler.overflow_steps() == {}
    # 0.weight overflows in 3 steps, 2.bias in 1 (one of them shared), with clean steps between
    plan = [{"0.weight": np.inf}, {}, {"0.weight": np.nan, "2.bias": -np.inf}, {}, {}, {"0.weight": np.inf}]
    for bad in plan:
        opt.zero_grad()
        scaler.scale(model(cn.ones(2, 4, device=device)).sum()).backward()
        params = dict(model.named_parameters())
        for name, value in bad.items():
            grad = params[name].grad.array
            grad.reshape(-1)[:2] = value  # NOTE: two elements: a step counts once, not per element
        scaler.step(opt)
        scaler.update()
    assert scaler.overflow_steps() == {"0.weight": 3, "2.bias": 1}
    assert scaler.skipped_steps() == 3  # the distinct overflowing steps
    assert scaler.last_overflow() == [("0.weight", 2, 0)] and scaler.last_overflow().step == 6
    assert scaler.overflow_steps() == scaler.diagnostics.overflow_steps()  # reading does not reset them
    model[2].bias.requires_grad_(False)  # another set of gradients: another record, whose counts add up
    opt.zero_grad(set_to_none=True)
    scaler.scale(model(cn.ones(2, 4, device=device)).sum()).backward()
    assert model[2].bias.grad is None
    model[0].weight.grad.array.reshape(-1)[0] = np.inf
    scaler.step(opt)
    scaler.update()
    model[2].bias.requires_grad_(True)
    assert len(scaler.diagnostics.overflow.records) == 2
    assert scaler.overflow_steps() == {"0.weight": 4, "2.bias": 1}
    named = GradScaler(device, init_scale=2.0**10)  # no registered model: the index, or the names given
    opt.zero_grad()
    named.scale(model(cn.ones(2, 4, device=device)).sum()).backward()
    model[2].bias.grad.array[0] = np.nan
    named.step(opt)
    named.update()
    assert named.overflow_steps() == {"param[3]": 1}
    assert named.overflow_steps(model.named_parameters()) == {"2.bias": 1}


def test_diagnostics_are_an_object_the_scaler_holds():
    assert GradScaler.__mro__ == (GradScaler, object)  # one class, no mixins (issue 19)
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=8.0, history_size=2)
    assert isinstance(scaler.diagnostics, ScalerDiagnostics)
    scaler.register_model(model)
    assert scaler.diagnostics.name_sources == [model]
    _iteration(scaler, model, opt, "2.bias")
    _iteration(scaler, model, opt)
    assert scaler.last_overflow() == scaler.diagnostics.last_overflow() == [("2.bias", 1, 0)]
    assert scaler.history() == scaler.diagnostics.history(2) == [(1, 8.0, True), (2, 4.0, False)]


def test_extra_state_round_trip_continues_bit_for_bit():
    kw = dict(init_scale=32.0, growth_interval=2, hysteresis=2, min_scale=2.0, max_scale=64.0, history_size=4)
    plan = [None, "0.weight", "0.weight", None, None, None, "2.bias", None]
    model, opt = _model()
    a = GradScaler("cpu", **kw)
    for bad in plan[:4]:
        _iteration(a, model, opt, bad)
    sd = a.state_dict()
    assert set(sd) > {"scale", "hysteresis", "_skipped_steps", "_history", "_step"}
    b = GradScaler("cpu")
    b.load_state_dict(sd)
    for bad in plan[4:]:
        _iteration(a, model, opt, bad)
        _iteration(b, model, opt, bad)
    assert a.state_dict() == b.state_dict() and a.history() == b.history()
    assert a.skipped_steps() == 3


def test_default_options_keep_torch_keys_only():
    model, opt = _model()
    scaler = GradScaler("cpu")
    _iteration(scaler, model, opt, "0.weight")
    assert set(scaler.state_dict()) == {"scale", "growth_factor", "backoff_factor", "growth_interval",
                                        "_growth_tracker"}
    assert scaler.skipped_steps() == 1


def test_unscale_grads_without_an_optimizer():
    w = cn.tensor([1.0, 2.0], requires_grad=True)
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale((w * w).sum()).backward()
    found = scaler.unscale_grads([w])
    assert found.item() == 0.0
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="already been called on these parameters"):
        scaler.unscale_grads([w])
    scaler.update()
    assert scaler.get_scale() == 4.0


def test_batch_replay_recipe():
    """Documented in docs/amp.md: replay an overflowing batch at the backed-off scale."""
    model, opt = _model()
    scaler = GradScaler("cpu", init_scale=2.0 ** 100)
    x = cn.ones(2, 4)
    replays = 0
    while True:
        opt.zero_grad()
        loss = model(x * 1e30).sum()
        with np.errstate(over="ignore", invalid="ignore"):
            scaler.scale(loss).backward()
        _, found_inf = scaler.step(opt, return_found_inf=True)
        scaler.update()
        if found_inf.item() == 0 or replays == 200:
            break
        replays += 1
    assert 0 < replays < 200 and np.isfinite(model[0].weight.detach().numpy()).all()

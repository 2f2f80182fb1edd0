"""GradScaler: PyTorch's state machine and error texts, state dicts, pickling, bad inputs, host-sync counts."""

import pickle
import warnings

import numpy as np
import pytest

import cupynet as cn
from cupynet import backend, nn, optim
from cupynet.amp import GradScaler
from cupynet.tensor import Tensor


@pytest.fixture
def syncs(monkeypatch):
    """Counts host reads: backend.to_numpy calls and Tensor.item calls (an item counts once)."""
    counter = {"n": 0}
    inside_item = []
    real_to_numpy, real_item = backend.to_numpy, Tensor.item

    def to_numpy(a):
        if not inside_item:
            counter["n"] += 1
        return real_to_numpy(a)

    def item(self):
        counter["n"] += 1
        inside_item.append(1)
        try:
            return real_item(self)
        finally:
            inside_item.pop()

    monkeypatch.setattr(backend, "to_numpy", to_numpy)
    monkeypatch.setattr(Tensor, "item", item)
    return counter


class ThirdPartySGD:
    """An optimizer without the on-device skip (no _step_supports_amp_scaling): PyTorch's path."""

    def __init__(self, params, lr=0.1):
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.calls = 0

    def step(self):
        self.calls += 1
        for p in self.param_groups[0]["params"]:
            if p.grad is not None:
                p.array[...] = p.array - self.param_groups[0]["lr"] * p.grad.array
        return "stepped"


def _setup(opt_cls=optim.SGD, **scaler_kw):
    cn.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = opt_cls(model.parameters(), lr=0.1)
    scaler = GradScaler("cpu", **scaler_kw)
    return model, opt, scaler


def _backward(model, scaler, inf=False):
    for p in model.parameters():
        p.grad = None
    loss = model(cn.ones(2, 4)).sum()
    scaler.scale(loss).backward()
    if inf:
        model.weight.grad.array[0, 0] = np.inf


# ---- constructor and lazy state ----------------------------------------------------------------------
def test_defaults_and_lazy_init():
    scaler = GradScaler("cpu")
    assert scaler.get_scale() == 2.0 ** 16 and scaler._scale is None and scaler.is_enabled()
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (2.0, 0.5, 2000)
    out = scaler.scale(cn.tensor(3.0))
    assert out.item() == 3.0 * 2 ** 16 and out.shape == ()
    assert scaler._scale.dtype == np.float32 and scaler._scale.shape == ()
    assert scaler._growth_tracker.dtype == np.int32


def test_device_none_is_the_default_device():
    assert GradScaler()._device == backend.default_device().type


@pytest.mark.parametrize("args, kwargs", [
    ((1024.0,), {}),
    ((1024,), {}),
    ((512.0, 3.0, 0.25, 7, True), {}),
    ((512.0,), {"growth_interval": 3, "enabled": False}),
])
def test_torch_cuda_amp_signature_scale_first_is_accepted(args, kwargs):
    """``GradScaler(1024.)`` as ``torch.cuda.amp.GradScaler``; the same settings as torch's class of that form."""
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own: deprecation, and no CUDA here
        torch.cuda.amp.GradScaler(*args, **kwargs)  # the form is torch's: it constructs there too
    ref = torch.amp.GradScaler("cpu", *args, **kwargs)  # what torch.cuda.amp forwards to, on a device we have
    scaler = GradScaler(*args, **kwargs)
    assert scaler._device == backend.default_device().type
    assert scaler.is_enabled() == ref.is_enabled() == kwargs.get("enabled", True)
    if ref.is_enabled():
        assert (scaler._init_scale, scaler.get_growth_factor(), scaler.get_backoff_factor(),
                scaler.get_growth_interval()) == (ref._init_scale, ref._growth_factor, ref._backoff_factor,
                                                  ref._growth_interval)
    else:
        assert (scaler._init_scale, scaler.get_growth_interval()) == (args[0], kwargs["growth_interval"])


def test_torch_amp_signature_device_first_still_works_positionally():
    scaler = GradScaler("cpu", 8.0, 3.0, 0.25, 5, True)
    assert scaler._device == "cpu" and scaler.get_scale() == 8.0
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 5)
    assert GradScaler(init_scale=16.0, device="cpu").get_scale() == 16.0


@pytest.mark.parametrize("args, kwargs, text", [
    ((1024.0,), {"init_scale": 2.0}, "GradScaler: multiple values for argument 'init_scale'"),
    (("cpu",), {"scale": 2.0}, "GradScaler: got an unexpected keyword argument 'scale'"),
    ((1024.0, 2.0, 0.5, 10, True, "extra"), {}, "GradScaler: too many positional arguments"),
])
def test_constructor_signature_errors_name_both_forms(args, kwargs, text):
    with pytest.raises(TypeError) as info:
        GradScaler(*args, **kwargs)
    assert text in str(info.value) and "torch.cuda.amp's" in str(info.value)


@pytest.mark.parametrize("kwargs, error, text", [
    ({"growth_factor": 1.0}, ValueError, "The growth factor must be > 1.0"),
    ({"growth_factor": 0.5}, ValueError, "growth_factor=0.5"),
    ({"backoff_factor": 1.0}, ValueError, "The backoff factor must be < 1.0"),
    ({"backoff_factor": 0.0}, ValueError, "must be > 0"),
    ({"growth_interval": 0}, ValueError, "growth_interval must be an integer in [1"),
    ({"growth_interval": 2.5}, TypeError, "growth_interval must be an int, got float 2.5"),
    ({"growth_interval": True}, TypeError, "growth_interval must be an int"),
    ({"init_scale": -1.0}, ValueError, "init_scale must be in (0"),
    ({"init_scale": float("inf")}, ValueError, "init_scale must be finite"),
    ({"hysteresis": 0}, ValueError, "hysteresis must be an integer in [1"),
    ({"min_scale": 10.0, "max_scale": 1.0}, ValueError, "min_scale=10.0 is larger than max_scale=1.0"),
    ({"on_min_scale": "explode"}, ValueError, "on_min_scale must be one of"),
    ({"history_size": -1}, ValueError, "history_size must be an integer in [0"),
    ({"device": "tpu"}, ValueError, "device must be 'cpu', 'cuda'"),
    ({"enabled": "yes"}, TypeError, "enabled must be a bool"),
])
def test_bad_constructor_arguments(kwargs, error, text):
    with pytest.raises(error, match=None) as info:
        GradScaler(**{"device": "cpu", **kwargs})
    assert text in str(info.value)


def test_setters_validate_and_leave_state_unchanged():
    scaler = GradScaler("cpu")
    for setter, bad in ((scaler.set_growth_factor, 0.9), (scaler.set_backoff_factor, 1.5),
                        (scaler.set_growth_interval, 0)):
        with pytest.raises(ValueError):
            setter(bad)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (2.0, 0.5, 2000)
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 7)


def test_cuda_scaler_without_gpu_warns_and_disables():
    if backend.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        scaler = GradScaler("cuda")
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


# ---- scale() -------------------------------------------------------------------------------------------
def test_scale_structures_and_errors():
    scaler = GradScaler("cpu", init_scale=4.0)
    a, b = cn.tensor(1.0), cn.tensor([2.0, 3.0])
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[1][0].numpy(), [8.0, 12.0])
    lazy = scaler.scale(iter([a, b]))
    assert not isinstance(lazy, (list, tuple)) and [t.numpy().tolist() for t in lazy] == [4.0, [8.0, 12.0]]
    for bad in (1.0, "loss", [a, 2.0]):
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
            scaler.scale(bad)


def test_scale_is_differentiable():
    scaler = GradScaler("cpu", init_scale=8.0)
    w = cn.tensor([1.0, 2.0], requires_grad=True)
    scaler.scale((w * w).sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [16.0, 32.0])


def test_disabled_scaler_is_a_no_op():
    model, opt, _ = _setup()
    scaler = GradScaler("cpu", enabled=False)
    loss = model(cn.ones(2, 4)).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    before = model.weight.detach().numpy().copy()
    scaler.unscale_(opt)
    assert scaler.step(opt) is None and scaler.update() is None
    assert not np.array_equal(before, model.weight.detach().numpy())
    assert scaler.state_dict() == {} and scaler.get_scale() == 1.0 and scaler.skipped_steps() == 0


# ---- the state machine ------------------------------------------------------------------------------------
def test_methods_before_scale_raise_pytorch_assertions():
    _, opt, scaler = _setup()
    for call, name in ((lambda: scaler.unscale_(opt), "unscale_"), (lambda: scaler.step(opt), "step"),
                       (scaler.update, "update")):
        with pytest.raises(AssertionError, match=f"Attempted {name} but _scale is None"):
            call()


def test_stage_errors():
    model, opt, scaler = _setup()
    _backward(model, scaler)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)\."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)\."):
        scaler.step(opt)
    scaler.update()
    _backward(model, scaler)
    scaler.step(opt)  # a fresh iteration is READY again


def test_closure_and_no_grads_and_no_inf_checks():
    model, opt, scaler = _setup()
    scaler.scale(cn.tensor(1.0))
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer."):
        scaler.step(opt)  # no parameter has a grad


def test_fp16_gradients_are_refused_before_anything_changes():
    w32 = cn.tensor([1.0, 2.0], requires_grad=True)
    w16 = cn.tensor(np.ones(2, np.float16), requires_grad=True)
    opt = optim.SGD([w32, w16], lr=0.1)
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale(cn.tensor(1.0))
    w32.grad, w16.grad = cn.tensor([4.0, 8.0]), cn.tensor(np.ones(2, np.float16))
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(opt)
    np.testing.assert_array_equal(w32.grad.numpy(), [4.0, 8.0])  # untouched


def test_update_with_new_scale():
    model, opt, scaler = _setup(init_scale=4.0)
    _backward(model, scaler)
    scaler.step(opt)
    scaler.update(1024.0)
    assert scaler.get_scale() == 1024.0
    scaler.update(cn.tensor([8.0]))
    assert scaler.get_scale() == 8.0
    for bad, error in ((cn.tensor([1.0, 2.0]), ValueError), (cn.tensor(2.0, requires_grad=True), ValueError),
                       ("big", TypeError), (-3.0, ValueError)):
        with pytest.raises(error, match="new_scale should be a float or a 1-element"):
            scaler.update(bad)
    assert scaler.get_scale() == 8.0


# ---- state dicts ------------------------------------------------------------------------------------------
def test_state_dict_has_torch_keys_with_and_without_lazy_init():
    scaler = GradScaler("cpu", init_scale=3.0, growth_interval=7)
    assert scaler.state_dict() == {"scale": 3.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 7, "_growth_tracker": 0}
    model, opt, _ = _setup()
    _backward(model, scaler)
    scaler.step(opt)
    scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 3.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 7,
                  "_growth_tracker": 1}
    for lazy in (True, False):
        other = GradScaler("cpu")
        if not lazy:
            other.scale(cn.tensor(1.0))
        other.load_state_dict(sd)
        assert other.state_dict() == sd and other._get_growth_tracker() == 1


def test_state_dict_round_trips_through_torch():
    torch = pytest.importorskip("torch")
    scaler = GradScaler("cpu", init_scale=256.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    model, opt, _ = _setup()
    for inf in (False, True, False):
        _backward(model, scaler, inf)
        scaler.step(opt)
        scaler.update()
    theirs = torch.amp.GradScaler("cpu")
    theirs.load_state_dict(scaler.state_dict())
    assert theirs.state_dict() == scaler.state_dict()
    back = GradScaler("cpu")
    back.load_state_dict(theirs.state_dict())
    assert back.state_dict() == scaler.state_dict()


def test_empty_state_dict_uses_torch_message():
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler."):
        GradScaler("cpu").load_state_dict({})
    GradScaler("cpu", enabled=False).load_state_dict({})  # a disabled scaler ignores it, as PyTorch


GOOD = {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5, "_growth_tracker": 2}


@pytest.mark.parametrize("bad, error, text", [
    ({k: v for k, v in GOOD.items() if k != "scale"}, KeyError, "missing keys ['scale']"),
    ({**GOOD, "bogus": 1, "growth_factor": 0.5}, ValueError, "The growth factor must be > 1.0"),
    ({**GOOD, "hysteresis": 2}, KeyError, "only some of cupynet's extra keys"),
    ({**GOOD, "scale": "8"}, TypeError, "scale must be a real number, got str"),
    ({**GOOD, "growth_interval": 2.0}, TypeError, "growth_interval must be an int"),
    ({**GOOD, "growth_factor": 0.5}, ValueError, "The growth factor must be > 1.0"),
    ({**GOOD, "_growth_tracker": -1}, ValueError, "_growth_tracker must be an integer in [0"),
    ({**GOOD, "scale": float("nan")}, ValueError, "scale must be finite"),
    ([("scale", 1.0)], TypeError, "expected a dict"),
])
def test_bad_state_dicts_raise_and_change_nothing(bad, error, text):
    model, opt, scaler = _setup(init_scale=4.0, growth_interval=3)
    _backward(model, scaler)
    scaler.step(opt)
    scaler.update()
    before = scaler.state_dict()
    with pytest.raises(error) as info:
        scaler.load_state_dict(bad)
    assert text in str(info.value)
    assert scaler.state_dict() == before


@pytest.mark.parametrize("lazy", [True, False], ids=["before-first-scale", "after-first-scale"])
def test_unknown_keys_are_ignored_as_torch_does(lazy):
    """PyTorch's load_state_dict reads its five keys and ignores any other (a subclass's, a newer version's)."""
    scaler = GradScaler("cpu", init_scale=4.0)
    if not lazy:
        scaler.scale(cn.tensor(1.0))
    scaler.load_state_dict({**GOOD, "bogus": 1, "_saved_by": "a subclass", 3: None})
    assert scaler.state_dict() == GOOD and scaler.get_scale() == 8.0 and scaler._get_growth_tracker() == 2


def test_unknown_keys_beside_cupynet_extra_keys_are_ignored():
    model, opt, scaler = _setup(init_scale=4.0, growth_interval=1, hysteresis=2, history_size=3)
    for inf in (False, True):
        _backward(model, scaler, inf)
        scaler.step(opt)
        scaler.update()
    saved = scaler.state_dict()
    other = GradScaler("cpu")
    other.load_state_dict({**saved, "bogus": [1, 2]})
    assert other.state_dict() == saved and other.history() == scaler.history()


def test_state_dict_keys_as_torch_loads_them():
    """The same dicts load (or fail) in torch.amp.GradScaler and in cupynet's, to the same state."""
    torch = pytest.importorskip("torch")
    with_unknown = {**GOOD, "bogus": 1, "_saved_by": "a subclass"}
    theirs, ours = torch.amp.GradScaler("cpu"), GradScaler("cpu")
    theirs.load_state_dict(with_unknown)
    ours.load_state_dict(with_unknown)
    assert ours.state_dict() == theirs.state_dict() == GOOD
    assert ours.get_scale() == theirs.get_scale() == 8.0
    missing = {k: v for k, v in GOOD.items() if k != "scale"}
    with pytest.raises(KeyError):
        torch.amp.GradScaler("cpu").load_state_dict(missing)
    with pytest.raises(KeyError, match=r"missing keys \['scale'\]"):
        GradScaler("cpu").load_state_dict(missing)
    with pytest.raises(RuntimeError) as torch_error:
        torch.amp.GradScaler("cpu").load_state_dict({})
    with pytest.raises(RuntimeError) as our_error:
        GradScaler("cpu").load_state_dict({})
    assert str(our_error.value) == str(torch_error.value)


def test_pickling_only_between_iterations():
    model, opt, scaler = _setup(init_scale=16.0, growth_interval=1)
    _backward(model, scaler)
    scaler.step(opt)
    with pytest.raises(AssertionError, match="A GradScaler instance may only be pickled at the beginning of an "
                                             "iteration, or at the end after scaler.update()."):
        pickle.dumps(scaler)
    scaler.update()
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone.state_dict() == scaler.state_dict() and clone._scale is None
    _backward(model, clone)  # lazily re-created on first use
    clone.step(opt)
    clone.update()
    assert clone.get_scale() == 64.0


# ---- host syncs --------------------------------------------------------------------------------------------
def test_no_sync_in_scale_unscale_update_and_device_step(syncs):
    model, opt, scaler = _setup(init_scale=4.0)
    for inf in (False, True):
        loss = model(cn.ones(2, 4)).sum()
        scaled = scaler.scale(loss)
        scaled.backward()
        if inf:
            model.weight.grad.array[0, 0] = np.nan
        syncs["n"] = 0
        scaler.unscale_(opt)
        result = scaler.step(opt)  # built-in optimizer: skipped on the device
        scaler.update()
        assert syncs["n"] == 0 and result is None
    assert scaler.get_scale() == 2.0 and syncs["n"] == 1  # get_scale is the documented sync


def test_third_party_optimizer_takes_pytorch_path_with_one_sync(syncs):
    model, opt, scaler = _setup(ThirdPartySGD, init_scale=4.0)
    for inf, expected in ((False, "stepped"), (True, None)):
        _backward(model, scaler, inf)
        before = model.weight.detach().numpy().copy()
        syncs["n"] = 0
        result = scaler.step(opt)
        assert syncs["n"] == 1 and result == expected
        scaler.update()
        assert syncs["n"] == 1
        assert np.array_equal(before, model.weight.detach().numpy()) == inf
    assert opt.calls == 1  # the skipped step did not call optimizer.step, as in PyTorch


def test_skip_on_device_false_forces_pytorch_path_for_builtin_optimizers(syncs, monkeypatch):
    model, opt, scaler = _setup(init_scale=4.0, skip_on_device=False)
    calls = []
    real_step = opt.step
    monkeypatch.setattr(opt, "step", lambda *a, **k: calls.append(k) or real_step(*a, **k))
    _backward(model, scaler, inf=True)
    syncs["n"] = 0
    assert scaler.step(opt) is None and syncs["n"] == 1 and calls == []
    scaler.update()
    _backward(model, scaler)
    scaler.step(opt)
    assert calls == [{}]  # no found_inf passed on this path


def test_device_path_passes_found_inf_and_leaves_params_bitwise(monkeypatch):
    model, opt, scaler = _setup(optim.Adam, init_scale=4.0)
    _backward(model, scaler)
    scaler.step(opt)
    scaler.update()
    state = {k: v.numpy().copy() for k, v in opt.state[model.weight].items()}
    weight = model.weight.detach().numpy().copy()
    seen = []
    real_step = opt.step
    monkeypatch.setattr(opt, "step", lambda *a, **k: seen.append(k.get("found_inf")) or real_step(*a, **k))
    _backward(model, scaler, inf=True)
    result, found = scaler.step(opt, return_found_inf=True)
    assert result is None and found.item() == 1.0 and seen[0] is not None
    assert np.array_equal(weight, model.weight.detach().numpy())
    for k, v in opt.state[model.weight].items():
        assert np.array_equal(state[k], v.numpy())

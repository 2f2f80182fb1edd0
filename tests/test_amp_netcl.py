"""netcl's AMP API (cupynet.amp.netcl): netcl's semantics, each loop compared with torch-style GradScaler.

netcl's scaler updates the scale inside ``step(optimizer, params)`` (``update()`` is a no-op), so its
loop equals the GradScaler loop ``scale -> backward -> step -> update`` with the same settings: the
update rules grow at the same steps. Parameters and scales must agree bit for bit.
"""

import dataclasses
import warnings

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp, backend, nn, optim
from cupynet.amp import GradScaler, netcl
from cupynet.cuda import capability
from cupynet.tensor import Tensor

# NOTE: the loops overflow on purpose at first (init_scale=2**24 with float16 gradients).
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")

SETTINGS = {"init_scale": 2.0**24, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3}
N_ITERS = 12
loss_fn = nn.functional.cross_entropy


def _setup(seed=0, opt_cls=optim.SGD):
    cn.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = opt_cls(model.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    data = [(cn.tensor(rng.standard_normal((8, 6)).astype(np.float32)), cn.tensor(rng.integers(0, 4, 8)))
            for _ in range(N_ITERS)]
    return model, optimizer, data


def _grad_scaler_loop(opt_cls=optim.SGD, **settings):
    model, optimizer, data = _setup(opt_cls=opt_cls)
    scaler = GradScaler(**{**SETTINGS, **settings})
    scales = []
    for xb, yb in data:
        with amp.autocast(dtype=cn.float16):
            loss = loss_fn(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        scales.append(scaler.get_scale())
    return model, scales


def _same_params(model, ref):
    for p, r in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())


@pytest.mark.parametrize("call_update", [True, False])
@pytest.mark.parametrize("opt_cls", [optim.SGD, optim.Adam])
def test_netcl_loop_matches_grad_scaler(call_update, opt_cls):
    model, optimizer, data = _setup(opt_cls=opt_cls)
    params = list(model.parameters())
    scaler = netcl.AMPGradScaler(**SETTINGS)
    scales = []
    for xb, yb in data:
        with netcl.autocast(enabled=True, device_queue=backend.default_device()):
            loss = loss_fn(model(xb), yb)
        scaler.scale_loss(loss).backward()
        scaler.step(optimizer, params)  # netcl updates the scale here
        if call_update:
            scaler.update()  # a no-op in netcl
        optimizer.zero_grad()
        scales.append(scaler.scale)
    ref, ref_scales = _grad_scaler_loop(opt_cls)
    assert scales == ref_scales
    assert any(b < a for a, b in zip(scales, scales[1:])) and any(b > a for a, b in zip(scales, scales[1:]))
    _same_params(model, ref)


def test_netcl_trainer_loop_with_unscale_grads():
    """netcl's Trainer: ``found_inf = scaler.unscale_grads(params)`` (a bool), clip and step only when clean.

    ``unscale_grads`` leaves the scale alone: the reference keeps it with ``update(new_scale=...)``.
    """
    init, max_norm, bad_iteration = 2.0**10, 0.5, 3
    model, optimizer, data = _setup()
    params = list(model.parameters())
    scaler = netcl.GradScaler(init_scale=init)
    founds = []
    for i, (xb, yb) in enumerate(data):
        with netcl.autocast(enabled=True):
            loss = loss_fn(model(xb), yb)
        scaler.scale_loss(loss).backward()
        if i == bad_iteration:
            params[0].grad.array[0, 0] = np.inf
        found_inf = scaler.unscale_grads(params)
        if not found_inf:
            nn.utils.clip_grad_norm_(params, max_norm)
            optimizer.step()
        optimizer.zero_grad()
        founds.append(found_inf)
    assert founds == [i == bad_iteration for i in range(N_ITERS)] and scaler.scale == init

    ref, ropt, rdata = _setup()
    rscaler = GradScaler(init_scale=init)
    for i, (xb, yb) in enumerate(rdata):
        with amp.autocast(dtype=cn.float16):
            loss = loss_fn(ref(xb), yb)
        rscaler.scale(loss).backward()
        if i == bad_iteration:
            list(ref.parameters())[0].grad.array[0, 0] = np.inf
        rscaler.unscale_(ropt)
        nn.utils.clip_grad_norm_(ref.parameters(), max_norm)
        rscaler.step(ropt)
        rscaler.update(new_scale=init)
        ropt.zero_grad()
    _same_params(model, ref)


def test_grad_scaler_keeps_torch_semantics_for_netcl_calls():
    """``GradScaler.step(optimizer, params)`` passes params on as a closure, as torch; and needs update()."""
    torch = pytest.importorskip("torch")
    model, optimizer, data = _setup()
    scaler = GradScaler(init_scale=4.0)
    scaler.scale(loss_fn(model(data[0][0]), data[0][1])).backward()
    with pytest.raises(TypeError, match="'generator' object is not callable"):
        scaler.step(optimizer, model.parameters())

    tmodel = torch.nn.Linear(6, 4)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    tscaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    tscaler.scale(tmodel(torch.ones(2, 6)).sum()).backward()
    with pytest.raises(TypeError, match="'generator' object is not callable"):
        tscaler.step(topt, tmodel.parameters())

    model, optimizer, data = _setup()
    scaler = GradScaler(init_scale=4.0)
    for xb, yb in data[:2]:
        scaler.scale(loss_fn(model(xb), yb)).backward()
        if xb is data[1][0]:
            with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)."):
                scaler.step(optimizer)
        else:
            scaler.step(optimizer)


# ---- the scaler's shape -------------------------------------------------------------------------------------
def test_dataclass_fields_are_attributes_with_netcl_defaults():
    scaler = netcl.GradScaler()
    assert [f.name for f in dataclasses.fields(scaler)] == ["init_scale", "growth_factor", "backoff_factor",
                                                             "growth_interval", "enabled"]
    assert (scaler.init_scale, scaler.growth_factor, scaler.backoff_factor, scaler.growth_interval,
            scaler.enabled) == (2.0**16, 2.0, 0.5, 2000, True)
    assert scaler.scale == 2.0**16 and scaler._scale is None  # device state is created on first use
    assert repr(netcl.GradScaler(1024.0)) == ("GradScaler(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, "
                                               "growth_interval=2000, enabled=True)")
    assert netcl.GradScaler(8.0) == netcl.GradScaler(init_scale=8.0)
    assert netcl.AMPGradScaler is netcl.GradScaler


@pytest.mark.parametrize("kwargs, error, text", [
    ({"init_scale": -1.0}, ValueError, "netcl.GradScaler: init_scale must be in (0"),
    ({"growth_factor": 1.0}, ValueError, "The growth factor must be > 1.0"),
    ({"backoff_factor": 1.5}, ValueError, "The backoff factor must be < 1.0"),
    ({"growth_interval": 0}, ValueError, "growth_interval must be an integer in [1"),
    ({"enabled": 1}, TypeError, "enabled must be a bool"),
])
def test_bad_arguments(kwargs, error, text):
    with pytest.raises(error) as info:
        netcl.GradScaler(**kwargs)
    assert text in str(info.value)


def test_fields_changed_after_construction_are_used_by_the_next_step():
    model, optimizer, data = _setup()
    scaler = netcl.GradScaler(init_scale=4.0, growth_interval=1)
    scaler.growth_factor = 4.0
    scaler.scale_loss(loss_fn(model(data[0][0]), data[0][1])).backward()
    scaler.step(optimizer)
    assert scaler.scale == 16.0


def test_step_unscales_only_the_given_params_and_defaults_to_all():
    model, optimizer, data = _setup()
    first, *rest = model.parameters()
    scaler = netcl.GradScaler(init_scale=4.0, growth_interval=100)
    scaler.scale_loss(loss_fn(model(data[0][0]), data[0][1])).backward()
    scaled = [p.grad.numpy().copy() for p in model.parameters()]
    scaler.step(optimizer, [first])
    np.testing.assert_array_equal(first.grad.numpy(), scaled[0] / np.float32(4.0))
    for p, g in zip(rest, scaled[1:]):
        np.testing.assert_array_equal(p.grad.numpy(), g)
    optimizer.zero_grad()
    scaler.scale_loss(loss_fn(model(data[1][0]), data[1][1])).backward()
    scaled = [p.grad.numpy().copy() for p in model.parameters()]
    scaler.step(optimizer)
    for p, g in zip(model.parameters(), scaled):
        np.testing.assert_array_equal(p.grad.numpy(), g / np.float32(4.0))


def test_disabled_scaler_is_transparent():
    model, optimizer, data = _setup()
    ref, ropt, _ = _setup()
    scaler = netcl.GradScaler(enabled=False)
    loss = loss_fn(model(data[0][0]), data[0][1])
    assert scaler.scale_loss(loss) is loss
    loss.backward()
    assert scaler.unscale_grads(model.parameters()) is False
    scaler.step(optimizer, model.parameters())
    loss_fn(ref(data[0][0]), data[0][1]).backward()
    ropt.step()
    _same_params(model, ref)
    assert scaler._scale is None


@pytest.mark.parametrize("opt_cls", [optim.SGD, optim.Adam])
@pytest.mark.parametrize("inf", [False, True])
def test_no_host_sync_in_scale_loss_and_step(opt_cls, inf, monkeypatch):
    model, optimizer, data = _setup(opt_cls=opt_cls)
    scaler = netcl.GradScaler(init_scale=4.0, growth_interval=1)
    loss = loss_fn(model(data[0][0]), data[0][1])  # NOTE: the loss's own checks are not the scaler's business
    reads = []
    real_to_numpy = backend.to_numpy
    monkeypatch.setattr(backend, "to_numpy", lambda a: reads.append("to_numpy") or real_to_numpy(a))
    monkeypatch.setattr(Tensor, "item", lambda self: reads.append("item"))
    monkeypatch.setattr(Tensor, "__bool__", lambda self: reads.append("bool"))
    scaled = scaler.scale_loss(loss)
    assert reads == []
    monkeypatch.undo()
    scaled.backward()
    if inf:
        model[0].weight.grad.array[0, 0] = np.nan
    before = [p.detach().numpy().copy() for p in model.parameters()]
    monkeypatch.setattr(backend, "to_numpy", lambda a: reads.append("to_numpy") or real_to_numpy(a))
    monkeypatch.setattr(Tensor, "item", lambda self: reads.append("item"))
    monkeypatch.setattr(Tensor, "__bool__", lambda self: reads.append("bool"))
    scaler.step(optimizer, model.parameters())
    scaler.update()
    assert reads == []
    monkeypatch.undo()
    assert scaler.scale == (2.0 if inf else 8.0)  # reading the scale is the one documented host read
    for p, b in zip(model.parameters(), before):
        assert np.array_equal(p.detach().numpy(), b) == inf


# ---- autocast ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device_queue", [None, "cpu", backend.device("cpu")])
def test_autocast_lowers_to_float16_on_the_queue_device(device_queue):
    w, x = cn.randn(4, 3, requires_grad=True), cn.randn(2, 4)
    with netcl.autocast(enabled=True, device_queue=device_queue) as region:
        assert (x @ w).dtype == cn.float16 and netcl.is_autocast_enabled()
        assert region.enabled and region.device_queue is device_queue
    with netcl.autocast(enabled=False, device_queue=device_queue):
        assert (x @ w).dtype == cn.float32 and not netcl.is_autocast_enabled()
    assert netcl.supports_fp16(device_queue)


def test_autocast_falls_back_to_fp32_silently_without_fp16(monkeypatch):
    monkeypatch.setattr(capability, "supports_fp16", lambda device=None: False)
    w, x = cn.randn(4, 3, requires_grad=True), cn.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with netcl.autocast(enabled=True, device_queue="cpu"):
            assert (x @ w).dtype == cn.float32 and not netcl.is_autocast_enabled()
    assert not netcl.supports_fp16("cpu")


def test_autocast_refuses_what_is_not_a_device():
    with pytest.raises(TypeError, match="device_queue must be a cupynet Device, a device name"):
        netcl.autocast(device_queue=3.5)


def test_module_exposes_only_its_api():
    assert {n for n in dir(netcl) if not n.startswith("_")} == set(netcl.__all__)
    assert "netcl" in amp.__all__ and amp.netcl is netcl

"""PyTorch's GradScaler test scenarios, ported: control run (fp32, no scaler) vs scaled run with one injected inf.

Each scenario is written once against a small framework adapter and run in cupynet; where PyTorch is
installed the very same scenario also runs in ``torch.amp.GradScaler("cpu", ...)`` and the scale
trajectory, the skipped steps and the final parameters must match cupynet's.
"""

import math

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import GradScaler

INIT_SCALE, SKIP_ITER = 128.0, 2


class CupynetFW:
    name = "cupynet"

    def __init__(self):
        self.nn, self.clip = nn, nn.utils.clip_grad_norm_

    def scaler(self, **kw):
        return GradScaler("cpu", **kw)

    def model(self, weights):
        m = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
        for p, w in zip(m.parameters(), weights):
            p.array[...] = w
        return m

    def optimizer(self, kind, params):
        return getattr(optim, kind)(params, **OPT_KWARGS[kind])

    def tensor(self, a):
        return cn.tensor(a)

    def grad(self, out, inputs):
        return cn.autograd.grad(out, inputs, create_graph=True)

    def fill_inf(self, p):
        p.grad.array[...] = np.inf

    def numpy(self, t):
        return t.detach().numpy()


class TorchFW:
    name = "torch"

    def __init__(self, torch):
        self.torch, self.nn, self.clip = torch, torch.nn, torch.nn.utils.clip_grad_norm_

    def scaler(self, **kw):
        return self.torch.amp.GradScaler("cpu", **kw)

    def model(self, weights):
        m = self.nn.Sequential(self.nn.Linear(8, 8), self.nn.Linear(8, 8))
        with self.torch.no_grad():
            for p, w in zip(m.parameters(), weights):
                p.copy_(self.torch.from_numpy(w))
        return m

    def optimizer(self, kind, params):
        return getattr(self.torch.optim, kind)(params, **OPT_KWARGS[kind])

    def tensor(self, a):
        return self.torch.from_numpy(a)

    def grad(self, out, inputs):
        return self.torch.autograd.grad(out, inputs, create_graph=True)

    def fill_inf(self, p):
        with self.torch.no_grad():
            p.grad.fill_(float("inf"))

    def numpy(self, t):
        return t.detach().numpy()


OPT_KWARGS = {"SGD": {"lr": 0.1}, "Adam": {"lr": 0.01}, "AdamW": {"lr": 0.01}}


def _case(seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.uniform(-0.3, 0.3, s).astype(np.float32) for s in [(8, 8), (8,), (8, 8), (8,)]]
    data = [(rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32))
            for _ in range(4)]
    return weights, data


# ---- the scenarios (PyTorch's test_grad_scaling_* run functions) ---------------------------------------
def run_plain(fw, data, model, opt, scaler, try_scaling, trace):
    loss_fn = fw.nn.MSELoss()
    for i, (x, t) in enumerate(data):
        opt.zero_grad()
        loss = loss_fn(model(fw.tensor(x)), fw.tensor(t))
        if try_scaling:
            scaler.scale(loss).backward()
            if i == SKIP_ITER and scaler.is_enabled():
                fw.fill_inf(model[1].weight)
            scaler.step(opt)
            scaler.update()
            trace.append(scaler.get_scale())
        else:
            loss.backward()
            if not scaler.is_enabled() or i != SKIP_ITER:
                opt.step()


def run_clipping(fw, data, model, opt, scaler, try_scaling, trace):
    loss_fn, max_norm = fw.nn.MSELoss(), 0.2
    for i, (x, t) in enumerate(data):
        opt.zero_grad()
        loss = loss_fn(model(fw.tensor(x)), fw.tensor(t))
        if try_scaling:
            scaler.scale(loss).backward()
            fw.clip(model.parameters(), max_norm * scaler.get_scale())
            if i == SKIP_ITER and scaler.is_enabled():
                fw.fill_inf(model[1].weight)
            scaler.step(opt)
            scaler.update()
            trace.append(scaler.get_scale())
        else:
            loss.backward()
            fw.clip(model.parameters(), max_norm)
            if not scaler.is_enabled() or i != SKIP_ITER:
                opt.step()


def run_clipping_separate_unscale(fw, data, model, opt, scaler, try_scaling, trace):
    loss_fn, max_norm = fw.nn.MSELoss(), 0.2
    for i, (x, t) in enumerate(data):
        opt.zero_grad()
        loss = loss_fn(model(fw.tensor(x)), fw.tensor(t))
        if try_scaling:
            scaler.scale(loss).backward()
            if i == SKIP_ITER and scaler.is_enabled():
                fw.fill_inf(model[1].weight)
            scaler.unscale_(opt)
            fw.clip(model.parameters(), max_norm, error_if_nonfinite=False)
            scaler.step(opt)
            scaler.update()
            trace.append(scaler.get_scale())
        else:
            loss.backward()
            fw.clip(model.parameters(), max_norm)
            if not scaler.is_enabled() or i != SKIP_ITER:
                opt.step()


def run_penalty(fw, data, model, opt, scaler, try_scaling, trace):
    loss_fn = fw.nn.MSELoss()
    for i, (x, t) in enumerate(data):
        opt.zero_grad()
        loss = loss_fn(model(fw.tensor(x)), fw.tensor(t))
        params = list(model.parameters())
        if try_scaling:
            grads = fw.grad(scaler.scale(loss), params)
            inv_scale = 1.0 / scaler.get_scale()
            grads = [g * inv_scale for g in grads]
        else:
            grads = fw.grad(loss, params)
        norm = 0
        for g in grads:
            norm = norm + g.pow(2).sum()
        loss = loss + norm.sqrt()
        if try_scaling:
            scaler.scale(loss).backward()
            if i == SKIP_ITER and scaler.is_enabled():
                fw.fill_inf(model[1].weight)
            scaler.step(opt)
            scaler.update()
            trace.append(scaler.get_scale())
        else:
            loss.backward()
            if not scaler.is_enabled() or i != SKIP_ITER:
                opt.step()


def run_accumulation(fw, data, model, opt, scaler, try_scaling, trace):
    loss_fn, every = fw.nn.MSELoss(), 2
    for i, (x, t) in enumerate(data):
        loss = loss_fn(model(fw.tensor(x)), fw.tensor(t)) / every
        (scaler.scale(loss) if try_scaling else loss).backward()
        if (i + 1) % every == 0:
            if try_scaling:
                scaler.step(opt)
                scaler.update()
                trace.append(scaler.get_scale())
            else:
                opt.step()
            opt.zero_grad()


SCENARIOS = {  # name: (run, unskipped, skipped, atol)
    "plain": (run_plain, 3, 1, 1e-6),
    "clipping": (run_clipping, 3, 1, 1e-5),
    "clipping_separate_unscale": (run_clipping_separate_unscale, 3, 1, 1e-6),
    "penalty": (run_penalty, 3, 1, 1e-5),
    "accumulation": (run_accumulation, 2, 0, 1e-6),
}


def run_case(fw, scenario, kind, enabled):
    run, _, _, _ = SCENARIOS[scenario]
    weights, data = _case()
    control, scaled = fw.model(weights), fw.model(weights)
    opt_control, opt_scaled = fw.optimizer(kind, control.parameters()), fw.optimizer(kind, scaled.parameters())
    scaler = fw.scaler(init_scale=INIT_SCALE, growth_factor=2.0, enabled=enabled, growth_interval=1)
    trace = []
    run(fw, data, control, opt_control, scaler, False, trace)
    run(fw, data, scaled, opt_scaled, scaler, True, trace)
    return scaler, trace, [fw.numpy(p) for p in control.parameters()], [fw.numpy(p) for p in scaled.parameters()]


@pytest.mark.parametrize("kind", ["SGD", "Adam", "AdamW"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scaled_run_matches_control_and_final_scale(scenario, kind):
    _, unskipped, skipped, atol = SCENARIOS[scenario]
    for enabled in (True, False):
        scaler, trace, control, scaled = run_case(CupynetFW(), scenario, kind, enabled)
        expected = INIT_SCALE * 2.0 ** unskipped * 0.5 ** skipped if enabled else 1.0
        assert scaler.get_scale() == expected
        assert scaler.skipped_steps() == (skipped if enabled else 0)
        for c, s in zip(control, scaled):
            np.testing.assert_allclose(s, c, rtol=0, atol=atol)


@pytest.mark.parametrize("kind", ["SGD", "Adam", "AdamW"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_scenario_in_torch_gives_same_trajectory_and_params(scenario, kind):
    torch = pytest.importorskip("torch")
    ours = run_case(CupynetFW(), scenario, kind, True)
    theirs = run_case(TorchFW(torch), scenario, kind, True)
    assert ours[1] == theirs[1]  # scale after every iteration, bit for bit
    for a, b in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def _run_multiple(fw, enabled):
    weights0, data = _case(0)
    weights1, _ = _case(1)
    models = {k: (fw.model(weights0), fw.model(weights1)) for k in ("control", "scaled")}
    opts = {k: (fw.optimizer("SGD", m0.parameters()), fw.optimizer("SGD", m1.parameters()))
            for k, (m0, m1) in models.items()}
    scaler = fw.scaler(init_scale=INIT_SCALE, growth_factor=2.0, enabled=enabled, growth_interval=1)
    loss_fn, trace = fw.nn.MSELoss(), []
    for key, try_scaling in (("control", False), ("scaled", True)):
        (m0, m1), (o0, o1) = models[key], opts[key]
        for i, (x, t) in enumerate(data):
            o0.zero_grad()
            o1.zero_grad()
            out0, out1 = m0(fw.tensor(x)), m1(fw.tensor(x))
            loss0 = loss_fn(0.3 * out0 + 0.7 * out1, fw.tensor(t))
            loss1 = loss_fn(0.6 * out0 - 0.4 * out1, fw.tensor(t))
            if try_scaling:
                scaler.scale(loss0).backward(retain_graph=True)
                scaler.scale(loss1).backward()
                if i == SKIP_ITER and scaler.is_enabled():
                    fw.fill_inf(m1[1].weight)
                scaler.unscale_(o0)
                scaler.step(o0)
                scaler.step(o1)
                scaler.update()
                trace.append(scaler.get_scale())
            else:
                loss0.backward(retain_graph=True)
                loss1.backward()
                o0.step()
                if not scaler.is_enabled() or i != SKIP_ITER:
                    o1.step()
    params = {k: [fw.numpy(p) for m in models[k] for p in m.parameters()] for k in models}
    return scaler, trace, params


def test_two_models_two_optimizers_two_losses():
    for enabled in (True, False):
        scaler, _, params = _run_multiple(CupynetFW(), enabled)
        assert scaler.get_scale() == (INIT_SCALE * 2.0 ** 3 * 0.5 if enabled else 1.0)
        for c, s in zip(params["control"], params["scaled"]):
            np.testing.assert_allclose(s, c, rtol=0, atol=1e-6)


def test_two_models_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _run_multiple(CupynetFW(), True), _run_multiple(TorchFW(torch), True)
    assert ours[1] == theirs[1]
    for a, b in zip(ours[2]["scaled"], theirs[2]["scaled"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def _grow_from_1e38(fw, p, opt):
    scaler = fw.scaler(init_scale=1e38, growth_factor=16.0, growth_interval=1)
    for _ in range(3):
        scaler.scale(p.sum() * 0.0).backward()
        scaler.step(opt)
        scaler.update()
        assert math.isfinite(scaler.get_scale())
    return scaler.get_scale()


def test_huge_init_scale_never_grows_to_inf():
    p = cn.ones(3, requires_grad=True)
    assert _grow_from_1e38(CupynetFW(), p, optim.SGD([p], lr=0.0)) == float(np.float32(1e38))


def test_huge_init_scale_matches_torch():
    torch = pytest.importorskip("torch")
    p, q = cn.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    assert (_grow_from_1e38(CupynetFW(), p, optim.SGD([p], lr=0.0))
            == _grow_from_1e38(TorchFW(torch), q, torch.optim.SGD([q], lr=0.0)))

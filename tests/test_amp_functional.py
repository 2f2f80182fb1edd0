"""cupynet.amp.functional: the stateless loss-scaling core."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import backend, dtypes, nn, optim
from cupynet.amp import GradScaler
from cupynet.amp import functional as F
from cupynet.tensor import Tensor


def _grad_param(values, dtype=np.float32):
    p = cn.tensor(np.zeros_like(np.asarray(values, dtype=np.float32)), requires_grad=True)
    p.grad = Tensor(np.asarray(values, dtype=dtype))
    return p


def test_scale_outputs():
    scale = Tensor(np.array(4.0, np.float32))
    assert F.scale_outputs(cn.tensor(2.0), scale).item() == 8.0
    out = F.scale_outputs((cn.tensor(1.0), [cn.tensor(2.0)]), 2.0)
    assert isinstance(out, tuple) and out[1][0].item() == 4.0
    loss = cn.tensor(1.0)
    assert F.scale_outputs(loss, scale, scaling_enabled=False) is loss
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        F.scale_outputs(3, scale)
    with pytest.raises(ValueError, match="scale must hold one float32 value"):
        F.scale_outputs(loss, Tensor(np.ones(2, np.float32)))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, None])
def test_unscale_contiguous_transposed_sliced(layout, bad):
    base = np.arange(1, 49, dtype=np.float32).reshape(6, 8) * 4.0
    grad = {"contiguous": base.copy(), "transposed": base.copy().T, "sliced": base.copy()[::2, 1:5]}[layout]
    expected = grad / 4.0
    if bad is not None:
        grad[1, 2] = bad
        expected[1, 2] = bad
    found = F.unscale([grad], 4.0)
    assert found.shape == () and found.dtype == np.float32
    assert found.item() == (0.0 if bad is None else 1.0)
    np.testing.assert_array_equal(grad, expected)


def test_unscale_params_use_their_grads_and_mixed_dtypes():
    p32 = _grad_param([2.0, 4.0])
    pbf = _grad_param([8.0, 16.0], dtypes.bfloat16)
    p64 = _grad_param([2.0, np.nan], np.float64)
    no_grad = cn.tensor([1.0], requires_grad=True)
    plain = Tensor(np.array([6.0], np.float32))  # not requiring grad: a gradient itself
    stats = np.zeros((4, 2), np.int32)
    found = F.unscale([p32, no_grad, pbf, p64, plain], 2.0, tensor_stats=stats)
    assert found.item() == 1.0
    np.testing.assert_array_equal(p32.grad.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(pbf.grad.numpy().astype(np.float32), [4.0, 8.0])
    np.testing.assert_array_equal(p64.grad.numpy(), [1.0, np.nan])
    np.testing.assert_array_equal(plain.numpy(), [3.0])
    np.testing.assert_array_equal(stats, [[0, 0], [0, 0], [0, 1], [0, 0]])


def test_inv_scale_is_float64_reciprocal_rounded_once():
    scale = np.array([3.0], np.float32)
    assert F.inv_scale_of(scale)[0] == np.float32(1.0 / 3.0)
    assert F.inv_scale_of(scale).dtype == np.float32


def test_check_inf_changes_nothing():
    g = np.array([1.5, -np.inf], np.float32)
    before = g.copy()
    assert F.check_inf([g], device="cpu").item() == 1.0
    np.testing.assert_array_equal(g, before)
    assert F.check_inf([np.ones(3, np.float32)]).item() == 0.0


def test_found_inf_is_only_ever_set():
    found = Tensor(np.zeros((), np.float32))
    F.unscale([np.array([np.inf], np.float32)], 1.0, found_inf=found)
    F.unscale([np.array([1.0], np.float32)], 1.0, found_inf=found)
    assert found.item() == 1.0


def test_unscale_bad_inputs_leave_grads_untouched():
    g = np.array([2.0], np.float32)
    with pytest.raises(TypeError, match="gradient 1 has dtype int64"):
        F.unscale([g, np.array([1])], 2.0)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        F.unscale([g, np.ones(1, np.float16)], 2.0, allow_fp16=False)
    with pytest.raises(TypeError, match="element 0 must be a Tensor"):
        F.unscale(["grad"], 2.0)
    with pytest.raises(ValueError, match="scale must hold one float32 value"):
        F.unscale([g], np.array([2.0]))
    assert g[0] == 2.0


def test_update_scale_pytorch_sequence():
    scale, tracker = Tensor(np.array(4.0, np.float32)), Tensor(np.array(0, np.int32))
    clean, inf = Tensor(np.array(0.0, np.float32)), Tensor(np.array(1.0, np.float32))
    seq = []
    for found in (clean, clean, inf):
        F.update_scale(scale, tracker, found, 2.0, 0.25, 2)
        seq.append((scale.item(), tracker.item()))
    assert seq == [(4.0, 1), (8.0, 0), (2.0, 0)]


def test_update_scale_matches_torch_kernel():
    torch = pytest.importorskip("torch")
    s, t = Tensor(np.array(1e38, np.float32)), Tensor(np.array(0, np.int32))
    ts, tt = torch.full((), 1e38), torch.zeros((), dtype=torch.int32)
    rng = np.random.default_rng(0)
    for _ in range(30):
        bad = float(rng.random() < 0.3)
        F.update_scale(s, t, Tensor(np.array(bad, np.float32)), 16.0, 0.5, 2)
        torch._amp_update_scale_(ts, tt, torch.full((), bad), 16.0, 0.5, 2)
        assert (s.item(), t.item()) == (ts.item(), tt.item())


def test_step_after_unscale_paths():
    p = _grad_param([1.0])
    opt = optim.SGD([p], lr=1.0)
    inf = Tensor(np.array(1.0, np.float32))
    assert F.step_after_unscale(opt, inf) is None and p.detach().numpy()[0] == 0.0
    assert F.step_after_unscale(opt, inf, on_device=False) is None and p.detach().numpy()[0] == 0.0
    F.step_after_unscale(opt, Tensor(np.array(0.0, np.float32)))
    assert p.detach().numpy()[0] == -1.0
    F.step_after_unscale(opt, inf, skip_if_inf=False)
    assert p.detach().numpy()[0] == -2.0

    class Plain:
        param_groups = [{"params": [p]}]

        def step(self):
            return "ran"

    with pytest.raises(ValueError, match="cannot skip a step on the device"):
        F.step_after_unscale(Plain(), inf, on_device=True)
    assert F.step_after_unscale(Plain(), inf) is None
    assert F.step_after_unscale(Plain(), Tensor(np.array(0.0, np.float32))) == "ran"


def test_step_after_unscale_sync_counts(monkeypatch):
    count = []
    real = backend.to_numpy
    monkeypatch.setattr(backend, "to_numpy", lambda a: count.append(1) or real(a))
    p = _grad_param([1.0])
    F.step_after_unscale(optim.SGD([p], lr=1.0), Tensor(np.array(1.0, np.float32)))
    assert count == []
    F.step_after_unscale(optim.SGD([p], lr=1.0), Tensor(np.array(1.0, np.float32)), on_device=False)
    assert count == [1]


def test_unscale_and_step_returns_a_new_scale_and_leaves_the_given_one():
    p = _grad_param([8.0, 16.0])
    opt = optim.SGD([p], lr=1.0)
    scale = Tensor(np.array(8.0, np.float32))
    result, found, new_scale = F.unscale_and_step(opt, scale, growth_factor=2.0)
    assert result is None and found.item() == 0.0 and new_scale.item() == 16.0
    assert scale.item() == 8.0 and new_scale is not scale
    np.testing.assert_array_equal(p.detach().numpy(), [-1.0, -2.0])
    p.grad = Tensor(np.array([np.nan, 1.0], np.float32))
    _, found, new_scale = F.unscale_and_step(opt, scale, growth_factor=2.0)
    assert found.item() == 1.0 and new_scale.item() == 4.0 and scale.item() == 8.0
    np.testing.assert_array_equal(p.detach().numpy(), [-1.0, -2.0])


def _two_models_two_losses(seed=0):
    cn.manual_seed(seed)
    model0, model1 = nn.Linear(3, 2), nn.Linear(3, 2)
    x = cn.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))
    out0, out1 = model0(x), model1(x)
    # NOTE: both losses reach the parameters of both models, as in the prototype's example.
    loss0 = ((out0 + out1) ** 2).sum()
    loss1 = (out0 * out1).sum()
    return model0, model1, loss0, loss1


@pytest.mark.parametrize("overflow", [None, 0, 1])
def test_two_optimizers_sharing_one_scale_match_grad_scaler_exactly(overflow):
    """The prototype's "multiple models/optimizers" recipe: both unscale with the SAME S; S = min(S0, S1)."""
    init, growth = 1024.0, 2.0
    model0, model1, loss0, loss1 = _two_models_two_losses()
    opt0, opt1 = optim.SGD(model0.parameters(), lr=0.1), optim.SGD(model1.parameters(), lr=0.1)
    S = Tensor(np.array(init, np.float32))
    F.scale_outputs(loss0, S).backward(retain_graph=True)
    F.scale_outputs(loss1, S).backward()
    if overflow is not None:
        (model0, model1)[overflow].weight.grad.array[0, 0] = np.inf
    _, found0, S0 = F.unscale_and_step(opt0, S, growth_factor=growth)
    grads0 = [p.grad.numpy().copy() for p in model0.parameters()]
    _, found1, S1 = F.unscale_and_step(opt1, S, growth_factor=growth)
    grads1 = [p.grad.numpy().copy() for p in model1.parameters()]
    S = min(S0, S1)

    ref0, ref1, rloss0, rloss1 = _two_models_two_losses()
    ropt0, ropt1 = optim.SGD(ref0.parameters(), lr=0.1), optim.SGD(ref1.parameters(), lr=0.1)
    scaler = GradScaler("cpu", init_scale=init, growth_factor=growth, growth_interval=1)
    scaler.scale(rloss0).backward(retain_graph=True)
    scaler.scale(rloss1).backward()
    if overflow is not None:
        (ref0, ref1)[overflow].weight.grad.array[0, 0] = np.inf
    scaler.step(ropt0)
    scaler.step(ropt1)
    scaler.update()

    assert (found0.item(), found1.item()) == (float(overflow == 0), float(overflow == 1))
    assert S.item() == scaler.get_scale() == (init / 2 if overflow is not None else init * growth)
    for got, ref in ((grads0, ref0), (grads1, ref1)):
        for g, p in zip(got, ref.parameters()):
            np.testing.assert_array_equal(g, p.grad.numpy())
    for model, ref in ((model0, ref0), (model1, ref1)):
        for p, r in zip(model.parameters(), ref.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())


def test_unscale_and_step_has_no_host_sync(monkeypatch):
    count = []
    real = backend.to_numpy
    monkeypatch.setattr(backend, "to_numpy", lambda a: count.append(1) or real(a))
    monkeypatch.setattr(Tensor, "item", lambda self: count.append(1))
    for bad in (0.0, np.inf):
        p = _grad_param([8.0, bad])
        F.unscale_and_step(optim.Adam([p], lr=1.0), Tensor(np.array(8.0, np.float32)))
    assert count == []


def test_module_exposes_only_its_api():
    public = {name for name in dir(F) if not name.startswith("_")}
    assert public == set(F.__all__)
    assert all(callable(getattr(F, name)) for name in F.__all__)
    assert not {"abc", "numbers", "backend", "kernels", "Tensor", "annotations"} & public


def test_unscale_and_step_options():
    p = _grad_param([8.0, np.inf])
    opt = optim.SGD([p], lr=1.0)
    scale = Tensor(np.array(8.0, np.float32))
    with pytest.raises(ValueError, match=r"^Closure use is not currently supported"):
        F.unscale_and_step(opt, scale, closure=lambda: 1.0)
    np.testing.assert_array_equal(p.grad.numpy(), [8.0, np.inf])  # refused before unscaling
    assert F.unscale_and_step(opt, scale, scaling_enabled=False, closure=lambda: 2.0) == (2.0, None, None)
    assert p.grad.numpy()[0] == 8.0 and p.detach().numpy()[0] == -8.0  # a plain step, nothing unscaled

    q = _grad_param([8.0, 16.0])
    opt = optim.SGD([q], lr=1.0)
    _, found, new_scale = F.unscale_and_step(opt, scale, skip_if_inf=False, found_inf=Tensor(np.array(
        1.0, np.float32)))
    assert found.item() == 1.0 and new_scale.item() == np.float32(8.0 * 1.001)  # recommended from the grads
    np.testing.assert_array_equal(q.detach().numpy(), [-1.0, -2.0])  # skip_if_inf=False: stepped anyway


def test_recommend_scale_rule_scheduler_and_bad_inputs():
    scale = Tensor(np.array(2.0**20, np.float32))
    clean, inf = Tensor(np.array(0.0, np.float32)), Tensor(np.array(1.0, np.float32))
    assert F.recommend_scale(scale, clean).item() == np.float32(2.0**20 * 1.001)
    assert F.recommend_scale(scale, inf).item() == 2.0**19
    assert F.recommend_scale(3.0e38, clean, growth_factor=2.0).item() == np.float32(3.0e38)  # never to inf
    assert F.recommend_scale(scale, clean, scale_scheduler=lambda s, f: s * 0.25).item() == 2.0**18
    assert scale.item() == 2.0**20
    with pytest.raises(ValueError, match="the scale_scheduler's result must hold one float32 value"):
        F.recommend_scale(scale, clean, scale_scheduler=lambda s, f: Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="found_inf must hold one float32 value"):
        F.recommend_scale(scale, Tensor(np.zeros(2, np.float32)))

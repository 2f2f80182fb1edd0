"""The early torch.amp prototype's API (add_amp_attributes, enable_autocasting, unscale_and_step, ...).

Every example of the prototype's documentation runs here as written (CUDA adapted to the default
device) and is compared with the same loop written with the torch-style ``GradScaler``.
"""

import pathlib
import re

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp, autograd, backend, nn, optim
from cupynet.amp import GradScaler, add_amp_attributes, autocast, enable_autocasting, prototype, scale_outputs
from cupynet.tensor import Tensor

# NOTE: the loops below overflow on purpose (S = 2**24 with float16 gradients); NumPy warns about the
# inf/NaN arithmetic of those skipped steps.
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")


# ---- clip_grad_norm_ with a Tensor max_norm (the prototype clips to max_norm * S) ------------------------
@pytest.mark.parametrize("max_norm", [np.float32(0.75), np.float64(0.5), np.int64(3), 0.75])
def test_clip_grad_norm_accepts_a_one_element_tensor_max_norm_like_torch(max_norm):
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    p = cn.tensor(np.zeros((3, 4), np.float32), requires_grad=True)
    p.grad = Tensor(g.copy())
    tp = torch.zeros(3, 4, requires_grad=True)
    tp.grad = torch.tensor(g)
    as_tensor = not isinstance(max_norm, float)
    ours = Tensor(np.array(max_norm)) if as_tensor else max_norm
    theirs = torch.tensor(np.array(max_norm)) if as_tensor else max_norm
    norm = nn.utils.clip_grad_norm_([p], ours)
    tnorm = torch.nn.utils.clip_grad_norm_([tp], theirs)
    assert norm.item() == tnorm.item()
    np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())


def test_clip_grad_norm_refuses_a_tensor_max_norm_that_is_not_one_real_value():
    p = cn.tensor(np.zeros(2, np.float32), requires_grad=True)
    p.grad = Tensor(np.array([3.0, 4.0], np.float32))
    for bad in (Tensor(np.ones(2, np.float32)), Tensor(np.array(True))):
        with pytest.raises(ValueError, match="max_norm must be a real number or a one-element real Tensor"):
            nn.utils.clip_grad_norm_([p], bad)
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 4.0])


# ---- the prototype's documented examples, each against the same loop with GradScaler ------------------------
# NOTE: the prototype recommends S * 1.001 after every clean step and S * 0.5 after an overflow, from
# S = 2**24. That is GradScaler(init_scale=2**24, growth_factor=1.001, growth_interval=1): both run the
# same update kernel and the same fused unscale, so parameters and scales must agree bit for bit.
# S = 2**24 overflows float16 gradients at first, so every loop below has skipped AND clean steps.
PROTOTYPE_RULE = {"init_scale": 2.0**24, "growth_factor": 1.001, "backoff_factor": 0.5, "growth_interval": 1}
N_ITERS = 12


def _setup(seed=0, opt_cls=optim.SGD, **opt_kw):
    cn.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = opt_cls(model.parameters(), lr=0.1, **opt_kw)
    rng = np.random.default_rng(seed)
    data = [(cn.tensor(rng.standard_normal((8, 6)).astype(np.float32)), cn.tensor(rng.integers(0, 4, 8)))
            for _ in range(N_ITERS)]
    return model, optimizer, data


loss_fn = nn.functional.cross_entropy


def _same_params(model, ref):
    for p, r in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())


def _saw_skips_and_steps(found_infs):
    flags = [f.item() for f in found_infs]
    assert 1.0 in flags and 0.0 in flags, f"the loop should overflow at first, then step: {flags}"


def _grad_scaler_typical(**rule):
    model, optimizer, data = _setup()
    scaler = GradScaler(**{**PROTOTYPE_RULE, **rule})
    scales = []
    for input, target in data:
        optimizer.zero_grad()
        with autocast(dtype=cn.float16):
            output = model(input)
            loss = loss_fn(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    return model, scales


def test_typical_use():
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    scales, founds = [], []
    for input, target in data:
        optimizer.zero_grad()
        with enable_autocasting():
            output = model(input)
            loss = loss_fn(output, target)
        # backward() need not run within the context manager.
        scale_outputs(loss, S).backward()
        _, found_inf, S = optimizer.unscale_and_step(current_scale=S)
        scales.append(S.item())
        founds.append(found_inf)
    _saw_skips_and_steps(founds)
    ref, ref_scales = _grad_scaler_typical()
    assert scales == ref_scales
    _same_params(model, ref)


def test_gradient_clipping_to_max_norm_times_S():
    max_norm = 0.5
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    scales = []
    for input, target in data:
        optimizer.zero_grad()
        with enable_autocasting():
            output = model(input)
            loss = loss_fn(output, target)
        scale_outputs(loss, S).backward()

        # Gradients are scaled, so we clip to max_norm*scale
        nn.utils.clip_grad_norm_(model.parameters(), max_norm * S)

        _, found_inf, S = optimizer.unscale_and_step(current_scale=S)
        scales.append(S.item())

    ref, ropt, rdata = _setup()
    scaler = GradScaler(**PROTOTYPE_RULE)
    ref_scales = []
    for input, target in rdata:  # torch's own clipping test: clip the scaled gradients to max_norm * scale
        ropt.zero_grad()
        with autocast(dtype=cn.float16):
            loss = loss_fn(ref(input), target)
        scaler.scale(loss).backward()
        nn.utils.clip_grad_norm_(ref.parameters(), max_norm * scaler.get_scale())
        scaler.step(ropt)
        scaler.update()
        ref_scales.append(scaler.get_scale())
    assert scales == ref_scales
    _same_params(model, ref)


def test_gradient_clipping_with_separate_unscaling():
    max_norm = 0.5
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    scales = []
    for input, target in data:
        optimizer.zero_grad()
        with enable_autocasting():
            output = model(input)
            loss = loss_fn(output, target)
        scale_outputs(loss, S).backward()
        found_inf, S = optimizer.unscale(S)

        # Since we've already unscaled, we can clip to max_norm directly, instead of max_norm*S
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)

        # Since we've already unscaled, invoke step_after_unscale
        optimizer.step_after_unscale(found_inf=found_inf)
        scales.append(S.item())

    ref, ropt, rdata = _setup()
    scaler = GradScaler(**PROTOTYPE_RULE)
    ref_scales = []
    for input, target in rdata:
        ropt.zero_grad()
        with autocast(dtype=cn.float16):
            loss = loss_fn(ref(input), target)
        scaler.scale(loss).backward()
        scaler.unscale_(ropt)
        nn.utils.clip_grad_norm_(ref.parameters(), max_norm)
        scaler.step(ropt)
        scaler.update()
        ref_scales.append(scaler.get_scale())
    assert scales == ref_scales
    _same_params(model, ref)


def test_gradient_penalty_as_written_with_in_place_accumulation():
    _gradient_penalty(in_place=True)


def test_gradient_penalty():
    """The example with its one in-place line written out of place (``grad_norm = grad_norm + ...``)."""
    _gradient_penalty(in_place=False)


def _gradient_penalty(in_place):
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    scales = []
    for input, target in data:
        optimizer.zero_grad()
        with enable_autocasting():
            output = model(input)
            loss = loss_fn(output, target)

        # We should scale_outputs for the out-of-place backward pass
        grad_params = autograd.grad(scale_outputs(loss, S), model.parameters(), create_graph=True)

        # In general, the penalty term may depend nonlinearly on the out-of-place gradients, so to be safe,
        # manually unscale them before computing the penalty term.  This unscale should be autograd-exposed.
        grad_params = [p * (1. / S) for p in grad_params]

        # Compute the penalty term and add it to the loss
        with enable_autocasting():
            grad_norm = 0
            for grad in grad_params:
                if in_place:
                    grad_norm += grad.pow(2).sum()
                else:
                    grad_norm = grad_norm + grad.pow(2).sum()
            grad_norm = grad_norm.sqrt()
            loss = loss + grad_norm

        # The usual scaling for backward will now accumulate leaf gradients appropriately scaled by S
        scale_outputs(loss, S).backward()
        _, found_inf, S = optimizer.unscale_and_step(current_scale=S)
        scales.append(S.item())

    ref, ropt, rdata = _setup()
    scaler = GradScaler(**PROTOTYPE_RULE)
    ref_scales = []
    for input, target in rdata:  # torch's gradient-penalty recipe for GradScaler
        ropt.zero_grad()
        with autocast(dtype=cn.float16):
            loss = loss_fn(ref(input), target)
        scaled_grad_params = autograd.grad(scaler.scale(loss), ref.parameters(), create_graph=True)
        inv_scale = 1. / scaler.get_scale()
        grad_params = [p * inv_scale for p in scaled_grad_params]
        with autocast(dtype=cn.float16):
            grad_norm = 0
            for grad in grad_params:
                grad_norm = grad_norm + grad.pow(2).sum()
            loss = loss + grad_norm.sqrt()
        scaler.scale(loss).backward()
        scaler.step(ropt)
        scaler.update()
        ref_scales.append(scaler.get_scale())
    assert scales == ref_scales
    _same_params(model, ref)


def test_gradient_accumulation():
    iters_to_accumulate = 3
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    scales = []
    for i, (input, target) in enumerate(data):
        with enable_autocasting():
            output = model(input)
            loss = loss_fn(output, target)
            loss = loss / iters_to_accumulate
        scale_outputs(loss, S).backward()
        if (i + 1) % iters_to_accumulate == 0:
            # Clip gradients here if desired.
            # You may also use the separate unscale() + step_after_unscale() pattern.
            _, found_inf, S = optimizer.unscale_and_step(current_scale=S)
            optimizer.zero_grad()
            scales.append(S.item())

    ref, ropt, rdata = _setup()
    scaler = GradScaler(**PROTOTYPE_RULE)
    ref_scales = []
    for i, (input, target) in enumerate(rdata):
        with autocast(dtype=cn.float16):
            loss = loss_fn(ref(input), target) / iters_to_accumulate
        scaler.scale(loss).backward()
        if (i + 1) % iters_to_accumulate == 0:
            scaler.step(ropt)
            scaler.update()
            ropt.zero_grad()
            ref_scales.append(scaler.get_scale())
    assert scales == ref_scales and len(scales) == N_ITERS // iters_to_accumulate
    _same_params(model, ref)


def _grad_scaler_replay(**rule):
    """docs/amp.md's batch replay with GradScaler: replay each batch at the backed-off scale until clean."""
    ref, ropt, rdata = _setup()
    scaler = GradScaler(**{**PROTOTYPE_RULE, **rule})
    attempts = []
    for input, target in rdata:
        while True:
            ropt.zero_grad()
            with autocast(dtype=cn.float16):
                loss = loss_fn(ref(input), target)
            scaler.scale(loss).backward()
            _, found_inf = scaler.step(ropt, return_found_inf=True)
            scaler.update()
            attempts.append(scaler.get_scale())
            if found_inf.item() == 0:
                break
    return ref, attempts


def test_batch_replay_with_unscale_and_step_after_unscale():
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    attempts = []
    for input, target in data:
        # Replay this batch until inf/nan-free gradients are produced
        while True:
            optimizer.zero_grad()
            with enable_autocasting():
                output = model(input)
                loss = loss_fn(output, target)
            scale_outputs(loss, S).backward()
            found_inf, S = optimizer.unscale(S)
            attempts.append(S.item())

            # If we didn't find any infs/nans, stop replaying and step.
            if not found_inf.item():
                break

        # manipulate unscaled gradients here

        optimizer.step_after_unscale(found_inf=found_inf,
                                     skip_if_inf=False)  # we know the gradients don't contain infs at this point
    ref, ref_attempts = _grad_scaler_replay()
    assert attempts == ref_attempts and len(attempts) > N_ITERS  # some batches were replayed
    _same_params(model, ref)


def test_batch_replay_with_check_inf_and_unscale_and_step():
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    attempts = []
    for input, target in data:
        # Replay this batch until inf/nan-free gradients are produced
        while True:
            optimizer.zero_grad()
            with enable_autocasting():
                output = model(input)
                loss = loss_fn(output, target)
            scale_outputs(loss, S).backward()
            found_inf = optimizer.check_inf()
            if found_inf.item():
                S = S * 0.5  # If gradients contained inf, reduce S and replay.
            else:
                break  # If gradients did not contain inf, break the loop and step.
            attempts.append(S.item())
        attempts.append(S.item())
        optimizer.unscale_and_step(current_scale=S,
                                   skip_if_inf=False)  # we know the gradients don't contain infs at this point
    # NOTE: as written, the recommended scale is dropped, so S never grows: GradScaler without growth.
    ref, ref_attempts = _grad_scaler_replay(growth_interval=10**6)
    assert attempts == ref_attempts and len(attempts) > N_ITERS
    _same_params(model, ref)


@pytest.mark.parametrize("use_mixed_precision", [True, False])
def test_switching_mixed_precision_on_and_off(use_mixed_precision):
    model, optimizer, data = _setup()
    S = add_amp_attributes(optimizer)
    enabled = use_mixed_precision
    for input, target in data:
        optimizer.zero_grad()
        with enable_autocasting(enabled=enabled):
            output = model(input)
            loss = loss_fn(output, target)
        scale_outputs(loss, S, scaling_enabled=enabled).backward()
        _, found_inf, S = optimizer.unscale_and_step(current_scale=S, scaling_enabled=enabled)
        assert (found_inf is None) == (not enabled)

    ref, ropt, rdata = _setup()
    scaler = GradScaler(**PROTOTYPE_RULE, enabled=enabled)
    for input, target in rdata:
        ropt.zero_grad()
        with autocast(dtype=cn.float16, enabled=enabled):
            loss = loss_fn(ref(input), target)
        scaler.scale(loss).backward()
        scaler.step(ropt)
        scaler.update()
    assert (S is None) if not enabled else S.item() == scaler.get_scale()
    _same_params(model, ref)


def _two_models(seed=0):
    cn.manual_seed(seed)
    model0, model1 = nn.Linear(6, 4), nn.Linear(6, 4)
    optimizer0, optimizer1 = optim.SGD(model0.parameters(), lr=0.1), optim.SGD(model1.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    data = [(cn.tensor(rng.standard_normal((8, 6)).astype(np.float32)), cn.tensor(rng.integers(0, 4, 8)))
            for _ in range(N_ITERS)]
    return model0, model1, optimizer0, optimizer1, data


def loss_fn0(output0, output1, target):
    return loss_fn(output0 + output1, target)


def loss_fn1(output0, output1, target):
    return ((output0 - output1) ** 2).mean()


def test_multiple_models_optimizers_losses_gradients_and_S_exact():
    model0, model1, optimizer0, optimizer1, data = _two_models()
    # add_amp_attributes may accept an interable of optimizers
    S = add_amp_attributes([optimizer0, optimizer1])
    grads, scales, founds = [], [], []
    for input, target in data:
        optimizer0.zero_grad()
        optimizer1.zero_grad()
        with enable_autocasting():
            output0 = model0(input)
            output1 = model1(input)
            loss0 = loss_fn0(output0, output1, target)
            loss1 = loss_fn1(output0, output1, target)

        # Both losses accumulate into some parameters of model0 and some parameters of model1.
        scale_outputs(loss0, S).backward(retain_graph=True)
        scale_outputs(loss1, S).backward()

        _, found_inf0, S0 = optimizer0.unscale_and_step(current_scale=S)
        _, found_inf1, S1 = optimizer1.unscale_and_step(current_scale=S)
        grads.append([p.grad.numpy().copy() for m in (model0, model1) for p in m.parameters()])

        # Select the minimum of the two recommended scales to use next iteration
        S = min(S0, S1)
        scales.append(S.item())
        founds += [found_inf0, found_inf1]
    _saw_skips_and_steps(founds)

    ref0, ref1, ropt0, ropt1, rdata = _two_models()
    scaler = GradScaler(**PROTOTYPE_RULE)
    for i, (input, target) in enumerate(rdata):  # torch's "multiple models/optimizers/losses" recipe
        ropt0.zero_grad()
        ropt1.zero_grad()
        with autocast(dtype=cn.float16):
            output0, output1 = ref0(input), ref1(input)
            loss0, loss1 = loss_fn0(output0, output1, target), loss_fn1(output0, output1, target)
        scaler.scale(loss0).backward(retain_graph=True)
        scaler.scale(loss1).backward()
        scaler.step(ropt0)
        scaler.step(ropt1)
        scaler.update()
        assert scales[i] == scaler.get_scale()
        for g, p in zip(grads[i], [p for m in (ref0, ref1) for p in m.parameters()]):
            np.testing.assert_array_equal(g, p.grad.numpy())
    _same_params(model0, ref0)
    _same_params(model1, ref1)


# ---- add_amp_attributes and the patched methods ---------------------------------------------------------------
def test_add_amp_attributes_returns_the_initial_scale_and_patches_each_optimizer():
    model, optimizer, _ = _setup()
    other = optim.Adam(model.parameters(), lr=0.1)
    S = add_amp_attributes(o for o in (optimizer, other))  # any iterable
    assert isinstance(S, Tensor) and S.shape == () and S.dtype == cn.float32 and S.item() == 2.0**24
    assert S.device == model[0].weight.device
    for opt in (optimizer, other):
        for name in ("unscale", "check_inf", "step_after_unscale", "unscale_and_step"):
            assert getattr(opt, name).__self__ is opt
    assert add_amp_attributes(optimizer).item() == 2.0**24  # a single optimizer; patching twice is harmless


def test_add_amp_attributes_bad_arguments():
    with pytest.raises(ValueError, match="add_amp_attributes received an empty optimizer list."):
        add_amp_attributes([])
    with pytest.raises(TypeError, match="element 1 is a str, not an optimizer"):
        add_amp_attributes([_setup()[1], "sgd"])


def test_methods_the_optimizer_already_has_are_left_alone_and_used():
    """The prototype's customisation point: an optimizer class may define its own unscale (etc.)."""
    calls = []

    class MySGD(optim.SGD):
        def unscale(self, current_scale, *args):
            calls.append(current_scale.item())
            return prototype.unscale(self, current_scale, *args)

    model, _, data = _setup()
    optimizer = MySGD(model.parameters(), lr=0.1)
    S = add_amp_attributes(optimizer)
    assert optimizer.unscale.__func__ is MySGD.unscale
    input, target = data[0]
    scale_outputs(loss_fn(model(input), target), S).backward()
    _, found_inf, new_S = optimizer.unscale_and_step(current_scale=S)
    assert calls == [2.0**24] and found_inf.item() == 0.0 and new_S.item() == np.float32(2.0**24 * 1.001)
    assert S.item() == 2.0**24  # the given scale is never modified


def _one_backward(scale=2.0**10, opt_cls=optim.SGD, inf=False):
    model, optimizer, data = _setup(opt_cls=opt_cls)
    add_amp_attributes(optimizer)
    S = Tensor(np.array(scale, np.float32))
    input, target = data[0]
    scale_outputs(loss_fn(model(input), target), S).backward()
    if inf:
        model[0].weight.grad.array[0, 0] = np.inf
    return model, optimizer, S


def test_closure_is_refused_with_the_prototype_explanation():
    model, optimizer, S = _one_backward()
    before = [p.grad.numpy().copy() for p in model.parameters()]
    for call in (lambda: optimizer.unscale_and_step(lambda: None, current_scale=S),
                 lambda: optimizer.step_after_unscale(lambda: None, found_inf=S)):
        with pytest.raises(ValueError, match=r"^Closure use is not currently supported.  It's tricky, but not "
                                             r"impossible"):
            call()
    for p, b in zip(model.parameters(), before):  # refused before anything changed
        np.testing.assert_array_equal(p.grad.numpy(), b)
    assert optimizer.unscale_and_step(lambda: 3.0, current_scale=S, scaling_enabled=False) == (3.0, None, None)
    assert optimizer.step_after_unscale(lambda: 4.0, scaling_enabled=False) == 4.0


def test_disabled_calls_do_nothing_or_plain_step():
    model, optimizer, S = _one_backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    assert optimizer.unscale(S, scaling_enabled=False) == (None, None)
    assert optimizer.check_inf(scaling_enabled=False) is None
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_array_equal(p.grad.numpy(), g)


def test_unscale_returns_found_inf_and_a_new_recommended_scale():
    for inf, factor in ((False, 1.001), (True, 0.5)):
        model, optimizer, S = _one_backward(inf=inf)
        scaled = [p.grad.numpy().copy() for p in model.parameters()]
        found_inf, new_S = optimizer.unscale(S)
        assert found_inf.item() == float(inf) and new_S.item() == np.float32(2.0**10 * factor)
        assert S.item() == 2.0**10 and new_S is not S
        if not inf:
            for p, g in zip(model.parameters(), scaled):
                np.testing.assert_array_equal(p.grad.numpy(), g / np.float32(2.0**10))


def test_scale_growth_and_backoff_factors_and_scale_scheduler():
    _, optimizer, S = _one_backward(inf=True)
    assert optimizer.unscale(S, scale_backoff_factor=0.25)[1].item() == 2.0**8
    _, optimizer, S = _one_backward()
    assert optimizer.unscale(S, scale_growth_factor=4.0)[1].item() == 2.0**12
    seen = []

    def scheduler(current, found_inf):
        seen.append((current.item(), found_inf.item()))
        return current * 3.0

    _, optimizer, S = _one_backward()
    _, found_inf, new_S = optimizer.unscale_and_step(current_scale=S, scale_scheduler=scheduler)
    assert seen == [(2.0**10, 0.0)] and new_S.item() == 3 * 2.0**10


def test_fp16_gradients_are_refused_by_unscale_but_checked_by_check_inf():
    model, optimizer, S = _one_backward()
    model[0].weight.grad = model[0].weight.grad.to(cn.float16)
    model[0].weight.grad.array[0, 0] = np.inf
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        optimizer.unscale_and_step(current_scale=S)
    assert optimizer.check_inf().item() == 1.0


def test_found_inf_argument_decides_the_skip():
    model, optimizer, S = _one_backward()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    flag = Tensor(np.array(1.0, np.float32))  # e.g. from an earlier check_inf()
    result, found_inf, new_S = optimizer.unscale_and_step(current_scale=S, found_inf=flag)
    assert result is None and found_inf is flag and new_S.item() == np.float32(2.0**10 * 1.001)
    _same_params_as(model, before)


def _same_params_as(model, arrays):
    for p, a in zip(model.parameters(), arrays):
        np.testing.assert_array_equal(p.detach().numpy(), a)


def test_a_python_number_scale_and_missing_arguments():
    model, optimizer, _ = _one_backward(scale=8.0)
    found_inf, new_S = optimizer.unscale(8.0)
    assert found_inf.item() == 0.0 and new_S.item() == np.float32(8.0 * 1.001)
    with pytest.raises(ValueError, match="unscale_and_step: current_scale is required"):
        optimizer.unscale_and_step()
    with pytest.raises(ValueError, match="step_after_unscale: found_inf is required"):
        optimizer.step_after_unscale()


@pytest.mark.parametrize("opt_cls", [optim.SGD, optim.Adam])
@pytest.mark.parametrize("inf", [False, True])
def test_no_host_sync_in_unscale_and_step(opt_cls, inf, monkeypatch):
    """The step never reads the device (the counting of tests/test_grad_scaler.py: to_numpy and item)."""
    model, optimizer, S = _one_backward(opt_cls=opt_cls, inf=inf)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    reads = []
    real_to_numpy = backend.to_numpy
    monkeypatch.setattr(backend, "to_numpy", lambda a: reads.append("to_numpy") or real_to_numpy(a))
    monkeypatch.setattr(Tensor, "item", lambda self: reads.append("item"))
    monkeypatch.setattr(Tensor, "__bool__", lambda self: reads.append("bool"))
    _, found_inf, new_S = optimizer.unscale_and_step(current_scale=S)
    found_inf2 = optimizer.check_inf()
    assert reads == []
    monkeypatch.undo()
    assert found_inf.item() == found_inf2.item() == float(inf)
    if inf:
        _same_params_as(model, before)


def test_separate_unscale_and_step_after_unscale_have_no_host_sync(monkeypatch):
    _, optimizer, S = _one_backward(inf=True)
    reads = []
    real_to_numpy = backend.to_numpy
    monkeypatch.setattr(backend, "to_numpy", lambda a: reads.append("to_numpy") or real_to_numpy(a))
    monkeypatch.setattr(Tensor, "item", lambda self: reads.append("item"))
    found_inf, S = optimizer.unscale(S)
    assert optimizer.step_after_unscale(found_inf=found_inf) is None
    assert reads == []


def test_enable_autocasting_is_float16_autocast_on_the_default_device():
    w, x = cn.randn(4, 3, requires_grad=True), cn.randn(2, 4)
    with enable_autocasting():
        assert amp.is_autocast_enabled() and amp.get_autocast_dtype(backend.default_device().type) == cn.float16
        assert (x @ w).dtype == cn.float16
    with enable_autocasting(enabled=False):
        assert not amp.is_autocast_enabled() and (x @ w).dtype == cn.float32
    with enable_autocasting(dtype=cn.bfloat16):
        assert (x @ w).dtype == cn.bfloat16


def test_the_prototype_names_are_in_cupynet_amp():
    assert amp.add_amp_attributes is prototype.add_amp_attributes
    assert amp.enable_autocasting is prototype.enable_autocasting
    assert amp.scale_outputs is prototype.scale_outputs
    assert {"add_amp_attributes", "enable_autocasting", "scale_outputs", "prototype"} <= set(amp.__all__)
    assert {n for n in dir(prototype) if not n.startswith("_")} == set(prototype.__all__)


def _doc_blocks(title):
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "amp.md"
    text = path.read_text()
    section = text[text.index(title):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_docs_three_apis_agree():
    """docs/amp.md, "The same loop in three APIs": the three blocks, run as printed, end bit for bit equal."""
    blocks = _doc_blocks("## 10. The same loop in three APIs")
    assert len(blocks) == 3
    results = []
    for block in blocks:
        model, optimizer, data = _setup()
        namespace = {"cupynet": cn, "model": model, "optimizer": optimizer, "data": data, "loss_fn": loss_fn,
                     "params": list(model.parameters())}
        exec(compile(block, "docs/amp.md", "exec"), namespace)  # noqa: S102 - the documentation's own code
        results.append((namespace["final_scale"], [p.detach().numpy() for p in model.parameters()]))
    (scale0, params0), *others = results
    assert scale0 != 2.0**24  # the loop overflowed and recovered
    for scale, params in others:
        assert scale == scale0
        for a, b in zip(params, params0):
            np.testing.assert_array_equal(a, b)

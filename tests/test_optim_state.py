"""Optimizer state_dict / load_state_dict: PyTorch's layout, exact continuation, validation before change."""

import numpy as np
import pytest

from cupynet import optim
from cupynet.tensor import Tensor


def _model(seed=0, shapes=((3, 2), (4,))):
    rng = np.random.default_rng(seed)
    return [Tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]


def _grads(params, seed):
    rng = np.random.default_rng(seed)
    for p in params:
        p.grad = Tensor(rng.standard_normal(p.shape).astype(np.float32))


def _host_copy(state_dict):
    """What a checkpoint file holds: plain arrays, no shared objects."""
    state = {i: {k: (np.array(v.array, copy=True) if isinstance(v, Tensor) else v) for k, v in s.items()}
             for i, s in state_dict["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in state_dict["param_groups"]]}


@pytest.mark.parametrize("make", [
    lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=0.01),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
    lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
    lambda ps: optim.Adadelta(ps),
    lambda ps: optim.Adamax(ps),
    lambda ps: optim.NAdam(ps, decoupled_weight_decay=True, weight_decay=0.1),
    lambda ps: optim.RAdam(ps, betas=(0.9, 0.9)),
    lambda ps: optim.ASGD(ps, lambd=0.1, t0=2.0),
    lambda ps: optim.Rprop(ps),
])
def test_round_trip_continues_identically(make):
    a = _model()
    opt_a = make(a)
    for k in range(3):
        _grads(a, k)
        opt_a.step()
    saved = _host_copy(opt_a.state_dict())
    b = [Tensor(np.array(p.array, copy=True), requires_grad=True) for p in a]
    opt_b = make(b)
    opt_b.load_state_dict(saved)
    for k in range(3, 6):
        _grads(a, k)
        _grads(b, k)
        opt_a.step()
        opt_b.step()
    for p, q in zip(a, b):
        assert p.array.tobytes() == q.array.tobytes()


@pytest.mark.parametrize("name,kwargs", [("Adagrad", {}), ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}),
                                         ("RAdam", {}), ("ASGD", {}), ("Rprop", {})])
def test_new_optimizers_state_keys_and_groups_match_pytorch(name, kwargs):
    """The same state keys, shapes and dtypes and the same param-group keys and defaults as torch.optim."""
    torch = pytest.importorskip("torch")
    ours_p = _model()
    theirs_p = [torch.tensor(np.array(p.array), requires_grad=True) for p in ours_p]
    ours, theirs = getattr(optim, name)(ours_p, **kwargs), getattr(torch.optim, name)(theirs_p, **kwargs)
    _grads(ours_p, 0)
    for p, q in zip(ours_p, theirs_p):
        q.grad = torch.tensor(np.array(p.grad.array))
    ours.step()
    theirs.step()
    mine, expected = ours.state_dict(), theirs.state_dict()
    for index, st in expected["state"].items():
        assert sorted(mine["state"][index]) == sorted(st)
        for key, value in st.items():
            assert tuple(mine["state"][index][key].shape) == tuple(value.shape), key
            assert str(mine["state"][index][key].dtype) == str(value.dtype).replace("torch.", ""), key
    group, their_group = mine["param_groups"][0], expected["param_groups"][0]
    assert set(their_group) - set(group) == set(), "missing group keys"
    for key in group:
        if key in their_group:
            assert group[key] == their_group[key], key


def test_layout_matches_pytorch():
    params = _model()
    extra = Tensor(np.zeros(2, np.float32), requires_grad=True)
    opt = optim.Adam([{"params": params}, {"params": [extra], "lr": 0.5}], lr=0.01)
    _grads(params, 0)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sorted(sd["state"]) == [0, 1]  # extra had no grad: no state
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    step = sd["state"][0]["step"]
    assert isinstance(step, Tensor) and step.dtype == np.float32 and step.shape == () and float(step.array) == 1.0
    assert sd["state"][0]["step"] is not sd["state"][1]["step"]  # copies: no shared objects in a checkpoint


def test_torch_can_load_our_state_dict():
    torch = pytest.importorskip("torch")
    params = _model()
    opt = optim.Adam(params, lr=0.01)
    _grads(params, 0)
    opt.step()
    sd = opt.state_dict()
    state = {i: {k: torch.tensor(np.asarray(v.array)) for k, v in s.items()} for i, s in sd["state"].items()}
    converted = {"state": state, "param_groups": [dict(g) for g in sd["param_groups"]]}
    theirs = torch.optim.Adam([torch.tensor(np.array(p.array)) for p in params], lr=0.01)
    theirs.load_state_dict(converted)
    assert float(list(theirs.state.values())[0]["step"]) == 1.0


def _trained_adam():
    params = _model()
    opt = optim.Adam(params, lr=0.01)
    _grads(params, 0)
    opt.step()
    return params, opt


@pytest.mark.parametrize("mutate,message", [
    (lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0])), "different number of parameter groups"),
    (lambda sd: sd["param_groups"][0]["params"].pop(), "doesn't match the size of optimizer's group"),
    (lambda sd: sd["state"][0].update(exp_avg=np.zeros((5, 5), np.float32)),
     r"state\[0\]\['exp_avg'\] has shape \(5, 5\) but parameter 0 has shape \(3, 2\)"),
    (lambda sd: sd["state"][1].update(step=np.zeros(3, np.float32)), "must hold one value"),
    (lambda sd: sd["state"].update({7: {}}), "names no parameter"),
    (lambda sd: sd.pop("state"), "expected a dict with keys 'state' and 'param_groups'"),
    (lambda sd: sd["param_groups"][0].update(lr=-1.0), "Invalid learning rate"),
])
def test_bad_state_dict_is_rejected_and_nothing_changes(mutate, message):
    params, opt = _trained_adam()
    sd = _host_copy(opt.state_dict())
    sd["param_groups"][0]["params"] = list(sd["param_groups"][0]["params"])
    mutate(sd)
    before = {(i, k): np.array(v.array, copy=True) for i, p in enumerate(params) for k, v in opt.state[p].items()}
    groups_before = [dict(g) for g in opt.param_groups]
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(sd)
    after = {(i, k): np.array(v.array, copy=True) for i, p in enumerate(params) for k, v in opt.state[p].items()}
    assert before.keys() == after.keys() and all(before[k].tobytes() == after[k].tobytes() for k in before)
    assert [dict(g) for g in opt.param_groups] == groups_before


def test_load_casts_state_to_compute_dtype_and_copies():
    params, opt = _trained_adam()
    sd = _host_copy(opt.state_dict())
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].astype(np.float64)
    sd["state"][0]["step"] = np.array([1.0], np.float64)
    source = sd["state"][1]["exp_avg"]
    opt.load_state_dict(sd)
    assert opt.state[params[0]]["exp_avg"].dtype == np.float32
    step = opt.state[params[0]]["step"]
    assert step.dtype == np.float32 and step.shape == ()
    assert opt.state[params[1]]["exp_avg"].array is not source
    # equal steps within a group are shared again after loading (one device scalar for the fused path)
    assert opt.state[params[0]]["step"] is opt.state[params[1]]["step"]


def test_sgd_momentum_flag_survives_round_trip():
    params = _model()
    opt = optim.SGD(params, lr=0.1, momentum=0.9, dampening=0.5)
    _grads(params, 0)
    opt.step(found_inf=np.ones(1, np.float32))  # skipped first step: buffers exist but are unset
    sd = _host_copy(opt.state_dict())
    assert int(sd["state"][0]["momentum_buffer_unset"]) == 1
    twin = [Tensor(np.array(p.array, copy=True), requires_grad=True) for p in params]
    opt2 = optim.SGD(twin, lr=0.1, momentum=0.9, dampening=0.5)
    opt2.load_state_dict(sd)
    fresh = [Tensor(np.array(p.array, copy=True), requires_grad=True) for p in params]
    opt3 = optim.SGD(fresh, lr=0.1, momentum=0.9, dampening=0.5)
    for ps in (twin, fresh):
        _grads(ps, 1)
    opt2.step()
    opt3.step()
    assert all(p.array.tobytes() == q.array.tobytes() for p, q in zip(twin, fresh))

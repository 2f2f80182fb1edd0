"""LBFGS against torch.optim.LBFGS (fixed step and strong-Wolfe line search), its state and its refusals.

NOTE on the bound: the test problem is a least-squares term plus a quartic
(smooth, convex, its Hessian's condition number checked below 50). The two
implementations run the same iterations, so they must make the same number of
closure evaluations; each evaluation (a forward, a backward and the two-loop
recursion, whose dot products PyTorch sums in another order) rounds each
quantity a few times, by at most half an ulp of the largest magnitude it
holds, so the parameters may differ by ``ROUNDINGS_PER_EVAL`` ulps of their
largest magnitude per evaluation. The comparison stops after two ``step``
calls, before the loss reaches its fp32 noise floor (where a one-ulp
difference in the loss legitimately changes the line search's path).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cupynet import optim
from cupynet.tensor import Tensor

torch = pytest.importorskip("torch")

ROUNDINGS_PER_EVAL = 4
rng = np.random.default_rng(0)
A = rng.standard_normal((8, 5)).astype(np.float32)
B = rng.standard_normal(8).astype(np.float32)
W0 = rng.standard_normal(5).astype(np.float32)
CASES = [dict(line_search_fn=ls, history_size=h, max_iter=5) for ls in (None, "strong_wolfe") for h in (2, 100)]

_ORACLE = """
import json, sys
import numpy as np, torch
a, b, w0, cases = json.loads(sys.argv[1])
a, b, w0, out = np.array(a, np.float32), np.array(b, np.float32), np.array(w0, np.float32), []
for kw in cases:
    w = torch.tensor(w0.copy(), requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1, **kw)
    at, bt = torch.tensor(a), torch.tensor(b)
    def closure():
        opt.zero_grad()
        loss = ((at @ w - bt) ** 2).sum() + (w ** 4).sum() * 0.1
        loss.backward()
        return loss
    losses = [float(opt.step(closure).detach()) for _ in range(2)]
    out.append(dict(w=w.detach().numpy().tolist(), losses=losses, func_evals=opt.state[w]["func_evals"],
                    n_iter=opt.state[w]["n_iter"]))
print(json.dumps(out))
"""


def _loss(w):
    return ((Tensor(A) @ w - Tensor(B)) ** 2).sum() + (w ** 4).sum() * 0.1


def _run(kwargs, steps=2, w0=W0):
    w = Tensor(w0.copy(), requires_grad=True)
    opt = optim.LBFGS([w], lr=1, **kwargs)

    def closure():
        opt.zero_grad()
        loss = _loss(w)
        loss.backward()
        return loss

    losses = [float(opt.step(closure)) for _ in range(steps)]
    return w, opt, losses, closure


@pytest.fixture(scope="module")
def oracle():
    payload = json.dumps([A.tolist(), B.tolist(), W0.tolist(), CASES])
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    done = subprocess.run([sys.executable, "-c", _ORACLE, payload], capture_output=True, text=True, env=env,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def test_problem_is_well_conditioned():
    hessian = 2 * A.T.astype(np.float64) @ A  # the quartic adds a non-negative diagonal
    assert np.linalg.cond(hessian) < 50


@pytest.mark.parametrize("index", range(len(CASES)))
def test_matches_torch(oracle, index):
    expected = oracle[index]
    w, opt, losses, _ = _run(CASES[index])
    state = opt.state[w]
    assert (state["func_evals"], state["n_iter"]) == (expected["func_evals"], expected["n_iter"])
    theirs = np.array(expected["w"], np.float32)
    peak = max(np.abs(theirs).max(), np.abs(W0).max())
    allowed = ROUNDINGS_PER_EVAL * expected["func_evals"] * np.spacing(np.float32(peak))
    assert np.abs(w.array - theirs).max() <= allowed
    np.testing.assert_allclose(losses, expected["losses"], rtol=ROUNDINGS_PER_EVAL * expected["func_evals"]
                               * np.finfo(np.float32).eps)


def test_strong_wolfe_minimises_rosenbrock_in_float64():
    x = Tensor(np.array([-1.5, 2.0]), requires_grad=True)
    opt = optim.LBFGS([x], lr=1, max_iter=200, history_size=10, line_search_fn="strong_wolfe",
                      tolerance_grad=1e-12, tolerance_change=1e-15)

    def closure():
        opt.zero_grad()
        a, b = x[0], x[1]
        loss = (1 - a) ** 2 + 100 * (b - a * a) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.array, [1.0, 1.0], atol=1e-6)


def test_state_round_trip_continues_identically():
    w, opt, _, closure = _run(CASES[3], steps=1)
    saved = opt.state_dict()
    # NOTE: PyTorch's keys, less its scratch list "al" (the two-loop's coefficients, rebuilt every iteration)
    assert sorted(saved["state"][0]) == ["H_diag", "d", "func_evals", "n_iter", "old_dirs", "old_stps",
                                         "prev_flat_grad", "prev_loss", "ro", "t"]
    w2 = Tensor(w.array.copy(), requires_grad=True)
    opt2 = optim.LBFGS([w2], lr=1, **CASES[3])

    def closure2():
        opt2.zero_grad()
        loss = _loss(w2)
        loss.backward()
        return loss

    opt2.load_state_dict(saved)
    opt.step(closure)
    opt2.step(closure2)
    assert w.array.tobytes() == w2.array.tobytes()


def test_refusals():
    w = Tensor(W0.copy(), requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS: Invalid learning rate: -1"):
        optim.LBFGS([w], lr=-1)
    with pytest.raises(ValueError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        optim.LBFGS([w], max_iter=0)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [Tensor(W0.copy(), requires_grad=True)]}])
    opt = optim.LBFGS([w])
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        opt.add_param_group({"params": [Tensor(W0.copy(), requires_grad=True)]})
    with pytest.raises(TypeError, match="a closure is required"):
        opt.step()
    with pytest.raises(ValueError, match="found_inf is not supported"):
        opt.step(lambda: 0.0, found_inf=np.zeros(1, np.float32))
    assert np.array_equal(w.array, W0) and not opt.state
    assert optim.LBFGS([w], max_iter=8).param_groups[0]["max_eval"] == 10  # max_iter * 5 // 4, as PyTorch


def test_stops_at_once_when_the_gradient_is_zero():
    w = Tensor(np.zeros(3, np.float32), requires_grad=True)
    opt = optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0
    assert opt.state[w]["func_evals"] == 1 and opt.state[w]["n_iter"] == 0

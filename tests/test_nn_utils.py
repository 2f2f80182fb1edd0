"""nn.utils: clip_grad_norm_ / clip_grad_value_ against torch, no host sync, bad inputs."""

import math

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.nn import utils


def _params_with_grads(grads, dtype=cn.float32):
    params = []
    for g in grads:
        p = nn.Parameter(cn.zeros(*g.shape, dtype=dtype))
        p.grad = cn.tensor(g, dtype=dtype)
        params.append(p)
    return params


GRADS = [np.random.default_rng(i).standard_normal(s).astype(np.float32) * 3 for i, s in enumerate([(3, 4), (5,)])]


@pytest.mark.parametrize("max_norm, norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (2.0, math.inf), (1.0, 3)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    torch = pytest.importorskip("torch")
    params = _params_with_grads(GRADS)
    total = utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    tparams = [torch.zeros(g.shape, requires_grad=True) for g in GRADS]
    for p, g in zip(tparams, GRADS):
        p.grad = torch.tensor(g)
    ref = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type=norm_type)
    assert isinstance(total, cn.Tensor) and total.shape == () and total.dtype == cn.float32
    assert total.item() == pytest.approx(ref.item(), rel=1e-5)
    for p, t in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_half_grads_and_identity_kept():
    params = _params_with_grads([g * 100 for g in GRADS], dtype=cn.float16)
    grad_objects = [p.grad for p in params]
    host = [p.grad.numpy().astype(np.float64) for p in params]
    expected = math.sqrt(sum(float((h ** 2).sum()) for h in host))
    total = utils.clip_grad_norm_(params, 1.0)
    assert total.item() == pytest.approx(expected, rel=1e-4)  # NOTE: fp32 accumulation: no fp16 overflow
    assert all(p.grad is g for p, g in zip(params, grad_objects))
    new_norm = math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in params))
    assert new_norm == pytest.approx(1.0, rel=2e-3)


def test_clip_grad_norm_skips_missing_grads_and_empty():
    p = nn.Parameter(cn.ones(2))
    assert utils.clip_grad_norm_([p], 1.0).item() == 0.0
    q = _params_with_grads([np.array([3.0, 4.0], np.float32)])[0]
    assert utils.clip_grad_norm_([p, q], 10.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(q.grad.numpy(), [3.0, 4.0], rtol=1e-6)  # below max_norm: unchanged


def test_clip_grad_norm_nonfinite():
    q = _params_with_grads([np.array([np.inf, 1.0], np.float32)])
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_(q, 1.0, error_if_nonfinite=True)
    assert math.isinf(utils.clip_grad_norm_(q, 1.0).item())


def test_clip_grad_norm_does_not_sync(monkeypatch):
    params = _params_with_grads(GRADS)

    def forbidden(self):
        raise AssertionError("host sync")

    monkeypatch.setattr(cn.Tensor, "item", forbidden)
    monkeypatch.setattr(cn.Tensor, "__bool__", forbidden)
    monkeypatch.setattr(cn.Tensor, "__float__", forbidden)
    total = utils.clip_grad_norm_(params, 1.0)
    assert total.array.shape == ()


def test_clip_grad_value():
    q = _params_with_grads([np.array([-3.0, 0.5, 2.0], np.float32)])
    utils.clip_grad_value_(q, 1.0)
    np.testing.assert_array_equal(q[0].grad.numpy(), [-1.0, 0.5, 1.0])


def test_parameters_vector_round_trip():
    m = nn.Linear(3, 2)
    vec = utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    utils.vector_to_parameters(cn.arange(8, dtype=cn.float32), m.parameters())
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="the vector has 3 elements, the parameters 8"):
        utils.vector_to_parameters(cn.zeros(3), m.parameters())


def test_clip_bad_inputs():
    with pytest.raises(TypeError, match="clip_grad_norm_: max_norm must be a real number, got 'big'"):
        utils.clip_grad_norm_([], "big")
    with pytest.raises(ValueError, match="norm_type must be positive or inf, got -1.0"):
        utils.clip_grad_norm_([], 1.0, norm_type=-1)
    with pytest.raises(TypeError, match="expected Tensors"):
        utils.clip_grad_norm_([np.zeros(2)], 1.0)

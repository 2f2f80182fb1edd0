"""``nn.Sequential`` runs a Linear followed by a ReLU as one fused op: same values and gradients, bit for bit."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import amp, nn
from cupynet.ops.linear_relu import linear_relu


def _model(seed=0, dtype=None):
    cn.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8, dtype=dtype), nn.ReLU(), nn.Linear(8, 5, dtype=dtype), nn.ReLU(),
                         nn.Linear(5, 3, dtype=dtype))


def _run(model, x, fuse, autocast_dtype=None):
    """Loss, input gradient and parameter gradients of one forward/backward, fused or not."""
    model.zero_grad()
    x = x.detach().requires_grad_()
    old, nn.Sequential.fuse = nn.Sequential.fuse, fuse
    try:
        with amp.autocast("cpu", dtype=autocast_dtype or cn.bfloat16, enabled=autocast_dtype is not None):
            out = model(x)
        loss = (out.float() * out.float()).sum()
        loss.backward()
    finally:
        nn.Sequential.fuse = old
    return [out.detach().numpy().astype(np.float64), x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("dtype,autocast_dtype", [(cn.float32, None), (cn.float64, None), (cn.float32, cn.float16),
                                                  (cn.float32, cn.bfloat16)])
def test_fused_pair_equals_the_two_ops_bit_for_bit(dtype, autocast_dtype):
    model = _model(dtype=dtype)
    x = cn.tensor(np.random.default_rng(1).standard_normal((7, 6)), dtype=dtype)
    fused, plain = _run(model, x, True, autocast_dtype), _run(model, x, False, autocast_dtype)
    assert all(_bits(a) == _bits(b) for a, b in zip(fused, plain))


def test_fusion_is_what_runs_and_hooks_or_subclasses_turn_it_off():
    model = _model()
    x = cn.randn(2, 6, requires_grad=True)
    assert model(x).grad_fn.next_edges[0][0].next_edges[0][0].name() == "LinearReluBackward"
    seen = []
    model[1].register_forward_hook(lambda module, args, out: seen.append(out))
    assert model(x).grad_fn.next_edges[0][0].next_edges[0][0].name() == "ReluBackward"  # hook must see relu
    assert len(seen) == 1

    class MyLinear(nn.Linear):
        pass

    sub = nn.Sequential(MyLinear(6, 4), nn.ReLU())
    assert sub(x).grad_fn.name() == "ReluBackward"


def test_fused_op_double_backward_matches_unfused():
    rng = np.random.default_rng(2)
    x = cn.tensor(rng.standard_normal((4, 3)), dtype=cn.float64, requires_grad=True)
    w = cn.tensor(rng.standard_normal((5, 3)), dtype=cn.float64, requires_grad=True)
    b = cn.tensor(rng.standard_normal(5), dtype=cn.float64, requires_grad=True)
    assert cn.autograd.gradcheck(lambda x, w, b: linear_relu(x, w, b), (x, w, b))
    assert cn.autograd.gradgradcheck(lambda x, w, b: linear_relu(x, w, b), (x, w, b))
    second = []
    for fn in (lambda: linear_relu(x, w, b), lambda: cn.relu(cn.linear(x, w, b))):
        (gx,) = cn.autograd.grad((fn() ** 2).sum(), (x,), create_graph=True)
        (ggw,) = cn.autograd.grad((gx ** 2).sum(), (w,))
        second.append(ggw.numpy())
    np.testing.assert_array_equal(second[0], second[1])


def test_fused_op_keeps_nan_and_masks_inf_gradients_like_relu():
    x = cn.tensor([[1.0, -1.0], [2.0, 0.5]], requires_grad=True)
    w = cn.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    b = cn.tensor([np.nan, 0.0], requires_grad=True)
    y = linear_relu(x, w, b)
    np.testing.assert_array_equal(y.detach().numpy(), [[np.nan, 0.0], [np.nan, 0.5]])
    y.backward(cn.tensor([[1.0, np.inf], [1.0, 1.0]]))
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0], [0.0, 1.0]])  # inf masked to 0, not inf * 0 = NaN


def test_fused_layer_errors_name_the_layer():
    model = _model()
    with pytest.raises(ValueError, match=r"Linear\(in_features=6, out_features=8, bias=True\): expected input with "
                                         r"last dimension 6 \(in_features\), got input of shape \(2, 7\)"):
        model(cn.randn(2, 7))

"""cupynet.utils.checkpoint (issue 13): gradients equal the plain run (parameters included, dropout masks
replayed), the segment's activations are freed after the forward, autograd.grad / create_graph / autocast
work through it, bad inputs raise clear errors."""

import gc
import weakref

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.nn import functional as F
from cupynet.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    """Linear -> GELU -> dropout -> Linear, with a hook that records the intermediate tensors."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 4)
        self.calls, self.seen = 0, []

    def forward(self, x, scale=1.0):
        self.calls += 1
        h = F.dropout(F.gelu(self.a(x)), p=0.5, training=True)
        self.seen.append(weakref.ref(h))   # the second Linear saves it for its weight gradient
        return self.b(h) * scale


def _setup():
    cn.manual_seed(0)
    block = Block()
    x = cn.randn(3, 4, requires_grad=True)
    return block, x


def _grads(block, x):
    return [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in block.parameters()]


def _run(use_checkpoint, **kwargs):
    block, x = _setup()
    cn.manual_seed(1)
    out = checkpoint(block, x, **kwargs) if use_checkpoint else block(x)
    after_forward = cn.rand(1).item()
    (out ** 2).sum().backward()
    return out.detach().numpy(), _grads(block, x), block, after_forward, cn.rand(1).item()


@pytest.mark.parametrize("use_reentrant", [False, True, None])
def test_gradients_and_dropout_masks_equal_the_plain_run(use_reentrant):
    out, grads, block, after_forward, after_backward = _run(True, use_reentrant=use_reentrant)
    ref_out, ref_grads, _, ref_after_forward, ref_after_backward = _run(False)
    np.testing.assert_array_equal(out, ref_out)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_array_equal(g, r)          # same mask in the recompute, same math: bit-identical
    assert block.calls == 2                            # forward, then the recompute in backward
    assert after_forward == ref_after_forward and after_backward == ref_after_backward   # global stream as plain


def test_without_preserve_rng_state_the_recompute_draws_new_masks():
    _, grads, *_ = _run(True, preserve_rng_state=False)
    _, ref_grads, *_ = _run(False)
    assert not np.array_equal(grads[0], ref_grads[0])


def test_activations_are_freed_after_the_forward():
    block, x = _setup()
    out = checkpoint(block, x)
    gc.collect()
    assert block.seen[0]() is None                     # checkpointed: the activation is gone
    plain = block(x)
    gc.collect()
    assert block.seen[1]() is not None                 # plain: the graph keeps it for backward
    assert out.grad_fn.name() == "CheckpointBackward" and plain.grad_fn is not None


def test_autograd_grad_reaches_parameters_and_inputs_without_grad():
    block, _ = _setup()
    x = cn.randn(3, 4)                                 # no input requires grad: parameters still do
    cn.manual_seed(2)
    gw = cn.autograd.grad(checkpoint(block, x).sum(), [block.a.weight, block.b.bias])
    cn.manual_seed(2)
    ref = cn.autograd.grad(block(x).sum(), [block.a.weight, block.b.bias])
    for g, r in zip(gw, ref):
        np.testing.assert_array_equal(g.numpy(), r.numpy())


def test_create_graph_double_backward_matches_plain():
    def fn(x, w):
        return (cn.tanh(x * w) ** 2).sum(-1)

    results = []
    for use in (True, False):
        x = cn.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=cn.float64, requires_grad=True)
        w = cn.tensor([0.5, -1.0, 2.0], dtype=cn.float64, requires_grad=True)
        y = checkpoint(fn, x, w) if use else fn(x, w)
        (gx,) = cn.autograd.grad(y.sum(), x, create_graph=True)
        (gx ** 2).sum().backward()
        results.append((gx.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)


def test_tuple_outputs_non_tensor_args_and_kwargs():
    def fn(x, k, scale=1.0):
        return x * k * scale, (x ** 2).sum()

    x = cn.randn(3, requires_grad=True)
    a, b = checkpoint(fn, x, 2, scale=3.0)
    (a.sum() + b).backward()
    np.testing.assert_allclose(x.grad.numpy(), 6.0 + 2 * x.detach().numpy(), rtol=1e-6)


def test_autocast_recompute_runs_in_the_forward_dtype():
    results = []
    for use in (True, False):
        cn.manual_seed(0)
        lin = nn.Linear(4, 4)
        x = cn.randn(2, 4, requires_grad=True)
        with cn.autocast("cpu", dtype=cn.bfloat16):
            y = checkpoint(lin, x) if use else lin(x)
        assert y.dtype == cn.bfloat16
        y.float().sum().backward()
        results.append((x.grad.numpy(), lin.weight.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_input_modified_in_place_before_backward_is_torchs_error():
    x = cn.randn(3, requires_grad=True)
    y = x * 1.0
    out = checkpoint(lambda t: (t ** 2).sum(), y)
    with cn.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_grad_mode_off_is_a_plain_call():
    block, x = _setup()
    with cn.no_grad():
        out = checkpoint(block, x)
    assert out.grad_fn is None and block.calls == 1


def test_checkpoint_sequential_matches_plain():
    results = []
    for use in (True, False):
        cn.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
        x = cn.randn(5, 4, requires_grad=True)
        out = checkpoint_sequential(model, 3, x, use_reentrant=False) if use else model(x)
        out.sum().backward()
        results.append([x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call, error, message", [
    (lambda: checkpoint(3, cn.ones(2)), TypeError, "function must be callable, got int"),
    (lambda: checkpoint(lambda x: 3, cn.ones(2, requires_grad=True)), TypeError,
     "must return a Tensor or a tuple of Tensors, but output 0 is a int"),
    (lambda: checkpoint(lambda x, w=None: x, cn.ones(2), w=cn.ones(2, requires_grad=True)), ValueError,
     "keyword argument 'w' is a Tensor that requires grad; pass it positionally"),
    (lambda: checkpoint(lambda x: x, cn.ones(2), use_reentrant="yes"), TypeError,
     "use_reentrant must be True, False or None"),
    (lambda: checkpoint(lambda x: x, cn.ones(2), context_fn=lambda: None), NotImplementedError,
     "context_fn .selective activation checkpointing. is not supported"),
    (lambda: checkpoint(lambda x: x, cn.ones(2), determinism_check="all"), ValueError,
     "determinism_check should be one of"),
    (lambda: checkpoint_sequential([nn.ReLU(), nn.ReLU()], 3, cn.ones(2)), ValueError,
     r"segments must be an int in \[1, 2\]"),
])
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call()

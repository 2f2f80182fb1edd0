"""Autograd semantics: accumulation, retain_graph, freed graph, in-place detection, grad modes, hooks, grad()."""

import gc
import threading
import tracemalloc

import numpy as np
import pytest

import cupynet as cn
from cupynet.autograd import Function


def test_gradient_accumulates_into_leaves():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_shared_grad_arrays_are_not_aliased_between_leaves():
    a = cn.tensor([1.0, 2.0], requires_grad=True)
    b = cn.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()  # Add hands the same gradient to both inputs
    a.grad.mul_(10.0)         # an in-place unscale/clip of one .grad ...
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0])  # ... must not touch the other


def test_reshape_view_grad_does_not_alias_other_leaf():
    x = cn.ones(2, 3, requires_grad=True)
    b = cn.zeros(6, requires_grad=True)
    (x.reshape(6) + b).sum().backward()
    b.grad.mul_(0.0)
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 3)))


def test_second_backward_through_freed_graph_is_an_error():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_inplace_change_of_saved_tensor_is_detected():
    w = cn.tensor([1.0, 2.0], requires_grad=True)
    x = cn.tensor([3.0, 4.0])
    y = (w * x).sum()
    x.add_(1.0)  # x was saved by Mul for the gradient of w
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*version 1; expected version 0"):
        y.backward()


def test_inplace_on_leaf_requiring_grad_is_an_error():
    w = cn.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.add_(1.0)
    with cn.no_grad():
        w.add_(1.0)  # what optimizers do
    assert w.tolist() == [2.0] and w._version == 1


def test_no_grad_records_nothing_and_restores():
    x = cn.tensor([1.0], requires_grad=True)
    with cn.no_grad():
        y = x * 2
        assert not cn.is_grad_enabled()
    assert cn.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad


def test_grad_mode_restored_after_exception_and_decorators():
    with pytest.raises(ValueError):
        with cn.no_grad():
            raise ValueError("boom")
    assert cn.is_grad_enabled()

    @cn.no_grad()
    def f(t):
        return t * 2

    assert f(cn.tensor([1.0], requires_grad=True)).grad_fn is None
    with cn.no_grad():
        with cn.enable_grad():
            assert (cn.tensor([1.0], requires_grad=True) * 2).requires_grad
    with cn.set_grad_enabled(False):
        assert not cn.is_grad_enabled()
    assert cn.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["worker"] = cn.is_grad_enabled()
        cn.set_grad_enabled(False)  # must not leak out of this thread

    with cn.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not cn.is_grad_enabled()
    assert seen["worker"] is True
    assert cn.is_grad_enabled()


def test_hooks_on_leaf_and_intermediate():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    y = x * 3
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [60.0, 60.0])  # ((1 + 1) * 3) * 10
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_retain_grad_of_intermediate():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    y.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])


def test_grad_allow_unused_and_errors():
    x = cn.tensor([1.0], requires_grad=True)
    z = cn.tensor([1.0], requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        cn.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = cn.autograd.grad(y, [x, z], allow_unused=True)
    assert gz is None and gx.tolist() == [2.0]
    assert x.grad is None  # grad() never touches .grad


def test_grad_wrt_intermediate():
    x = cn.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    (gh,) = cn.autograd.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), 2 * np.array([3.0, 6.0]))


class _CountingDouble(Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        _CountingDouble.calls += 1
        return g * 2


def test_grad_runs_nothing_beyond_its_inputs():
    # NOTE: PyTorch's rule (the double-backward tutorial's gradcheck then gradgradcheck of Exp.apply on a cloned x
    # hit it): grad(y, h) never runs the backward of the ops that made h, so their freed graph is no error
    x = cn.tensor([1.0, 2.0], dtype=cn.float64, requires_grad=True)
    h = _CountingDouble.apply(x)
    _CountingDouble.calls = 0
    for _ in range(2):  # each grad frees y's graph; h's history is never entered
        (gh,) = cn.autograd.grad((h * h).sum(), h)
        np.testing.assert_allclose(gh.numpy(), [4.0, 8.0])
    assert _CountingDouble.calls == 0
    cloned = cn.tensor(1.0, dtype=cn.float64, requires_grad=True).clone()
    cn.autograd.grad(cloned.exp(), cloned)  # frees CloneBackward's successors only
    cn.autograd.gradcheck(cn.exp, cloned)
    cn.autograd.gradgradcheck(cn.exp, cloned)
    # a node both captured and on the way to another input still runs, once
    (gx, gh) = cn.autograd.grad((h * h).sum(), (x, h))
    np.testing.assert_allclose(gx.numpy(), [8.0, 16.0])
    np.testing.assert_allclose(gh.numpy(), [4.0, 8.0])
    assert _CountingDouble.calls == 1
    (x * 1.0).sum().backward()  # backward() still runs the whole graph down to the leaves
    assert x.grad.tolist() == [1.0, 1.0]


def test_non_scalar_backward_needs_gradient():
    x = cn.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"only for scalar outputs \(got an output of shape \(2, 3\)\)"):
        (x * 2).backward()
    (x * 2).backward(cn.ones(2, 3))
    assert x.grad.tolist() == [[2.0] * 3] * 2


def test_higher_order_gradient_penalty_against_analytic():
    # f(x) = sum(x^3); df/dx = 3x^2; ||df/dx||^2 = 9 sum x^4; d/dx = 36 x^3
    x = cn.tensor([0.5, -1.0, 2.0], dtype=cn.float64, requires_grad=True)
    (g,) = cn.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (g * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 36 * np.array([0.5, -1.0, 2.0]) ** 3)


def test_custom_function_ctx_and_needs_input_grad():
    class MulAdd(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a.array * b.array + k

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, False, False)
            return grad * b, None, None

    a = cn.tensor([2.0], requires_grad=True)
    b = cn.tensor([5.0])
    MulAdd.apply(a, b, 1.0).sum().backward()
    assert a.grad.tolist() == [5.0]


def test_custom_function_wrong_number_of_grads():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.array + b.array

        @staticmethod
        def backward(ctx, grad):
            return (grad,)

    a = cn.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(a, a).sum().backward()


def test_gradcheck_catches_a_wrong_backward():
    class WrongSquare(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.array ** 2

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * a  # missing the factor 2

    x = cn.tensor([1.0, 2.0], dtype=cn.float64, requires_grad=True)
    with pytest.raises(cn.autograd.GradcheckError, match="Jacobian mismatch"):
        cn.autograd.gradcheck(WrongSquare.apply, (x,))


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        cn.tensor([1, 2], requires_grad=True)
    y = cn.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False


def test_graph_is_freed_no_memory_growth_over_1000_iterations():
    w = cn.randn(32, 32, requires_grad=True)
    x = cn.randn(8, 32)

    def step():
        loss = ((x @ w).exp() * 0.01).sum()
        loss.backward()
        w.grad = None

    for _ in range(20):
        step()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(1000):
        step()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 200_000, f"memory grew by {grown} bytes over 1000 iterations"


def test_mixing_devices_is_a_clear_error():
    if not cn.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device is usable"):
            cn.zeros(2, device="cuda")
        return
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        cn.zeros(2) + cn.zeros(2, device="cuda")


def test_next_functions_walk_back_as_torch_shows_them():
    # NOTE: issue 13: pytorch/tutorials blitz/neural_networks_tutorial prints grad_fn.next_functions[0][0]
    w = cn.ones(3, requires_grad=True)
    x = cn.ones(3)
    h = (w * 2).relu()
    loss = (h * x).sum()
    (mul_node, nr), = loss.grad_fn.next_functions
    assert nr == 0 and mul_node.name() == "MulBackward"
    (relu_node, _), (absent, absent_nr) = mul_node.next_functions
    assert relu_node is h.grad_fn and (absent, absent_nr) == (None, 0)
    (scale_node, _), = relu_node.next_functions
    (leaf, _), _ = scale_node.next_functions
    assert leaf.name() == "AccumulateGrad" and leaf.variable is w and leaf.next_functions == ()


class _HalfAProduct(Function):
    """y = (x0 * x1, x1 * x0); the right vjp is (g0 + g1) * flip(x), this backward gives g * flip(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.array * x.array[::-1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.flip(0)


def test_gradcheck_full_jacobian_mode():
    # NOTE: torch's gradcheck(..., fast_mode=False) (the conv-bn tutorial): the full Jacobian, row by row
    x = cn.tensor([[0.3, -1.2, 2.0], [0.5, 0.7, -0.4]], dtype=cn.float64, requires_grad=True)
    w = cn.tensor([1.5, -0.5, 2.0], dtype=cn.float64, requires_grad=True)
    assert cn.autograd.gradcheck(lambda a, b: (a * b).tanh().sum(1), (x, w), fast_mode=False)
    assert cn.autograd.gradgradcheck(lambda a, b: (a * b).tanh(), (x, w), fast_mode=False)
    bad = cn.tensor([0.8, 1.9], dtype=cn.float64, requires_grad=True)
    with pytest.raises(cn.autograd.GradcheckError, match="Jacobian mismatch for input 0"):
        cn.autograd.gradcheck(_HalfAProduct.apply, bad, fast_mode=False)
    assert cn.autograd.gradcheck(_HalfAProduct.apply, bad, fast_mode=False, raise_exception=False) is False
    with pytest.raises(TypeError, match="fast_mode must be True, False or None, got 'no'"):
        cn.autograd.gradcheck(cn.exp, bad, fast_mode="no")


@pytest.mark.parametrize("fast_mode", [True, False])
@pytest.mark.parametrize("layout", ["transposed", "fortran"])
def test_gradcheck_perturbs_non_contiguous_inputs(fast_mode, layout):
    # NOTE: reshape(-1) of a transposed array is a copy: perturbing it left the input unchanged, a zero
    # numerical Jacobian and a false mismatch for a correct op
    base = np.random.default_rng(0).standard_normal((3, 4))
    array = base.T if layout == "transposed" else np.asfortranarray(base)
    x = cn.tensor(array, requires_grad=True) if layout == "fortran" else cn.Tensor(array).requires_grad_()
    assert not x.array.flags.c_contiguous
    assert cn.autograd.gradcheck(lambda a: (a * a * a).sum(), (x,), fast_mode=fast_mode)
    assert np.array_equal(x.array, array)  # NOTE: every perturbation put back

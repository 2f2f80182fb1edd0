"""cupynet.autograd.functional against torch.autograd.functional (issue 13): values (float64, to rounding),
nesting of the results, create_graph (results differentiable again), strict mode and bad inputs."""

import numpy as np
import pytest

import cupynet as cn
from cupynet.autograd import functional as cf

torch = pytest.importorskip("torch")
tf = torch.autograd.functional

RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(3,)), RNG.normal(size=(2, 3))
V_OUT, V_X, V_Y = RNG.normal(size=(2, 3)), RNG.normal(size=(3,)), RNG.normal(size=(2, 3))


def f_one(lib, x):
    """R^3 -> R^(2, 3), nonlinear."""
    return lib.tanh(x) * x.reshape(1, 3) + lib.exp(x * 0.5).reshape(1, 3) * lib.tensor([[1.0], [2.0]],
                                                                                       dtype=x.dtype)


def f_two(lib, x, y):
    """(R^3, R^(2,3)) -> (R^(2,3), R^())."""
    return y * lib.sin(x), (y ** 2).sum() * x.sum()


def scalar(lib, x, y):
    return (lib.exp(x) * y).sum() + (x ** 3).sum() * (y ** 2).mean()


def _libs():
    return ((cn, cf, lambda a: cn.tensor(a, dtype=cn.float64)), (torch, tf, lambda a: torch.tensor(a)))


def _both(call):
    """``call(lib, functional_module, make_tensor)`` in cupynet and torch; nested results as NumPy."""
    def to_np(r):
        return tuple(to_np(x) for x in r) if isinstance(r, tuple) else r.detach().numpy()
    return [to_np(call(lib, mod, make)) for lib, mod, make in _libs()]


def _assert_nested_close(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_nested_close(x, y)
    else:
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda lib, mod, t: mod.jacobian(lambda x: f_one(lib, x), t(X)),
    lambda lib, mod, t: mod.jacobian(lambda x, y: f_two(lib, x, y), (t(X), t(Y))),
    lambda lib, mod, t: mod.jacobian(lambda x, y: f_two(lib, x, y)[0], (t(X), t(Y))),
    lambda lib, mod, t: mod.jacobian(lambda x: f_two(lib, x, t(Y)), t(X)),
    lambda lib, mod, t: mod.hessian(lambda x, y: scalar(lib, x, y), (t(X), t(Y))),
    lambda lib, mod, t: mod.hessian(lambda x: scalar(lib, x, t(Y)), t(X)),
    lambda lib, mod, t: mod.vjp(lambda x: f_one(lib, x), t(X), t(V_OUT)),
    lambda lib, mod, t: mod.vjp(lambda x, y: f_two(lib, x, y), (t(X), t(Y)), (t(V_Y), t(1.5))),
    lambda lib, mod, t: mod.jvp(lambda x: f_one(lib, x), t(X), t(V_X)),
    lambda lib, mod, t: mod.jvp(lambda x, y: f_two(lib, x, y), (t(X), t(Y)), (t(V_X), t(V_Y))),
    lambda lib, mod, t: mod.vhp(lambda x, y: scalar(lib, x, y), (t(X), t(Y)), (t(V_X), t(V_Y))),
    lambda lib, mod, t: mod.hvp(lambda x, y: scalar(lib, x, y), (t(X), t(Y)), (t(V_X), t(V_Y))),
    lambda lib, mod, t: mod.hvp(lambda x: scalar(lib, x, t(Y)), t(X), t(V_X)),
    lambda lib, mod, t: mod.vjp(lambda x: (x ** 2).sum(), t(X)),
], ids=["jac-1-1", "jac-2-2", "jac-1out-2in", "jac-2out-1in", "hess-2", "hess-1", "vjp-1", "vjp-2", "jvp-1",
        "jvp-2", "vhp", "hvp-2", "hvp-1", "vjp-v-None"])
def test_matches_torch(call):
    ours, ref = _both(call)
    _assert_nested_close(ours, ref)


def test_independent_input_gives_zeros_or_strict_error():
    def call(lib, mod, t, strict=False):
        return mod.jacobian(lambda x, y: x * 2, (t(X), t(Y)), strict=strict)
    ours, ref = _both(call)
    _assert_nested_close(ours, ref)
    for lib, mod, t in _libs():
        with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1. "
                                               "This is not allowed in strict mode."):
            call(lib, mod, t, strict=True)
        with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1"):
            mod.vjp(lambda x, y: x * 2, (t(X), t(Y)), t(V_X), strict=True)


def test_results_are_detached_unless_create_graph():
    x = cn.tensor(X, dtype=cn.float64, requires_grad=True)
    j = cf.jacobian(lambda a: f_one(cn, a), x)
    assert not j.requires_grad and x.grad is None
    out, prod = cf.vjp(lambda a: f_one(cn, a), x, cn.tensor(V_OUT, dtype=cn.float64))
    assert not out.requires_grad and not prod.requires_grad


def test_create_graph_gives_differentiable_results():
    """d/dx sum(hvp(f, x, v)) is a third derivative: compare it with torch's."""
    grads = []
    for lib, mod, t in _libs():
        x = t(X).requires_grad_(True)
        _, hv = mod.hvp(lambda a: scalar(lib, a, t(Y)), x, t(V_X), create_graph=True)
        j = mod.jacobian(lambda a: f_one(lib, a), x, create_graph=True)
        (hv.sum() + (j ** 2).sum()).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda lib, mod, t: mod.vjp(lambda x: x * 2, t(X)), RuntimeError,
     "The vector v can only be None if the user-provided function returns a single Tensor with a single element."),
    (lambda lib, mod, t: mod.vjp(lambda x: x * 2, t(X), t(np.ones(2))), RuntimeError,
     "v has invalid size: should be (3,) but got (2,)."),
    (lambda lib, mod, t: mod.vjp(lambda x: x * 2, t(X), (t(X), t(X))), RuntimeError,
     "The given v should contain a single Tensor."),
    (lambda lib, mod, t: mod.vjp(lambda x, y: (x, y), (t(X), t(Y)), (t(X),)), RuntimeError,
     "v is a tuple of invalid length: should be 2 but got 1."),
    (lambda lib, mod, t: mod.jacobian(lambda x: 3, t(X)), TypeError,
     "The outputs of the user-provided function given to jacobian must be either a Tensor or a tuple of Tensors "
     "but the given outputs of the user-provided function has type <class 'int'>."),
    (lambda lib, mod, t: mod.jacobian(lambda x: x, (3,)), TypeError,
     "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the value at index 0 has type "
     "<class 'int'>."),
    (lambda lib, mod, t: mod.hessian(lambda x: x * 2, t(X)), RuntimeError,
     "The Tensor returned by the function given to hessian should contain a single element"),
    (lambda lib, mod, t: mod.jvp(lambda x: x * 2, t(X)), RuntimeError,
     "The vector v can only be None if the input to the user-provided function is a single Tensor with a single "
     "element."),
])
def test_bad_inputs_raise_torchs_errors(call, error, message):
    for lib, mod, t in _libs():
        with pytest.raises(error) as info:
            call(lib, mod, t)
        assert str(info.value).replace("torch.Size([", "(").replace("])", ",)") == message


def test_vectorize_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="vectorize=True is not supported by cupynet"):
        cf.jacobian(lambda x: x, cn.ones(2), vectorize=True)
    with pytest.raises(NotImplementedError, match="strategy 'forward-mode' is not supported"):
        cf.jacobian(lambda x: x, cn.ones(2), strategy="forward-mode")


@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_a_function_that_is_not_callable_is_named(name):
    with pytest.raises(TypeError, match=f"{name}: func must be a callable taking the inputs, got int"):
        getattr(cn.autograd.functional, name)(3, cn.ones(1))

"""Weight norm, spectral norm and parametrize against torch: state-dict keys, forward values, gradients of the
originals, the power-iteration buffers step by step, removal, and the errors.

Random start vectors of spectral norm come from each library's own generator, so torch's are loaded into
cupynet (the state dict) before the two are compared.
"""

import warnings

import numpy as np
import pytest

import cupynet as cn
from cupynet.nn.utils import parametrize

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)
TOL = {"rtol": 1e-12, "atol": 1e-13}  # NOTE: float64 throughout; a few dozen roundings separate the two


def _twins(make_cn, make_torch):
    layer, ref = make_cn(), make_torch()
    layer.double()
    ref.double()
    layer.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return layer, ref


def _run(layer, ref, shape):
    x = RNG.standard_normal(shape)
    out, want = layer(cn.tensor(x)), ref(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), **TOL)
    cot = RNG.standard_normal(want.shape)
    out.backward(cn.tensor(cot))
    want.backward(torch.tensor(cot))
    grads = dict(ref.named_parameters())
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[name].grad.numpy(), err_msg=name, **TOL)
    for name, b in ref.named_buffers():
        np.testing.assert_allclose(layer.get_buffer(name).numpy() if hasattr(layer, "get_buffer")
                                   else dict(layer.named_buffers())[name].numpy(), b.numpy(), err_msg=name, **TOL)


LAYERS = [(lambda: cn.nn.Linear(3, 4), lambda: torch.nn.Linear(3, 4), (5, 3)),
          (lambda: cn.nn.Conv2d(2, 3, 3), lambda: torch.nn.Conv2d(2, 3, 3), (2, 2, 5, 5)),
          (lambda: cn.nn.ConvTranspose2d(2, 3, 3), lambda: torch.nn.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4))]


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize(("make_cn", "make_torch", "shape"), LAYERS)
def test_weight_norm_hook_matches_torch(make_cn, make_torch, shape, dim):
    layer, ref = make_cn(), make_torch()
    layer.double()
    ref.double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.detach().numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.detach().numpy()))
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        cn.nn.utils.weight_norm(layer, dim=dim)
    _quiet(torch.nn.utils.weight_norm, ref, dim=dim)
    assert list(layer.state_dict()) == list(ref.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(layer.weight_g.detach().numpy(), ref.weight_g.detach().numpy(), **TOL)
    _run(layer, ref, shape)
    cn.nn.utils.remove_weight_norm(layer)
    torch.nn.utils.remove_weight_norm(ref)
    assert list(layer.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(layer.weight.detach().numpy(), ref.weight.detach().numpy(), **TOL)
    assert isinstance(layer.weight, cn.nn.Parameter) and not layer._forward_pre_hooks


def test_weight_norm_hook_errors():
    layer = _quiet(cn.nn.utils.weight_norm, cn.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        _quiet(cn.nn.utils.weight_norm, layer)
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found in"):
        cn.nn.utils.remove_weight_norm(layer, "bias")
    with pytest.raises(ValueError, match="has no parameter named 'kernel'"):
        _quiet(cn.nn.utils.weight_norm, cn.nn.Linear(3, 4), "kernel")


@pytest.mark.parametrize(("make_cn", "make_torch", "shape"), LAYERS)
def test_spectral_norm_hook_matches_torch_step_by_step(make_cn, make_torch, shape):
    layer, ref = make_cn(), make_torch()
    cn.nn.utils.spectral_norm(layer, n_power_iterations=2)
    torch.nn.utils.spectral_norm(ref, n_power_iterations=2)
    assert list(layer.state_dict()) == list(ref.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    layer.double()
    ref.double()
    layer.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    for _ in range(3):  # NOTE: each training call moves u and v one more step
        layer.zero_grad()
        ref.zero_grad()
        _run(layer, ref, shape)
    layer.eval()
    ref.eval()
    _run(layer, ref, shape)  # NOTE: no power iteration in eval mode: the buffers must still agree
    cn.nn.utils.remove_spectral_norm(layer)
    torch.nn.utils.remove_spectral_norm(ref)
    np.testing.assert_allclose(layer.weight.detach().numpy(), ref.weight.detach().numpy(), **TOL)
    assert list(layer.state_dict()) == ["bias", "weight"]


def test_spectral_norm_hook_errors():
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        cn.nn.utils.spectral_norm(cn.nn.Linear(3, 4), n_power_iterations=0)
    layer = cn.nn.utils.spectral_norm(cn.nn.Linear(3, 4))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        cn.nn.utils.spectral_norm(layer)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found"):
        cn.nn.utils.remove_spectral_norm(layer, "bias")


@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize(("make_cn", "make_torch", "shape"), LAYERS)
def test_weight_norm_parametrization_matches_torch(make_cn, make_torch, shape, dim):
    layer, ref = make_cn(), make_torch()
    cn.nn.utils.parametrizations.weight_norm(layer, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(ref, dim=dim)
    assert type(layer).__name__ == type(ref).__name__ == f"Parametrized{type(ref).__bases__[0].__name__}"
    assert list(layer.state_dict()) == list(ref.state_dict())
    layer.double()
    ref.double()
    layer.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    np.testing.assert_allclose(layer.weight.detach().numpy(), ref.weight.detach().numpy(), **TOL)
    _run(layer, ref, shape)
    parametrize.remove_parametrizations(layer, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(ref, "weight")
    assert type(layer) is type(make_cn()) and list(layer.state_dict()) == list(ref.state_dict())
    np.testing.assert_allclose(layer.weight.detach().numpy(), ref.weight.detach().numpy(), **TOL)


@pytest.mark.parametrize(("make_cn", "make_torch", "shape"), LAYERS)
def test_spectral_norm_parametrization_matches_torch_step_by_step(make_cn, make_torch, shape):
    layer, ref = make_cn(), make_torch()
    cn.nn.utils.parametrizations.spectral_norm(layer, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(ref, n_power_iterations=2)
    assert list(layer.state_dict()) == list(ref.state_dict())
    u = layer.parametrizations.weight[0]._u.numpy()
    assert abs(np.linalg.norm(u) - 1) < 1e-6  # NOTE: cupynet's own start, normalized after its 15 steps
    layer.double()
    ref.double()
    layer.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    for _ in range(3):
        layer.zero_grad()
        ref.zero_grad()
        _run(layer, ref, shape)
    layer.eval()
    ref.eval()
    _run(layer, ref, shape)


def test_spectral_norm_estimates_the_largest_singular_value():
    # NOTE: singular values 3, 1, 0.5, ...: power iteration's error shrinks by (1/3)^2 a step, so 35 steps are
    # far below the tolerance whatever the random start (a start orthogonal to the top vector has probability 0)
    u, _, vt = np.linalg.svd(RNG.standard_normal((5, 6)), full_matrices=False)
    linear = cn.nn.Linear(6, 5).double()
    linear.weight.array[...] = u @ np.diag([3.0, 1.0, 0.5, 0.25, 0.125]) @ vt
    layer = cn.nn.utils.parametrizations.spectral_norm(linear)
    for _ in range(20):
        weight = layer.weight  # NOTE: each read in training mode is one more power-iteration step
    assert abs(np.linalg.svd(weight.detach().numpy(), compute_uv=False)[0] - 1.0) < 1e-8


class _Symmetric(cn.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


class _TorchSymmetric(torch.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


def test_register_parametrization_matches_torch():
    layer, ref = _twins(lambda: cn.nn.Linear(4, 4), lambda: torch.nn.Linear(4, 4))
    parametrize.register_parametrization(layer, "weight", _Symmetric())
    torch.nn.utils.parametrize.register_parametrization(ref, "weight", _TorchSymmetric())
    assert list(layer.state_dict()) == list(ref.state_dict())
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")
    assert parametrize.type_before_parametrizations(layer) is cn.nn.Linear
    w = layer.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    _run(layer, ref, (3, 4))
    # NOTE: assigning goes through right_inverse (the original becomes the upper triangle)
    new = RNG.standard_normal((4, 4))
    layer.weight = cn.tensor(new)
    ref.weight = torch.tensor(new)
    np.testing.assert_allclose(layer.weight.detach().numpy(), ref.weight.detach().numpy(), **TOL)
    with parametrize.cached():
        assert layer.weight is layer.weight
    assert layer.weight is not layer.weight
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), np.triu(new))
    assert type(layer) is cn.nn.Linear and "parametrizations" not in dict(layer.named_children())


def test_chained_parametrizations_apply_in_order():
    layer = cn.nn.Linear(3, 3).double()
    parametrize.register_parametrization(layer, "weight", _Symmetric())

    class Double(cn.nn.Module):
        def forward(self, x):
            return 2 * x

    parametrize.register_parametrization(layer, "weight", Double())
    original = layer.parametrizations.weight.original.detach().numpy()
    np.testing.assert_allclose(layer.weight.detach().numpy(), 2 * (np.triu(original) + np.triu(original, 1).T))


def test_register_parametrization_errors():
    class Wider(cn.nn.Module):
        def forward(self, x):
            return cn.cat([x, x])

    with pytest.raises(ValueError, match="may not change the shape or dtype of the tensor, unless `unsafe`"):
        parametrize.register_parametrization(cn.nn.Linear(3, 4), "weight", Wider())
    layer = parametrize.register_parametrization(cn.nn.Linear(3, 4), "weight", Wider(), unsafe=True)
    assert tuple(layer.weight.shape) == (8, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name "
                                         "'kernel'"):
        parametrize.register_parametrization(cn.nn.Linear(3, 4), "kernel", _Symmetric())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        parametrize.remove_parametrizations(layer, "bias")
    with pytest.raises(TypeError, match="parametrization must be a Module"):
        parametrize.register_parametrization(cn.nn.Linear(3, 4), "weight", lambda x: x)


@pytest.mark.parametrize(("shape", "orthogonal_map"), [((4, 4), None), ((4, 4), "cayley"), ((4, 4), "householder"),
                                                       ((5, 3), None), ((3, 5), None), ((5, 3), "matrix_exp")])
def test_orthogonal_matches_torch(shape, orthogonal_map):
    out_features, in_features = shape
    layer, ref = cn.nn.Linear(in_features, out_features).double(), torch.nn.Linear(in_features, out_features).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.detach().numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.detach().numpy()))
    cn.nn.utils.parametrizations.orthogonal(layer, orthogonal_map=orthogonal_map)
    torch.nn.utils.parametrizations.orthogonal(ref, orthogonal_map=orthogonal_map)
    assert list(layer.state_dict()) == list(ref.state_dict())
    if shape[0] == shape[1]:
        # NOTE: a square weight's base is its QR factor with diag(R) > 0: unique, so cupynet's is torch's
        np.testing.assert_allclose(layer.parametrizations.weight[0].base.numpy(),
                                   ref.parametrizations.weight[0].base.numpy(), rtol=1e-10, atol=1e-12)
    # NOTE: a rectangular base is completed with random columns: start both from torch's state
    layer.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    with torch.no_grad():  # NOTE: move the original off -I so that the map is not the identity
        step = RNG.standard_normal(shape) * 0.3
        np.fill_diagonal(step, 0.0)  # NOTE: the householder map reads its signs there; training never moves them
        ref.parametrizations.weight.original.add_(torch.tensor(step))
    layer.parametrizations.weight.original.array[...] += step
    w = layer.weight.detach().numpy()
    small = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(small, np.eye(min(shape)), atol=1e-12)
    _run(layer, ref, (2, in_features))


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
        cn.nn.utils.parametrizations.orthogonal(cn.nn.Linear(3, 4), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
        cn.nn.utils.parametrizations.orthogonal(cn.nn.Linear(3, 4), orthogonal_map="qr")

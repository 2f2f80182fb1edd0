"""Complex tensors against torch: creation, arithmetic, abs/angle/conj/real/imag, polar, view_as_complex/real,
matmul, their gradients (torch's conjugate-Wirtinger convention), autocast leaving them alone, and the rotary
position embedding of Llama code, forward and backward.

Tolerances: complex128 runs compare to ~1e-12 (a few roundings of double); complex64 to 1e-5 relative (float32
roundings amplified by at most a few: the sums here have tens of terms).
"""

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(31)
TOL = {"complex128": {"rtol": 1e-12, "atol": 1e-12}, "complex64": {"rtol": 2e-5, "atol": 2e-5}}
REAL_OF = {"complex128": "float64", "complex64": "float32"}


def _complex(shape, dtype):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _leaf(array):
    dtype = str(array.dtype)
    return (cn.tensor(array, dtype=getattr(cn, dtype), requires_grad=True),
            torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=True))


def _close(got, want, dtype):
    got = got.detach().numpy() if isinstance(got, cn.Tensor) else got
    np.testing.assert_allclose(got, want.detach().resolve_conj().numpy(), **TOL[dtype])


def _check(fn, inputs, dtype, real_loss=True):
    """fn on cupynet and torch leaves: the same values, and the same gradients of sum(Re(out * w))."""
    leaves = [_leaf(a) for a in inputs]
    out, want = fn(cn, *[c for c, _ in leaves]), fn(torch, *[t for _, t in leaves])
    _close(out, want, dtype if want.is_complex() else dtype)
    w = RNG.standard_normal(tuple(want.shape)).astype(REAL_OF[dtype])
    loss_c = (out * cn.tensor(w)).sum()
    loss_t = (want * torch.tensor(w)).sum()
    if loss_c.dtype.kind == "c":
        loss_c, loss_t = loss_c.real, loss_t.real
    loss_c.backward()
    loss_t.backward()
    for (c, t) in leaves:
        assert c.grad.dtype == c.dtype
        _close(c.grad, t.grad, dtype)


def test_creation_and_dtypes():
    a = _complex((2, 3), "complex64")
    t = cn.tensor(a)
    assert t.dtype == cn.complex64 == cn.cfloat and cn.complex128 == cn.cdouble
    np.testing.assert_array_equal(t.numpy(), a)
    assert cn.tensor(a.astype("complex128")).dtype == cn.complex128 and t.is_complex() and not cn.ones(2).is_complex()
    assert cn.zeros(2, dtype=cn.complex64).dtype == cn.complex64
    assert cn.tensor([1 + 2j]).dtype == torch.tensor([1 + 2j]).numpy().dtype
    assert not t.is_floating_point() and t.type() == "torch.ComplexFloatTensor"
    assert cn.tensor(a, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        cn.tensor([1, 2], requires_grad=True)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_arithmetic_values_and_gradients_match_torch(dtype, op):
    fn = {"add": lambda lib, a, b: a + b, "sub": lambda lib, a, b: a - b, "mul": lambda lib, a, b: a * b,
          "div": lambda lib, a, b: a / b}[op]
    _check(fn, [_complex((3, 4), dtype), _complex((4,), dtype)], dtype)  # NOTE: broadcasting sums the grad back


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_a_real_operand_gets_the_real_part_of_the_gradient(dtype, op):
    fn = {"add": lambda lib, a, b: a + b, "sub": lambda lib, a, b: b - a, "mul": lambda lib, a, b: b * a,
          "div": lambda lib, a, b: a / b}[op]
    z, x = _leaf(_complex((3, 4), dtype)), _leaf(RNG.standard_normal((3, 1)).astype(REAL_OF[dtype]) + 3)
    out, want = fn(cn, z[0], x[0]), fn(torch, z[1], x[1])
    _close(out, want, dtype)
    w = _complex(tuple(want.shape), dtype)
    (out * cn.tensor(w)).sum().real.backward()
    (want * torch.tensor(w)).sum().real.backward()
    assert x[0].grad.dtype == x[0].dtype
    _close(x[0].grad, x[1].grad, dtype)
    _close(z[0].grad, z[1].grad, dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_numbers_with_complex_tensors(dtype):
    _check(lambda lib, a: (a * (2 - 1j) + 0.5j) / (1 + 1j) - 3.0, [_complex((5,), dtype)], dtype)
    x = cn.tensor(np.ones(3, dtype=REAL_OF[dtype]))
    assert (x * 1j).dtype == getattr(cn, dtype) == str((torch.tensor(x.numpy()) * 1j).dtype).replace("torch.", "")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["abs", "angle", "conj", "real", "imag"])
def test_parts_match_torch(dtype, name):
    fn = {"abs": lambda lib, z: lib.abs(z), "angle": lambda lib, z: lib.angle(z),
          "conj": lambda lib, z: lib.conj(z) * (1 + 2j), "real": lambda lib, z: z.real * 3,
          "imag": lambda lib, z: lib.imag(z) * 3}[name]
    _check(fn, [_complex((4, 3), dtype)], dtype)


def test_real_tensors_through_the_complex_names():
    x = cn.tensor([-2.0, 0.0, 3.0])
    assert cn.conj(x) is x and cn.real(x) is x and x.real is x
    np.testing.assert_array_equal(cn.angle(x).numpy(), torch.angle(torch.tensor([-2.0, 0.0, 3.0])).numpy())
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        _ = x.imag


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_polar_and_complex_match_torch(dtype):
    real = REAL_OF[dtype]
    r, theta = np.abs(RNG.standard_normal((3, 4))).astype(real) + 0.1, RNG.standard_normal((3, 4)).astype(real)
    _check(lambda lib, a, b: lib.polar(a, b), [r, theta], dtype)
    _check(lambda lib, a, b: lib.complex(a, b), [r, theta], dtype)
    with pytest.raises(RuntimeError, match="polar\\(\\): expected both inputs to be float32 or both float64"):
        cn.polar(cn.ones(2, dtype=cn.float16), cn.ones(2, dtype=cn.float16))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_view_as_complex_and_real_match_torch(dtype):
    pairs = RNG.standard_normal((2, 3, 2)).astype(REAL_OF[dtype])
    _check(lambda lib, x: lib.view_as_complex(x) * (0.5 - 2j), [pairs], dtype)
    _check(lambda lib, z: lib.view_as_real(z * z), [_complex((2, 3), dtype)], dtype)
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        cn.view_as_complex(cn.ones(2, 3))
    with pytest.raises(RuntimeError, match="view_as_real is not implemented for tensors with non-complex dtypes"):
        cn.view_as_real(cn.ones(2, 2))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_matmul_matches_torch(dtype):
    _check(lambda lib, a, b: a @ b, [_complex((2, 3, 4), dtype), _complex((4, 5), dtype)], dtype)
    _check(lambda lib, a, b: lib.matmul(a, b), [_complex((3, 4), dtype), _complex((2, 4, 2), dtype)], dtype)


def test_autocast_leaves_complex_alone():
    a, b = cn.tensor(_complex((3, 4), "complex64")), cn.tensor(_complex((4, 2), "complex64"))
    with cn.autocast("cpu", dtype=cn.bfloat16):
        out = a @ b
        real = cn.ones(3, 4) @ cn.ones(4, 2)
    assert out.dtype == cn.complex64 and real.dtype == cn.bfloat16
    np.testing.assert_allclose(out.numpy(), a.numpy() @ b.numpy(), rtol=1e-6)


def _rope(lib, xq, freqs):
    """The rotary embedding of Llama's model.py, as written there."""
    freqs_cis = lib.polar(lib.ones_like(freqs), freqs)
    xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq)


def test_llama_rotary_embedding_forward_and_backward_match_torch():
    batch, seq, heads, dim = 2, 5, 3, 8
    t = np.arange(seq, dtype=np.float32)
    inv = 1.0 / (10000.0 ** (np.arange(0, dim, 2, dtype=np.float32)[: dim // 2] / dim))
    freqs = np.outer(t, inv).astype(np.float32)
    xq = RNG.standard_normal((batch, seq, heads, dim)).astype(np.float32)
    cx, tx = cn.tensor(xq, requires_grad=True), torch.tensor(xq, requires_grad=True)
    cf, tf = cn.tensor(freqs, requires_grad=True), torch.tensor(freqs, requires_grad=True)
    out, want = _rope(cn, cx, cf), _rope(torch, tx, tf)
    assert out.dtype == cn.float32 and tuple(out.shape) == tuple(want.shape) == (batch, seq, heads, dim)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    w = RNG.standard_normal(want.shape).astype(np.float32)
    (out * cn.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cf.grad.numpy(), tf.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_unsupported_complex_ops_say_so():
    z = cn.tensor(_complex((3,), "complex64"))
    with pytest.raises(NotImplementedError, match="complex tensors are not supported by this op"):
        cn.maximum(z, z)

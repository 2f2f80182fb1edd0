"""Backend choice, devices, dtypes, creation functions and Tensor conversions."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import backend

try:
    import torch
except ImportError:  # the oracle is optional here: the dtype rules are also asserted directly
    torch = None


def test_default_device_without_gpu_is_cpu(monkeypatch):
    monkeypatch.delenv("CUPYNET_DEVICE", raising=False)
    expected = "cuda" if cn.cuda.is_available() else "cpu"
    assert cn.default_device().type == expected


def test_env_forces_cpu(monkeypatch):
    monkeypatch.setenv("CUPYNET_DEVICE", "cpu")
    assert cn.default_device() == "cpu"
    assert cn.zeros(2).device == cn.device("cpu")


@pytest.mark.skipif(cn.cuda.is_available(), reason="checks the no-GPU error")
def test_asking_for_cuda_without_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CUPYNET_DEVICE", "cuda")
    with pytest.raises(RuntimeError, match="no CUDA device is usable"):
        cn.default_device()
    with pytest.raises(RuntimeError, match="'cuda:0' was requested but no CUDA device is usable"):
        cn.device("cuda:0")
    with pytest.raises(RuntimeError, match="no CUDA device is usable"):
        cn.ones(3, device="cpu").cuda()


def test_bad_device_strings(monkeypatch):
    with pytest.raises(ValueError, match="expected 'cpu', 'cuda', 'cuda:N' or 'meta', got 'gpu'"):
        cn.device("gpu")
    with pytest.raises(ValueError, match="must be a non-negative integer"):
        cn.device("cuda:x")
    monkeypatch.setenv("CUPYNET_DEVICE", "tpu")
    with pytest.raises(ValueError, match="CUPYNET_DEVICE must be"):
        cn.default_device()


def test_same_device_check_names_op(monkeypatch):
    class FakeGpuArray(np.ndarray):
        pass

    a = cn.ones(2)
    b = cn.Tensor(np.ones(2).view(FakeGpuArray))
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*\(in op add\)"):
        a + b


def test_dtypes_are_numpy_dtypes_and_bfloat16_exists():
    assert cn.float32 == np.dtype("float32")
    assert str(cn.bfloat16) == "bfloat16"
    t = cn.ones(3).bfloat16()
    assert t.dtype == cn.bfloat16 and t.float().dtype == cn.float32
    assert cn.ones(2).half().dtype == cn.float16 and cn.ones(2).double().dtype == cn.float64
    with pytest.raises(TypeError, match="unknown dtype 'float8'"):
        cn.dtypes.as_dtype("float8")
    assert cn.dtypes.result_type(cn.float16, cn.bfloat16) == cn.float32


def test_creation_defaults_follow_pytorch():
    assert cn.tensor([1.0, 2.0]).dtype == cn.float32
    assert cn.tensor([1, 2]).dtype == cn.int64
    assert cn.tensor([True]).dtype == cn.bool_
    assert cn.tensor(np.zeros(2, dtype=np.float64)).dtype == cn.float64
    assert cn.from_numpy(np.zeros(2, dtype=np.float64)).dtype == cn.float64
    assert cn.arange(5).dtype == cn.int64 and cn.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    assert cn.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert cn.full((2,), 7).dtype == cn.int64
    assert cn.zeros(2, 3).shape == (2, 3) and cn.ones((2, 3)).shape == (2, 3)
    assert cn.zeros_like(cn.ones(2, dtype=cn.float16)).dtype == cn.float16
    assert cn.eye(3).numpy().trace() == 3.0
    with pytest.raises(ValueError, match="non-negative integers"):
        cn.zeros(-1)
    with pytest.raises(TypeError, match="numbers"):
        cn.tensor([[1, 2], [3]])


NUMPY_DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_tensor_keeps_a_numpy_arrays_dtype_as_torch_does(name):
    array = np.arange(6).reshape(2, 3).astype(name)
    assert cn.tensor(array).dtype == np.dtype(name)
    assert cn.tensor(array[0, 1]).dtype == np.dtype(name)  # a NumPy scalar keeps its dtype too
    if torch is not None:
        assert str(torch.tensor(array).dtype).removeprefix("torch.") == str(cn.tensor(array).dtype)
    np.testing.assert_array_equal(cn.tensor(array).numpy(), array)


def test_tensor_keeps_bfloat16_arrays():
    array = np.ones(3, dtype=cn.bfloat16)
    assert cn.tensor(array).dtype == cn.bfloat16


def test_tensor_refuses_an_array_dtype_it_does_not_support():
    with pytest.raises(TypeError, match=r"dtype datetime64\[s\].*expected one of .*complex128"):
        cn.tensor(np.zeros(2, dtype="datetime64[s]"))


def test_default_dtype_decides_python_floats_and_factories():
    assert cn.get_default_dtype() == cn.float32
    try:
        cn.set_default_dtype(cn.float64)
        assert cn.get_default_dtype() == cn.float64
        assert cn.tensor([1.5]).dtype == cn.float64 and cn.tensor(2.0).dtype == cn.float64
        assert cn.tensor([1, 2]).dtype == cn.int64  # ints are not affected
        assert cn.tensor(np.zeros(2, dtype=np.float32)).dtype == cn.float32  # arrays keep theirs
        for made in (cn.zeros(2), cn.ones(2), cn.empty(2), cn.randn(2), cn.rand(2), cn.eye(2),
                     cn.linspace(0, 1, 3), cn.arange(0.0, 1.0, 0.5), cn.full((2,), 0.5)):
            assert made.dtype == cn.float64
        assert cn.nn.Linear(2, 3).weight.dtype == cn.float64
    finally:
        cn.set_default_dtype(cn.float32)
    assert cn.tensor([1.5]).dtype == cn.float32 and cn.nn.Linear(2, 3).weight.dtype == cn.float32


def test_set_default_dtype_refuses_integers_and_keeps_the_old_value():
    with pytest.raises(TypeError, match="only floating dtypes.*got int64"):
        cn.set_default_dtype(cn.int64)
    with pytest.raises(TypeError, match="unknown dtype"):
        cn.set_default_dtype("complex")
    assert cn.get_default_dtype() == cn.float32


def test_float64_stays_float64_under_autocast():
    x = cn.tensor(np.ones((2, 3)), requires_grad=True)
    w = cn.tensor(np.ones((4, 3)))
    with cn.autocast("cpu"):
        y = cn.nn.functional.linear(x, w)
    assert x.dtype == cn.float64 and y.dtype == cn.float64
    y.sum().backward()
    assert x.grad.dtype == cn.float64


def test_manual_seed_reproduces_random_tensors():
    cn.manual_seed(7)
    a = cn.randn(4).tolist()
    b = cn.rand(3).tolist()
    cn.manual_seed(7)
    assert cn.randn(4).tolist() == a and cn.rand(3).tolist() == b
    state = cn.get_rng_state()
    c = cn.randn(5).tolist()
    cn.set_rng_state(state)
    assert cn.randn(5).tolist() == c
    r = cn.randint(0, 10, (100,))
    assert r.dtype == cn.int64 and 0 <= r.numpy().min() and r.numpy().max() < 10
    with pytest.raises(ValueError, match="non-negative integer"):
        cn.manual_seed(-1)


def test_conversions():
    t = cn.tensor([[1.5, 2.0]])
    assert cn.tensor([3.5]).item() == 3.5
    assert t.tolist() == [[1.5, 2.0]]
    assert isinstance(t.numpy(), np.ndarray)
    assert t.to("cpu") is t and t.cpu() is t
    assert t.to(cn.float64).dtype == cn.float64
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()
    with pytest.raises(RuntimeError, match="Use tensor.detach"):
        cn.tensor([1.0], requires_grad=True).numpy()
    assert "requires_grad=True" in repr(cn.tensor([1.0], requires_grad=True))
    assert "grad_fn=<MulBackward>" in repr(cn.tensor([1.0], requires_grad=True) * 2)


def test_cast_is_differentiable_and_grad_returns_in_source_dtype():
    w = cn.tensor([1.0, 2.0], requires_grad=True)
    y = (w.half() * 3).float().sum()
    y.backward()
    assert w.grad.dtype == cn.float32 and w.grad.tolist() == [3.0, 3.0]


def test_detach_shares_memory_and_version():
    a = cn.tensor([1.0, 2.0])
    d = a.detach()
    d.add_(1.0)
    assert a.tolist() == [2.0, 3.0] and a._version == 1


def test_get_array_module_numpy():
    assert backend.get_array_module(np.zeros(1)) is np
    assert backend.to_numpy(np.zeros(1)).shape == (1,)


def test_set_rng_state_rejects_bad_input_and_keeps_the_stream():
    cn.manual_seed(3)
    expected = cn.randn(3).tolist()
    cn.manual_seed(3)
    with pytest.raises(ValueError, match="expected the dict returned by get_rng_state"):
        cn.set_rng_state({"seed": 1})
    with pytest.raises(ValueError, match="with a 'cpu' key holding the CPU generator's state in hex"):
        cn.set_rng_state({"seed": 1, "cpu": {"bit_generator": "MT19937"}})
    with pytest.raises(ValueError, match="'cpu' entry is not a CPU generator state .*5056 bytes"):
        cn.set_rng_state({"seed": 1, "cpu": "00ff"})
    assert cn.randn(3).tolist() == expected  # the failed calls changed nothing

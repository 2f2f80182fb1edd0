"""The thin torch-shaped namespaces `cupynet run` maps to (issue 13): cuda memory and amp, backends,
accelerator, settings, compile, finfo/iinfo, inference_mode, randint's overloads, is_tensor/numel, utils.data.
On this CPU machine the GPU answers are the documented CPU ones (0, no-op, disabled with a warning)."""

import warnings

import numpy
import pytest

import cupynet
from cupynet import backend, cuda

torch = pytest.importorskip("torch")
NO_GPU = not backend.cuda_available()


@pytest.mark.skipif(not NO_GPU, reason="the CPU answers")
def test_cuda_memory_functions_are_zero_and_no_ops_on_the_cpu():
    for fn in (cuda.memory_allocated, cuda.max_memory_allocated, cuda.memory_reserved, cuda.max_memory_reserved):
        assert fn() == 0 and fn(0) == 0 and fn("cuda:0") == 0 and fn(cupynet.Device("cpu").index) == 0
    assert cuda.empty_cache() is None and cuda.reset_peak_memory_stats() is None and cuda.synchronize() is None
    assert cuda.memory_stats()["allocated_bytes.all.peak"] == 0


@pytest.mark.parametrize("bad", ["cpu", -1, "cuda:x", 1.5, True])
def test_cuda_memory_functions_refuse_a_device_that_is_not_cuda(bad):
    with pytest.raises(ValueError, match="memory_allocated: expected a CUDA device"):
        cuda.memory_allocated(bad)


def test_cuda_manual_seed_leaves_the_cpu_stream_alone():
    cupynet.manual_seed(3)
    expected = cupynet.randn(4).array
    cupynet.manual_seed(3)
    cuda.manual_seed(123)
    cuda.manual_seed_all(7)
    numpy.testing.assert_array_equal(cupynet.randn(4).array, expected)
    with pytest.raises(ValueError, match="cuda.manual_seed: seed must be a non-negative integer"):
        cuda.manual_seed(-1)


@pytest.mark.skipif(not NO_GPU, reason="the CPU answers")
def test_cuda_questions_without_a_gpu():
    assert cuda.is_bf16_supported() is False and cuda.is_initialized() is False
    with pytest.raises(RuntimeError, match="no CUDA device is usable"):
        cuda.current_device()
    assert cupynet.accelerator.current_accelerator() is None and not cupynet.accelerator.is_available()
    assert cupynet.accelerator.device_count() == 0
    assert cupynet.accelerator.current_accelerator() == torch.accelerator.current_accelerator()
    with pytest.raises(TypeError, match="check_available must be a bool"):
        cupynet.accelerator.current_accelerator("yes")


@pytest.mark.skipif(not NO_GPU, reason="the CPU answers")
def test_cuda_amp_autocast_is_cuda_float16_and_disabled_with_a_warning_without_a_gpu():
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling autocast"):
        region = cuda.amp.autocast()
    assert region.device == "cuda" and region.fast_dtype == cupynet.float16
    with region:
        assert not cupynet.amp.is_autocast_enabled("cuda")
        out = cupynet.ones(2, 2) @ cupynet.ones(2, 2)
    assert out.dtype == cupynet.float32
    assert isinstance(region, cupynet.amp.autocast)
    with pytest.raises(ValueError, match="dtype must be float16 or bfloat16"):
        cuda.amp.autocast(dtype=cupynet.float32)


@pytest.mark.skipif(not NO_GPU, reason="the CPU answers")
def test_cuda_amp_grad_scaler_takes_torch_cuda_amp_arguments_and_disables_without_a_gpu():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = cuda.amp.GradScaler(1024.0, growth_interval=10)
    assert not scaler.is_enabled()
    loss = cupynet.ones(1, requires_grad=True).sum()
    assert scaler.scale(loss) is loss
    with pytest.raises(TypeError):
        cuda.amp.GradScaler(device="cuda")  # torch.cuda.amp's GradScaler has no device argument
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="growth factor"):
            cuda.amp.GradScaler(growth_factor=0.5)


def test_cudnn_and_mps_settings_are_checked_bools():
    cudnn = cupynet.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    assert cudnn.is_available() is False and cudnn.version() is None
    try:
        cudnn.benchmark, cudnn.deterministic = True, True
        assert cudnn.benchmark and cudnn.deterministic
        with pytest.raises(TypeError, match="cupynet.backends.cudnn.benchmark must be a bool, got str"):
            cudnn.benchmark = "yes"
        assert cudnn.benchmark is True
    finally:
        cudnn.benchmark = cudnn.deterministic = False
    assert cupynet.backends.mps.is_available() is False and cupynet.backends.mps.is_built() is False


def test_matmul_allow_tf32_mirrors_the_float32_matmul_precision_as_torch():
    matmul = cupynet.backends.cuda.matmul
    try:
        assert matmul.allow_tf32 is False and cupynet.get_float32_matmul_precision() == "highest"
        cupynet.set_float32_matmul_precision("medium")
        assert matmul.allow_tf32 is True
        matmul.allow_tf32 = False
        assert cupynet.get_float32_matmul_precision() == "highest"
        with pytest.raises(TypeError, match="allow_tf32 must be a bool"):
            matmul.allow_tf32 = 1
        with pytest.raises(ValueError, match="expected one of \\['highest', 'high', 'medium'\\], got 'fast'"):
            cupynet.set_float32_matmul_precision("fast")
        matmul.allow_fp16_reduced_precision_reduction = False
        assert matmul.allow_fp16_reduced_precision_reduction is False
        assert matmul.allow_bf16_reduced_precision_reduction is True  # NOTE: the two switches are separate
        matmul.allow_bf16_reduced_precision_reduction = False
        with pytest.raises(TypeError, match="allow_bf16_reduced_precision_reduction must be a bool, got int 1"):
            matmul.allow_bf16_reduced_precision_reduction = 1
        assert matmul.allow_bf16_reduced_precision_reduction is False
    finally:
        cupynet.set_float32_matmul_precision("highest")
        matmul.allow_fp16_reduced_precision_reduction = True
        matmul.allow_bf16_reduced_precision_reduction = True


def test_determinism_and_thread_settings_are_recorded_and_checked():
    try:
        cupynet.use_deterministic_algorithms(True, warn_only=True)
        assert cupynet.are_deterministic_algorithms_enabled()
        assert cupynet.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(TypeError, match="mode must be a bool"):
            cupynet.use_deterministic_algorithms("yes")
        assert cupynet.are_deterministic_algorithms_enabled()
    finally:
        cupynet.use_deterministic_algorithms(False)
    assert cupynet.get_num_threads() >= 1
    for bad in (0, -2, 1.5, True):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            cupynet.set_num_threads(bad)


def test_set_printoptions_changes_how_tensors_print():
    saved = numpy.get_printoptions()
    try:
        cupynet.set_printoptions(precision=2)
        assert "3.14" in repr(cupynet.tensor([3.14159])) and "3.1416" not in repr(cupynet.tensor([3.14159]))
        cupynet.set_printoptions(profile="full")
        assert cupynet.settings.print_options()["threshold"] == numpy.inf
        assert numpy.get_printoptions() == saved  # NOTE: as torch's, the options are the tensors' only
        with pytest.raises(TypeError, match="profile must be a string"):
            cupynet.set_printoptions(profile=3)
        with pytest.raises(ValueError, match="precision must be a non-negative integer"):
            cupynet.set_printoptions(precision=-1)
    finally:
        cupynet.set_printoptions(profile="default")


def test_compile_returns_the_model_as_it_is():
    model = cupynet.nn.Linear(2, 2)
    assert cupynet.compile(model) is model and cupynet.compile(model, mode="max-autotune") is model

    @cupynet.compile(fullgraph=True)
    def f(x):
        return x + 1
    assert f(1) == 2
    with pytest.raises(TypeError, match="compile: a callable model or function is expected, got int"):
        cupynet.compile(3)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(name):
    mine, theirs = cupynet.finfo(getattr(cupynet, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(mine, field) == getattr(theirs, field), field
    assert mine.dtype == theirs.dtype


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    mine, theirs = cupynet.iinfo(getattr(cupynet, name)), torch.iinfo(getattr(torch, name))
    assert (mine.bits, mine.min, mine.max, mine.dtype) == (theirs.bits, theirs.min, theirs.max, theirs.dtype)


def test_finfo_and_iinfo_refuse_the_other_kind():
    assert cupynet.finfo().dtype == "float32"
    with pytest.raises(TypeError, match="torch.finfo\\(\\) requires a floating point input type"):
        cupynet.finfo(cupynet.int32)
    with pytest.raises(TypeError, match="torch.iinfo\\(\\) requires an integer input type"):
        cupynet.iinfo(cupynet.float16)
    with pytest.raises(TypeError, match="torch.iinfo\\(\\) requires an integer input type"):
        cupynet.iinfo(cupynet.bool)


def test_inference_mode_is_no_grad_as_context_and_decorator():
    x = cupynet.ones(2, requires_grad=True)
    with cupynet.inference_mode():
        assert cupynet.is_inference_mode_enabled() and not cupynet.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert cupynet.is_grad_enabled() and not cupynet.is_inference_mode_enabled()

    @cupynet.inference_mode
    def bare():
        return (x * 2).requires_grad

    @cupynet.inference_mode()
    def called():
        return (x * 2).requires_grad
    assert bare() is False and called() is False
    with cupynet.no_grad(), cupynet.inference_mode(False):
        assert not cupynet.is_grad_enabled()  # as torch: inference_mode(False) leaves grad mode alone
    with pytest.raises(TypeError, match="inference_mode: mode must be a bool, got str"):
        cupynet.inference_mode("yes")


@pytest.mark.parametrize("call, low, high, shape", [
    (lambda f: f(10, (3, 2)), 0, 10, (3, 2)),
    (lambda f: f(5, 9, (4,)), 5, 9, (4,)),
    (lambda f: f(5, 9, size=(4,)), 5, 9, (4,)),
    (lambda f: f(9, size=[2]), 0, 9, (2,)),
    (lambda f: f(low=-3, high=-1, size=(50,)), -3, -1, (50,)),
    (lambda f: f(2, high=4, size=(50,)), 2, 4, (50,)),
])
def test_randint_takes_torch_overloads(call, low, high, shape):
    out = call(cupynet.randint)
    assert tuple(out.shape) == tuple(call(torch.randint).shape) == shape and out.dtype == cupynet.int64
    values = out.array
    assert values.min() >= low and values.max() < high


@pytest.mark.parametrize("call, error, match", [
    (lambda f: f(10, 3), TypeError, "argument 'size' must be tuple of ints, not int"),
    (lambda f: f(5, 3, (2,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    (lambda f: f(10), TypeError, "high and size are required"),
    (lambda f: f(1.5, (2,)), TypeError, "argument 'high' must be int"),
    (lambda f: f(0, 10, (2,), size=(3,)), TypeError, "randint"),
    (lambda f: f(10, (2,), requires_grad=True), RuntimeError, "floating point dtype can require gradients"),
])
def test_randint_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(cupynet.randint)
    with pytest.raises((TypeError, RuntimeError)):
        call(torch.randint)


def test_is_tensor_and_numel():
    t = cupynet.zeros(2, 3)
    assert cupynet.is_tensor(t) and cupynet.is_tensor(cupynet.nn.Parameter(t)) and not cupynet.is_tensor([1])
    assert cupynet.numel(t) == 6 == torch.numel(torch.zeros(2, 3))
    with pytest.raises(TypeError, match="numel\\(\\): argument 'input' \\(position 1\\) must be Tensor, not list"):
        cupynet.numel([1, 2])


def test_utils_data_is_cupynet_data_under_torch_name():
    from cupynet.utils import data
    for name in cupynet.data.__all__:
        assert getattr(data, name) is getattr(cupynet.data, name)
    assert cupynet.utils.data is data

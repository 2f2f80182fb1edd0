"""Without a GPU: the fused kernels compile for sm_75/80/90, the launchers call them correctly, the benchmarks run.

* Compile: the very text and template instantiations that ``launch.py`` hands to
  ``cupy.RawModule`` (``cupynet.ops.kernels.launch.KERNELS``) go through ``nvcc --ptx``, so a typo or a
  bad template fails in CI, not on the first GPU run.
* Launch: a fake CuPy (NumPy arrays underneath) records every launch; each argument is held
  against the kernel's C signature parsed from the ``.cu`` file (pointer dtypes, ``int`` vs
  ``long long`` vs ``float`` scalars), and block shapes against the kernels' assumptions.
* cuBLAS: a fake ``gemmStridedBatchedEx`` reads the operands through their raw pointers with
  cuBLAS's column-major rules, so the row-major trick, transposed operands, leading dimensions and
  batch strides of ``batched_matmul_half`` are checked against ``numpy.matmul``.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import types

import cuda_emulation as emulation
import ml_dtypes
import numpy as np
import pytest
from nvcc_helper import ARCHS, NVCC, NVRTC12, compile_all, nvrtc12_compile

from cupynet.cuda import device
from cupynet.ops._im2col import Geometry
from cupynet.ops.kernels.launch import KERNELS

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAME_EXPRESSIONS = KERNELS.name_expressions

BF16 = np.dtype(ml_dtypes.bfloat16)



@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Compile every file for every supported arch once (archs in parallel): {arch: (result, dir)}."""
    return compile_all(KERNELS, tmp_path_factory.mktemp("fused_ptx"))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("filename", KERNELS.source_files())
def test_every_instantiation_compiles_to_ptx(compiled, arch, filename):
    if arch not in compiled:
        pytest.skip(f"this nvcc cannot target compute_{arch} (CUDA 13 dropped sm_70; sm_75 is compiled instead)")
    result, directory = compiled[arch]
    assert result.returncode == 0, f"nvcc failed for compute_{arch}:\n{result.stdout}\n{result.stderr}"
    ptx = (directory / filename.replace(".cu", ".ptx")).read_text()
    entries = re.findall(r"\.entry\s+(\w+)\(", ptx)
    assert len(entries) == len(NAME_EXPRESSIONS[filename]), entries
    for expression in NAME_EXPRESSIONS[filename]:
        assert any(expression.split("<")[0] in e for e in entries), expression


def test_name_expressions_list_every_kernel_of_every_file():
    assert sorted(KERNELS.source_files()) == sorted(p.name for p in KERNELS.directory.glob("*.cu"))
    for filename, expressions in NAME_EXPRESSIONS.items():
        text = (KERNELS.directory / filename).read_text()
        kernels = set(re.findall(r"__global__\s+void\s+(\w+)", text))
        assert kernels == {e.split("<")[0] for e in expressions}, filename


def test_kernel_source_rejects_unknown_files():
    with pytest.raises(ValueError, match="kernel_source: unknown kernel file 'nope.cu'"):
        KERNELS.kernel_source("nope.cu")


# ----------------------------------------------------------------------------- a fake CuPy around NumPy

SCALARS = {"int": np.int32, "long long": np.int64, "float": np.float32}
POINTEES = {"float": np.dtype(np.float32), "long long": np.dtype(np.int64)}
CTYPE_TO_DTYPE = {"float": np.dtype(np.float32), "__half": np.dtype(np.float16), "__nv_bfloat16": BF16}


def kernel_signatures():
    """{kernel: [(kind, C type) ...]} with kind 'pointer' or 'scalar', parsed from the .cu files."""
    signatures = {}
    for filename in KERNELS.source_files():
        text = (KERNELS.directory / filename).read_text()
        for name, params in re.findall(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", text):
            kinds = []
            for param in re.sub(r"/\*.*?\*/", "", params).split(","):
                ctype = " ".join(param.replace("*", " * ").split()[:-1]).replace("const ", "")
                kinds.append(("pointer", ctype.replace(" *", "").strip()) if "*" in ctype else ("scalar", ctype))
            signatures[name] = kinds
    return signatures


class DevArray(np.ndarray):
    """A NumPy array that looks like a CuPy one to the launcher (``.data.ptr``); host reads fail."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)

    def _sync(self, *args):
        raise AssertionError("the launcher read a device value on the host (a sync)")

    get = item = __bool__ = __float__ = __int__ = _sync


def dev(a):
    return np.ascontiguousarray(a).view(DevArray)


class FakeCupy:
    def __init__(self):
        self.launches = []
        self.ndarray = DevArray
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0, CUDA_R_16F=2,
                                                                        CUDA_R_16BF=14),
                                          device=types.SimpleNamespace(get_cublas_handle=lambda: 7),
                                          get_current_stream=lambda: types.SimpleNamespace(ptr=0))

    def RawModule(self, code, options, name_expressions):
        def get_function(name):
            assert name in name_expressions
            return lambda grid, block, args: self.launches.append((name, grid, block, args))
        return types.SimpleNamespace(get_function=get_function)

    def ascontiguousarray(self, a, dtype=None):
        return dev(np.asarray(a, dtype=dtype))

    def empty(self, shape, dtype):
        return dev(np.full(shape, np.nan if np.dtype(dtype).kind == "f" else 0, dtype))

    def empty_like(self, a):
        return self.empty(a.shape, a.dtype)

    def zeros(self, shape, dtype):
        return dev(np.zeros(shape, dtype))


@pytest.fixture
def fake(monkeypatch):
    from cupynet.ops.kernels import launch

    cupy = FakeCupy()
    monkeypatch.setattr(device, "cupy", lambda: cupy)
    monkeypatch.setattr(KERNELS, "_modules", {})
    monkeypatch.setattr(KERNELS, "_kernels", {})
    return launch, cupy


def check_launches(launches):
    signatures = kernel_signatures()
    for name, grid, block, args in launches:
        kernel, ctype = name.split("<")[0], name.split("<")[1].rstrip(">")
        expected = signatures[kernel]
        assert len(args) == len(expected), name
        for i, (arg, (kind, c)) in enumerate(zip(args, expected)):
            if kind == "scalar":
                assert type(arg) is SCALARS[c], (name, i, type(arg), c)
                continue
            assert arg is None or isinstance(arg, DevArray), (name, i, type(arg))
            if arg is not None:
                assert arg.flags.c_contiguous, (name, i)
                assert arg.dtype == (CTYPE_TO_DTYPE[ctype] if c == "T" else POINTEES[c]), (name, i, arg.dtype, c)
        threads = int(np.prod(block))
        assert 32 <= threads <= 1024 and block[0] % 32 == 0, (name, block)  # block_sum needs whole warps
        assert all(1 <= g < 2 ** 31 for g in grid), (name, grid)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_launcher_arguments_match_every_kernel_signature(fake, dtype):
    launch, cupy = fake
    rng = np.random.default_rng(0)
    x = dev(rng.standard_normal((6, 40)).astype(dtype))
    target, w = dev(np.array([0, 3, -100, 39, 1, 2], np.int32)), dev(np.ones(40, np.float32))
    loss, lse = launch.softmax_xent_forward(x, target, w, -100, 0.1)
    launch.softmax_xent_backward(x, target, None, lse, dev(np.float32(0.5)), -100, 0.0)
    launch.softmax_xent_backward(x, target, w, lse, dev(np.float32(0.5)), -100, 0.1, dev(np.float32(3.0)))
    launch.softmax_xent_mean(loss, target, w, 40, -100, x.dtype)
    launch.bias_add(x, dev(np.ones(40, dtype)))
    y, mean, rstd = launch.layer_norm_forward(x, w, None, 1e-5)
    launch.layer_norm_backward(x, x, mean, rstd, None)
    launch.bias_gelu_forward(x, w, "tanh")
    launch.bias_gelu_backward(x, x, w, "none")
    launch.bias_relu_backward(x, launch.bias_relu_forward(x, w))
    geoms = (Geometry(3, 1, 1, 1, 5, 5), Geometry(3, 2, 1, 1, 6, 3))
    launch.im2col_2d(dev(np.ones((2, 4, 5, 6), dtype)), geoms, 2)
    launch.col2im_2d(dev(np.ones((2, 4, 5, 3, 3, 3), dtype)), geoms)
    check_launches(cupy.launches)
    names = [n.split("<")[0] for n, *_ in cupy.launches]
    assert set(names) == set(re.findall(r"\w+_kernel", " ".join(e for v in NAME_EXPRESSIONS.values() for e in v)))
    backward = next(args for n, _, _, args in cupy.launches if n.startswith("softmax_xent_backward"))
    assert backward[5] == np.int32(0)  # a 0-d grad_rows is broadcast with stride 0
    im2col = next((grid, args) for n, grid, _, args in cupy.launches if n.startswith("im2col"))
    assert im2col[1][-1].shape == (2, 2 * 5 * 3, 2 * 9)


def test_launchers_skip_empty_work(fake):
    launch, cupy = fake
    empty = dev(np.ones((0, 8), np.float32))
    loss, lse = launch.softmax_xent_forward(empty, dev(np.ones(0, np.int64)), None, -100, 0.0)
    y, _, _ = launch.layer_norm_forward(empty, None, None, 1e-5)
    assert loss.shape == lse.shape == (0,) and y.shape == (0, 8) and cupy.launches == []


# ----------------------------------------------------------------------------- cuBLAS call, emulated on host memory

@pytest.fixture
def fake_cublas(fake, monkeypatch):
    emulation.install_fake_cublas(monkeypatch)
    return fake[0]


@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("a_shape, b_shape, t_a, t_b", [
    ((3, 4, 5), (3, 5, 6), False, False), ((3, 4, 5), (3, 6, 5), False, True), ((3, 5, 4), (3, 5, 6), True, False),
    ((2, 3, 4, 5), (5, 7), False, False), ((4, 5), (3, 5, 2), False, False), ((4, 5), (3, 2, 5), False, True)])
def test_batched_matmul_half_drives_cublas_correctly(fake_cublas, dtype, a_shape, b_shape, t_a, t_b):
    rng = np.random.default_rng(1)
    a, b = dev(rng.standard_normal(a_shape).astype(dtype)), dev(rng.standard_normal(b_shape).astype(dtype))
    a, b = (a.swapaxes(-1, -2) if t_a else a), (b.swapaxes(-1, -2) if t_b else b)
    out = fake_cublas.batched_matmul_half(a, b)
    expected = np.matmul(np.asarray(a, np.float32), np.asarray(b, np.float32)).astype(dtype)
    np.testing.assert_array_equal(np.asarray(out, np.float32), expected.astype(np.float32))


@pytest.mark.parametrize("capability, uses_cublas", [((7, 5), False), ((8, 0), True), ((9, 0), True)])
def test_bfloat16_gemm_uses_cublas_only_from_sm80(fake_cublas, monkeypatch, capability, uses_cublas):
    from cupynet.ops.kernels import launch

    calls = []
    cublas = sys.modules["cupy_backends.cuda.libs.cublas"]
    monkeypatch.setattr(cublas, "gemmStridedBatchedEx", lambda *args: calls.append(args) or
                        emulation.fake_gemm_strided_batched_ex(*args))
    monkeypatch.setattr(device, "get_device_capability", lambda index=0: capability)
    monkeypatch.setattr(device.cupy(), "matmul", lambda a, b: dev(np.matmul(a, b)), raising=False)
    rng = np.random.default_rng(2)
    a, b = dev(rng.standard_normal((2, 3, 4)).astype(BF16)), dev(rng.standard_normal((2, 4, 5)).astype(BF16))
    out = launch.batched_matmul_half(a, b)
    expected = np.matmul(np.asarray(a, np.float32), np.asarray(b, np.float32)).astype(BF16)
    np.testing.assert_array_equal(np.asarray(out, np.float32), expected.astype(np.float32))
    assert bool(calls) is uses_cublas and out.dtype == BF16
    half = dev(rng.standard_normal((2, 3, 4)).astype(np.float16))
    launch.batched_matmul_half(half, half.swapaxes(-1, -2))
    assert calls, "float16 always takes cuBLAS GemmEx"


# ----------------------------------------------------------------------------- the GPU benchmark, tiny, on the CPU


def test_bench_gpu_runs_on_the_cpu_with_tiny_sizes_and_writes_json(tmp_path):
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUPYNET_DEVICE="cpu")
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--device", "cpu", "--tiny",
                             "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    files = list(tmp_path.glob("bench_gpu_*.json"))
    assert len(files) == 1
    report = json.loads(files[0].read_text())
    assert report["environment"]["device"] == "cpu" and "torch" in report["environment"]
    cases = {(r["model"], r["precision"]) for r in report["results"]}
    assert cases == {(m, p) for m in ("mlp", "cnn", "transformer") for p in ("fp32", "amp")}
    for row in report["results"]:
        assert row["cupynet"]["step_ms"] > 0 and row["cupynet"]["samples_per_s"] > 0
        # NOTE: a steady-state step makes no host read at all, fp32 or AMP (GradScaler skips on the device)
        assert row["cupynet"]["host_syncs_per_step"] == 0 and row["cupynet"]["peak_mem_bytes"] is None
        assert row["torch"]["step_ms"] > 0 and row["ratio_step_time"] > 0
    assert "| model |" in result.stdout and set(report["targets"]) >= {"mlp amp step time / torch"}


def test_sync_counter_counts_host_reads_and_restores_the_methods():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_gpu

    import cupynet as cn

    t = cn.tensor([1.0, 2.0])
    with bench_gpu.SyncCounter() as counter:
        t.sum().item()
        float(t[0])
        t.numpy()
    assert counter.count == 3
    assert "counted" not in cn.Tensor.item.__qualname__ and "counted" not in cn.backend.to_numpy.__qualname__


def test_transformer_twin_computes_what_the_cupynet_model_computes():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _torch_twin_transformer import transformer_twin

    import cupynet as cn
    from cupynet.models import build_model

    model = build_model("transformer", (32,), 10, d_model=16, nhead=2, num_layers=2, dim_feedforward=32, dropout=0.0,
                        token_size=4)
    x = np.random.default_rng(0).standard_normal((3, 32)).astype(np.float32)
    ours = model(cn.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours, transformer_twin(model, torch)(torch.tensor(x)).detach().numpy(), atol=1e-5)


@pytest.mark.skipif(NVRTC12 is None, reason="NVRTC 12 not installed (pip install nvidia-cuda-nvrtc-cu12 "
                                             "nvidia-cuda-runtime-cu12; the test extra does)")
@pytest.mark.parametrize("filename", KERNELS.source_files())
def test_every_instantiation_compiles_for_sm70_with_nvrtc12(filename):
    ok, log = nvrtc12_compile(KERNELS.kernel_source(filename), filename, NAME_EXPRESSIONS[filename], KERNELS.options,
                              70)
    assert ok, f"{filename} does not compile for compute_70:\n{log}"


def test_nvrtc12_check_can_fail():
    if NVRTC12 is None:
        pytest.skip("NVRTC 12 not installed")
    ok, log = nvrtc12_compile("__global__ void k() { undefined_name(); }", "bad.cu", [], (), 70)
    assert not ok and "undefined_name" in log

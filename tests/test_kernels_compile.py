"""The bit-exact kernels (AMP and optimizer) compile, for every instantiation the launchers ask for, without a GPU.

The sources and the list of instantiations come from each package's
``KernelLibrary`` (``cupynet.amp.kernels.launch.KERNELS``,
``cupynet.optim.kernels.launch.KERNELS``): the very same text and name
expressions that the launcher hands to ``cupy.RawModule``. So a kernel that
would fail to compile at run time (a typo, a bad template, a missing header)
fails here, in CI, before it ever meets a GPU. The PTX is also checked for the
numerics the NumPy references rely on: no flush-to-zero and no fused multiply-add.
"""

import contextlib
import re
import shutil
import subprocess
import types

import ml_dtypes
import numpy as np
import pytest
from nvcc_helper import ARCHS, NVCC, NVRTC12, compile_all, nvrtc12_compile

from cupynet.amp.kernels import launch as amp_launch
from cupynet.cuda import device, multi_tensor
from cupynet.cuda.compile import NVRTC_OPTIONS
from cupynet.cuda.multi_tensor import BLOCK_THREADS, CHUNK_SIZE
from cupynet.optim.kernels import adam_coefficients, sgd_coefficients
from cupynet.optim.kernels import launch as optim_launch

BF16 = np.dtype(ml_dtypes.bfloat16)
LIBRARIES = {"amp": amp_launch.KERNELS, "optim": optim_launch.KERNELS}
FILES = [(package, filename) for package, library in LIBRARIES.items() for filename in library.source_files()]


needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA kernels cannot be compiled here")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Compile every file for every supported arch once (archs in parallel): {package: {arch: (result, dir)}}."""
    return {package: compile_all(library, tmp_path_factory.mktemp(f"ptx_{package}"))
            for package, library in LIBRARIES.items()}


def ptx_of(compiled, package, arch, filename):
    if arch not in compiled[package]:
        pytest.skip(f"this nvcc cannot target compute_{arch} (CUDA 13 dropped sm_70; sm_75 is compiled instead)")
    result, directory = compiled[package][arch]
    assert result.returncode == 0, f"nvcc failed for compute_{arch}:\n{result.stdout}\n{result.stderr}"
    return (directory / filename.replace(".cu", ".ptx")).read_text()


def demangle(names):
    cxxfilt = shutil.which("c++filt")
    if cxxfilt is None:
        return None
    text = subprocess.run([cxxfilt], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return [re.sub(r"^void ", "", line).split("(")[0] for line in text.splitlines()]


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("package, filename", FILES)
def test_every_instantiation_compiles_to_ptx(compiled, arch, package, filename):
    ptx = ptx_of(compiled, package, arch, filename)
    expressions = LIBRARIES[package].name_expressions[filename]
    entries = re.findall(r"\.entry\s+(\w+)\(", ptx)
    assert len(entries) == len(expressions), entries
    names = demangle(entries)
    if names is not None:
        assert sorted(names) == sorted(expressions)


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("package, filename", FILES)
def test_ptx_has_no_flush_to_zero_no_fma_and_no_approximate_math(compiled, arch, package, filename):
    ptx = ptx_of(compiled, package, arch, filename)
    assert ".ftz" not in ptx, "an instruction flushes subnormals: the NumPy reference would disagree"
    assert not re.search(r"\bfma\.\w+\.f32", ptx), "a multiply-add was fused: the reference rounds twice"
    assert ".approx" not in ptx, "approximate math: not correctly rounded"


@pytest.mark.parametrize("package", LIBRARIES)
def test_name_expressions_list_every_kernel_in_the_sources(package):
    library = LIBRARIES[package]
    assert sorted(library.source_files()) == sorted(p.name for p in library.directory.glob("*.cu"))
    for filename, expressions in library.name_expressions.items():
        text = (library.directory / filename).read_text()
        kernels = set(re.findall(r"__global__\s+void\s+(\w+)", text))
        assert kernels == {e.split("<")[0] for e in expressions}, filename
        for expression in expressions:
            if "<" in expression:
                assert re.search(rf"template\s*<typename \w+>\s*__global__\s+void\s+{expression.split('<')[0]}\b", text)


@pytest.mark.parametrize("package", LIBRARIES)
def test_the_launcher_compiles_exactly_these_sources_and_names(monkeypatch, package):
    library = LIBRARIES[package]
    made = []

    class FakeCupy:
        @staticmethod
        def RawModule(**kwargs):
            made.append(kwargs)
            return object()

    monkeypatch.setattr(device, "cupy", lambda: FakeCupy)
    monkeypatch.setattr(library, "_modules", {})
    for filename in library.source_files():
        library.module(filename)
        library.module(filename)  # cached: compiled once
    files = library.source_files()
    assert [m["name_expressions"] for m in made] == [list(library.name_expressions[f]) for f in files]
    assert all(m["options"] == NVRTC_OPTIONS for m in made)
    assert [m["code"] for m in made] == [library.kernel_source(f) for f in files]
    assert all(f"#define CUPYNET_CHUNK_SIZE {CHUNK_SIZE}\n" in m["code"] for m in made)


def test_kernel_source_rejects_unknown_files():
    with pytest.raises(ValueError, match="kernel_source: unknown kernel file 'nope.cu'"):
        amp_launch.KERNELS.kernel_source("nope.cu")


# ------------------------------------------------------------------ the launcher against the kernel signatures
# A fake CuPy records every launch, so the launcher's arguments can be held against the
# kernels' C signatures on a machine without a GPU: a Python int where the kernel takes an
# int (CuPy would pass 8 bytes), a missing argument or a wrong table breaks at run time.

SCALAR_TYPES = {"int": np.int32, "float": np.float32, "double": np.float64}


def kernel_signatures():
    """{kernel name: ['pointer' | numpy scalar type, ...]} parsed from the .cu files."""
    signatures = {}
    for package, filename in FILES:
        text = (LIBRARIES[package].directory / filename).read_text()
        for name, params in re.findall(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", text):
            kinds = []
            for param in re.sub(r"/\*.*?\*/", "", params).split(","):
                ctype = " ".join(param.split()[:-1]).replace("const ", "")
                kinds.append("pointer" if "*" in param else SCALAR_TYPES[ctype])
            signatures[name] = kinds
    return signatures


class FakeArray:
    """Enough of cupy.ndarray for the launcher; reading a value on the host fails the test."""

    def __init__(self, array):
        self.array = array
        self.data = types.SimpleNamespace(ptr=array.ctypes.data)
        self.device = types.SimpleNamespace(id=0)
        self.size, self.dtype, self.shape = array.size, array.dtype, array.shape

    def __getitem__(self, key):
        return FakeArray(self.array[key])

    def _sync(self, *args):
        raise AssertionError("the launcher read a device value on the host (a sync)")

    get = item = __bool__ = __float__ = __int__ = __index__ = _sync


class FakeCupy:
    def __init__(self):
        self.launches, self.uploads = [], 0
        self.stream = types.SimpleNamespace(ptr=0, capturing=False)
        self.stream.is_capturing = lambda: self.stream.capturing  # NOTE: tests flip it to mimic graph capture
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0),
                                          Device=lambda device_id: contextlib.nullcontext(),
                                          get_current_stream=lambda: self.stream)

    def RawModule(self, code, options, name_expressions):
        def get_function(name):
            assert name in name_expressions
            return lambda grid, block, args: self.launches.append((name, grid, block, args))

        return types.SimpleNamespace(get_function=get_function)

    def asarray(self, host):
        self.uploads += 1
        return FakeArray(np.array(host))

    def full(self, shape, value, dtype):
        return FakeArray(np.full(shape, value, dtype))

    def zeros(self, shape, dtype):
        return FakeArray(np.zeros(shape, dtype))

    def empty(self, shape, dtype):
        return FakeArray(np.empty(shape, dtype))


@pytest.fixture
def fake_launch(monkeypatch):
    fake = FakeCupy()
    monkeypatch.setattr(device, "cupy", lambda: fake)
    monkeypatch.setattr(device, "_constants", {})
    for library in LIBRARIES.values():
        monkeypatch.setattr(library, "_modules", {})
        monkeypatch.setattr(library, "_kernels", {})
    monkeypatch.setattr(multi_tensor, "TABLE_CACHE", multi_tensor.TableCache())
    return fake


def check_launch_arguments(launches):
    signatures = kernel_signatures()
    for name, grid, block, args in launches:
        expected = signatures[name.split("<")[0]]
        assert len(args) == len(expected), name
        for i, (arg, kind) in enumerate(zip(args, expected)):
            if kind == "pointer":
                assert isinstance(arg, FakeArray), (name, i, arg)
            else:
                assert type(arg) is kind, (name, i, type(arg), kind)
        assert block in ((BLOCK_THREADS,), (1,)) and len(grid) == 1 and grid[0] >= 1, name


def test_launcher_arguments_match_every_kernel_signature_and_tables_are_cached(fake_launch):
    fake = fake_launch
    grads = [FakeArray(np.ones(n, d)) for n, d in ((5, np.float16), (CHUNK_SIZE + 1, np.float32),
                                                  (3, np.float16), (0, BF16))]
    params = [FakeArray(np.ones(g.size, np.float32)) for g in grads]
    state = [[FakeArray(np.zeros(g.size, np.float32)) for g in grads] for _ in range(4)]
    one = lambda dtype: FakeArray(np.zeros(1, dtype))  # noqa: E731
    stats = FakeArray(np.zeros((4, 2), np.int32))
    groups = [(np.dtype(np.float16), [0, 2]), (np.dtype(np.float32), [1]), (BF16, [3])]

    amp_launch.non_finite_check_and_unscale_(groups, grads, one(np.float32), one(np.float32), stats)
    amp_launch.update_scale_(one(np.float32), one(np.int32), one(np.float32), 2.0, 0.5, 2000, 1, None,
                             np.float32(0), np.float32(np.inf), None)
    sgd = sgd_coefficients(0.1, 0.9, 0.0, 1e-4, True, False)
    optim_launch.fused_sgd_(0, groups, params, grads, state[0], sgd, True, None, None)
    optim_launch.fused_sgd_(0, groups, params, grads, None, sgd._replace(use_momentum=False), one(np.int32), None,
                            None)
    adam = adam_coefficients(1e-3, 0.9, 0.999, 1e-8, 0.01, True, True, False)
    optim_launch.fused_adam_(0, groups, params, grads, *state[1:], one(np.float32), adam, one(np.float32),
                             one(np.float32))
    out = amp_launch.multi_tensor_l2norm(0, groups, grads)
    for hits in (FakeArray(np.zeros(4, np.int32)), None):  # with and without the per-tensor hit counts
        amp_launch.record_overflow_(one(np.float32), stats, FakeArray(np.zeros((4, 2), np.int32)), one(np.int32), 3,
                                    hits)
    check_launch_arguments(fake.launches)
    assert isinstance(out, FakeArray) and out.shape == (1,)

    names = [name for name, *_ in fake.launches]
    assert names.count("non_finite_check_and_unscale_kernel<__half>") == 1
    assert "non_finite_check_and_unscale_kernel<__nv_bfloat16>" not in names  # empty group: no launch
    assert names[-3:] == ["l2norm_finalize_kernel", "record_overflow_kernel", "record_overflow_kernel"]
    assert "clear_flag_kernel" in names
    assert [args[6] for name, _, _, args in fake.launches[-2:]] == [np.int32(4), np.int32(0)]  # n_hits: 4, then 0
    assert names.index("increment_step_kernel") > names.index("fused_adam_kernel<float>")

    half_launch = fake.launches[0]
    table = half_launch[3][0].array
    assert half_launch[1] == (2,) and table[:2].tolist() == [grads[0].data.ptr, grads[2].data.ptr]
    assert table[2:4].tolist() == [stats.data.ptr + 8 * 0, stats.data.ptr + 8 * 2]  # rows by global index
    assert fake.launches[1][1] == (2,)  # the float32 tensor of CHUNK_SIZE + 1 elements: two chunks

    uploads, launches = fake.uploads, len(fake.launches)
    amp_launch.non_finite_check_and_unscale_(groups, grads, one(np.float32), one(np.float32), stats)
    assert fake.uploads == uploads and len(fake.launches) == launches + 2  # cached tables: no upload
    assert multi_tensor.TABLE_CACHE.hits >= 2


def test_graph_capture_pins_tables_and_refuses_to_build_one(fake_launch):
    # NOTE: a captured kernel re-reads its table's address on every replay: the LRU must never free it
    fake = fake_launch
    multi_tensor.TABLE_CACHE.capacity = 1
    grads = [FakeArray(np.ones(4, np.float32))]
    groups = [(np.dtype(np.float32), [0])]
    one = lambda dtype: FakeArray(np.zeros(1, dtype))  # noqa: E731
    stats = FakeArray(np.zeros((1, 2), np.int32))
    unscale = lambda g: amp_launch.non_finite_check_and_unscale_(groups, g, one(np.float32), one(np.float32),  # noqa: E731
                                                                 stats)
    cold = [FakeArray(np.ones(4, np.float32))]
    fake.stream.capturing = True
    launches = len(fake.launches)
    with pytest.raises(RuntimeError, match="warm-up"):
        unscale(cold)  # never run outside capture: its table does not exist yet
    assert len(fake.launches) == launches and multi_tensor.TABLE_CACHE.pinned == 0

    fake.stream.capturing = False
    unscale(grads)  # the warm-up builds the table
    fake.stream.capturing = True
    uploads = fake.uploads
    unscale(grads)  # captured: the table is pinned, nothing uploaded
    captured_table = fake.launches[-1][3][0]
    assert fake.uploads == uploads and multi_tensor.TABLE_CACHE.pinned == 1

    fake.stream.capturing = False
    for _ in range(3):  # other tables churn the one-entry LRU
        unscale([FakeArray(np.ones(4, np.float32))])
    unscale(grads)
    assert fake.launches[-1][3][0] is captured_table  # still the same device buffer the graph points to
    multi_tensor.TABLE_CACHE.clear()
    assert multi_tensor.TABLE_CACHE.pinned == 0 and len(multi_tensor.TABLE_CACHE) == 0


@pytest.mark.skipif(NVRTC12 is None, reason="NVRTC 12 not installed (pip install nvidia-cuda-nvrtc-cu12 "
                                             "nvidia-cuda-runtime-cu12; the test extra does)")
@pytest.mark.parametrize("package, filename", FILES)
def test_every_instantiation_compiles_for_sm70_with_nvrtc12(package, filename):
    library = LIBRARIES[package]
    ok, log = nvrtc12_compile(library.kernel_source(filename), filename, library.name_expressions[filename],
                              library.options, 70)
    assert ok, f"{filename} does not compile for compute_70:\n{log}"


def test_nvrtc12_check_can_fail():
    if NVRTC12 is None:
        pytest.skip("NVRTC 12 not installed")
    ok, log = nvrtc12_compile("__global__ void k() { undefined_name(); }", "bad.cu", [], (), 70)
    assert not ok and "undefined_name" in log

"""The emulated CUDA device itself (cupynet.emulated_cuda): the CuPy stand-in's rules and its counters.

Each test uses the stand-in directly (``emulated.cupy()``), in this process, whatever ``--device`` is;
the last ones run ``CUPYNET_DEVICE=cuda-emulated`` end to end in a subprocess. Where a rule is CuPy's,
the test says which part of CuPy 14.2 it mirrors.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pathlib
import pickle
import re
import subprocess
import sys
import warnings

import ml_dtypes
import numpy
import pytest

from cupynet.cuda import emulated
from cupynet.emulated_cuda import api, kernels

cp = emulated.cupy()
cpx = emulated.cupyx()
ROOT = pathlib.Path(__file__).resolve().parents[1]
IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly.")
IMPLICIT_EXACT = "^" + re.escape(IMPLICIT) + "$"
needs_gxx = pytest.mark.skipif(kernels.GXX is None, reason=f"no CUDA-on-CPU kernels: {kernels.unavailable_reason()}")


@contextlib.contextmanager
def counted():
    """Yield a dict that holds, after the block, its ``syncs`` and ``launches``."""
    counts = {}
    syncs, launches = emulated.host_syncs(), emulated.launches()
    yield counts
    counts["syncs"] = emulated.host_syncs() - syncs
    counts["launches"] = emulated.launches() - launches


def arange(*shape, dtype=numpy.float32):
    return cp.arange(int(numpy.prod(shape)), dtype=dtype).reshape(shape)


# ---- the array type and the explicit host reads ------------------------------------------------------------
def test_the_array_is_not_a_numpy_array():
    x = arange(2, 3)
    assert isinstance(x, cp.ndarray) and not isinstance(x, numpy.ndarray)
    for convert in (numpy.asarray, numpy.array, numpy.ascontiguousarray, lambda a: numpy.ones(3).astype(a.dtype)[a]):
        with pytest.raises(TypeError, match=IMPLICIT_EXACT):
            convert(x)


def test_get_and_asnumpy_return_numpy_copies():
    x = arange(2, 3)
    for host in (x.get(), cp.asnumpy(x)):
        assert type(host) is numpy.ndarray and host.dtype == numpy.float32
        numpy.testing.assert_array_equal(host, numpy.arange(6, dtype=numpy.float32).reshape(2, 3))
        host[0, 0] = 99
    assert x.get()[0, 0] == 0
    out = numpy.empty((2, 3), numpy.float32)
    assert x.get(out=out) is out and out[1, 2] == 5


HOST_READS = {
    "get": lambda x: x.get(),
    "item": lambda x: x[1].item(),
    "tolist": lambda x: x.tolist(),
    "float": lambda x: float(x[1]),
    "int": lambda x: int(x[1]),
    "bool": lambda x: bool(x[1]),
    "asnumpy": lambda x: cp.asnumpy(x),
    "repr": repr,
    "str": str,
    "format": lambda x: f"{x[1]:.2f}",
    "pickle": pickle.dumps,
    "mask index": lambda x: x[x > 2],
    "mask assignment": lambda x: x.__setitem__(x > 2, 0),
    "cupy.nonzero": lambda x: cp.nonzero(x),
    "ndarray.nonzero": lambda x: x.nonzero(),
    "cupy.where of one argument": lambda x: cp.where(x > 1),
    "cupy.unique": lambda x: cp.unique(x),
    "cupy.argwhere": lambda x: cp.argwhere(x),
    "cupy.nanmax": lambda x: cp.nanmax(x),
    "cupy.delete": lambda x: cp.delete(x, 1),
}
TWO_HOST_READS = {
    "cupy.bincount": lambda x: cp.bincount(x.astype(cp.int32)),  # NOTE: a check for negatives, then the max
    "cupy.unravel_index": lambda x: cp.unravel_index(x.astype(cp.int64), (2, 3)),  # a check per bound
    "cupy.trim_zeros": lambda x: cp.trim_zeros(x),  # the first and the last nonzero
}


@pytest.mark.parametrize("read", HOST_READS.values(), ids=HOST_READS.keys())
def test_every_host_read_counts_one_sync(read):
    x = cp.arange(6, dtype=cp.float32)
    with counted() as n:
        read(x)
    assert n["syncs"] == 1


@pytest.mark.parametrize("read", TWO_HOST_READS.values(), ids=TWO_HOST_READS.keys())
def test_cupy_functions_that_check_their_input_read_twice(read):
    x = cp.arange(6, dtype=cp.float32)
    with counted() as n:
        read(x)
    assert n["syncs"] == 2


def test_recording_syncs_names_each_read():
    x = cp.arange(3, dtype=cp.float32)
    with emulated.recording_syncs():
        x.get()
        with emulated.recording_syncs():  # NOTE: an inner recording keeps the outer one going
            x[x > 0]
        float(x[0])
    x.tolist()  # not recorded
    assert emulated.sync_log() == ["ndarray.get: (3,) float32", "boolean mask index: (3,) float32",
                                   "float(): () float32"]


def test_metadata_and_device_math_count_no_sync():
    x = arange(2, 3)
    with counted() as n:
        _ = (x.shape, x.dtype, x.strides, x.data.ptr, x.size, x.ndim, x.nbytes, x.flags, x.device,
             x.__cuda_array_interface__, len(x))
        y = cp.exp(x) * 2 + x.sum() - (x @ x.T).mean()
        _ = (x > 1) & (y < 3), cp.where(x > 1, x, 0), x.max(axis=0), cp.count_nonzero(x), cp.allclose(x, y)
    assert n["syncs"] == 0


def test_what_cupy_refuses_to_read_counts_no_sync():
    with counted() as n, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert bool(cp.zeros(0)) is False  # NOTE: CuPy warns and answers False without reading
        with pytest.raises(ValueError, match="more than one element is ambiguous"):
            bool(cp.zeros(2))
        with pytest.raises(ValueError, match="size 1"):
            cp.zeros(2).item()
        cp.ones(3)[cp.zeros(0, dtype=bool)]  # an empty mask: nothing to count
    assert n["syncs"] == 0
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)


def test_device_math_never_warns():
    x = cp.zeros(3, dtype=cp.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NOTE: a GPU kernel has no floating-point warnings: inf and NaN are values
        y = x / x
        cp.log(x - 1)
        x /= x
        y.astype(cp.int32)
        cp.add.at(y, cp.zeros(1, dtype=cp.int32), cp.asarray(numpy.array([numpy.inf], numpy.float32)))
    assert numpy.isnan(x.get()).all()


def test_a_device_scalar_is_no_python_index():
    # NOTE: CuPy's ndarray has no __index__ on purpose (it would hide a host read)
    with pytest.raises(TypeError):
        range(cp.asarray(numpy.array(3)))


# ---- launches ------------------------------------------------------------------------------------------
ONE_LAUNCH = {
    "elementwise operator": lambda x: x + 1,
    "elementwise ufunc": lambda x: cp.exp(x),
    "reduction method": lambda x: x.sum(),
    "reduction function": lambda x: cp.max(x, axis=0),
    "matmul": lambda x: x @ x.T,
    "copy": lambda x: x.copy(),
    "cupy.array of a device array": lambda x: cp.array(x),
    "fill": lambda x: x.fill(3),
    "setitem": lambda x: x.__setitem__((0, slice(None)), 7),
    "in-place operator": lambda x: x.__iadd__(1),
    "out=": lambda x: cp.multiply(x, 2, out=x),
    "astype to another dtype": lambda x: x.astype(cp.float64),
    "reshape of a non-contiguous array": lambda x: x.T.reshape(6),
    "zeros": lambda x: cp.zeros(3),
    "host to device copy": lambda x: cp.asarray(numpy.ones(3)),
}
NO_LAUNCH = {
    "reshape of a contiguous array": lambda x: x.reshape(3, 2),
    "transpose": lambda x: x.T,
    "cupy.transpose": lambda x: cp.transpose(x),
    "basic slice": lambda x: x[:, 1:],
    "integer index": lambda x: x[1, 2],
    "broadcast_to": lambda x: cp.broadcast_to(x, (4, 2, 3)),
    "expand_dims": lambda x: cp.expand_dims(x, 0),
    "empty": lambda x: cp.empty((2, 3)),
    "empty_like": lambda x: cp.empty_like(x),
    "asarray of a device array": lambda x: cp.asarray(x),
    "astype(copy=False) to its own dtype": lambda x: x.astype(cp.float32, copy=False),
    "ascontiguousarray of a contiguous array": lambda x: cp.ascontiguousarray(x),
}


@pytest.mark.parametrize("work", ONE_LAUNCH.values(), ids=ONE_LAUNCH.keys())
def test_work_that_makes_values_launches_one_kernel(work):
    x = arange(2, 3)
    with counted() as n:
        work(x)
    assert (n["launches"], n["syncs"]) == (1, 0)


@pytest.mark.parametrize("view", NO_LAUNCH.values(), ids=NO_LAUNCH.keys())
def test_views_and_allocations_launch_nothing(view):
    x = arange(2, 3)
    with counted() as n:
        view(x)
    assert (n["launches"], n["syncs"]) == (0, 0)


def test_comparing_with_none_is_an_all_false_array():
    x = arange(3)
    # NOTE: as CuPy: an object with object's __eq__ equals no element; the answer is a device array
    assert isinstance(x == None, cp.ndarray) and (x == None).tolist() == [False] * 3  # noqa: E711
    assert (x != None).tolist() == [True] * 3 and (x == object()).tolist() == [False] * 3  # noqa: E711


def test_out_and_no_copy_return_the_very_array():
    x, out = arange(2, 3), cp.empty((2, 3), cp.float32)
    assert cp.add(x, 1, out=out) is out
    assert numpy.add(x, 1, out=out) is out
    assert cp.asarray(x) is x and cp.asarray(x, dtype=cp.float32) is x and cp.array(x, copy=False) is x
    assert x.astype(cp.float32, copy=False) is x
    assert cp.array(x) is not x and cp.asarray(x, dtype=cp.float64) is not x


# ---- results and arguments ---------------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", [lambda x: x.sum(), lambda x: cp.sum(x), lambda x: x.max(), lambda x: cp.mean(x),
                                    lambda x: x.any(), lambda x: cp.count_nonzero(x), lambda x: cp.allclose(x, x),
                                    lambda x: cp.array_equal(x, x), lambda x: cp.add.reduce(x, axis=None),
                                    lambda x: cp.linalg.norm(x), lambda x: cp.dot(x.ravel(), x.ravel())],
                         ids=["sum", "cupy.sum", "max", "mean", "any", "count_nonzero", "allclose", "array_equal",
                              "add.reduce", "norm", "dot"])
def test_reductions_return_0d_device_arrays(reduce):
    result = reduce(arange(2, 3))
    assert isinstance(result, cp.ndarray) and result.shape == ()


def test_cupy_has_no_initial_and_no_where():
    x = arange(2, 3)
    for call in (lambda: x.max(initial=0), lambda: cp.max(x, initial=0), lambda: x.min(initial=0),
                 lambda: cp.amin(x, initial=0), lambda: cp.sum(x, where=x > 0), lambda: cp.add(x, x, where=x > 0),
                 lambda: cp.add.reduce(x, initial=0)):
        with pytest.raises(TypeError, match="initial|where"):
            call()
    with pytest.raises(ValueError):
        cp.zeros(0).max()  # NOTE: and an empty max raises, as in CuPy


def test_ufunc_methods_exist_where_cupy_implements_them():
    x = arange(2, 3)
    # NOTE: CuPy's ufunc has every method; the ones it lacks raise NotImplementedError when called
    for method, args in (("accumulate", (x,)), ("reduce", (x,)), ("reduceat", (x, [0]))):
        with pytest.raises(NotImplementedError, match=f"`cupy_maximum.{method}` is not supported yet"):
            getattr(cp.maximum, method)(*args)
    with pytest.raises(NotImplementedError, match="cupy_multiply.at"):
        cp.multiply.at(cp.ones(3), cp.zeros(1, dtype=cp.int32), 2.0)
    host = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    numpy.testing.assert_array_equal(cp.add.accumulate(x, axis=1).get(), numpy.add.accumulate(host, axis=1))
    numpy.testing.assert_array_equal(cp.multiply.reduce(x).get(), numpy.multiply.reduce(host))
    numpy.testing.assert_array_equal(cp.add.outer(x[0], x[1]).get(), numpy.add.outer(host[0], host[1]))
    assert cp.add.__name__ == "cupy_add" and repr(cp.add) == "<ufunc 'cupy_add'>"


REFUSED_AT = [numpy.int8, numpy.uint8, numpy.int16, numpy.bool_, ml_dtypes.bfloat16]
ACCEPTED_AT = [numpy.int32, numpy.int64, numpy.float16, numpy.float32, numpy.float64]
SCATTER_ADD = {"cupy.add.at": lambda a, i, v: cp.add.at(a, i, v), "cupyx.scatter_add": cpx.scatter_add}


@pytest.mark.parametrize("scatter", SCATTER_ADD.values(), ids=SCATTER_ADD.keys())
@pytest.mark.parametrize("dtype", REFUSED_AT, ids=lambda d: numpy.dtype(d).name)
def test_scatter_add_refuses_what_cupy_refuses(scatter, dtype):
    a = cp.zeros(4, dtype=dtype)
    with pytest.raises(TypeError, match="cupy.add.at only supports int32, int64, float16, float32, float64, "
                                        "uint32, uint64 as data type"):
        scatter(a, cp.asarray(numpy.array([0, 0, 2])), cp.ones(3, dtype=dtype))


@pytest.mark.parametrize("scatter", SCATTER_ADD.values(), ids=SCATTER_ADD.keys())
@pytest.mark.parametrize("dtype", ACCEPTED_AT, ids=lambda d: numpy.dtype(d).name)
def test_scatter_add_adds_every_repeated_index(scatter, dtype):
    index, values = numpy.array([0, 0, 2, 0, 3]), numpy.array([1, 2, 3, 4, 5], dtype=dtype)
    expected = numpy.zeros(4, dtype=dtype)
    numpy.add.at(expected, index, values)
    a, index_device, values_device = cp.zeros(4, dtype=dtype), cp.asarray(index), cp.asarray(values)
    with counted() as n:
        scatter(a, index_device, values_device)
    assert (n["launches"], a.dtype) == (1, numpy.dtype(dtype))
    numpy.testing.assert_array_equal(a.get(), expected)


def test_scatter_max_refuses_float16_and_matches_maximum_at():
    with pytest.raises(TypeError, match="cupy.maximum.at only supports int32, int64, float32"):
        cpx.scatter_max(cp.zeros(3, dtype=cp.float16), cp.zeros(1, dtype=cp.int32), cp.ones(1, dtype=cp.float16))
    with pytest.raises(TypeError, match="cupy.minimum.at"):
        cp.minimum.at(cp.zeros(3, dtype=cp.float16), cp.zeros(1, dtype=cp.int32), cp.ones(1, dtype=cp.float16))
    index, values = numpy.array([1, 1, 2]), numpy.array([-3.0, 5.0, -1.0], dtype=numpy.float32)
    expected = numpy.zeros(3, numpy.float32)
    numpy.maximum.at(expected, index, values)
    a = cp.zeros(3, dtype=cp.float32)
    cpx.scatter_max(a, cp.asarray(index), cp.asarray(values))
    numpy.testing.assert_array_equal(a.get(), expected)


def test_scatter_takes_host_indices_and_values_as_cupy_copies_them():
    a = cp.zeros(3, dtype=cp.float32)
    cpx.scatter_add(a, numpy.array([0, 0]), numpy.array([1.0, 2.0], dtype=numpy.float32))
    cp.add.at(a, numpy.array([2]), numpy.float32(4))
    assert a.tolist() == [3.0, 0.0, 4.0]


def test_host_arrays_and_lists_are_refused_as_arguments():
    x = arange(3)
    with pytest.raises(TypeError, match=r"^Unsupported type <class 'numpy.ndarray'>$"):
        cp.add(x, numpy.ones(3, numpy.float32))
    with pytest.raises(TypeError, match=r"^Unsupported type <class 'list'>$"):
        cp.multiply(x, [1, 2, 3])
    with pytest.raises(TypeError, match=r"^Unsupported type <class 'numpy.ndarray'>$"):
        cp.exp(numpy.array(1.0))  # NOTE: a 0-d NumPy array is an array, not a scalar
    for call in (lambda: x + numpy.ones(3), lambda: numpy.ones(3) * x, lambda: cp.concatenate([x, numpy.ones(3)]),
                 lambda: cp.ascontiguousarray(numpy.ones(3))):
        with pytest.raises(TypeError):
            call()
    assert cp.add(x, numpy.float32(2)).dtype == numpy.float32
    assert cp.maximum(x, numpy.int64(1)).tolist() == [1.0, 1.0, 2.0]
    assert x.take(numpy.array([2, 0])).tolist() == [2.0, 0.0]  # NOTE: take copies host indices (as CuPy)


def test_asarray_copies_host_data_and_keeps_device_arrays():
    host = numpy.ones(3, numpy.float32)
    device = cp.asarray(host)
    host[0] = 5
    assert device.tolist() == [1.0, 1.0, 1.0] and device.base is None
    assert cp.array(host, dtype=cp.float16, copy=False).dtype == numpy.float16  # NOTE: host data is copied anyway
    read_only = numpy.frombuffer(numpy.ones(2, numpy.float32).tobytes(), numpy.float32)
    copied = cp.asarray(read_only)
    copied[0] = 3  # NOTE: the device copy is writable even when the host data is not
    assert cp.asarray(device) is device
    a, b = cp.arange(2.0), cp.ones(2)
    stacked = cp.array([a, b])
    assert stacked.shape == (2, 2) and stacked.tolist() == [[0.0, 1.0], [1.0, 1.0]]
    assert cp.array([cp.asarray(numpy.array(1.0)), cp.asarray(numpy.array(2.0))]).tolist() == [1.0, 2.0]
    for mixed in ([a, 1.0], [a, numpy.ones(2)], [a, cp.ones(3)]):
        with pytest.raises(TypeError, match=IMPLICIT_EXACT):
            cp.array(mixed)
    stacked_copy = cp.array(a)
    stacked_copy[0] = 9
    assert a.tolist() == [0.0, 1.0]


def test_base_is_the_owning_array():
    owner = cp.zeros((2, 3))
    view = owner[1]
    assert owner.base is None
    assert view.base is owner and view.T.base is owner and view[1:].base is owner
    assert owner.reshape(3, 2)[0].base is owner and cp.broadcast_to(owner, (2, 2, 3)).base is owner
    element = owner[1, 2]  # NOTE: an integer index is a 0-d view in CuPy, not a copied scalar
    assert element.base is owner and element.shape == ()
    element[...] = 4
    assert owner.tolist() == [[0, 0, 0], [0, 0, 4]]
    assert owner.copy().base is None and owner[owner > 1].base is None


def test_numpy_functions_dispatch_to_the_stand_in():
    x = arange(2, 3)
    assert isinstance(numpy.exp(x), cp.ndarray)
    total = numpy.sum(x)
    assert isinstance(total, cp.ndarray) and total.shape == () and float(total) == 15.0
    assert isinstance(numpy.concatenate([x, x]), cp.ndarray)
    with pytest.raises(TypeError, match="no implementation found for 'numpy.nanquantile'"):
        numpy.nanquantile(x, 0.5)  # NOTE: CuPy has no nanquantile
    with pytest.raises(TypeError):
        numpy.spacing(x)  # NOTE: nor a spacing ufunc


# ---- the API table -------------------------------------------------------------------------------------------
def test_names_cupy_lacks_are_attribute_errors():
    assert "geomspace" in dir(numpy) and api.entry("cupy", "geomspace") is None
    with pytest.raises(AttributeError, match=f"CuPy {api.version()} has no such name"):
        cp.geomspace  # noqa: B018
    assert api.version() == "14.2.0" and cp.__version__ == api.version()
    with pytest.raises(AttributeError, match="CuPy 14.2.0 has it, but cuda-emulated does not emulate it"):
        cp.ElementwiseKernel  # noqa: B018


def test_names_cupy_has_are_there_even_where_numpy_2_dropped_them():
    assert cp.newaxis is None and cp.arange(3.0)[:, cp.newaxis].shape == (3, 1)
    assert (cp.Inf, cp.NINF, cp.float_, cp.cfloat) == (numpy.inf, -numpy.inf, numpy.float64, numpy.complex128)
    assert cp.AxisError is numpy.exceptions.AxisError and cp.pi == numpy.pi and cp.float32 is numpy.float32


def test_the_random_generator_has_only_cupys_methods():
    generator = cp.random.default_rng(0)
    for name in ("permutation", "choice", "normal", "shuffle"):
        assert api.entry("random_generator", name) is None
        with pytest.raises(AttributeError, match=name):
            getattr(generator, name)
    for name in ("random", "standard_normal", "integers", "uniform"):
        assert api.entry("random_generator", name) is not None and callable(getattr(generator, name))


def test_a_seeded_generator_repeats_its_numbers():
    first = cp.random.Generator(cp.random.XORWOW(7)).standard_normal(5, dtype=cp.float32)
    again = cp.random.Generator(cp.random.XORWOW(7)).standard_normal(5, dtype=cp.float32)
    other = cp.random.Generator(cp.random.XORWOW(8)).standard_normal(5, dtype=cp.float32)
    assert isinstance(first, cp.ndarray) and first.dtype == numpy.float32
    assert first.tolist() == again.tolist() != other.tolist()


def test_cupy_random_seed_leaves_numpys_random_alone():
    numpy.random.seed(3)
    expected = numpy.random.random_sample()
    numpy.random.seed(3)
    cp.random.seed(0)
    drawn = cp.random.rand(2)
    assert isinstance(drawn, cp.ndarray) and numpy.random.random_sample() == expected


def test_bfloat16_elementwise_math_and_casts():
    host = numpy.array([0.5, 1.5, -2.0, 3.0], dtype=ml_dtypes.bfloat16)
    x = cp.asarray(host)
    assert x.dtype == ml_dtypes.bfloat16
    y = x * 2 + 1
    assert y.dtype == ml_dtypes.bfloat16
    numpy.testing.assert_array_equal(y.get(), host * 2 + 1)
    assert cp.exp(x).dtype == ml_dtypes.bfloat16
    assert x.astype(cp.float32).tolist() == [0.5, 1.5, -2.0, 3.0]
    rounded = cp.asarray(numpy.array([1.00390625, 3.14159], numpy.float32)).astype(ml_dtypes.bfloat16)
    numpy.testing.assert_array_equal(rounded.get(),
                                     numpy.array([1.00390625, 3.14159], numpy.float32).astype(ml_dtypes.bfloat16))


def test_cupyx_special_erf_types_its_results_by_cupys_loops():
    special = cpx.scipy.special
    # NOTE: CuPy's loops: erf ('e->d', 'f->f', 'd->d'), erfinv ('f->f', 'd->d'); the first safe one is taken
    for dtype, erf_dtype, erfinv_dtype in ((numpy.float16, numpy.float64, numpy.float32),
                                           (numpy.float32, numpy.float32, numpy.float32),
                                           (numpy.int32, numpy.float64, numpy.float64)):
        x = cp.asarray(numpy.array([0, 1], dtype=dtype))
        assert (special.erf(x).dtype, special.erfinv(x).dtype) == (erf_dtype, erfinv_dtype)
    with pytest.raises(TypeError, match="Wrong type"):
        special.erf(cp.ones(2, dtype=cp.complex64))
    values = numpy.array([-0.9, 0.0, 0.5], numpy.float64)
    numpy.testing.assert_allclose(special.erfinv(special.erf(cp.asarray(values))).get(), values, rtol=1e-12)


# ---- cupy.cuda ---------------------------------------------------------------------------------------------------
def test_one_device_and_its_context_manager():
    runtime = cp.cuda.runtime
    assert runtime.getDeviceCount() == 1 and runtime.getDevice() == 0
    with cp.cuda.Device(0) as device:
        assert device.id == 0 and runtime.getDevice() == 0
    assert cp.cuda.Device().id == 0 and cp.cuda.Device(0).compute_capability == "90"
    missing = cp.cuda.Device(1)  # NOTE: as in CuPy, making it is fine; using it raises
    with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorInvalidDevice"):
        with missing:
            pass
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        runtime.setDevice(1)
    assert runtime.getDevice() == 0


def test_with_stream_makes_it_current():
    default = cp.cuda.get_current_stream()
    assert default.ptr == 0 and not default.is_capturing()
    outer, inner = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream()
    with outer:
        assert cp.cuda.get_current_stream() is outer and outer.ptr != 0
        with inner:
            assert cp.cuda.get_current_stream() is inner
        assert cp.cuda.get_current_stream() is outer
    assert cp.cuda.get_current_stream() is default


def test_a_graph_capture_refuses_host_reads_and_launches_once():
    x = cp.arange(3, dtype=cp.float32)
    with pytest.raises(RuntimeError, match="default"):
        cp.cuda.get_current_stream().begin_capture()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            assert cp.cuda.get_current_stream().is_capturing()
            x += 1  # NOTE: device work is fine (here it runs at once)
            with counted() as n:
                for wait in (x.get, lambda: float(x[0]), stream.synchronize, cp.cuda.Device().synchronize):
                    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="cudaErrorStreamCaptureUnsupported"):
                        wait()
        finally:
            graph = stream.end_capture()  # NOTE: an open capture would refuse every later read in this process
    assert n["syncs"] == 0 and not stream.is_capturing()
    graph.launch(stream)
    with pytest.raises(NotImplementedError, match="launched once"):
        graph.launch(stream)
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_the_memory_pool_counts_live_arrays():
    pool = cp.get_default_memory_pool()
    gc.collect()
    before = pool.used_bytes()
    x = cp.zeros(1 << 16, dtype=cp.float32)
    view = x[::2]
    assert pool.used_bytes() == before + x.nbytes  # NOTE: a view holds no memory of its own
    del x
    assert pool.used_bytes() == before + (1 << 18)  # the view keeps its owner alive
    del view
    gc.collect()
    assert pool.used_bytes() == before


# ---- RawModule: CUDA on the CPU --------------------------------------------------------------------------------
ADD_ONE = r"""
extern "C" __global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
extern "C" __global__ void set_flag(int* out, bool flag) {
    out[0] = flag ? 7 : 3;
}
"""


@needs_gxx
def test_a_raw_kernel_runs_on_device_arrays_and_counts_one_launch():
    module = cp.RawModule(code=ADD_ONE, options=("-std=c++17",), name_expressions=["add_one", "set_flag"])
    add_one = module.get_function("add_one")
    x = cp.arange(5, dtype=cp.float32)
    with counted() as n:
        add_one((1,), (8,), (x, numpy.int32(5)))
    assert (n["launches"], n["syncs"]) == (1, 0)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    flag = cp.zeros(1, dtype=cp.int32)
    module.get_function("set_flag")((1,), (1,), (flag, True))  # NOTE: CuPy passes a Python bool as a 1-byte bool
    assert flag.tolist() == [7]


@needs_gxx
def test_a_raw_kernel_refuses_what_cupy_would_pack_wrongly():
    kernel = cp.RawKernel(ADD_ONE, "add_one")
    x = cp.zeros(4, dtype=cp.float32)
    with pytest.raises(kernels.KernelError, match="Python int, which CuPy passes as an 8-byte long long"):
        kernel((1,), (4,), (x, 4))
    with pytest.raises(kernels.KernelError, match="points to 4-byte"):
        kernel((1,), (4,), (cp.zeros(4), numpy.int32(4)))
    with pytest.raises(TypeError, match="grid"):
        kernel([1], (4,), (x, numpy.int32(4)))  # NOTE: CuPy's Function takes tuples only
    with pytest.raises(TypeError, match="options"):
        cp.RawModule(code=ADD_ONE, options=["-std=c++17"])
    with pytest.raises(TypeError):
        cp.RawModule(ADD_ONE)  # NOTE: code is keyword-only in CuPy
    assert x.tolist() == [0.0, 0.0, 0.0, 0.0]


# ---- selecting the device ------------------------------------------------------------------------------------
def _run(code, **env):
    environment = {k: v for k, v in os.environ.items() if k not in ("CUPYNET_DEVICE", "CUPYNET_CUDA")}
    environment.update(env, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_direct_use_needs_no_device_setting():
    out = _run("import cupynet.backend as b\nfrom cupynet.cuda import emulated\n"
               "print(b.emulating(), float(emulated.cupy().ones(3).sum()), emulated.host_syncs())")
    assert out.split() == ["False", "3.0", "1"]


@pytest.mark.skipif(emulated.unavailable_reason() is not None, reason=str(emulated.unavailable_reason()))
def test_cupynet_device_cuda_emulated_end_to_end():
    out = _run("import cupynet as cn\nfrom cupynet.cuda import emulated\n"
               "t = cn.zeros(2, device='cuda')\n"
               "print(cn.cuda.is_available(), type(t.array) is emulated.cupy().ndarray, cn.cuda.device_count())\n"
               "from cupynet import cli\ncli.main(['info'])", CUPYNET_DEVICE="cuda-emulated")
    first, _, info = out.partition("\n")
    assert first.split() == ["True", "True", "1"]
    assert "emulated" in info


def test_linalg_results_are_plain_tuples_of_device_arrays():
    # NOTE: NumPy returns named tuples (QRResult, SVDResult, EighResult); CuPy plain tuples of device arrays
    a = cp.asarray(numpy.arange(9.0).reshape(3, 3) + numpy.eye(3))
    for result in (cp.linalg.qr(a), cp.linalg.svd(a), cp.linalg.eigh(a + a.T)):
        assert type(result) is tuple and all(isinstance(r, cp.ndarray) for r in result)


def test_without_gxx_selecting_the_device_says_what_is_missing(tmp_path):
    # NOTE: an empty PATH: shutil.which("g++") finds nothing (the interpreter is called by its full path)
    env = {**os.environ, "PATH": str(tmp_path), "CUPYNET_DEVICE": "cuda-emulated"}
    result = subprocess.run([sys.executable, "-c", "import cupynet; cupynet.zeros(2)"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "the emulated CUDA device cannot run here" in result.stderr and "need g++" in result.stderr

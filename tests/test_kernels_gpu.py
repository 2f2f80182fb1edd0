"""On a GPU: every CUDA kernel against its NumPy reference, bit for bit (skipped without a GPU).

The data plants inf / -inf / NaN at chunk boundaries (element 65535, 65536 and
the last one), mixes odd sizes, empty arrays and dtypes in one call, and seeds
subnormals, which CuPy's -ftz=true would flush if the kernels let it. The
comparison is on bits: the kernels store one canonical NaN, so even NaNs must
match exactly.
"""

import numpy as np
import pytest
from cuda_emulation import cases
from cuda_emulation.cases import SIZES, mixed_arrays, optimizer_problem, scalar

from cupynet.backend import cupy_or_none

pytestmark = pytest.mark.cuda  # needs CuPy and a usable CUDA GPU: runs under `pytest --device cuda` (conftest)

from cupynet.amp import kernels as K  # noqa: E402
from cupynet.cuda import multi_tensor  # noqa: E402
from cupynet.cuda.multi_tensor import CHUNK_SIZE  # noqa: E402
from cupynet.optim import kernels as O  # noqa: E402


def cp():
    return cupy_or_none()


def assert_same_bits(device_arrays, host_arrays):
    cases.assert_same_bits(device_arrays, host_arrays, cp().asnumpy)


def both(arrays):
    """(device copies, host copies) of a list of NumPy arrays."""
    return [cp().asarray(a) for a in arrays], [a.copy() for a in arrays]


@pytest.mark.parametrize("inv", [1 / 1024, 1.0, 3.0, 0.0])
def test_unscale_bit_for_bit(inv):
    rng = np.random.default_rng(0)
    dev, host = both(mixed_arrays(rng))
    (found_d, inv_d, stats_d), (found_h, inv_h, stats_h) = both(
        [scalar(0.0), scalar(inv), np.full((len(SIZES), 2), 3, np.int32)])
    K.non_finite_check_and_unscale_(dev, found_d, inv_d, stats_d)
    K.non_finite_check_and_unscale_(host, found_h, inv_h, stats_h)
    assert_same_bits(dev + [found_d, stats_d], host + [found_h, stats_h])
    assert found_h[0] == 1.0


def test_unscale_clean_arrays_leave_found_inf_zero_and_one_stays_set():
    rng = np.random.default_rng(1)
    dev, host = both(mixed_arrays(rng, finite=True))
    found = cp().zeros(1, np.float32)
    K.non_finite_check_and_unscale_(dev, found, cp().asarray(scalar(0.5)))
    assert float(found[0]) == 0.0
    found[0] = 1.0
    K.non_finite_check_and_unscale_(dev, found, cp().asarray(scalar(0.5)))
    assert float(found[0]) == 1.0


@pytest.mark.parametrize("options", [dict(), dict(hysteresis=2, min_scale=1.0, max_scale=2.0**20)])
def test_update_scale_bit_for_bit(options):
    rng = np.random.default_rng(2)
    start = [scalar(2.0**16), scalar(0, np.int32), scalar(0, np.int32), scalar(0, np.int32)]
    dev, host = both(start)
    for found in (rng.random(200) < 0.4).astype(np.float32):
        for state, fi in ((dev, cp().asarray(scalar(found))), (host, scalar(found))):
            K.update_scale_(state[0], state[1], fi, 1.5, 0.3, 3, hysteresis_tracker=state[2], min_hit=state[3],
                            **options)
        assert_same_bits(dev, host)


@pytest.mark.parametrize("hyper", [
    dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False),
    dict(momentum=0.9, dampening=0.0, nesterov=True, weight_decay=1e-3, maximize=False),
    dict(momentum=0.7, dampening=0.2, nesterov=False, weight_decay=0.0, maximize=True),
])
def test_fused_sgd_bit_for_bit(hyper):
    rng = np.random.default_rng(3)
    params, grads = optimizer_problem(rng)
    pd, ph = both(params)
    bd, bh = both([np.zeros_like(p) for p in params])
    gd, gh = both(grads)
    fd, fh = both([scalar(1, np.int32)])
    for step in range(3):
        inv = scalar(2.0**-step * 0.7)
        O.fused_sgd_(pd, gd, bd, lr=0.01, first_step=fd[0], inv_scale=cp().asarray(inv), **hyper)
        O.fused_sgd_(ph, gh, bh, lr=0.01, first_step=fh[0], inv_scale=inv, **hyper)
        assert_same_bits(pd + bd + fd, ph + bh + fh)


@pytest.mark.parametrize("decoupled, amsgrad, maximize", [(False, False, False), (True, True, False),
                                                          (False, True, True)])
def test_fused_adam_bit_for_bit(decoupled, amsgrad, maximize):
    rng = np.random.default_rng(4)
    params, grads = optimizer_problem(rng)
    grads = [np.nan_to_num(g.astype(np.float32), nan=0.5, posinf=2.0, neginf=-2.0).astype(g.dtype) for g in grads]
    dev, host = both(params + [np.zeros_like(p) for p in params * 3] + grads + [scalar(0.0)])
    n = len(params)

    def run(arrays, inv, found):
        p, m, v, vmax, g = (arrays[i * n:(i + 1) * n] for i in range(5))
        O.fused_adam_(p, g, m, v, vmax, arrays[-1], lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01,
                      decoupled=decoupled, amsgrad=amsgrad, maximize=maximize, inv_scale=inv, found_inf=found)

    for step in range(4):
        inv, found = scalar(0.5), scalar(1.0 if step == 2 else 0.0)  # the third step overflowed: skipped
        run(dev, cp().asarray(inv), cp().asarray(found))
        run(host, inv, found)
        assert_same_bits(dev, host)
    assert float(dev[-1][0]) == 3.0


def test_l2norm_bit_for_bit():
    rng = np.random.default_rng(5)
    finite = mixed_arrays(rng, finite=True)
    dev, host = both(finite)
    assert_same_bits([K.multi_tensor_l2norm(dev)], [K.multi_tensor_l2norm(host)])
    dev, host = both(mixed_arrays(rng))
    assert_same_bits([K.multi_tensor_l2norm(dev)], [K.multi_tensor_l2norm(host)])
    assert_same_bits([K.multi_tensor_l2norm(dev)], [cp().asnumpy(K.multi_tensor_l2norm(dev))])  # deterministic


def test_repeated_calls_reuse_the_cached_pointer_table():
    rng = np.random.default_rng(6)
    dev, _ = both(mixed_arrays(rng, finite=True))
    found, inv = cp().zeros(1, np.float32), cp().asarray(scalar(0.5))
    K.non_finite_check_and_unscale_(dev, found, inv)
    cache = multi_tensor.TABLE_CACHE
    hits, misses = cache.hits, cache.misses
    K.non_finite_check_and_unscale_(dev, found, inv)
    assert cache.misses == misses and cache.hits == hits + 3  # one per dtype group
    fresh = [cp().ones(12345, np.float16), cp().ones(54321, np.float32)]  # sizes no other test uses
    K.non_finite_check_and_unscale_(fresh, found, inv)  # other arrays: other tables
    assert cache.misses == misses + 2


def test_no_host_sync_and_no_upload_once_warm():
    """A CUDA graph capture fails on any synchronisation or pageable upload: warm calls must do neither."""
    cupy = cp()
    rng = np.random.default_rng(7)
    sizes = (CHUNK_SIZE + 5, 33, 1, 0)
    p = [cupy.asarray(rng.standard_normal(n).astype(np.float32)) for n in sizes]
    g = [cupy.asarray(rng.standard_normal(n).astype(np.float16)) for n in sizes]  # finite: no step is skipped
    bufs = [cupy.zeros_like(x) for x in p]
    m, v = [cupy.zeros_like(x) for x in p], [cupy.zeros_like(x) for x in p]
    scale, tracker, found, inv, step = (cupy.asarray(x) for x in (scalar(1024.0), scalar(0, np.int32), scalar(0.0),
                                                                  scalar(1 / 1024), scalar(0.0)))

    def one_step():
        K.non_finite_check_and_unscale_(g, found, inv)
        O.fused_sgd_(p, g, bufs, lr=0.1, momentum=0.9, dampening=0.0, nesterov=False, weight_decay=0.0,
                     maximize=False, first_step=False, found_inf=found)
        O.fused_adam_(p, g, m, v, None, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                      decoupled=True, amsgrad=False, maximize=False, found_inf=found)
        K.update_scale_(scale, tracker, found, 2.0, 0.5, 2000)

    one_step()  # warm: compile the modules, upload the tables, make the constants
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        one_step()
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    assert float(step[0]) == 2.0

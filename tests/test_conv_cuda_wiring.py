"""The conv op's CuPy path runs the fused im2col/col2im kernels (issue 14), checked on the CUDA-on-CPU harness.

The emulated CuPy (tests/cuda_emulation) runs the kernels' real source through their real
launchers; ``fused.kernels_enabled`` is made to see its arrays as CuPy's, so ``conv.py`` takes the
very branch it takes on a GPU: channels-first columns from ``im2col_2d_kernel``, input gradients
scattered back by ``col2im_2d_kernel``. The results must equal the NumPy (channels-last) path's
up to the GEMMs' fp32 summation order.
"""

import types

import cuda_emulation as emulation
import numpy as np
import pytest
from cuda_emulation import cases

from cupynet.ops import conv
from cupynet.ops import kernels as fused
from cupynet.ops._conv_args import check_conv
from cupynet.tensor import Tensor

pytestmark = pytest.mark.skipif(emulation.GXX is None, reason="the CUDA-on-CPU harness needs g++ (on Linux, "
                                                                 "x86-64 or AArch64)")

TOLERANCE = {cases.F32: 1e-5, cases.F16: 2e-3}


@pytest.fixture
def gpu(monkeypatch):
    emulated = emulation.install(monkeypatch)
    emulation.install_fake_cublas(monkeypatch)  # NOTE: grouped half convs batch their GEMMs through cuBLAS
    emulated.cuda.device = types.SimpleNamespace(get_cublas_handle=lambda: 7)
    emulated.cuda.runtime.CUDA_R_16F, emulated.cuda.runtime.CUDA_R_16BF = 2, 14  # library_types.h
    monkeypatch.setattr(fused, "_backend_name",
                        lambda a: "cupy" if isinstance(a, emulation.DeviceArray) else "numpy")
    return emulated


def _geoms(x, w, stride, padding, dilation, groups):
    geoms, _ = check_conv("conv2d", 2, Tensor(x), Tensor(w), None, stride, padding, dilation, groups)
    return geoms


@pytest.mark.parametrize("dtype", [cases.F32, cases.F16])
@pytest.mark.parametrize("stride, padding, dilation, groups", [(1, 1, 1, 1), (2, 0, 2, 2)])
def test_conv_cupy_path_launches_the_fused_kernels_and_matches_numpy(gpu, dtype, stride, padding, dilation, groups):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    w = (rng.standard_normal((6, 4 // groups, 3, 2)) * 0.5).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    geoms = _geoms(x, w, stride, padding, dilation, groups)
    dx, dw, db = (gpu.asarray(a) for a in (x, w, b))
    assert not conv.channels_last(dx) and conv.channels_last(x)
    y_host = conv.conv_arrays(x, w, b, geoms, groups)
    y_dev = conv.conv_arrays(dx, dw, db, geoms, groups)
    g = rng.standard_normal(y_host.shape).astype(dtype)
    gx_host, gx_dev = conv.conv_transpose_arrays(g, w, None, geoms, groups), \
        conv.conv_transpose_arrays(gpu.asarray(g), dw, None, geoms, groups)
    gw_host, gw_dev = conv.conv_weight_arrays(x, g, geoms, groups), \
        conv.conv_weight_arrays(dx, gpu.asarray(g), geoms, groups)
    tol = TOLERANCE[dtype]
    for dev, host in ((y_dev, y_host), (gx_dev, gx_host), (gw_dev, gw_host)):
        dev = np.asarray(dev)
        assert dev.dtype == host.dtype and dev.shape == host.shape
        np.testing.assert_allclose(dev.astype(np.float64), host.astype(np.float64), rtol=tol, atol=tol * 4)
    launched = {name.split("<")[0] for name in gpu.launches}
    assert launched == {"im2col_2d_kernel", "col2im_2d_kernel"}

"""The adversarial inputs of the bit-exact kernel tests, shared by the emulated GPU and a real one.

``tests/test_cuda_emulation_kernels.py`` feeds them to the kernels on the CPU harness,
``tests/test_kernels_gpu.py`` on a GPU: odd sizes around the chunk boundaries, empty
arrays, mixed dtypes in one call, subnormals (which CuPy's -ftz=true would flush if the
kernels let it), and inf / -inf / NaN planted at the last element of a chunk, the first
of the next, and the last of the array.
"""

import ml_dtypes
import numpy as np

from cupynet.cuda.multi_tensor import CHUNK_SIZE

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
SIZES = (0, 1, 7, CHUNK_SIZE - 1, CHUNK_SIZE + 1, 2 * CHUNK_SIZE + 3)
SUBNORMAL = {F32: 3e-40, F16: 3e-6, BF16: 3e-40}


def bits(a):
    """The bit patterns of an array (so NaNs compare too)."""
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same_bits(device_arrays, host_arrays, to_host=np.asarray):
    """Each device array holds exactly the bits of its host twin.

    Args:
        device_arrays: the kernels' results.
        host_arrays: the references' results.
        to_host: copies a device array to a NumPy array (``cupy.asnumpy`` on a GPU).
    """
    for i, (d, h) in enumerate(zip(device_arrays, host_arrays, strict=True)):
        assert d.dtype == h.dtype and d.shape == h.shape, i
        mismatch = np.flatnonzero(bits(to_host(d)).reshape(-1) != bits(h).reshape(-1))
        assert mismatch.size == 0, f"array {i}: {mismatch.size} elements differ, first at {mismatch[:5]}"


def scalar(value, dtype=np.float32):
    """A one-element control array (found_inf, inv_scale, a step count, ...)."""
    return np.array([value], dtype)


def planted(rng, size, dtype, scale=2.0):
    """Random values with subnormals, and inf / -inf / NaN at the chunk boundary and at the end."""
    a = (rng.standard_normal(size) * scale).astype(np.float32)
    if size:
        a[rng.integers(0, size, max(1, size // 97))] = SUBNORMAL[dtype]
        for position, value in ((CHUNK_SIZE - 1, np.inf), (CHUNK_SIZE, -np.inf), (size - 1, np.nan)):
            if size > CHUNK_SIZE - 1 and position < size:
                a[position] = value
    return a.astype(dtype)


def mixed_arrays(rng, finite=False):
    """One array per size of SIZES, dtypes float16, float32, bfloat16 in turn."""
    arrays = [planted(rng, n, (F16, F32, BF16)[i % 3]) for i, n in enumerate(SIZES)]
    if finite:
        arrays = [np.nan_to_num(a.astype(np.float32), posinf=1.0, neginf=-1.0).astype(a.dtype) for a in arrays]
    return arrays


def optimizer_problem(rng, grad_dtypes=(F16, F32, BF16, F16)):
    """fp32 parameters and mixed-dtype gradients; the first 4 parameters of array 1 are subnormal with zero grads."""
    sizes = (CHUNK_SIZE + 5, 33, 1, 0)
    params = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    params[1][:4] = SUBNORMAL[F32]  # NOTE: kept by the exact arithmetic, flushed by plain fp32 under -ftz
    grads = [planted(rng, n, d, 1.0) if i else (rng.standard_normal(n) * 1e3).astype(d)
             for i, (n, d) in enumerate(zip(sizes, grad_dtypes))]
    grads[1][:4] = 0.0
    return params, grads

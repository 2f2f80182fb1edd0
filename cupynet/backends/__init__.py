"""``torch.backends``: backend settings PyTorch scripts set, accepted with their names (``cuda``, ``cudnn``, ``mps``).

What they mean in cupynet (also in docs/pytorch_compat.md):

* ``cuda.matmul.allow_tf32``: mirrors ``cupynet.get_float32_matmul_precision() != "highest"``, as in
  PyTorch; CuPy takes TF32 from its ``CUPY_TF32`` environment variable, so the math does not change.
* ``cudnn.benchmark`` / ``deterministic`` / ``allow_tf32`` / ``enabled``: recorded; cupynet uses no
  cuDNN (convolution is im2col + GEMM), so ``cudnn.is_available()`` is False.
* ``mps.is_available()`` / ``is_built()``: False (no Apple GPU backend).
"""

from cupynet.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]

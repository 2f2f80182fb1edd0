import os
import sys

# NOTE: the test tensors are tiny; a multi-threaded BLAS on a busy 2-core CI machine spends far longer
# spinning up and synchronising threads than multiplying (measured: 10-50x slower steps). Must be set
# before NumPy is imported, which is why it sits at the top of conftest.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(__file__))  # tests import op_harness

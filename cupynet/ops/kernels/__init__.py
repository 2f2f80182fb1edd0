"""The fused hot-op kernels of cupynet: softmax + cross-entropy, layer norm, bias + activation, im2col.

The package has the shape of ``cupynet.amp.kernels`` and ``cupynet.optim.kernels``:
``*.cu`` (the kernels), ``launch.py`` (their :class:`~cupynet.cuda.compile.KernelLibrary`
and the CuPy launchers, compiled on first use and cached) and ``reference.py`` (the
``xp`` references: the CPU path, the float64 path on the GPU, and the tests' oracle).
The public array-level functions, which check their arguments and dispatch (CuPy
arrays of a kernel dtype launch the kernels, everything else runs the reference),
are for now in ``cupynet.ops.fused``, where the ops call them.

Nothing here reads a device value on the host. See docs/kernels.md for the design,
for learners, and docs/performance.md for the numbers.
"""

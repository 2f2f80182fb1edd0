"""CUDA kernels of cupynet's fused hot ops (``*.cu``), their launchers and their references.

``launch.py`` holds the :class:`~cupynet.cuda.compile.KernelLibrary` of the ``.cu`` files
and the CuPy launchers, ``reference.py`` the ``xp`` references (the CPU path and the tests'
oracle). The public entry points, with argument checks and dispatch, are in
``cupynet.ops.fused``; see docs/kernels.md and docs/performance.md.
"""

"""CUDA sources (``*.cu``) and launchers of cupynet's fused hot ops, with their references.

``sources.py`` holds the kernel text and the template instantiations (no CuPy needed: the
compile test uses it), ``launch.py`` the CuPy launchers (imported on the first GPU call only),
``reference.py`` the ``xp`` references. The public entry points, with argument checks and
dispatch, are in ``cupynet.ops.fused``; see docs/performance.md.
"""

"""``cupynet train`` and ``cupynet bench``: the loop, checkpoints, data specs, progress, reports, plots."""

"""Thread-local modes read by every op: grad mode and the autocast stack.

Both are per thread, as in PyTorch: a worker thread starts with grad mode on
and autocast off, and nothing it sets leaks into other threads. This module
holds only data; ``grad_mode.py`` and ``cupynet.amp.autocast`` change it, and
``Function.apply`` reads it on every op (so reads must stay cheap).
"""

from __future__ import annotations

import threading


class _ThreadState(threading.local):
    """Per-thread mode flags (a fresh thread gets these defaults)."""

    def __init__(self):
        self.grad_enabled = True
        self.inference_mode = False        # inside torch.inference_mode() (a no_grad region in cupynet)
        # autocast: device_type -> dtype for the regions now enabled ({} = off)
        self.autocast = {}
        self.autocast_nesting = 0          # depth of autocast regions, disabled ones included
        self.autocast_cache_enabled = True
        # what each open autocast region replaced, innermost last: (region object, saved state); per thread,
        # so one region object entered in several threads restores each thread's own state
        self.autocast_saved = []
        self.cast_cache = {}               # id(fp32 leaf) -> (leaf, dtype, cast tensor)
        self.tracers = []                  # active cupynet.amp.trace recorders
        self.cast_counter = 0              # casts made by autocast (for tests and trace)
        self.final_callbacks = None        # while backward runs: what engine.queue_callback queued


STATE = _ThreadState()


def is_grad_enabled() -> bool:
    """True when ops record the graph for backward in this thread."""
    return STATE.grad_enabled

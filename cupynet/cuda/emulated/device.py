"""The emulated device itself: one GPU, index 0, with the name and capability it reports."""

from __future__ import annotations

__all__ = ["Device", "NAME", "CAPABILITY", "TOTAL_MEMORY", "current"]

NAME = "cupynet emulated CUDA device"
CAPABILITY = (9, 0)
TOTAL_MEMORY = 16 * 2**30
_current = [0]


class Device:
    """``cupy.cuda.Device``: a context manager that makes device ``id`` current (there is only device 0).

    Args:
        device: the index (None: the current one).
    """

    def __init__(self, device=None):
        index = _current[0] if device is None else int(device)
        if index != 0:
            raise RuntimeError(f"cuda-emulated: CUDA device {index} does not exist (there is one device, 0)")
        self.id = index
        self._previous = []

    def __enter__(self):
        self._previous.append(_current[0])
        _current[0] = self.id
        return self

    def __exit__(self, *exc):
        _current[0] = self._previous.pop()
        return False

    def use(self):
        """Make this device current."""
        _current[0] = self.id

    def synchronize(self):
        """Wait for the device's work (none is ever pending here)."""

    @property
    def compute_capability(self) -> str:
        """``"90"``, as CuPy writes it."""
        return f"{CAPABILITY[0]}{CAPABILITY[1]}"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("cuda-emulated", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def current() -> int:
    """The index of the current device (always 0)."""
    return _current[0]

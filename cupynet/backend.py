"""Which array module runs the math: CuPy when a CUDA device is usable, else NumPy.

The rule (DESIGN.md, "Device choice"):

* ``CUPYNET_DEVICE=cpu`` forces NumPy; ``CUPYNET_DEVICE=cuda`` demands CuPy and
  raises a clear error when no CUDA device is usable (never a silent fallback).
* ``CUPYNET_DEVICE=cuda-emulated`` makes "cuda" the emulated CUDA device and the default: the CuPy
  path on the CPU, through a stand-in for CuPy that keeps CuPy's rules (``cupynet.emulated_cuda``).
  ``CUPYNET_CUDA=emulated`` makes "cuda" the emulated device without changing the default device.
* Otherwise the default device is ``cuda`` when CuPy imports *and*
  ``cupy.cuda.is_available()`` says yes (wrapped in try/except: CuPy 13 can
  raise there instead of answering), else ``cpu``.

Everything else in cupynet asks this module for the array module of a device,
or of an existing array, so that each op is written once against ``xp``.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy

__all__ = [
    "Device", "device", "default_device", "cuda_available", "get_array_module",
    "array_module_for", "to_numpy", "device_of_array", "cupy_or_none", "emulating", "EMULATED", "is_device_array",
    "is_meta",
]

EMULATED = "cuda-emulated"
"""The ``CUPYNET_DEVICE`` value that selects the emulated CUDA device."""


def _device_setting() -> str:
    return os.environ.get("CUPYNET_DEVICE", "").strip()


def emulating() -> bool:
    """True when "cuda" is the emulated CUDA device (``CUPYNET_DEVICE=cuda-emulated`` or ``CUPYNET_CUDA=emulated``)."""
    cuda = os.environ.get("CUPYNET_CUDA", "").strip()
    if cuda not in ("", "emulated"):
        raise ValueError(f"CUPYNET_CUDA must be 'emulated' or unset, got {cuda!r}")
    return cuda == "emulated" or _device_setting() == EMULATED


@functools.lru_cache(maxsize=1)
def cupy_or_none():
    """Return the ``cupy`` module when it imports and a device is usable, else None (the emulated CuPy when
    ``CUPYNET_DEVICE=cuda-emulated``)."""
    if emulating():
        return _emulated_cupy()
    try:
        import cupy  # noqa: PLC0415 - optional dependency, imported lazily
    except Exception:  # ImportError, or a broken CUDA install raising at import
        return None
    try:
        if not cupy.cuda.is_available():
            return None
    except Exception:  # NOTE: CuPy 13 can raise CUDARuntimeError here
        return None
    return cupy


def _emulated_cupy():
    # NOTE: the one import upward (see .importlinter): the emulated device stands where CuPy would
    from . import emulated_cuda as emulated  # noqa: PLC0415

    reason = emulated.unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUPYNET_DEVICE={EMULATED}: the emulated CUDA device cannot run here: {reason}")
    return emulated.cupy()


def cuda_available() -> bool:
    """True when CuPy imports and at least one CUDA device is usable."""
    return cupy_or_none() is not None


class Device:
    """A compute device: ``cpu`` (NumPy) or ``cuda:N`` (CuPy on GPU N).

    Args:
        spec: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or another ``Device``.
    """

    __slots__ = ("type", "index")

    def __init__(self, spec="cpu"):
        if isinstance(spec, Device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise TypeError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {spec!r}")
        kind, _, index = spec.partition(":")
        if kind not in ("cpu", "cuda", "meta") or (kind != "cuda" and index):
            raise ValueError(f"device: expected 'cpu', 'cuda', 'cuda:N' or 'meta', got {spec!r}")
        if index and not index.isdigit():
            raise ValueError(f"device: the index in {spec!r} must be a non-negative integer")
        self.type = kind
        self.index = int(index) if index else (0 if kind == "cuda" else None)
        if kind == "cuda":
            _require_cuda(spec, self.index)

    @property
    def xp(self):
        """The array module of this device (``numpy``, ``cupy``, or the meta device's factories)."""
        if self.type == "cpu":
            return numpy
        if self.type == "meta":
            from .meta import META  # noqa: PLC0415 - the meta device's module loads on its first use
            return META
        return cupy_or_none()

    def __enter__(self):
        """``with device("cuda"):`` / ``with device("meta"):``: the default device of new tensors inside."""
        _DEVICE_STACK.append(self)
        return self

    def __exit__(self, *exc):
        _DEVICE_STACK.pop()
        return False

    def __eq__(self, other):
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.type == "cuda" else ")")

    def __str__(self):
        return f"cuda:{self.index}" if self.type == "cuda" else self.type


def _require_cuda(spec, index):
    cupy = cupy_or_none()
    if cupy is None:
        raise RuntimeError(
            f"device {spec!r} was requested but no CUDA device is usable "
            "(CuPy is not installed or cupy.cuda.is_available() is False); "
            "install cupynet[cuda12] or cupynet[cuda13] on a machine with an NVIDIA GPU, or use 'cpu'"
        )
    count = cupy.cuda.runtime.getDeviceCount()
    if index >= count:
        raise RuntimeError(f"device {spec!r}: only {count} CUDA device(s) are visible")


def device(spec="cpu") -> Device:
    """Build a :class:`Device` from ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Args:
        spec: the device name, or a ``Device``.
    """
    return spec if isinstance(spec, Device) else Device(spec)


def default_device() -> Device:
    """The device new tensors go to: the innermost ``with device(...)``, else ``CUPYNET_DEVICE`` if set, else
    cuda when usable, else cpu."""
    if _DEVICE_STACK:
        return _DEVICE_STACK[-1]
    forced = _device_setting()
    if forced:
        if forced == EMULATED:
            return Device("cuda")
        if forced not in ("cpu", "cuda") and not forced.startswith("cuda:"):
            raise ValueError(f"CUPYNET_DEVICE must be 'cpu', 'cuda', 'cuda:N' or '{EMULATED}', got {forced!r}")
        return Device(forced)
    return Device("cuda") if cuda_available() else Device("cpu")


def get_array_module(*arrays):
    """Return ``cupy`` if any argument is a CuPy array, else ``numpy``.

    Args:
        *arrays: arrays (or other objects, which are ignored).
    """
    cupy = cupy_or_none()
    if cupy is not None:
        for a in arrays:
            if isinstance(a, cupy.ndarray):
                return cupy
    return numpy


def is_device_array(a) -> bool:
    """True for a CuPy array (or the emulated CUDA device's): an array that lives on a GPU.

    Args:
        a: any object.
    """
    cupy = cupy_or_none()
    return cupy is not None and isinstance(a, cupy.ndarray)


def array_module_for(dev) -> object:
    """The array module of a device.

    Args:
        dev: a ``Device`` or device name.
    """
    return device(dev).xp


def device_of_array(array) -> Device:
    """The device an array lives on.

    Args:
        array: a NumPy or CuPy array.
    """
    if isinstance(array, numpy.ndarray) or numpy.isscalar(array):
        return _CPU
    if is_meta(array):
        return _META_DEVICE
    d = Device.__new__(Device)
    d.type, d.index = "cuda", int(array.device.id)
    return d


def is_meta(array) -> bool:
    """True for the storage of a meta tensor (a ``cupynet.meta.MetaArray``: a shape and a dtype, no values).

    NOTE: ``cupynet.meta`` loads on the first use of the meta device, and no MetaArray exists before
    that: while the module is not loaded the answer is False without importing it.

    Args:
        array: any array.
    """
    meta = sys.modules.get("cupynet.meta")
    return meta is not None and isinstance(array, meta.MetaArray)


def to_numpy(array):
    """Copy an array to host memory as a NumPy array (a no-op for NumPy arrays).

    Args:
        array: a NumPy or CuPy array.
    """
    if isinstance(array, (numpy.ndarray, numpy.generic)):
        return array
    return array.get()


_CPU = Device("cpu")
_META_DEVICE = Device("meta")
# NOTE: the devices of the enclosing `with device(...)` blocks, innermost last (PyTorch's device context)
_DEVICE_STACK = []

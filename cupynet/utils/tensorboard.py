"""``torch.utils.tensorboard``: a ``SummaryWriter`` that writes scalars to TensorBoard event files.

TensorBoard reads a run directory of ``events.out.tfevents.*`` files. Each file is a sequence of
records (TFRecord framing), each record one serialized ``Event`` protocol buffer:

* record: ``length`` (uint64, little-endian), ``masked_crc32c(length)`` (uint32), ``data``,
  ``masked_crc32c(data)`` (uint32). The CRC is CRC-32C (Castagnoli), "masked" by a rotation and
  an added constant so that a CRC of data holding CRCs is not itself a plain CRC.
* ``Event``: ``wall_time`` (field 1, double), ``step`` (2, int64), ``file_version`` (3, string, the
  first event of a file: ``"brain.Event:2"``) or ``summary`` (5, a ``Summary``).
* ``Summary``: repeated ``value`` (1), each with ``tag`` (1, string) and ``simple_value`` (2, float).

The few protobuf fields are encoded by hand here (tag byte, varint or fixed-width value), so this
needs neither ``tensorboard`` nor ``protobuf`` installed; TensorBoard itself is needed only to look.
Scalars are what cupynet writes (``add_scalar``, ``add_scalars``); the other ``add_*`` methods of
torch's writer raise ``NotImplementedError`` naming themselves.
"""

from __future__ import annotations

import datetime
import numbers
import os
import socket
import struct
import time

from cupynet.tensor import Tensor

__all__ = ["SummaryWriter"]


def _crc32c_table():
    poly = 0x82F63B78  # NOTE: CRC-32C's polynomial, bit-reversed (it is processed least significant bit first)
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, table-driven one byte at a time.

    Args:
        data: the bytes.
    """
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: CRC-32C rotated right by 15 bits plus 0xa282ead8 (mod 2**32).

    Args:
        data: the bytes.
    """
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data: bytes) -> bytes:
    """One TFRecord: length, its masked CRC, the data, the data's masked CRC.

    Args:
        data: the serialized record.
    """
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # NOTE: protobuf writes a negative int64 as its 64-bit two's complement
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    """One protobuf field: the key ``(number << 3) | wire``, then the payload (length-prefixed for wire 2)."""
    if wire == 2:
        payload = _varint(len(payload)) + payload
    return _varint(number << 3 | wire) + payload


def event(wall_time: float, step: int = 0, *, file_version: str | None = None, scalars=()) -> bytes:
    """A serialized ``Event``: its time and step, and either the file version or scalar summary values.

    Args:
        wall_time: seconds since the epoch.
        step: the global step.
        file_version: the first event's version string, or None.
        scalars: ``(tag, value)`` pairs for the ``Summary``.
    """
    # NOTE: proto3 leaves a field at its default out, so step 0 is not written (as protobuf's own encoder)
    out = _field(1, 1, struct.pack("<d", wall_time)) + (_field(2, 0, _varint(step)) if step else b"")
    if file_version is not None:
        out += _field(3, 2, file_version.encode())
    if scalars:
        values = b"".join(_field(1, 2, _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", value)))
                          for tag, value in scalars)
        out += _field(5, 2, values)
    return out


def _scalar(tag, value) -> float:
    """``value`` as a Python float: a number, or a one-element Tensor (one device-to-host copy)."""
    if not isinstance(tag, str):
        raise TypeError(f"add_scalar: tag must be a str, got {type(tag).__name__}")
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"add_scalar: scalar_value of {tag!r} must have one element, got a tensor of shape "
                             f"{tuple(value.shape)}")
        return float(value.item())
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:
        value = value.item()  # NOTE: a NumPy scalar or one-element array
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"add_scalar: scalar_value of {tag!r} must be a real number or a one-element Tensor, got "
                        f"{type(value).__name__}")
    return float(value)


def _step(global_step) -> int:
    if global_step is None:
        return 0
    if hasattr(global_step, "item"):
        global_step = global_step.item()
    if isinstance(global_step, bool) or not isinstance(global_step, numbers.Integral):
        raise TypeError(f"add_scalar: global_step must be an int, got {type(global_step).__name__}")
    return int(global_step)


def _default_logdir(comment):
    stamp = datetime.datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")


class SummaryWriter:
    """Writes scalars for TensorBoard into an event file under ``log_dir`` (torch.utils.tensorboard's writer).

    Args:
        log_dir: the run directory (created); ``runs/<date>_<host><comment>`` when None.
        comment: appended to the default ``log_dir`` (ignored when ``log_dir`` is given, as in torch).
        purge_step: accepted for torch's signature; events are only ever appended.
        max_queue: how many events are buffered before they are written to the file.
        flush_secs: at most this many seconds between an event and its write to the file.
        filename_suffix: appended to the event file's name.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError(f"SummaryWriter: max_queue must be a positive int, got {max_queue!r}")
        self.log_dir = str(log_dir) if log_dir is not None else _default_logdir(comment)
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self._pending, self._last_flush, self._children = 0, time.time(), {}
        os.makedirs(self.log_dir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
                f"{id(self) % 100000}{filename_suffix}")
        self._file = open(os.path.join(self.log_dir, name), "ab")  # noqa: SIM115 - held until close()
        self._file.write(tfrecord(event(time.time(), file_version="brain.Event:2")))
        self._file.flush()

    def get_logdir(self) -> str:
        """The run directory this writer writes into."""
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Record one scalar (a number or a one-element Tensor) under ``tag`` at ``global_step``.

        Args:
            tag: the series name, e.g. ``"Loss/train"``.
            scalar_value: the value.
            global_step: the x position (0 when None).
            walltime: seconds since the epoch (now when None).
            new_style: accepted for torch's signature; the value is written as ``simple_value``.
            double_precision: accepted for torch's signature; ``simple_value`` is a float32.
        """
        record = event(time.time() if walltime is None else float(walltime), _step(global_step),
                       scalars=[(tag, _scalar(tag, scalar_value))])
        self._write(record)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Record several scalars as one chart: each ``tag`` in its own run ``log_dir/<main_tag>_<tag>``.

        Args:
            main_tag: the chart's name.
            tag_scalar_dict: ``{tag: value}``.
            global_step: the x position (0 when None).
            walltime: seconds since the epoch (now when None).
        """
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError(f"add_scalars: tag_scalar_dict must be a dict, got {type(tag_scalar_dict).__name__}")
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            child = self._children.get(run) or self._children.setdefault(
                run, SummaryWriter(run, max_queue=self.max_queue, flush_secs=self.flush_secs))
            child.add_scalar(main_tag, value, global_step, walltime)

    def _write(self, record):
        if self._file is None:
            raise RuntimeError("SummaryWriter: the writer is closed; expected add_* calls before close()")
        # NOTE: the file's own buffer holds the events until a flush (Python also flushes it when the file
        # object is collected, so a script that never calls close() loses nothing at exit)
        self._file.write(tfrecord(record))
        self._pending += 1
        if self._pending >= self.max_queue or time.time() - self._last_flush >= self.flush_secs:
            self.flush()

    def flush(self):
        """Write the buffered events to the event file."""
        if self._file is not None:
            self._file.flush()
        self._pending, self._last_flush = 0, time.time()
        for child in self._children.values():
            child.flush()

    def close(self):
        """Flush and close the event file (and those of ``add_scalars``' runs)."""
        if self._file is None:
            return
        self.flush()
        for child in self._children.values():
            child.close()
        self._file.close()
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name):
        if name.startswith("add_"):
            raise NotImplementedError(f"SummaryWriter.{name}: cupynet's writer records scalars only "
                                      "(add_scalar, add_scalars)")
        raise AttributeError(f"'SummaryWriter' object has no attribute '{name}'")

"""``torch.utils.tensorboard.SummaryWriter`` (issue 13: karpathy/makemore logs its losses with it).

The golden records below were written by TensorBoard's own ``RecordWriter`` from ``event_pb2.Event``
protos (tensorboard 2.21, once, by hand): the bytes must be identical. The written file is also decoded
here independently (framing, both CRCs, the protobuf fields), and read by TensorBoard's
``EventAccumulator`` when tensorboard is installed.
"""

import os
import struct

import numpy
import pytest

import cupynet
from cupynet.utils import tensorboard as tb

# (wall_time, step, event keywords, the TFRecord TensorBoard wrote)
GOLDEN = [
    (1700000000.25, 0, {"file_version": "brain.Event:2"},
     "1800000000000000a37f4b220900001040fc54d9411a0d627261696e2e4576656e743a32338d2fe9"),
    (1700000001.5, 500, {"scalars": [("Loss/train", 2.1306943893432617)]},
     "2100000000000000017becf60900006040fc54d94110f4032a130a110a0a4c6f73732f747261696e154c5d0840abc26c3f"),
    (3.0, 2 ** 40, {"scalars": [("a", -1.0), ("b/c", 1e-3)]},
     "2800000000000000ff70164a090000000000000840108080808080202a160a080a016115000080bf0a0a0a03622f63156f12833a"
     "2b91217b"),
]


def test_crc32c_known_values():
    # NOTE: check values of CRC-32C (RFC 3720, appendix B.4, and the "123456789" check value of the CRC catalogue)
    assert tb.crc32c(b"123456789") == 0xE3069283
    assert tb.crc32c(bytes(32)) == 0x8A9136AA
    assert tb.crc32c(b"\xff" * 32) == 0x62A8AB43


@pytest.mark.parametrize("wall_time, step, kw, hexbytes", GOLDEN)
def test_records_are_the_bytes_tensorboard_writes(wall_time, step, kw, hexbytes):
    assert tb.tfrecord(tb.event(wall_time, step, **kw)).hex() == hexbytes


def _varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _fields(data):
    """Decode protobuf fields: {number: [values]} (wire 0: int, 1: double, 2: bytes, 5: float)."""
    out, pos = {}, 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = struct.unpack_from("<d", data, pos)[0], pos + 8
        elif wire == 5:
            value, pos = struct.unpack_from("<f", data, pos)[0], pos + 4
        else:
            n, pos = _varint(data, pos)
            value, pos = data[pos:pos + n], pos + n
        out.setdefault(number, []).append(value)
    return out


def _read_events(log_dir):
    (name,) = [n for n in os.listdir(log_dir) if n.startswith("events.out.tfevents.")]
    data = open(os.path.join(log_dir, name), "rb").read()  # noqa: SIM115
    events, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack_from("<I", data, pos + 8)[0] == tb.masked_crc32c(header)
        body = data[pos + 12:pos + 12 + length]
        assert struct.unpack_from("<I", data, pos + 12 + length)[0] == tb.masked_crc32c(body)
        events.append(_fields(body))
        pos += 16 + length
    return events


def test_writer_file_holds_the_version_then_each_scalar(tmp_path):
    with tb.SummaryWriter(log_dir=tmp_path) as writer:
        writer.add_scalar("Loss/train", cupynet.tensor(2.5), 10)
        writer.add_scalar("Loss/test", numpy.float32(0.75), global_step=numpy.int64(20))
        writer.add_scalar("lr", 3e-4)
    events = _read_events(tmp_path)
    assert events[0][3] == [b"brain.Event:2"]
    got = []
    for ev in events[1:]:
        (value,) = _fields(_fields(ev[5][0])[1][0])[2]
        got.append((_fields(_fields(ev[5][0])[1][0])[1][0].decode(), value, ev.get(2, [0])[0]))
    assert got == [("Loss/train", 2.5, 10), ("Loss/test", 0.75, 20), ("lr", numpy.float32(3e-4), 0)]


def test_events_wait_in_the_buffer_until_flush(tmp_path):
    writer = tb.SummaryWriter(log_dir=tmp_path, max_queue=100)
    writer.add_scalar("x", 1.0, 1)
    assert len(_read_events(tmp_path)) == 1
    writer.flush()
    assert len(_read_events(tmp_path)) == 2
    writer.close()
    writer.close()  # NOTE: closing twice is harmless, as in torch
    with pytest.raises(RuntimeError, match="the writer is closed"):
        writer.add_scalar("x", 2.0, 2)


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    with tb.SummaryWriter(log_dir=tmp_path) as writer:
        writer.add_scalars("loss", {"train": 1.0, "val": 2.0}, 3)
    for tag, value in (("train", 1.0), ("val", 2.0)):
        events = _read_events(tmp_path / f"loss_{tag}")
        summary = _fields(_fields(events[1][5][0])[1][0])
        assert summary[1] == [b"loss"] and summary[2] == [value] and events[1][2] == [3]


def test_default_log_dir_is_under_runs_with_the_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with tb.SummaryWriter(comment="_lr0.1") as writer:
        assert writer.get_logdir().startswith("runs" + os.sep) and writer.get_logdir().endswith("_lr0.1")
        assert os.path.isdir(writer.get_logdir())


@pytest.mark.parametrize("call, error, match", [
    (lambda w: w.add_scalar("x", cupynet.ones(2)), ValueError, "must have one element, got a tensor of shape"),
    (lambda w: w.add_scalar("x", "1.0"), TypeError, "must be a real number or a one-element Tensor, got str"),
    (lambda w: w.add_scalar(3, 1.0), TypeError, "tag must be a str, got int"),
    (lambda w: w.add_scalar("x", 1.0, 1.5), TypeError, "global_step must be an int, got float"),
    (lambda w: w.add_scalars("x", [1.0]), TypeError, "tag_scalar_dict must be a dict, got list"),
    (lambda w: w.add_histogram("w", cupynet.ones(3)), NotImplementedError, "records scalars only"),
])
def test_bad_calls_are_refused_and_write_nothing(tmp_path, call, error, match):
    with tb.SummaryWriter(log_dir=tmp_path) as writer:
        with pytest.raises(error, match=match):
            call(writer)
    assert len(_read_events(tmp_path)) == 1


def test_tensorboard_reads_the_file_when_installed(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with tb.SummaryWriter(log_dir=tmp_path) as writer:
        for step in range(3):
            writer.add_scalar("Loss/train", 1.0 / (step + 1), step)
    ea = accumulator.EventAccumulator(str(tmp_path))
    ea.Reload()
    assert [(e.step, e.value) for e in ea.Scalars("Loss/train")] == [(0, 1.0), (1, 0.5), (2, numpy.float32(1 / 3))]

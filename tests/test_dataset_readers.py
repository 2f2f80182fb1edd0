"""Hostile and malformed dataset files: IDX (raw and .gz), CIFAR-10 batches, image folders.

Each must end in one ValueError naming the file and what was expected, with memory bounded by what the
file's header declares (tracemalloc peaks), never in a traceback from zlib, NumPy or Pillow.
"""

import gzip
import pickle
import struct
import tracemalloc
import zlib

import numpy as np
import pytest

from cupynet.data import datasets
from cupynet.data.datasets import cifar, mnist

MIB = 2 ** 20


def idx(magic, dims, payload=b""):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def write(path, blob, gz):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(blob, compresslevel=9) if gz else blob)
    return path


def mnist_files(root, images, labels, gz=True):
    suffix = ".gz" if gz else ""
    return (write(root / f"train-images-idx3-ubyte{suffix}", images, gz),
            write(root / f"train-labels-idx1-ubyte{suffix}", labels, gz))


def peak_of(fn):
    """(the ValueError ``fn`` raised, tracemalloc peak in bytes); fails if ``fn`` returns."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        with pytest.raises(ValueError) as info:
            fn()
        return info.value, tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


# ---- IDX ------------------------------------------------------------------------------------------------
def test_a_gzip_bomb_is_refused_after_inflating_only_what_the_header_declares(tmp_path):
    n = 100  # NOTE: declares 78400 data bytes; the stream inflates to 256 MiB of zeros (about 250 KB compressed)
    stream = zlib.compressobj(9, zlib.DEFLATED, 31)
    blob = stream.compress(idx(0x803, (n, 28, 28)))
    zeros = bytes(MIB)
    blob += b"".join(stream.compress(zeros) for _ in range(256)) + stream.flush()
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(blob)
    assert len(blob) < 2 * MIB
    error, peak = peak_of(lambda: mnist.read_idx("MNIST", path, 0x803, 3, (None, 28, 28)))
    assert str(path) in str(error) and "inflates to more" in str(error)
    assert peak < n * 784 + 4 * MIB, f"peak {peak} bytes: more than the declared size plus a chunk was inflated"


def test_a_header_declaring_more_than_deflate_can_inflate_is_refused_before_inflating(tmp_path):
    path = write(tmp_path / "x.gz", idx(0x801, (2 ** 32 - 1,)), gz=True)
    error, peak = peak_of(lambda: mnist.read_idx("MNIST", path, 0x801, 1))
    assert "inflates to at most" in str(error) and str(path) in str(error)
    assert peak < MIB


@pytest.mark.parametrize("gz", [False, True])
def test_dimensions_whose_product_overflows_int64_are_refused(tmp_path, gz):
    # NOTE: 2**31 * 2**31 * 4 = 2**64: an int64 product wraps to 0 and the header alone "matched" it
    path = write(tmp_path / ("x.gz" if gz else "x"), idx(0x803, (2 ** 31, 2 ** 31, 4)), gz)
    error, peak = peak_of(lambda: mnist.read_idx("MNIST", path, 0x803, 3))
    assert str(path) in str(error) and f"need {2 ** 64 + 16} bytes" in str(error)
    assert peak < MIB


def test_a_gz_file_that_is_not_gzip_is_one_clear_error(tmp_path):
    good = gzip.compress(idx(0x801, (3,), bytes(3)))
    broken = good[:10] + b"\xff" * (len(good) - 10)  # NOTE: a gzip header, then a deflate stream zlib refuses
    for blob in (broken, b"plain text, not gzip at all", good[:-6]):
        path = tmp_path / "train-labels-idx1-ubyte.gz"
        path.write_bytes(blob)
        with pytest.raises(ValueError, match="not a valid gzip file") as info:
            mnist.read_idx("MNIST", path, 0x801, 1)
        assert str(path) in str(info.value)


def test_a_gz_file_with_a_wrong_checksum_is_refused(tmp_path):
    good = bytearray(gzip.compress(idx(0x801, (3,), bytes([1, 2, 3]))))
    good[-8] ^= 0xFF  # the CRC-32 of the trailer
    path = tmp_path / "l.gz"
    path.write_bytes(bytes(good))
    with pytest.raises(ValueError, match="not a valid gzip file .*CRC"):
        mnist.read_idx("MNIST", path, 0x801, 1)


@pytest.mark.parametrize("gz", [False, True])
def test_a_data_set_with_no_images_is_refused(tmp_path, gz):
    images, _ = mnist_files(tmp_path, idx(0x803, (0, 28, 28)), idx(0x801, (0,)), gz)
    with pytest.raises(ValueError, match=r"dimensions \[0, 28, 28\] hold no samples; expected at least one") as info:
        datasets.MNIST(tmp_path)
    assert str(images) in str(info.value)


@pytest.mark.parametrize("gz", [False, True])
def test_images_of_another_shape_are_refused(tmp_path, gz):
    images, _ = mnist_files(tmp_path, idx(0x803, (5, 3, 5), bytes(75)), idx(0x801, (5,), bytes(5)), gz)
    with pytest.raises(ValueError, match=r"dimension 1 is 3, expected 28 \(the shape \('N', 28, 28\)") as info:
        datasets.MNIST(tmp_path)
    assert str(images) in str(info.value)


def test_a_raw_file_longer_or_shorter_than_declared_is_refused_before_allocating(tmp_path):
    for extra in (b"", bytes(5 * 784 + 1)):
        path = write(tmp_path / "x", idx(0x803, (5, 28, 28), bytes(5 * 784 - 1) if not extra else extra), False)
        with pytest.raises(ValueError, match=r"dimensions \[5, 28, 28\] need 3936 bytes but the file has"):
            mnist.read_idx("MNIST", path, 0x803, 3, (None, 28, 28))


# ---- CIFAR-10 -------------------------------------------------------------------------------------------
def cifar_batch(n=4):
    rng = np.random.default_rng(1)
    return {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": rng.integers(0, 10, n).tolist()}


def test_a_cifar_batch_of_many_tiny_objects_is_refused_before_unpickling(tmp_path):
    # NOTE: protocol 4: "]" is EMPTY_LIST (1 byte), "a" APPEND: 2 bytes of file per 56-byte list in memory
    count = 2 * 10 ** 5
    blob = b"\x80\x04}(C\x04data" + b"]" + b"]a" * count + b"C\x06labels]u."
    path = tmp_path / "test_batch"
    path.write_bytes(blob)
    error, peak = peak_of(lambda: datasets.CIFAR10(tmp_path, train=False))
    assert str(path) in str(error) and "times the file's" in str(error)
    assert peak < 2 * len(blob) + 2 * MIB


def test_a_cifar_batch_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "test_batch"
    path.write_bytes(pickle.dumps(cifar_batch()))
    monkeypatch.setattr(cifar, "MAX_BATCH_BYTES", 1000)
    with pytest.raises(ValueError, match="a dataset batch may have at most 1000") as info:
        datasets.CIFAR10(tmp_path, train=False)
    assert str(path) in str(info.value)


def test_a_cifar_batch_with_no_images_or_bad_labels_is_refused(tmp_path):
    path = tmp_path / "test_batch"
    cases = [({b"data": np.zeros((0, 3072), np.uint8), b"labels": []}, "holds no images"),
             ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [[0], [1]]}, "labels must be a flat list"),
             ({b"data": np.zeros((2, 3072), np.uint8), b"labels": ["a", "b"]}, "labels must be a list of ints"),
             ({b"data": np.zeros((2, 3072), np.uint8), b"labels": 7}, "'labels' \\(a list\\)"),
             ({b"data": np.zeros((2, 3, 5), np.uint8), b"labels": [0, 1]}, r"shape \(N, 3072\)")]
    for batch, message in cases:
        path.write_bytes(pickle.dumps(batch))
        with pytest.raises(ValueError, match=message) as info:
            datasets.CIFAR10(tmp_path, train=False)
        assert str(path) in str(info.value)


# ---- image folders --------------------------------------------------------------------------------------
def test_a_damaged_picture_in_an_image_folder_is_one_clear_error(tmp_path):
    pytest.importorskip("PIL")
    from cupynet.vision import datasets as vdatasets
    from cupynet.vision.image import encode_png

    folder = tmp_path / "cat"
    folder.mkdir()
    good = encode_png(np.zeros((4, 4, 3), np.uint8))
    (folder / "a.png").write_bytes(good)
    (folder / "b.png").write_bytes(good[:40])
    (folder / "c.png").write_bytes(b"not a picture")
    ds = vdatasets.ImageFolder(tmp_path)
    assert ds[0][0].size == (4, 4)
    for index, name in ((1, "b.png"), (2, "c.png")):
        with pytest.raises(ValueError, match="not a readable image file") as info:
            ds[index]
        assert str(folder / name) in str(info.value)


def test_a_picture_declaring_more_pixels_than_pillow_allows_is_refused_before_decoding(tmp_path, monkeypatch):
    image = pytest.importorskip("PIL.Image")
    from cupynet.vision import datasets as vdatasets
    from cupynet.vision.image import encode_png

    path = tmp_path / "big.png"
    path.write_bytes(encode_png(np.zeros((20, 20, 3), np.uint8)))
    monkeypatch.setattr(image, "MAX_IMAGE_PIXELS", 300)  # NOTE: Pillow itself only warns up to 2x its limit
    with pytest.raises(ValueError, match=r"20 x 20 pixels is more than PIL.Image.MAX_IMAGE_PIXELS \(300\)") as info:
        vdatasets.default_loader(path)
    assert str(path) in str(info.value)

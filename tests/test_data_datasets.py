"""Built-in datasets: digits (scikit-learn), MNIST/FashionMNIST IDX files, CIFAR-10 pickles (restricted)."""

import gzip
import os
import pickle
import struct
import sys

import numpy as np
import pytest

from cupynet.data import datasets


def test_digits_splits_are_fixed_disjoint_and_scaled():
    pytest.importorskip("sklearn")
    train, test = datasets.digits("train"), datasets.digits("test")
    assert len(train) + len(test) == 1797 and len(test) == round(1797 * 0.2)
    assert train.data.shape[1:] == (1, 8, 8) and train.data.dtype == np.float32 and train.targets.dtype == np.int64
    assert 0.0 <= train.data.min() and train.data.max() <= 1.0
    again = datasets.digits("train")
    assert np.array_equal(again.data, train.data)
    other = datasets.digits("train", seed=1)
    assert not np.array_equal(other.targets, train.targets)
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        datasets.digits("valid")
    with pytest.raises(ValueError, match="test_fraction must be a float in"):
        datasets.digits(test_fraction=1.5)


def test_digits_without_sklearn_says_what_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError("no sklearn")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    # NOTE: no scikit-learn package either, so no bundled digits.csv.gz to read without importing it
    monkeypatch.setattr(sys.modules["cupynet.data.datasets.digits"], "_digits_file", lambda: None)
    with pytest.raises(ImportError, match=r"pip install cupynet\[examples\]"):
        datasets.digits()


def _idx(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def _write_mnist(folder, n=5, prefix="train", gz=True, images=None, labels=None):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    targets = rng.integers(0, 10, n, dtype=np.uint8)
    files = {f"{prefix}-images-idx3-ubyte": images or _idx(0x803, (n, 28, 28), pixels.tobytes()),
             f"{prefix}-labels-idx1-ubyte": labels or _idx(0x801, (n,), targets.tobytes())}
    for name, blob in files.items():
        if gz:
            with gzip.open(os.path.join(folder, name + ".gz"), "wb") as f:
                f.write(blob)
        else:
            with open(os.path.join(folder, name), "wb") as f:
                f.write(blob)
    return pixels, targets


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_reads_idx_files(tmp_path, gz):
    pixels, targets = _write_mnist(tmp_path, gz=gz)
    ds = datasets.MNIST(tmp_path, train=True)
    assert ds.data.shape == (5, 1, 28, 28) and ds.data.dtype == np.float32
    np.testing.assert_array_equal(ds.data[:, 0], pixels.astype(np.float32) / 255)
    assert ds.targets.tolist() == targets.tolist() and ds.targets.dtype == np.int64
    x, y = ds[2]
    assert x.shape == (1, 28, 28) and y == int(targets[2])


def test_fashion_mnist_uses_torchvision_layout_and_test_split(tmp_path):
    _write_mnist(tmp_path / "FashionMNIST" / "raw", n=3, prefix="t10k")
    assert len(datasets.FashionMNIST(tmp_path, train=False)) == 3


def test_mnist_validation_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"MNIST: .*does not exist; expected train-images-idx3-ubyte or "
                                                r"train-images-idx3-ubyte.gz"):
        datasets.MNIST(tmp_path / "nowhere")
    bad_magic = _idx(0x801, (5, 28, 28), bytes(5 * 784))
    _write_mnist(tmp_path / "a", images=bad_magic)
    path = tmp_path / "a" / "train-images-idx3-ubyte.gz"
    with pytest.raises(ValueError, match=f"MNIST: {path}: expected IDX magic 0x00000803 but found 0x00000801"):
        datasets.MNIST(tmp_path / "a")
    _write_mnist(tmp_path / "b", images=_idx(0x803, (5, 28, 28), bytes(100)))
    with pytest.raises(ValueError, match=r"dimensions \[5, 28, 28\] need 3936 bytes but the file has 116"):
        datasets.MNIST(tmp_path / "b")
    _write_mnist(tmp_path / "c", labels=_idx(0x801, (4,), bytes(4)))
    with pytest.raises(ValueError, match="has 5 images but .* has 4 labels"):
        datasets.MNIST(tmp_path / "c")
    _write_mnist(tmp_path / "d", labels=_idx(0x801, (5,), bytes([0, 1, 2, 3, 12])))
    with pytest.raises(ValueError, match="label 12 is out of range"):
        datasets.MNIST(tmp_path / "d")


def _write_cifar(folder, names, n=4, protocol=pickle.HIGHEST_PROTOCOL):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(1)
    out = []
    for name in names:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": rng.integers(0, 10, n).tolist()}
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump(batch, f, protocol=protocol)
        out.append(batch)
    return out


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_cifar10_reads_batches(tmp_path, protocol):
    written = _write_cifar(tmp_path / "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)],
                           protocol=protocol)
    ds = datasets.CIFAR10(tmp_path, train=True)
    assert ds.data.shape == (20, 3, 32, 32) and ds.data.dtype == np.float32
    expected = np.concatenate([b[b"data"] for b in written]).reshape(-1, 3, 32, 32) / np.float32(255)
    np.testing.assert_array_equal(ds.data, expected.astype(np.float32))
    assert ds.targets.tolist() == sum((b[b"labels"] for b in written), [])


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned > " + _Exploit.marker,))


def test_cifar10_rejects_a_malicious_pickle(tmp_path):
    _write_cifar(tmp_path, ["test_batch"])
    marker = tmp_path / "pwned"
    _Exploit.marker = str(marker)
    with open(tmp_path / "test_batch", "wb") as f:
        pickle.dump({b"data": _Exploit(), b"labels": [0]}, f)
    with pytest.raises(ValueError, match="refusing to load global (posix|os|nt).system"):
        datasets.CIFAR10(tmp_path, train=False)
    assert not marker.exists()


def test_cifar10_rejects_object_arrays_and_missing_files(tmp_path):
    with open(tmp_path / "test_batch", "wb") as f:
        pickle.dump({b"data": np.array([object()], dtype=object), b"labels": [0]}, f)
    with pytest.raises(ValueError, match="CIFAR10: .*test_batch"):
        datasets.CIFAR10(tmp_path, train=False)
    with pytest.raises(FileNotFoundError, match="expected data_batch_1, data_batch_2"):
        datasets.CIFAR10(tmp_path, train=True)
    with open(tmp_path / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 10), np.uint8), b"labels": [0, 1]}, f)
    with pytest.raises(ValueError, match=r"data must be uint8 of shape \(N, 3072\)"):
        datasets.CIFAR10(tmp_path, train=False)

"""``digits``: scikit-learn's bundled 8x8 handwritten digits (1797 images), no download needed."""

from __future__ import annotations

import numpy

from cupynet.data.dataset import ArrayDataset

__all__ = ["digits"]


def _digits_file():
    """The path of scikit-learn's bundled ``digits.csv.gz``, found without importing scikit-learn; or None."""
    import importlib.util
    import os
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(folder, "datasets", "data", "digits.csv.gz")
        if os.path.isfile(path):
            return path
    return None


def _read_digits_csv(path):
    """(images (N, 8, 8) float64 in 0..16, labels (N,) int64) from a digits CSV.

    NOTE (the format, as scikit-learn ships it): gzip-compressed text, 1797 lines, each 65 comma-separated
    integers: the 64 pixels of an 8x8 image row by row (0 to 16: ink counts of 4x4 blocks of a 32x32
    bitmap), then the label 0-9. Reading it directly skips ``import sklearn`` (scipy and all, seconds).
    """
    import gzip
    with gzip.open(path, "rt", encoding="ascii") as file:
        data = numpy.loadtxt(file, delimiter=",", ndmin=2)
    if data.shape[1] != 65 or not len(data) or data[:, :64].min() < 0 or data[:, :64].max() > 16 \
            or not set(numpy.unique(data[:, 64])) <= set(range(10)):
        raise ValueError(f"digits: {path} is not the 8x8 digits CSV (65 integer columns: 64 pixels 0-16, a label "
                         f"0-9), got shape {data.shape}")
    return data[:, :64].reshape(-1, 8, 8), data[:, 64].astype(numpy.int64)


def _load_sklearn_digits():
    """(images, labels): the CSV inside scikit-learn's package when found, else through ``load_digits``."""
    path = _digits_file()
    if path is not None:
        return _read_digits_csv(path)
    try:
        from sklearn.datasets import load_digits  # noqa: PLC0415 - optional dependency
    except ImportError as exc:
        raise ImportError("digits: scikit-learn is needed for the bundled digits dataset; "
                          "install it with `pip install cupynet[examples]`") from exc
    bunch = load_digits()
    return bunch.images, bunch.target


def digits(split="train", seed=0, test_fraction=0.2) -> ArrayDataset:
    """The 8x8 digits as ``(N, 1, 8, 8)`` float32 images in [0, 1] and int64 labels, split by ``seed``.

    Args:
        split: ``"train"`` or ``"test"``.
        seed: seed of the fixed train/test permutation (the same seed always gives the same split).
        test_fraction: fraction of the samples in the test split, in (0, 1).
    """
    if split not in ("train", "test"):
        raise ValueError(f"digits: split must be 'train' or 'test', got {split!r}")
    if not isinstance(test_fraction, float) or not 0.0 < test_fraction < 1.0:
        raise ValueError(f"digits: test_fraction must be a float in (0, 1), got {test_fraction!r}")
    images, labels = _load_sklearn_digits()
    images = (numpy.asarray(images, dtype=numpy.float32) / numpy.float32(16.0)).reshape(-1, 1, 8, 8)
    labels = numpy.asarray(labels, dtype=numpy.int64)
    order = numpy.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    chosen = order[:n_test] if split == "test" else order[n_test:]
    return ArrayDataset(images[chosen], labels[chosen])

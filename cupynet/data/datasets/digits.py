"""``digits``: scikit-learn's bundled 8x8 handwritten digits (1797 images), no download needed."""

from __future__ import annotations

import numpy

from cupynet.data.dataset import ArrayDataset

__all__ = ["digits"]


def _load_sklearn_digits():
    try:
        from sklearn.datasets import load_digits  # noqa: PLC0415 - optional dependency
    except ImportError as exc:
        raise ImportError("digits: scikit-learn is needed for the bundled digits dataset; "
                          "install it with `pip install cupynet[examples]`") from exc
    return load_digits()


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
    bunch = _load_sklearn_digits()
    images = (numpy.asarray(bunch.images, dtype=numpy.float32) / numpy.float32(16.0)).reshape(-1, 1, 8, 8)
    labels = numpy.asarray(bunch.target, dtype=numpy.int64)
    order = numpy.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    chosen = order[:n_test] if split == "test" else order[n_test:]
    return ArrayDataset(images[chosen], labels[chosen])

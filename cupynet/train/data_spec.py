"""Turn ``--dataset`` strings (``digits``, ``mnist:DIR``, ...) into train and test datasets."""

from __future__ import annotations

__all__ = ["load_datasets", "parse_dataset_spec"]

_KINDS = ("digits", "mnist", "fashion-mnist", "cifar10")


def parse_dataset_spec(spec: str):
    """Split ``"mnist:DIR"`` into ("mnist", "DIR"); ``"digits"`` has no directory.

    Args:
        spec: the --dataset value.
    """
    kind, _, root = spec.partition(":")
    if kind not in _KINDS:
        raise ValueError(f"unknown dataset {spec!r}; expected digits, mnist:DIR, fashion-mnist:DIR or cifar10:DIR")
    if kind == "digits" and root:
        raise ValueError("the digits data set takes no directory (it ships with scikit-learn)")
    if kind != "digits" and not root:
        raise ValueError(f"dataset {kind!r} needs a directory: --dataset {kind}:DIR")
    return kind, root or None


def load_datasets(spec: str, seed: int = 0):
    """Load (train set, test set, input shape, number of classes) for a ``--dataset`` string.

    Args:
        spec: the --dataset value.
        seed: fixes the digits train/test split.
    """
    from cupynet.data import datasets
    kind, root = parse_dataset_spec(spec)
    if kind == "digits":
        train, test = datasets.digits("train", seed=seed), datasets.digits("test", seed=seed)
    elif kind == "mnist":
        train, test = datasets.MNIST(root, train=True), datasets.MNIST(root, train=False)
    elif kind == "fashion-mnist":
        train, test = datasets.FashionMNIST(root, train=True), datasets.FashionMNIST(root, train=False)
    else:
        train, test = datasets.CIFAR10(root, train=True), datasets.CIFAR10(root, train=False)
    sample = train[0][0]
    return train, test, tuple(sample.shape), 10

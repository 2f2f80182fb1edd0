"""Turn ``--dataset`` strings (``digits``, ``mnist:DIR``, ...) into train and test datasets."""

from __future__ import annotations

__all__ = ["load_datasets", "parse_dataset_spec", "split_validation"]

_KINDS = ("digits", "mnist", "fashion-mnist", "cifar10")


def parse_dataset_spec(spec: str):
    """Split ``"mnist:DIR"`` into ("mnist", "DIR"); ``"digits"`` has no directory.

    Args:
        spec: the --dataset value.
    """
    kind, _, root = spec.partition(":")
    if kind not in _KINDS:
        import difflib
        close = difflib.get_close_matches(kind, _KINDS, n=1)
        hint = f"; did you mean {close[0] if close[0] == 'digits' else close[0] + ':DIR'!r}?" if close else ""
        raise ValueError(f"unknown dataset {spec!r}; expected digits, mnist:DIR, fashion-mnist:DIR or "
                         f"cifar10:DIR{hint}")
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


def split_validation(train, fraction: float, seed: int):
    """Hold out ``fraction`` of ``train`` for validation: (the rest, the held-out part or None when 0).

    NOTE: the split is a permutation drawn from ``seed`` alone (not cupynet's global generator), so the same
    ``--seed`` always holds out the same samples, in a new process and on resume alike; the test set is never
    touched, and model selection (``best.ckpt``) never sees it.

    Args:
        train: the training set.
        fraction: the part held out, in [0, 1); 0 keeps every sample for training.
        seed: the --seed of the run.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 <= fraction < 1.0:
        raise ValueError(f"--val-split must be a fraction in [0, 1), got {fraction!r}")
    held_out = int(round(len(train) * fraction))
    if fraction == 0:
        return train, None
    if held_out < 1 or held_out >= len(train):
        raise ValueError(f"--val-split {fraction} of {len(train)} training samples leaves "
                         f"{held_out} for validation and {len(train) - held_out} for training; choose a fraction "
                         "that leaves at least one of each (or 0 to disable validation)")
    from cupynet.data import random_split
    rest, val = random_split(train, [len(train) - held_out, held_out], seed=seed)
    return rest, val

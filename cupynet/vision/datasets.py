"""``torchvision.datasets``' MNIST, FashionMNIST and CIFAR10, read from local files by ``cupynet.data``.

The files are the ones torchvision downloads, read by ``cupynet.data.datasets``' checked readers:

* MNIST / FashionMNIST: the four IDX files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-...``), raw or ``.gz``, in ``root/<Name>/raw`` (torchvision's layout), ``root/<Name>`` or ``root``.
* CIFAR10: the python batches ``data_batch_1..5`` and ``test_batch`` in ``root/cifar-10-batches-py``
  (or ``root``), read by a restricted unpickler that rebuilds NumPy arrays and refuses any other object.

cupynet downloads nothing: ``download=True`` is accepted when the files are there and is an error
saying where to put them when they are not.

An item is ``(transform(img), target_transform(target))`` where ``img`` is a ``cupynet.vision.Image``
(uint8 HWC; see ``image.py``) standing where torchvision has a ``PIL.Image``, and ``target`` an int.
"""

from __future__ import annotations

import pathlib

import numpy

from cupynet.data.dataset import Dataset
from cupynet.data.datasets.cifar import read_cifar10
from cupynet.data.datasets.mnist import read_mnist
from cupynet.tensor import Tensor
from cupynet.vision.image import Image

__all__ = ["VisionDataset", "MNIST", "FashionMNIST", "CIFAR10", "DatasetNotFoundError"]


class DatasetNotFoundError(FileNotFoundError, RuntimeError):
    """The files of a dataset are not on disk: torchvision raises RuntimeError, Python code expects
    FileNotFoundError; this is both."""


class VisionDataset(Dataset):
    """Base of the picture datasets: holds ``root``, ``transform`` and ``target_transform``.

    Subclasses set ``classes`` (the class names, in target order).

    Args:
        root: the dataset directory.
        transform: applied to each picture (or None).
        target_transform: applied to each target (or None).
    """

    def __init__(self, root, transform=None, target_transform=None):
        for name, fn in (("transform", transform), ("target_transform", target_transform)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{type(self).__name__}: {name} must be callable or None, got {type(fn).__name__}")
        self.root = str(root)
        self.transform, self.target_transform = transform, target_transform

    classes = ()

    @property
    def class_to_idx(self) -> dict:
        """Class name -> index."""
        return {name: i for i, name in enumerate(self.classes)}

    def _item(self, img, target):
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}"]
        lines += [f"    {name}: {fn!r}".replace("\n", "\n    ")
                  for name, fn in (("Transform", self.transform), ("Target transform", self.target_transform)) if fn]
        return "\n".join(lines)


def _load(owner, read, download, where):
    """Call ``read()``; a missing file becomes a DatasetNotFoundError saying cupynet downloads nothing."""
    try:
        return read()
    except FileNotFoundError as exc:
        asked = "download=True was given, but " if download else ""
        raise DatasetNotFoundError(f"{owner}: dataset not found. {asked}cupynet downloads nothing: put the files "
                                   f"in {where} yourself. ({exc})") from None


class MNIST(VisionDataset):
    """MNIST digits: grey 28 x 28 pictures, targets 0..9.

    Attributes: ``data`` (uint8 Tensor (N, 28, 28)), ``targets`` (int64 Tensor (N,)), ``classes``,
    ``class_to_idx``, ``train``.

    Args:
        root: the directory holding ``<Name>/raw`` (or the IDX files themselves).
        train: the training split (``train-*`` files) or the test split (``t10k-*``).
        transform: applied to each ``Image`` (e.g. ``transforms.ToTensor()``).
        target_transform: applied to each int target.
        download: accepted for torchvision's signature; cupynet never downloads (an error if files are missing).
    """

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = bool(train)
        name = type(self).__name__
        where = pathlib.Path(root) / name / "raw"
        images, labels = _load(name, lambda: read_mnist(name, root, self.train), download, where)
        self.data = Tensor(images)
        self.targets = Tensor(labels.astype(numpy.int64))

    def __len__(self):
        return int(self.data.shape[0])

    def __getitem__(self, index):
        return self._item(Image(self.data.array[index]), int(self.targets.array[index]))


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): MNIST's file names and layout (``root/FashionMNIST/raw``), 10 clothing classes.

    Args:
        root: the directory holding ``FashionMNIST/raw``.
        train: the training split or the test split.
        transform: applied to each ``Image``.
        target_transform: applied to each int target.
        download: accepted; cupynet never downloads.
    """

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


class CIFAR10(VisionDataset):
    """CIFAR-10: RGB 32 x 32 pictures in 10 classes.

    Attributes, as torchvision: ``data`` (uint8 NumPy array (N, 32, 32, 3), channels last), ``targets``
    (a list of ints), ``classes``, ``class_to_idx``, ``train``.

    Args:
        root: the directory holding ``cifar-10-batches-py`` (or the batches themselves).
        train: the 5 training batches or the test batch.
        transform: applied to each ``Image``.
        target_transform: applied to each int target.
        download: accepted; cupynet never downloads (an error if files are missing).
    """

    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = bool(train)
        where = pathlib.Path(root) / "cifar-10-batches-py"
        data, labels = _load("CIFAR10", lambda: read_cifar10(root, self.train), download, where)
        self.data = numpy.ascontiguousarray(data.transpose(0, 2, 3, 1))
        self.targets = [int(t) for t in labels]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self._item(Image(self.data[index]), self.targets[index])

"""``torchvision.datasets``' MNIST, FashionMNIST, CIFAR10 (local files), ImageFolder / DatasetFolder, FakeData.

The files are the ones torchvision downloads, read by ``cupynet.data.datasets``' checked readers:

* MNIST / FashionMNIST: the four IDX files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-...``), raw or ``.gz``, in ``root/<Name>/raw`` (torchvision's layout), ``root/<Name>`` or ``root``.
* CIFAR10: the python batches ``data_batch_1..5`` and ``test_batch`` in ``root/cifar-10-batches-py``
  (or ``root``), read by a restricted unpickler that rebuilds NumPy arrays and refuses any other object.

cupynet downloads nothing: ``download=True`` is accepted when the files are there and is an error
saying where to put them when they are not.

``ImageFolder`` reads ``root/<class>/<file>`` pictures: PNG, JPEG, ... are decoded by Pillow when it is
installed (cupynet decodes no image format itself); pass ``loader=`` to read anything else.

An item is ``(transform(img), target_transform(target))`` where ``img`` is a ``cupynet.vision.Image``
(uint8 HWC; see ``image.py``) standing where torchvision has a ``PIL.Image``, and ``target`` an int.
"""

from __future__ import annotations

import os
import pathlib
import warnings

import numpy

from cupynet.data.dataset import Dataset
from cupynet.data.datasets.cifar import read_cifar10
from cupynet.data.datasets.mnist import read_mnist
from cupynet.tensor import Tensor
from cupynet.vision.image import Image

__all__ = ["VisionDataset", "MNIST", "FashionMNIST", "CIFAR10", "DatasetFolder", "ImageFolder", "FakeData",
           "DatasetNotFoundError", "IMG_EXTENSIONS", "default_loader"]


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

    classes = ()

    def __init__(self, root, transform=None, target_transform=None):
        for name, fn in (("transform", transform), ("target_transform", target_transform)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{type(self).__name__}: {name} must be callable or None, got {type(fn).__name__}")
        self.root = str(root)
        self.transform, self.target_transform = transform, target_transform

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


IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def default_loader(path) -> Image:
    """The picture in file ``path`` as an RGB ``Image``, decoded by Pillow (cupynet decodes no format itself).

    Args:
        path: an image file.
    """
    try:
        from PIL import Image as PILImage  # noqa: PLC0415 - optional: only folders of image files need it
    except ImportError:
        raise ImportError(f"reading {path} needs Pillow (pip install pillow): cupynet decodes no image format "
                          "itself; or pass loader= to the dataset") from None
    with open(path, "rb") as f:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)  # NOTE: an error just below
                picture = PILImage.open(f)
            width, height = picture.size
            # NOTE: decoding allocates what the header declares; Pillow only warns below twice its limit
            if width * height > (PILImage.MAX_IMAGE_PIXELS or width * height):
                raise ValueError(f"{width} x {height} pixels is more than PIL.Image.MAX_IMAGE_PIXELS "
                                 f"({PILImage.MAX_IMAGE_PIXELS}), a guard against decompression bombs")
            return Image(numpy.asarray(picture.convert("RGB")))
        except (OSError, ValueError, SyntaxError, EOFError, PILImage.DecompressionBombError) as exc:
            # NOTE: Pillow reports a damaged or unknown file as any of these (SyntaxError from some decoders)
            raise ValueError(f"{path}: not a readable image file ({type(exc).__name__}: {exc}); expected a picture "
                             f"Pillow decodes ({', '.join(IMG_EXTENSIONS)})") from None


class DatasetFolder(VisionDataset):
    """Samples in ``root/<class>/**/<file>``: one class per sub-folder (sorted names give the targets).

    Args:
        root: the folder of class folders.
        loader: reads one file into a sample.
        extensions: the file endings to keep (case-insensitive); give this or ``is_valid_file``.
        transform: applied to each loaded sample.
        target_transform: applied to each int target.
        is_valid_file: a predicate on a file's path, instead of ``extensions``.
        allow_empty: accept a class folder with no valid file.
    """

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, transform, target_transform)
        if (extensions is None) == (is_valid_file is None):
            raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
        self.loader, self.extensions = loader, extensions
        self.classes = self.find_classes(self.root)[0]
        valid = is_valid_file or (lambda path: path.lower().endswith(tuple(e.lower() for e in extensions)))
        self.samples = self._scan(valid, allow_empty)
        self.imgs = self.samples
        self.targets = [target for _, target in self.samples]

    @staticmethod
    def find_classes(directory) -> tuple:
        """The sorted class-folder names of ``directory`` and the name -> index map.

        Args:
            directory: the dataset root.
        """
        if not os.path.isdir(directory):
            raise DatasetNotFoundError(f"Couldn't find any class folder in {directory}: it is not a directory")
        classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
        if not classes:
            raise DatasetNotFoundError(f"Couldn't find any class folder in {directory}.")
        return classes, {name: i for i, name in enumerate(classes)}

    def _scan(self, valid, allow_empty) -> list:
        samples = []
        for name in self.classes:
            found = sorted(os.path.join(folder, file) for folder, _, files in os.walk(
                os.path.join(self.root, name), followlinks=True) for file in files)
            kept = [(path, self.class_to_idx[name]) for path in found if valid(path)]
            if not kept and not allow_empty:
                wanted = f"Supported extensions are: {', '.join(self.extensions)}" if self.extensions else ""
                raise DatasetNotFoundError(f"Found no valid file for the classes {name}. {wanted}".rstrip())
            samples += kept
        return samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return self._item(self.loader(path), target)


class ImageFolder(DatasetFolder):
    """Pictures in ``root/<class>/<file>`` with the usual image endings, loaded as RGB ``Image``s.

    Args:
        root: the folder of class folders.
        transform: applied to each ``Image``.
        target_transform: applied to each int target.
        loader: reads one file (default: Pillow, as RGB).
        is_valid_file: a predicate on a file's path, instead of the image endings.
        allow_empty: accept a class folder with no picture.
    """

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)


class FakeData(VisionDataset):
    """Random uint8 pictures and targets, the same for the same index (a stand-in while the data is absent).

    NOTE: item ``i`` is drawn from its own NumPy generator seeded with ``i + random_offset``: repeatable
    and independent of the global seed, as torchvision's; the values are not torch's.

    Args:
        size: number of items.
        image_size: (C, H, W) with C = 1, 3 or 4.
        num_classes: targets are drawn from 0..num_classes-1.
        transform: applied to each ``Image``.
        target_transform: applied to each int target.
        random_offset: added to the index to seed each item.
    """

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        super().__init__("", transform, target_transform)
        if len(image_size) != 3 or image_size[0] not in (1, 3, 4):
            raise ValueError(f"FakeData: image_size must be (C, H, W) with C in 1, 3, 4, got {tuple(image_size)}")
        self.size, self.image_size, self.num_classes = int(size), tuple(image_size), int(num_classes)
        self.random_offset = int(random_offset)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if not -self.size <= index < self.size:
            raise IndexError(f"{type(self).__name__} index out of range")
        rng = numpy.random.default_rng(index % self.size + self.random_offset)
        channels, height, width = self.image_size
        pixels = rng.integers(0, 256, (height, width, channels), dtype=numpy.uint8)
        return self._item(Image(pixels), int(rng.integers(0, self.num_classes)))

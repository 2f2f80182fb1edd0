"""``cupynet.vision``: what ``torchvision`` is to torch, for the programs ``cupynet run`` runs.

* ``datasets``: MNIST, FashionMNIST, CIFAR10 from local files (nothing is downloaded).
* ``transforms``: Compose, ToTensor, Normalize, RandomCrop, RandomHorizontalFlip, Resize, CenterCrop, ...
* ``utils``: ``make_grid`` and ``save_image`` (PNG).
* ``models``: the ResNets, with torchvision's module names.
* ``ops``: the box operations (``nms``, ``batched_nms``, ``box_iou``, ``box_area``, ``box_convert``,
  ``clip_boxes_to_image``).

No imaging library is needed: a dataset's picture is an ``Image`` (``image.py``), a uint8 HWC
NumPy array with PIL's ``size`` and ``mode`` answers (docs/vision.md).
"""

from cupynet.vision import datasets, models, ops, transforms, utils
from cupynet.vision.image import Image

__all__ = ["datasets", "transforms", "utils", "models", "ops", "Image"]

"""Built-in datasets read from local files (nothing is downloaded): digits, MNIST, FashionMNIST, CIFAR-10."""

from cupynet.data.datasets.cifar import CIFAR10
from cupynet.data.datasets.digits import digits
from cupynet.data.datasets.mnist import MNIST, FashionMNIST

__all__ = ["digits", "MNIST", "FashionMNIST", "CIFAR10"]

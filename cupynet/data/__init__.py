"""Data loading: datasets, a resumable DataLoader that yields cupynet Tensors, and built-in datasets."""

from cupynet.data import datasets
from cupynet.data.dataloader import DataLoader, default_collate
from cupynet.data.dataset import ArrayDataset, Dataset, Subset, TensorDataset, random_split
from cupynet.data.distributed import DistributedSampler

__all__ = ["Dataset", "TensorDataset", "ArrayDataset", "Subset", "random_split", "DataLoader", "default_collate",
           "datasets", "DistributedSampler"]

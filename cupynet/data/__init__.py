"""Data loading (``torch.utils.data`` names): datasets, samplers, a resumable DataLoader with worker processes."""

from cupynet.data import datasets
from cupynet.data.dataloader import DataLoader, default_collate
from cupynet.data.dataset import (
                                  ArrayDataset,
                                  ConcatDataset,
                                  Dataset,
                                  IterableDataset,
                                  Subset,
                                  TensorDataset,
                                  random_split,
)
from cupynet.data.distributed import DistributedSampler
from cupynet.data.sampler import (
                                  BatchSampler,
                                  RandomSampler,
                                  Sampler,
                                  SequentialSampler,
                                  SubsetRandomSampler,
                                  WeightedRandomSampler,
)
from cupynet.data.workers import WorkerInfo, get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ArrayDataset", "ConcatDataset", "Subset", "random_split",
           "DataLoader", "default_collate", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "WorkerInfo", "get_worker_info", "datasets", "DistributedSampler"]

"""Datasets, samplers and the DataLoader: ``glasstorch.utils.data`` (``torch.utils.data``).

* :mod:`~glasstorch.utils.data.dataset`: ``Dataset``, ``IterableDataset``,
  ``TensorDataset``, ``Subset``, ``ConcatDataset``, ``ChainDataset``, ``random_split``.
* :mod:`~glasstorch.utils.data.sampler`: ``Sampler``, ``SequentialSampler``,
  ``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``,
  ``BatchSampler``.
* :mod:`~glasstorch.utils.data.distributed`: ``DistributedSampler``, each
  process's share of a dataset in data-parallel training.
* :mod:`~glasstorch.utils.data.collate`: ``default_collate``, ``default_convert``.
* :mod:`~glasstorch.utils.data.dataloader`: ``DataLoader``, in this process or
  with worker processes that hand batches back through shared memory
  (:mod:`~glasstorch.multiprocessing`).
* :mod:`~glasstorch.utils.data.worker`: ``get_worker_info``, ``WorkerInfo``.

``python -m glasstorch.utils.data`` measures the loader's throughput.
"""

from glasstorch.utils.data.collate import default_collate, default_convert
from glasstorch.utils.data.dataloader import DataLoader
from glasstorch.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from glasstorch.utils.data.distributed import DistributedSampler
from glasstorch.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from glasstorch.utils.data.worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]

"""gluon.data: datasets, samplers, batchify functions and the DataLoader."""
from .dataset import Dataset, SimpleDataset, ArrayDataset  # noqa: F401
from .sampler import (Sampler, SequentialSampler, RandomSampler, FilterSampler,  # noqa: F401
                      IntervalSampler, BatchSampler, SplitSampler)
from . import batchify  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from .vision.datasets import Digits  # noqa: F401  (kiln's bundled 8x8 digits)
from . import vision  # noqa: F401
from .vision.record_datasets import RecordFileDataset  # noqa: F401

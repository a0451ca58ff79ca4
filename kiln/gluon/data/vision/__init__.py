"""gluon.data.vision: image datasets (`datasets`) and transforms (`transforms`)."""
from . import datasets, transforms  # noqa: F401
from .datasets import (MNIST, FashionMNIST, CIFAR10, CIFAR100,  # noqa: F401
                       ImageFolderDataset, Digits)
from .record_datasets import ImageRecordDataset  # noqa: F401
datasets.ImageRecordDataset = ImageRecordDataset

"""gluon.data.vision: image datasets (`datasets`) and transforms (`transforms`)."""
from . import datasets, transforms  # noqa: F401
from .datasets import (MNIST, FashionMNIST, CIFAR10, CIFAR100,  # noqa: F401
                       ImageFolderDataset)
from .record_datasets import ImageRecordDataset  # noqa: F401
from ....data.digits import Digits  # noqa: F401

datasets.Digits = Digits  # kiln's bundled 8x8 digits, as before
datasets.ImageRecordDataset = ImageRecordDataset

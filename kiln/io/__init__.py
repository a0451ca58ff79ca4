"""MXNet 1.x's data iterators (`mx.io`): DataDesc, DataBatch, the DataIter base class,
NDArrayIter, ResizeIter, PrefetchingIter, CSVIter, ImageRecordIter and MNISTIter."""
from collections import OrderedDict

from .base import DataBatch, DataDesc, DataIter, as_desc
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter
from .csv_iter import CSVIter
from .record_iter import ImageRecordIter
from .mnist_iter import MNISTIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter",
           "CSVIter", "ImageRecordIter", "MNISTIter", "OrderedDict", "as_desc"]

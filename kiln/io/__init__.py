"""MXNet 1.x's data iterators (`mx.io`): DataDesc, DataBatch, the DataIter base class,
NDArrayIter, ResizeIter, PrefetchingIter, CSVIter, ImageRecordIter and MNISTIter."""
from collections import OrderedDict

from .base import DataBatch, DataDesc, DataIter, as_desc
from .ndarray_iter import NDArrayIter
from .wrappers import PrefetchingIter, ResizeIter
from .csv_iter import CSVIter
from .record_iter import ImageRecordIter, ImageRecordInt8Iter, ImageRecordUInt8Iter
from .mnist_iter import MNISTIter
from .det_record_iter import ImageDetRecordIter

# MXNet 1.x kept its first C++ implementations under these names; they batch the same way
ImageRecordIter_v1, ImageRecordUInt8Iter_v1 = ImageRecordIter, ImageRecordUInt8Iter

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ResizeIter", "PrefetchingIter",
           "CSVIter", "ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter",
           "ImageRecordIter_v1", "ImageRecordUInt8Iter_v1", "ImageDetRecordIter", "MNISTIter",
           "OrderedDict", "as_desc"]

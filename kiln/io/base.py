"""DataDesc, DataBatch and the DataIter base class, as in MXNet 1.x's `mx.io`."""
from collections import namedtuple

import numpy as _np

from .._core.base import KilnError, where_in_user_code


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """A named input with its shape, dtype and layout (prints as MXNet does)."""

    def __new__(cls, name, shape, dtype=_np.float32, layout="NCHW"):
        obj = super().__new__(cls, name, tuple(shape))
        obj.dtype, obj.layout = dtype, layout
        return obj

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes, types=None):
        types = dict(types or {})
        return [DataDesc(n, s, types.get(n, _np.float32)) for n, s in shapes]


def as_desc(item):
    """A DataDesc from a DataDesc or a (name, shape) pair."""
    if isinstance(item, DataDesc):
        return item
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
        return DataDesc(item[0], item[1])
    raise KilnError(f"expected a DataDesc or a (name, shape) pair, got {item!r:.80}"
                    + where_in_user_code())


class DataBatch:
    """One batch: lists of data and label arrays, the number of padded examples at its end."""

    def __init__(self, data, label=None, pad=0, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        for what, value in (("data", data), ("label", label)):
            if value is not None and not isinstance(value, (list, tuple)):
                raise KilnError(f"DataBatch: {what} must be a list of arrays, got "
                                f"{type(value).__name__}" + where_in_user_code())
        self.data, self.label, self.pad, self.index = data, label, pad, index
        self.bucket_key = bucket_key
        self.provide_data, self.provide_label = provide_data, provide_label

    def __str__(self):
        data_shapes = [tuple(d.shape) for d in self.data]
        label_shapes = [tuple(x.shape) for x in self.label] if self.label else None
        return (f"{type(self).__name__}: data shapes: {data_shapes} "
                f"label shapes: {label_shapes}")

    __repr__ = __str__


class DataIter:
    """The base class of data iterators. A subclass either overrides `next` or implements
    `iter_next` (advance, True while a batch is there) with `getdata`, `getlabel`, `getpad`
    and `getindex` for the current batch, as MXNet's tutorials do."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        pass

    def next(self):
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(),
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        pass

    def getdata(self):
        pass

    def getlabel(self):
        pass

    def getindex(self):
        return None

    def getpad(self):
        pass


class BatchHoldingIter(DataIter):
    """A DataIter whose `iter_next` builds `self.current_batch`; the accessors read it."""

    current_batch = None
    # MXNet's C++ iterators (MXDataIter: CSVIter, ImageRecordIter, MNISTIter, ...) give
    # getdata()/getlabel() as one array, the Python ones as the batch's list
    one_array_accessors = False

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        data = self.current_batch.data
        return data[0] if self.one_array_accessors and data else data

    def getlabel(self):
        label = self.current_batch.label
        return label[0] if self.one_array_accessors and label else label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad

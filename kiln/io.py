"""MXNet 1.x's data iterators for Module: DataDesc, DataBatch and NDArrayIter."""
from collections import OrderedDict, namedtuple

import numpy as _np

from .base import KilnError, where_in_user_code
from .ndarray import ndarray


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """A named input with its shape, dtype and layout (prints as MXNet does)."""

    def __new__(cls, name, shape, dtype=_np.float32, layout="NCHW"):
        obj = super().__new__(cls, name, tuple(shape))
        obj.dtype, obj.layout = dtype, layout
        return obj

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_list(shapes, types=None):
        types = dict(types or {})
        return [DataDesc(n, s, types.get(n, _np.float32)) for n, s in shapes]


def as_desc(item):
    if isinstance(item, DataDesc):
        return item
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
        return DataDesc(item[0], item[1])
    raise KilnError(f"expected a DataDesc or a (name, shape) pair, got {item!r:.80}"
                    + where_in_user_code())


class DataBatch:
    def __init__(self, data, label=None, pad=0, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        self.data, self.label, self.pad, self.index = data, label, pad, index
        self.bucket_key = bucket_key
        self.provide_data, self.provide_label = provide_data, provide_label

    def __repr__(self):
        shapes = [tuple(d.shape) for d in self.data]
        return f"DataBatch: data shapes: {shapes}"


def _named_arrays(data, default_name):
    if data is None:
        return []
    if isinstance(data, dict):
        items = list(data.items())
    elif isinstance(data, (list, tuple)):
        items = [(f"_{k}_{default_name}" if len(data) > 1 else default_name, v)
                 for k, v in enumerate(data)]
    else:
        items = [(default_name, data)]
    out = []
    for name, v in items:
        value = v.asnumpy() if isinstance(v, ndarray) else _np.asarray(v)
        out.append((name, value))
    return out


class NDArrayIter:
    """Batches of in-memory arrays; last_batch_handle 'pad' (wrap around), 'discard' or
    'roll_over' (treated as 'discard')."""

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle="pad", data_name="data", label_name="softmax_label"):
        self.data = _named_arrays(data, data_name)
        self.label = _named_arrays(label, label_name)
        if not self.data:
            raise KilnError("NDArrayIter: no data" + where_in_user_code())
        n = self.data[0][1].shape[0]
        for name, v in self.data + self.label:
            if v.shape[0] != n:
                raise KilnError(f"NDArrayIter: {name!r} has {v.shape[0]} rows, the data "
                                f"has {n}" + where_in_user_code())
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise KilnError(f"NDArrayIter: last_batch_handle {last_batch_handle!r}")
        self.num_data, self.batch_size = n, int(batch_size)
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        self.reset()

    @property
    def provide_data(self):
        return [DataDesc(n, (self.batch_size,) + v.shape[1:], v.dtype.type)
                for n, v in self.data]

    @property
    def provide_label(self):
        return [DataDesc(n, (self.batch_size,) + v.shape[1:], v.dtype.type)
                for n, v in self.label]

    def reset(self):
        self.cursor = 0
        self.order = _np.arange(self.num_data)
        if self.shuffle:
            self.order = _np.random.permutation(self.num_data)

    def __iter__(self):
        return self

    def __next__(self):
        start = self.cursor
        if start >= self.num_data or (self.last_batch_handle != "pad"
                                      and start + self.batch_size > self.num_data):
            raise StopIteration
        idx = _np.arange(start, start + self.batch_size) % self.num_data
        pad = max(0, start + self.batch_size - self.num_data)
        self.cursor += self.batch_size
        rows = self.order[idx]
        return DataBatch([ndarray._wrap(v[rows]) for _, v in self.data],
                         [ndarray._wrap(v[rows]) for _, v in self.label], pad=pad,
                         index=rows, provide_data=self.provide_data,
                         provide_label=self.provide_label)

    next = __next__

    def iter_next(self):
        return self.cursor < self.num_data


__all__ = ["DataDesc", "DataBatch", "NDArrayIter", "OrderedDict"]

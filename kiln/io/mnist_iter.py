"""MNISTIter: batches of an MNIST-format pair of IDX files, as MXNet's C++ iterator gives
them (pixels / 256, full batches only; the last incomplete batch is dropped)."""
import os

import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .._core.ndarray import ndarray
from .base import BatchHoldingIter, DataBatch, DataDesc
from .batch_loader import positive_int


def _read(path, ndim, what):
    from ..gluon.data.vision.dataset_files import read_idx
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise KilnError(f"MNISTIter: {what} file {path!r} does not exist"
                        + where_in_user_code())
    return read_idx(path, ndim)


class MNISTIter(BatchHoldingIter):
    """`image` (IDX, N x rows x cols) and `label` (IDX, N) files, plain or .gz. flat=True
    gives (batch, rows*cols) data, else (batch, 1, rows, cols). shuffle permutes once, with
    a generator seeded by `seed`; num_parts/part_index take one contiguous share."""

    one_array_accessors = True      # getdata()/getlabel() as MXNet's C++ iterators give them

    def __init__(self, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte",
                 batch_size=128, shuffle=True, flat=False, seed=0, silent=False,
                 num_parts=1, part_index=0, data_name="data", label_name="softmax_label",
                 **_ignored):
        super().__init__(positive_int(batch_size, "batch_size", "MNISTIter"))
        images, labels = _read(image, 3, "image"), _read(label, 1, "label")
        if len(images) != len(labels):
            raise KilnError(f"MNISTIter: {image!r} has {len(images)} images, {label!r} has "
                            f"{len(labels)} labels" + where_in_user_code())
        parts = positive_int(num_parts, "num_parts", "MNISTIter")
        if not 0 <= part_index < parts:
            raise KilnError(f"MNISTIter: part_index must be in [0, {parts}), got "
                            f"{part_index!r}" + where_in_user_code())
        share = _np.array_split(_np.arange(len(images)), parts)[part_index]
        if shuffle:
            share = _np.random.default_rng(seed).permutation(share)
        n, rows, cols = images.shape
        shape = (rows * cols,) if flat else (1, rows, cols)
        self._images = (images[share].astype(_np.float32) / 256).reshape((len(share),) + shape)
        self._labels = labels[share].astype(_np.float32)
        self._names, self.cursor = (data_name, label_name), 0

    @property
    def provide_data(self):
        return [DataDesc(self._names[0], (self.batch_size,) + self._images.shape[1:])]

    @property
    def provide_label(self):
        return [DataDesc(self._names[1], (self.batch_size,))]

    def reset(self):
        self.cursor = 0

    def iter_next(self):
        start, stop = self.cursor, self.cursor + self.batch_size
        if stop > len(self._images):
            return False
        self.cursor = stop
        self.current_batch = DataBatch([ndarray._wrap(self._images[start:stop].copy())],
                                [ndarray._wrap(self._labels[start:stop].copy())], pad=0,
                                index=_np.arange(start, stop, dtype=_np.uint64),
                                provide_data=self.provide_data,
                                provide_label=self.provide_label)
        return True

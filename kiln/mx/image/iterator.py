"""MXNet's `mx.image.ImageIter`: batches of (3, H, W) float32 images from a RecordIO file
(path_imgrec, optionally indexed) or from image files named by an image list (path_imglist
in im2rec's .lst format, or imglist=[[label..., path], ...] under path_root), each passed
through a list of augmenters (CreateAugmenter(data_shape, **kwargs) by default).
last_batch_handle is 'pad' (fill from the start), 'discard' or 'roll_over', as in MXNet.
"""
import os
import random as _pyrandom

import numpy as _np

from ..._core.base import KilnError, where_in_user_code
from ...io.base import DataBatch, DataDesc, DataIter

_LABEL_DTYPES = ("int32", "float32", "int64", "float64")


def _read_list(path, dtype):
    items, keys = {}, []
    with open(os.fspath(path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.strip().split("\t")
            if not line.strip():
                continue
            try:
                key = int(fields[0])
                label = _np.array([float(v) for v in fields[1:-1]], dtype)
            except (ValueError, IndexError):
                raise KilnError(f"ImageIter: {path} line {number}: expected "
                                f"'index<TAB>label(s)<TAB>path', got {line.strip()!r}"
                                + where_in_user_code()) from None
            if len(fields) < 3:
                raise KilnError(f"ImageIter: {path} line {number}: expected "
                                f"'index<TAB>label(s)<TAB>path', got {line.strip()!r}"
                                + where_in_user_code())
            items[key] = (label, fields[-1])
            keys.append(key)
    return items, keys


def _from_python_list(imglist, dtype):
    items, keys = {}, []
    for number, entry in enumerate(imglist, 1):
        label = entry[:-1] if len(entry) > 2 else entry[0]
        items[str(number)] = (_np.atleast_1d(_np.asarray(label, dtype)), entry[-1])
        keys.append(str(number))
    return items, keys


class ImageIter(DataIter):
    """See the module docstring; the arguments are MXNet's."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        from ...data import recordio
        from .augment import CreateAugmenter
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise KilnError("ImageIter: give path_imgrec, path_imglist or imglist (a list)"
                            + where_in_user_code())
        if dtype not in _LABEL_DTYPES:
            raise KilnError(f"ImageIter: label dtype must be one of {_LABEL_DTYPES}, got "
                            f"{dtype!r}" + where_in_user_code())
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise KilnError(f"ImageIter: last_batch_handle must be 'pad', 'discard' or "
                            f"'roll_over', got {last_batch_handle!r}" + where_in_user_code())
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise KilnError(f"ImageIter: data_shape must be (3, H, W), got {data_shape}"
                            + where_in_user_code())
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist, keys = None, None
        if path_imglist:
            self.imglist, keys = _read_list(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, keys = _from_python_list(imglist, dtype)
        self.path_root = path_root
        self.data_shape, self.label_width, self.shuffle = data_shape, label_width, shuffle
        self.label_dtype = dtype
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape)]
        self.provide_label = [DataDesc(label_name, label_shape)]
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise KilnError("ImageIter: shuffle and num_parts > 1 need path_imgidx "
                                "(random access into the .rec file)" + where_in_user_code())
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise KilnError(f"ImageIter: part_index must be in [0, {num_parts}), got "
                                f"{part_index}" + where_in_user_code())
            share = len(self.seq) // num_parts
            self.seq = self.seq[part_index * share:(part_index + 1) * share]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self.cur, self._allow_read = 0, True
        self._cache = None
        self.reset()

    def reset(self):
        if self.seq is not None and self.shuffle:
            _pyrandom.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur, self._allow_read = 0, True

    def hard_reset(self):
        """reset, dropping examples a 'roll_over' epoch kept for the next one."""
        self._cache = None
        self.reset()

    def next_sample(self):
        """(label, encoded image bytes) of the next example; StopIteration at the end."""
        from ...data import recordio
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        key = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(key))
            return (header.label if self.imglist is None else self.imglist[key][0]), img
        label, name = self.imglist[key]
        return label, self.read_image(name)

    def read_image(self, fname):
        path = os.path.join(self.path_root or "", fname)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise KilnError(f"ImageIter: cannot read image {path!r}: {exc.strerror}"
                            + where_in_user_code()) from None

    def imdecode(self, s):
        from ...data.image import imdecode
        try:
            return imdecode(s)
        except KilnError as exc:
            raise KilnError(f"ImageIter: broken image (example {self.cur}): {exc}"
                            + where_in_user_code()) from None

    def augmentation_transform(self, data):
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        from ..._core.ndarray import ndarray
        arr = datum.asnumpy() if isinstance(datum, ndarray) else _np.asarray(datum)
        return arr.transpose(2, 0, 1)

    def _prepared(self, value, encoded):
        """(image, label) of one example, or None to skip it (ImageDetIter skips bad ones)."""
        return self.augmentation_transform(self.imdecode(encoded)), value

    def _store(self, data, label, i, image, value):
        data[i] = self.postprocess_data(image)
        label[i] = _np.asarray(value, _np.float64).reshape(label[i].shape)

    def _empty_label(self):
        return _np.zeros(self.provide_label[0].shape, self.label_dtype)

    def _fill(self, data, label, start):
        i = start
        try:
            while i < self.batch_size:
                sample = self._prepared(*self.next_sample())
                if sample is not None:
                    self._store(data, label, i, *sample)
                    i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        from ..._core.ndarray import ndarray
        if self._cache is not None:
            data, label, filled = self._cache
        else:
            data = _np.zeros((self.batch_size,) + self.data_shape, _np.float32)
            label = self._empty_label()
            filled = self._fill(data, label, 0)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, filled)
                raise StopIteration
            self._fill(data, label, filled)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        return DataBatch([ndarray._wrap(data)], [ndarray._wrap(label)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)

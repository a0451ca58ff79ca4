"""ImageRecordIter: NCHW float32 batches of the images in an MXNet RecordIO file, decoded
with Pillow (kiln.image), with MXNet's common augmentations and normalization."""
import os

import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .batch_loader import positive_int
from .record_file import RecordFileIter
from .record_augment import RecordAugmenter

# accepted for compatibility; they tune MXNet's C++ threads and buffers, not the batches
_IGNORED = {"preprocess_threads", "prefetch_buffer", "verbose", "shuffle_chunk_size",
            "shuffle_chunk_seed", "ctx"}


def read_image_list(path, label_width):
    """im2rec's .lst file: `index<TAB>label ...<TAB>path` per line -> {index: labels}."""
    labels = {}
    with open(os.fspath(path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if not line.strip():
                continue
            try:
                if len(fields) < 3:
                    raise ValueError
                labels[int(float(fields[0]))] = _np.array([float(v) for v in fields[1:-1]],
                                                          _np.float32)
            except ValueError:
                raise KilnError(f"ImageRecordIter: {path} line {number}: expected "
                                f"'index<TAB>label(s)<TAB>path', got {line.strip()!r}"
                                + where_in_user_code()) from None
    return labels


def _read_mean_image(path, shape):
    """The (C, H, W) mean image of an nd.save file (MXNet's key 'mean_img')."""
    from ..export.mxnet_params import read_any
    mean = read_any(path, "ImageRecordIter: mean_img").get("mean_img")
    if mean is None or tuple(mean.shape) != shape:
        raise KilnError(f"ImageRecordIter: mean_img {path!r} must hold one array of shape "
                        f"{shape}, got {None if mean is None else tuple(mean.shape)}"
                        + where_in_user_code())
    return _np.asarray(mean, dtype=_np.float32)


def _channel_values(kw, prefix, default):
    return _np.array([float(kw.pop(f"{prefix}_{c}", default)) for c in "rgb"], _np.float32)


class ImageRecordIter(RecordFileIter):
    """Images of `path_imgrec` (im2rec's format), each augmented as MXNet's default
    augmenter does (record_augment.py: resize, rotation/shear/scale/aspect, pad, crops,
    colour and HSL jitter, mirrors), to `data_shape` (C, H, W), then for float32 batches
    (pixel - mean) * scale / std per RGB channel (or minus `mean_img`). dtype='uint8' gives
    the augmented pixels as they are, dtype='int8' pixel - mean saturated to int8 (MXNet
    applies neither scale nor std there). Labels are the records' floats, or the rows of
    `path_imglist` (im2rec's .lst) by image index; (batch, label_width) when label_width >
    1. shuffle draws from a generator seeded with `seed`, augmentations from `seed_aug`
    (default: seed)."""

    def __init__(self, path_imgrec, data_shape, batch_size, path_imgidx=None, shuffle=False,
                 label_width=1, round_batch=True, scale=1.0, seed=0, data_name="data",
                 label_name="softmax_label", num_parts=1, part_index=0, path_imglist=None,
                 seed_aug=None, dtype=None, mean_img=None, **kw):
        self._mean = _channel_values(kw, "mean", 0.0)
        self._std = _channel_values(kw, "std", 1.0)
        if dtype not in (None, "float32", _np.float32, "uint8", _np.uint8, "int8", _np.int8):
            raise KilnError(f"ImageRecordIter: kiln gives float32, uint8 or int8 batches, "
                            f"got dtype={dtype!r}" + where_in_user_code())
        out_dtype = _np.dtype(_np.float32 if dtype is None else dtype)
        if kw.pop("inter_method", 1) != 1:
            raise KilnError("ImageRecordIter: kiln resizes bilinearly only (inter_method=1)"
                            + where_in_user_code())
        if kw.pop("aug_seq", "aug_default") != "aug_default":
            raise KilnError("ImageRecordIter: kiln has MXNet's default augmenter only "
                            "(aug_seq='aug_default')" + where_in_user_code())
        shape = tuple(int(d) for d in data_shape)
        if len(shape) != 3 or shape[0] not in (1, 3) or min(shape) < 1:
            raise KilnError(f"ImageRecordIter: data_shape must be (channels, height, width) "
                            f"with 1 or 3 channels, got {tuple(data_shape)}"
                            + where_in_user_code())
        self._augment = RecordAugmenter(kw, shape)
        unknown = sorted(set(kw) - _IGNORED)
        if unknown:
            raise KilnError(f"ImageRecordIter: argument(s) {unknown} are not supported by "
                            "kiln; see help(kiln.io.ImageRecordIter) and "
                            "kiln.io.record_augment for the ones it has"
                            + where_in_user_code())
        self._shape, self._scale = shape, float(scale)
        self._label_width = positive_int(label_width, "label_width", "ImageRecordIter")
        self._labels = read_image_list(path_imglist, self._label_width) if path_imglist \
            else None
        self._mean_img = None
        label_shape = () if self._label_width == 1 else (self._label_width,)
        super().__init__(path_imgrec, path_imgidx, num_parts, part_index, shuffle, seed,
                         seed_aug, batch_size, shape, label_shape, round_batch, data_name,
                         label_name, out_dtype)
        if mean_img:
            mean_img = os.fspath(mean_img)
            if not os.path.isfile(mean_img):
                self._write_mean_image(mean_img)
            self._mean_img = _read_mean_image(mean_img, shape)
        self._new_epoch()

    def _write_mean_image(self, path):
        """As MXNet does when mean_img does not exist: average one augmented pass over the
        records and save it there (nd.save, key 'mean_img')."""
        import logging
        from ..export.mxnet_params import write
        logging.info("ImageRecordIter: computing the mean image into %s", path)
        total = _np.zeros(self._shape, _np.float64)
        for row in range(self.num_rows):
            total += self._augment(self._decoded(row), self._aug_rng).transpose(2, 0, 1)
        write(path, [(total / self.num_rows).astype(_np.float32)], ["mean_img"])

    def _read(self, rows):
        data = _np.empty((len(rows),) + self._shape, self._dtype)
        label = _np.empty((len(rows), self._label_width), _np.float32)
        for k, row in enumerate(rows):
            header, payload = self._record(row)
            if self._labels is None:
                values = _np.atleast_1d(_np.asarray(header.label, _np.float32))
            else:
                values = self._labels.get(int(header.id))
                if values is None:
                    raise KilnError(f"ImageRecordIter: record {row} of {self.path_imgrec} "
                                    f"has image index {int(header.id)}, which path_imglist "
                                    "does not list" + where_in_user_code())
            if values.size < self._label_width:
                raise KilnError(f"ImageRecordIter: record {row} of {self.path_imgrec} has "
                                f"{values.size} label value(s), label_width is "
                                f"{self._label_width}" + where_in_user_code())
            label[k] = values[:self._label_width]
            data[k] = self._augmented(payload, row)
        return data, label.reshape((len(rows),) + self._label.shape[1:])

    def _augmented(self, payload, row):
        channels = self._shape[0]
        img = self._augment(self._decode(payload, row), self._aug_rng).transpose(2, 0, 1)
        if self._dtype == _np.uint8:
            return img
        img = img.astype(_np.float32)
        mean = self._mean_img if self._mean_img is not None else \
            self._mean[:channels, None, None]
        if self._dtype == _np.int8:   # MXNet subtracts the mean only, and saturates
            return _np.clip(_np.rint(img - mean), -128, 127)
        if self._mean_img is not None:
            return (img - mean) * self._scale
        return (img - mean) * (self._scale / self._std[:channels, None, None])



def ImageRecordUInt8Iter(*args, **kwargs):  # noqa: N802  (MXNet's name)
    """ImageRecordIter with dtype='uint8'."""
    return ImageRecordIter(*args, dtype="uint8", **kwargs)


def ImageRecordInt8Iter(*args, **kwargs):  # noqa: N802  (MXNet's name)
    """ImageRecordIter with dtype='int8'."""
    return ImageRecordIter(*args, dtype="int8", **kwargs)

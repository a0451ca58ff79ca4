"""ImageRecordIter: NCHW float32 batches of the images in an MXNet RecordIO file, decoded
with Pillow (kiln.image), with MXNet's common augmentations and normalization."""
import os

import numpy as _np

from ..base import KilnError, where_in_user_code
from .batch_loader import BatchLoaderIter, positive_int
from .linear_resize import resize_linear

# accepted for compatibility; they tune MXNet's C++ threads and buffers, not the batches
_IGNORED = {"preprocess_threads", "prefetch_buffer", "verbose", "shuffle_chunk_size",
            "shuffle_chunk_seed", "ctx"}


def record_positions(path_imgrec, path_imgidx):
    """Byte offsets of the records: from the .idx file when given, else by one scan."""
    from .. import recordio
    if not os.path.isfile(path_imgrec):
        raise KilnError(f"ImageRecordIter: path_imgrec {path_imgrec!r} does not exist"
                        + where_in_user_code())
    if path_imgidx:
        if not os.path.isfile(path_imgidx):
            raise KilnError(f"ImageRecordIter: path_imgidx {path_imgidx!r} does not exist"
                            + where_in_user_code())
        return [pos for _, pos in recordio.read_index(path_imgidx)]
    positions = []
    with open(path_imgrec, "rb") as f:
        while True:
            at = f.tell()
            if recordio.read_record(f, path_imgrec) is None:
                return positions
            positions.append(at)


def _channel_values(kw, prefix, default):
    return _np.array([float(kw.pop(f"{prefix}_{c}", default)) for c in "rgb"], _np.float32)


def _resized(img, height, width, resize):
    """The image MXNet crops from: its shorter side scaled to `resize` (when > 0), then, if
    still smaller than the crop, grown keeping its aspect until tall enough, then until wide
    enough, as MXNet 1.9.1 does; all with OpenCV's bilinear rule (linear_resize)."""
    h, w = img.shape[:2]
    if resize > 0:
        img = resize_linear(img, resize * w // h if w > h else resize,
                            resize * h // w if h > w else resize)
        h, w = img.shape[:2]
    if h < height:
        img = resize_linear(img, w * height // h, height)
        h, w = img.shape[:2]
    if w < width:
        img = resize_linear(img, width, h * width // w)
    return img


class ImageRecordIter(BatchLoaderIter):
    """Images of `path_imgrec` (im2rec's format), each resized (shorter side to `resize`
    when given; grown to at least the crop's size), cropped to `data_shape` (C, H, W) at
    the centre or at random (`rand_crop`), mirrored at random (`rand_mirror`), then
    (pixel - mean) * scale / std per RGB channel. Labels are the records' floats,
    (batch, label_width) when label_width > 1. shuffle, random crops and mirrors draw from
    a generator seeded with `seed`."""

    def __init__(self, path_imgrec, data_shape, batch_size, path_imgidx=None, shuffle=False,
                 rand_crop=False, rand_mirror=False, resize=-1, label_width=1,
                 round_batch=True, scale=1.0, seed=0, data_name="data",
                 label_name="softmax_label", num_parts=1, part_index=0, **kw):
        self._mean = _channel_values(kw, "mean", 0.0)
        self._std = _channel_values(kw, "std", 1.0)
        if kw.pop("dtype", None) not in (None, "float32", _np.float32):
            raise KilnError("ImageRecordIter: kiln gives float32 batches only (dtype="
                            "'float32')" + where_in_user_code())
        if kw.pop("inter_method", 1) != 1:
            raise KilnError("ImageRecordIter: kiln resizes bilinearly only (inter_method=1)"
                            + where_in_user_code())
        unknown = sorted(set(kw) - _IGNORED)
        if unknown:
            raise KilnError(f"ImageRecordIter: argument(s) {unknown} are not supported by "
                            "kiln (it has path_imgrec, path_imgidx, data_shape, batch_size, "
                            "shuffle, seed, rand_crop, rand_mirror, resize, mean_r/g/b, "
                            "std_r/g/b, scale, label_width, round_batch, num_parts, "
                            "part_index, data_name, label_name)" + where_in_user_code())
        shape = tuple(int(d) for d in data_shape)
        if len(shape) != 3 or shape[0] not in (1, 3) or min(shape) < 1:
            raise KilnError(f"ImageRecordIter: data_shape must be (channels, height, width) "
                            f"with 1 or 3 channels, got {tuple(data_shape)}"
                            + where_in_user_code())
        self.path_imgrec = os.fspath(path_imgrec)
        positions = record_positions(self.path_imgrec,
                                     os.fspath(path_imgidx) if path_imgidx else None)
        parts = positive_int(num_parts, "num_parts", "ImageRecordIter")
        if not 0 <= part_index < parts:
            raise KilnError(f"ImageRecordIter: part_index must be in [0, {parts}), got "
                            f"{part_index!r}" + where_in_user_code())
        self._positions = _np.array_split(_np.array(positions, _np.int64), parts)[part_index]
        self._shape, self._resize, self._scale = shape, int(resize), float(scale)
        self._label_width = positive_int(label_width, "label_width", "ImageRecordIter")
        self._shuffle, self._rand_crop, self._rand_mirror = shuffle, rand_crop, rand_mirror
        self._rng = _np.random.default_rng(seed)
        self._file = None
        label_shape = () if self._label_width == 1 else (self._label_width,)
        super().__init__(len(self._positions), batch_size, shape, label_shape, round_batch,
                         data_name, label_name)
        self._new_epoch()

    def _new_epoch(self):
        if self._shuffle:
            self._order = self._rng.permutation(self.num_rows)

    def _record(self, row):
        from .. import recordio
        if self._file is None or self._file.closed:
            self._file = open(self.path_imgrec, "rb")
        self._file.seek(int(self._positions[row]))
        record = recordio.read_record(self._file, self.path_imgrec)
        if record is None:
            raise KilnError(f"ImageRecordIter: {self.path_imgrec} has no record at byte "
                            f"{self._positions[row]} (record {row}); the index does not "
                            "match the file" + where_in_user_code())
        return recordio.unpack(record)

    def _read(self, rows):
        data = _np.empty((len(rows),) + self._shape, _np.float32)
        label = _np.empty((len(rows), self._label_width), _np.float32)
        for k, row in enumerate(rows):
            header, payload = self._record(row)
            values = _np.atleast_1d(_np.asarray(header.label, _np.float32))
            if values.size < self._label_width:
                raise KilnError(f"ImageRecordIter: record {row} of {self.path_imgrec} has "
                                f"{values.size} label value(s), label_width is "
                                f"{self._label_width}" + where_in_user_code())
            label[k] = values[:self._label_width]
            data[k] = self._augmented(payload, row)
        return data, label.reshape((len(rows),) + self._label.shape[1:])

    def _augmented(self, payload, row):
        from .. import image
        channels, height, width = self._shape
        try:
            img = image.imdecode(payload, 0 if channels == 1 else 1)
        except KilnError as exc:
            raise KilnError(f"ImageRecordIter: record {row} of {self.path_imgrec}: {exc}"
                            + where_in_user_code()) from None
        img = _resized(img.asnumpy(), height, width, self._resize)
        h, w = img.shape[:2]
        if self._rand_crop:
            y0, x0 = self._rng.integers(0, h - height + 1), self._rng.integers(0, w - width + 1)
        else:
            y0, x0 = (h - height) // 2, (w - width) // 2
        img = img[y0:y0 + height, x0:x0 + width].transpose(2, 0, 1).astype(_np.float32)
        if self._rand_mirror and self._rng.random() < 0.5:
            img = img[:, :, ::-1]
        return (img - self._mean[:channels, None, None]) * (
            self._scale / self._std[:channels, None, None])

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            self._file.close()

"""ImageDetRecordIter: NCHW batches of the images of a RecordIO file with their detection
labels, augmented as MXNet's det_aug_default does (det_augment.py).

A record's label is [header_width, object_width, ...header, objects...]; an output label
row is MXNet's: [3, height, width, label length, the (augmented) label..., pad values...],
where height x width is the image's size inside data_shape (all of it with
resize_mode='force'; the rest of the data is zeros) and the row is `label_pad_width`
values past the first 4 (auto: the longest label in the file).
"""
import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .det_augment import DetRecordAugmenter
from .record_file import RecordFileIter
from .record_iter import _IGNORED, _channel_values


def _objects(raw, where):
    raw = _np.asarray(raw, _np.float32).ravel()
    if raw.size < 2:
        raise KilnError(f"ImageDetRecordIter: {where}: a detection label starts with "
                        f"[header_width, object_width], got {raw.tolist()}"
                        + where_in_user_code())
    header, width = int(raw[0]), int(raw[1])
    if header < 2 or width < 5 or (raw.size - header) % width:
        raise KilnError(f"ImageDetRecordIter: {where}: a label of {raw.size} values does not "
                        f"split into a header of {header} and objects of {width} (need "
                        "header >= 2, objects >= 5 wide)" + where_in_user_code())
    return raw[:header], raw[header:].reshape(-1, width)


class ImageDetRecordIter(RecordFileIter):
    """See the module docstring; the arguments are MXNet 1.9.1's (std_r/g/b of 0 mean no
    division, where MXNet's output for such a channel is all zeros)."""

    def __init__(self, path_imgrec, data_shape, batch_size, path_imgidx=None, shuffle=False,
                 seed=0, label_pad_width=0, label_pad_value=-1.0, round_batch=True,
                 scale=1.0, num_parts=1, part_index=0, data_name="data",
                 label_name="label", seed_aug=None, dtype=None, label_width=-1, **kw):
        shape = tuple(int(d) for d in data_shape)
        if len(shape) != 3 or shape[0] != 3 or min(shape) < 1:
            raise KilnError(f"ImageDetRecordIter: data_shape must be (3, height, width), got "
                            f"{tuple(data_shape)}" + where_in_user_code())
        if dtype not in (None, "float32", _np.float32):
            raise KilnError(f"ImageDetRecordIter: kiln gives float32 batches, got "
                            f"dtype={dtype!r}" + where_in_user_code())
        self._mean = _channel_values(kw, "mean", 0.0)
        std = _channel_values(kw, "std", 0.0)
        self._std = _np.where(std == 0, 1.0, std).astype(_np.float32)
        if kw.pop("inter_method", 1) != 1:
            raise KilnError("ImageDetRecordIter: kiln resizes bilinearly only "
                            "(inter_method=1)" + where_in_user_code())
        if kw.pop("aug_seq", "det_aug_default") != "det_aug_default":
            raise KilnError("ImageDetRecordIter: kiln has MXNet's default detection "
                            "augmenter only (aug_seq='det_aug_default')" + where_in_user_code())
        self._augment = DetRecordAugmenter(kw, shape)
        unknown = sorted(set(kw) - _IGNORED)
        if unknown:
            raise KilnError(f"ImageDetRecordIter: argument(s) {unknown} are not supported by "
                            "kiln; see help(kiln.io.ImageDetRecordIter) and "
                            "kiln.io.det_augment" + where_in_user_code())
        self._scale, self._pad_value = float(scale), float(label_pad_value)
        super().__init__(path_imgrec, path_imgidx, num_parts, part_index, shuffle, seed,
                         seed_aug, batch_size, shape, (1,), round_batch, data_name,
                         label_name, _np.float32)
        longest = max(self._record(row)[0].label.size if _np.ndim(self._record(row)[0].label)
                      else 1 for row in range(self.num_rows))
        width = longest if label_pad_width in (0, -1) else int(label_pad_width)
        if width < longest:
            raise KilnError(f"ImageDetRecordIter: label_pad_width={label_pad_width} is less "
                            f"than the longest label in the file ({longest} values)"
                            + where_in_user_code())
        self._label_shape = (4 + width,)
        self._label = _np.zeros((self.batch_size, 4 + width), _np.float32)
        self._new_epoch()

    def _read(self, rows):
        data = _np.zeros((len(rows),) + self._data_shape, _np.float32)
        label = _np.full((len(rows),) + self._label_shape, self._pad_value, _np.float32)
        for k, row in enumerate(rows):
            header, payload = self._record(row)
            head, objects = _objects(header.label, f"record {row} of {self.path_imgrec}")
            img, objects, (h, w) = self._augment(self._decode(payload, row), objects,
                                                 self._aug_rng)
            data[k, :, :h, :w] = (img.transpose(2, 0, 1).astype(_np.float32)
                                  - self._mean[:, None, None]) * (
                self._scale / self._std[:, None, None])
            raw = _np.concatenate([head, objects.ravel()])
            label[k, :4] = (3, h, w, raw.size)
            label[k, 4:4 + raw.size] = raw
        return data, label

"""The part of MXNet's C++ image iterators that reads a RecordIO file: the records'
positions (from the .idx file, or one scan), this part's share (num_parts/part_index), a
shuffled order per epoch, and reading and decoding one record."""
import os

import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .batch_loader import BatchLoaderIter, positive_int


def record_positions(path_imgrec, path_imgidx):
    """Byte offsets of the records: from the .idx file when given, else by one scan."""
    from ..data import recordio
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



class RecordFileIter(BatchLoaderIter):
    """Rows are the records of `path_imgrec` in this part; subclasses implement _read."""

    def __init__(self, path_imgrec, path_imgidx, num_parts, part_index, shuffle, seed,
                 seed_aug, batch_size, data_shape, label_shape, round_batch, data_name,
                 label_name, dtype):
        owner = type(self).__name__
        self.path_imgrec = os.fspath(path_imgrec)
        positions = record_positions(self.path_imgrec,
                                     os.fspath(path_imgidx) if path_imgidx else None)
        parts = positive_int(num_parts, "num_parts", owner)
        if not 0 <= part_index < parts:
            raise KilnError(f"{owner}: part_index must be in [0, {parts}), got "
                            f"{part_index!r}" + where_in_user_code())
        self._positions = _np.array_split(_np.array(positions, _np.int64), parts)[part_index]
        self._shuffle = shuffle
        self._rng = _np.random.default_rng(seed)
        self._aug_rng = _np.random.default_rng(seed if seed_aug is None else seed_aug)
        self._file = None
        super().__init__(len(self._positions), batch_size, data_shape, label_shape,
                         round_batch, data_name, label_name, dtype=dtype)

    def _new_epoch(self):
        if self._shuffle:
            self._order = self._rng.permutation(self.num_rows)

    def _record(self, row):
        """(header, payload) of row `row`."""
        from ..data import recordio
        if self._file is None or self._file.closed:
            self._file = open(self.path_imgrec, "rb")
        self._file.seek(int(self._positions[row]))
        record = recordio.read_record(self._file, self.path_imgrec)
        if record is None:
            raise KilnError(f"{type(self).__name__}: {self.path_imgrec} has no record at "
                            f"byte {self._positions[row]} (record {row}); the index does "
                            "not match the file" + where_in_user_code())
        return recordio.unpack(record)

    def _decode(self, payload, row):
        """The record's image as an (H, W, C) uint8 array (C from data_shape)."""
        from ..data import image
        try:
            return image.imdecode(payload, 0 if self._data_shape[0] == 1 else 1).asnumpy()
        except KilnError as exc:
            raise KilnError(f"{type(self).__name__}: record {row} of {self.path_imgrec}: "
                            f"{exc}" + where_in_user_code()) from None

    def _decoded(self, row):
        return self._decode(self._record(row)[1], row)

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            self._file.close()

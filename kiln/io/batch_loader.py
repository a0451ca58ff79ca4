"""Batching of a row source as MXNet's C++ BatchLoader does it (CSVIter, ImageRecordIter).

round_batch=True: the last batch is completed with rows from the start (pad says how many),
and the next epoch begins after those rows, once. round_batch=False: the last batch keeps the
previous batch's rows in its unfilled slots (pad says how many), as MXNet's reused buffer does.
"""
import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .._core.ndarray import ndarray
from .base import BatchHoldingIter, DataBatch, DataDesc


def positive_int(value, what, owner):
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise KilnError(f"{owner}: {what} must be a positive integer, got {value!r}"
                        + where_in_user_code())
    return int(value)


class BatchLoaderIter(BatchHoldingIter):
    """A DataIter over `num_rows` examples; subclasses implement `_read(rows) -> (data,
    label)`, numpy arrays with the rows on axis 0, and may reorder `self._order` at reset."""

    one_array_accessors = True      # getdata()/getlabel() as MXNet's C++ iterators give them

    def __init__(self, num_rows, batch_size, data_shape, label_shape, round_batch,
                 data_name="data", label_name="softmax_label", dtype=_np.float32):
        super().__init__(positive_int(batch_size, "batch_size", type(self).__name__))
        if num_rows < 1:
            raise KilnError(f"{type(self).__name__}: the input has no examples"
                            + where_in_user_code())
        self.num_rows, self.round_batch = num_rows, bool(round_batch)
        self._data_shape, self._label_shape = tuple(data_shape), tuple(label_shape)
        self._names, self._dtype = (data_name, label_name), dtype
        self._order = _np.arange(num_rows)
        self._data = _np.zeros((self.batch_size,) + self._data_shape, dtype)
        self._label = _np.zeros((self.batch_size,) + self._label_shape, _np.float32)
        self._index = _np.zeros(self.batch_size, _np.uint64)
        self._position, self._overflow, self._done, self.current_batch = 0, 0, False, None

    @property
    def provide_data(self):
        return [DataDesc(self._names[0], self._data.shape, self._dtype)]

    @property
    def provide_label(self):
        return [DataDesc(self._names[1], self._label.shape, _np.float32)]

    def _new_epoch(self):
        """Called at the start of every pass over the rows (reshuffles, in subclasses)."""

    def reset(self):
        if self.round_batch and self._overflow:
            # the rows that completed the last batch count as read
            self._position, self._overflow = self._overflow, 0
        else:
            self._position = 0
            self._new_epoch()
        self._done = False

    def iter_next(self):
        if self._done or self._position >= self.num_rows:
            return False
        take = self._order[self._position:self._position + self.batch_size]
        fill = len(take)
        pad = self.batch_size - fill
        self._position += fill
        if pad and self.round_batch:
            self._new_epoch()
            take = _np.concatenate([take, self._order[_np.arange(pad) % self.num_rows]])
            self._overflow, self._done, fill = pad % self.num_rows, True, self.batch_size
        data, label = self._read(take)
        self._data[:fill], self._label[:fill], self._index[:fill] = data, label, take
        self.current_batch = DataBatch([ndarray._wrap(self._data.copy())],
                                [ndarray._wrap(self._label.copy())], pad=pad,
                                index=self._index.copy(), provide_data=self.provide_data,
                                provide_label=self.provide_label)
        return True

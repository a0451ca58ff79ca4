"""NDArrayIter: batches of in-memory arrays with MXNet 1.9's exact batch, pad, shuffle and
roll-over semantics."""
import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .._core.ndarray import ndarray
from .base import DataBatch, DataDesc, DataIter


# csr sources, kept as SciPy matrices: kiln/mx/nd/sparse (a floor above) registers how to
# tell its CSRNDArray, read one as SciPy and make one of a batch
SPARSE = {"is_csr": lambda v: False, "to_scipy": None, "from_scipy": None}


def _is_sparse(v):
    return type(v).__module__.startswith("scipy.sparse")


def _source_value(v):
    if SPARSE["is_csr"](v):
        return SPARSE["to_scipy"](v).tocsr()
    if _is_sparse(v):
        return v.tocsr()
    return v.asnumpy() if isinstance(v, ndarray) else _np.asarray(v, _np.float32)


def named_arrays(data, default_name, allow_empty):
    """(name, numpy array) pairs sorted by name, as MXNet's _init_data: one array is named
    `default_name`, a list of several `_<k>_<default_name>`; a dict keeps its keys. Arrays
    that are not kiln arrays become float32, as mx.nd.array makes them."""
    if data is None:
        data = []
    if isinstance(data, (ndarray, _np.ndarray)) or SPARSE["is_csr"](data) or _is_sparse(data):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise KilnError("NDArrayIter: no data" + where_in_user_code())
        names = [default_name] if len(data) == 1 else \
            [f"_{k}_{default_name}" for k in range(len(data))]
        data = dict(zip(names, data))
    if not isinstance(data, dict):
        raise KilnError(f"NDArrayIter: {default_name} must be an array, a list of arrays or a "
                        f"dict of them, got {type(data).__name__}" + where_in_user_code())
    out = []
    for name, v in sorted(data.items()):
        try:
            value = _source_value(v)
        except (TypeError, ValueError) as e:
            raise KilnError(f"NDArrayIter: {name!r} is not an array ({e})"
                            + where_in_user_code()) from None
        if value.ndim == 0:
            raise KilnError(f"NDArrayIter: {name!r} is a scalar; it needs a batch axis"
                            + where_in_user_code())
        out.append((name, value))
    return out


class NDArrayIter(DataIter):
    """Batches of arrays (numpy or kiln), a list of them or a dict name -> array.
    last_batch_handle: 'pad' fills the last batch from the start (getpad says how many),
    'discard' drops it, 'roll_over' carries it into the first batch of the next epoch.
    shuffle permutes with NumPy's global generator at construction and at every reset, as
    MXNet does (so np.random.seed gives MXNet's order)."""

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle="pad", data_name="data", label_name="softmax_label",
                 layout="NCHW"):
        super().__init__(batch_size)
        self.data = named_arrays(data, data_name, allow_empty=False)
        self.label = named_arrays(label, label_name, allow_empty=True)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise KilnError(f"NDArrayIter: last_batch_handle must be 'pad', 'discard' or "
                            f"'roll_over', got {last_batch_handle!r}" + where_in_user_code())
        if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
            raise KilnError(f"NDArrayIter: batch_size must be a positive integer, got "
                            f"{batch_size!r}" + where_in_user_code())
        if last_batch_handle != "discard" and any(_is_sparse(v) for _, v in
                                                  self.data + self.label):
            raise NotImplementedError("NDArrayIter: csr data (CSRNDArray or SciPy) needs "
                                      "last_batch_handle='discard', as in MXNet")
        self.layout = layout
        self._axis = max(0, layout.find("N")) if layout else 0
        n = self.data[0][1].shape[self._axis]
        for name, v in self.data + self.label:
            if v.ndim <= self._axis or v.shape[self._axis] < n:
                raise KilnError(f"NDArrayIter: {name!r} has shape {v.shape}; every array "
                                f"needs {n} examples on axis {self._axis}, as the data has"
                                + where_in_user_code())
        # the first data array decides the number of examples, as in MXNet: a longer label
        # (or second data array) serves its first n (MXNet's padded last batch would read
        # past them; kiln pads from the first n)
        first_n = (slice(None),) * self._axis + (slice(0, n),)
        self.data, self.label = [[(name, v if v.shape[self._axis] == n else v[first_n])
                                  for name, v in arrays] for arrays in (self.data, self.label)]
        self.idx = _np.arange(n)
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        self.batch_size, self.num_data = int(batch_size), n
        self.cursor = -self.batch_size
        self._cache = {}
        self.reset()

    def _descs(self, arrays):
        return [DataDesc(k, v.shape[:self._axis] + (self.batch_size,) + v.shape[self._axis + 1:],
                         v.dtype.type, layout=self.layout) for k, v in arrays]

    @property
    def provide_data(self):
        return self._descs(self.data)

    @property
    def provide_label(self):
        return self._descs(self.label)

    def _shuffle_data(self):
        # MXNet shuffles its index in place and re-gathers the already shuffled arrays with
        # it; doing the same keeps the order identical for a given NumPy seed.
        _np.random.shuffle(self.idx)
        self.data = [(k, v[self.idx]) for k, v in self.data]
        self.label = [(k, v[self.idx]) for k, v in self.label]

    def hard_reset(self):
        """Back to the start, dropping any rolled-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache = {}

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:
            self._cache = {"data": data, "label": label}
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def _rows(self, source):
        """The rows of the current batch from one source ('data' or 'label')."""
        if self.cursor >= self.num_data:
            raise KilnError("NDArrayIter: the epoch is over; call reset()"
                            + where_in_user_code())
        arrays = [v for _, v in getattr(self, source)]
        bs, n, c = self.batch_size, self.num_data, self.cursor
        if self.last_batch_handle == "roll_over" and -bs < c < 0:
            cached = self._cache.pop(source, None)
            if cached is None:
                raise KilnError(f"NDArrayIter: the rolled-over {source} of this batch was "
                                "already taken" + where_in_user_code())
            return [_np.concatenate([old.asnumpy(), self._take(v, 0, c + bs)], axis=self._axis)
                    for old, v in zip(cached, arrays)]
        if self.last_batch_handle == "pad" and c + bs > n:
            wrapped = (c + _np.arange(bs)) % n
            return [_np.take(v, wrapped, axis=self._axis) for v in arrays]
        return [self._take(v, c, min(c + bs, n)) for v in arrays]

    def _take(self, v, start, stop):
        if _is_sparse(v):       # csr: rows (the batch axis is 0)
            return v[start:stop]
        index = [slice(None)] * v.ndim
        index[self._axis] = slice(start, stop)
        return v[tuple(index)]

    @staticmethod
    def _batch(v):
        if _is_sparse(v):
            return SPARSE["from_scipy"](v)
        return ndarray._wrap(_np.ascontiguousarray(v))

    def getdata(self):
        return [self._batch(v) for v in self._rows("data")]

    def getlabel(self):
        return [self._batch(v) for v in self._rows("label")]

    def getpad(self):
        bs, c = self.batch_size, self.cursor
        if self.last_batch_handle == "pad" and c + bs > self.num_data:
            return c + bs - self.num_data
        if self.last_batch_handle == "roll_over" and -bs < c < 0:
            return -c
        return 0

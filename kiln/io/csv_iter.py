"""CSVIter: batches of rows of a CSV file (and labels from a second one), as MXNet's."""
import os
import warnings

import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .batch_loader import BatchLoaderIter

_DTYPES = {"float32": _np.float32, "int32": _np.int32, "int64": _np.int64}


def _shape(value, what):
    shape = (value,) if isinstance(value, int) else tuple(value)
    if not shape or any(isinstance(d, bool) or int(d) != d or d < 1 for d in shape):
        raise KilnError(f"CSVIter: {what} must be a tuple of positive integers, got "
                        f"{value!r}" + where_in_user_code())
    return tuple(int(d) for d in shape)


def read_csv(path, width, what):
    """The rows of a comma-separated numeric file as float32, each of `width` values."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise KilnError(f"CSVIter: {what} {path!r} does not exist" + where_in_user_code())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty file is reported below, as an error
            rows = _np.loadtxt(path, delimiter=",", dtype=_np.float64, ndmin=2)
    except ValueError:
        rows = None
    if rows is None or rows.shape[1:] != (width,):
        _raise_first_bad_line(path, width, what)
    return rows


def _raise_first_bad_line(path, width, what):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split(",")
            if len(fields) != width:
                raise KilnError(f"CSVIter: {what} {path!r}, line {number}: expected {width} "
                                f"comma-separated values, got {len(fields)}"
                                + where_in_user_code())
            for field in fields:
                try:
                    float(field)
                except ValueError:
                    raise KilnError(f"CSVIter: {what} {path!r}, line {number}: {field!r:.40} "
                                    "is not a number" + where_in_user_code()) from None
    raise KilnError(f"CSVIter: {what} {path!r} has no rows" + where_in_user_code())


class CSVIter(BatchLoaderIter):
    """Rows of `data_csv` reshaped to `data_shape`; labels from `label_csv` (rows of
    `label_shape`) or zeros. A label shape of (1,) gives labels of shape (batch_size,)."""

    def __init__(self, data_csv, data_shape, batch_size, label_csv=None, label_shape=(1,),
                 round_batch=True, dtype="float32", data_name="data",
                 label_name="softmax_label", **_ignored):
        data_shape, label_shape = _shape(data_shape, "data_shape"), _shape(label_shape,
                                                                           "label_shape")
        if str(dtype) not in _DTYPES:
            raise KilnError(f"CSVIter: dtype must be one of {sorted(_DTYPES)}, got {dtype!r}"
                            + where_in_user_code())
        data = read_csv(data_csv, int(_np.prod(data_shape)), "data_csv")
        self._rows_data = data.astype(_DTYPES[str(dtype)]).reshape((-1,) + data_shape)
        if label_csv is None or label_csv == "NULL":
            self._rows_label = _np.zeros((len(data),) + label_shape, _np.float32)
        else:
            label = read_csv(label_csv, int(_np.prod(label_shape)), "label_csv")
            if len(label) != len(data):
                raise KilnError(f"CSVIter: label_csv {label_csv!r} has {len(label)} rows, "
                                f"data_csv {data_csv!r} has {len(data)}"
                                + where_in_user_code())
            self._rows_label = label.astype(_np.float32).reshape((-1,) + label_shape)
        out_label_shape = () if label_shape == (1,) else label_shape
        self._rows_label = self._rows_label.reshape((len(data),) + out_label_shape)
        super().__init__(len(data), batch_size, data_shape, out_label_shape, round_batch,
                         data_name, label_name, _DTYPES[str(dtype)])

    def _read(self, rows):
        return self._rows_data[rows], self._rows_label[rows]

"""Pickling kiln arrays (kiln/_core/ndarray.py): plain data in the stream (dtype name, shape,
bytes) rebuilt by one checked constructor, so MXNet code that pickles arrays works while
nothing but that constructor is referenced."""
import pickle
import pickletools

import numpy as np
import pytest

import kiln
from kiln._core.base import KilnError
from kiln._core.ndarray import from_pickled


@pytest.mark.parametrize("value", [np.arange(6, dtype="float32").reshape(2, 3),
                                   np.zeros((0, 3), "float64"), np.array(3, "int64"),
                                   np.array([True, False])])
def test_arrays_pickle_round_trip(value):
    x = kiln.np.array(value, dtype=value.dtype)
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, type(x)) and y.dtype == x.dtype and y.shape == x.shape
    assert np.array_equal(y.asnumpy(), value)


def test_the_stream_references_only_the_checked_constructor():
    stream = pickle.dumps(kiln.np.ones((2, 2)))
    names = [arg for _, arg, _ in pickletools.genops(stream) if isinstance(arg, str)]
    assert names == ["kiln._core.ndarray", "from_pickled", "float32"]


@pytest.mark.parametrize("args", [("object", (1,), b"\0" * 8), ("float32", (2,), b"\0" * 4),
                                  ("float32", (-1,), b""), ("float32", (1,), "text")])
def test_bad_pickled_parts_are_refused(args):
    with pytest.raises((KilnError, TypeError)):
        from_pickled(*args)


@pytest.mark.parametrize("args", [("float32", (2,), 5), ("float32", (2,), "text"),
                                  ("float32", (1 << 40, 1 << 40), b"")])
def test_a_stream_with_other_data_is_refused_with_a_clear_error(args):
    with pytest.raises(KilnError, match="unpickling an array"):
        from_pickled(*args)

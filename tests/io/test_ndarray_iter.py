"""Iterating kiln arrays behaves as NumPy's: a 0-d array fails at iter() itself."""
import pytest

from kiln import np


def test_a_0d_array_is_not_iterable_at_iter_time():
    # np.iterable (matplotlib's unit check) calls iter(): a 0-d array must fail there
    import numpy
    with pytest.raises(TypeError, match="0-d"):
        iter(np.array(1.5))
    assert not numpy.iterable(np.array(1.5)) and numpy.iterable(np.ones(2))
    assert [float(v) for v in np.arange(3)] == [0.0, 1.0, 2.0]

"""MXNet's numpy-interface contract for formatting, copy order and creation order
(kiln/_core/ndarray.py, kiln/np/creation.py), as MXNet 1.9.1's tests check it."""
import pytest

from kiln import np


def test_format_spec_applies_to_scalars_only():
    assert "{:0.3g}".format(np.array(3.14159)) == "3.14"
    assert "{}".format(np.array([1.0])) == "[1.]"
    with pytest.raises(TypeError):
        "{:30}".format(np.array([1.0]))


def test_only_c_order_is_offered():
    assert np.array([1, 2]).copy(order="C").tolist() == [1, 2]
    for make in (lambda: np.array([1, 2]).copy(order="F"),
                 lambda: np.zeros((2,), "float32", "F"), lambda: np.empty(2, None, "A"),
                 lambda: np.ones(2, order="F")):
        with pytest.raises(NotImplementedError, match="order='C'"):
            make()

"""MXNet 1.x's ordering ops (sort, argsort, topk) over axis=None and with integer data.
Expected values come from real MXNet 1.9.1."""
import numpy as np

from kiln import nd
from kiln import np as knp


def test_axis_none_orders_the_flattened_array():
    a = nd.array([[3, 1, 2], [0, 5, 4]], dtype="int32")
    assert nd.sort(a, axis=None, is_ascend=False).asnumpy().tolist() == [5, 4, 3, 2, 1, 0]
    assert nd.argsort(a, axis=None).asnumpy().tolist() == [3.0, 1.0, 2.0, 0.0, 5.0, 4.0]


def test_topk_mask_keeps_the_input_shape_and_dtype():
    a = nd.array([[3, 1, 2], [0, 5, 4]], dtype="int32")
    mask = nd.topk(a, axis=None, ret_typ="mask", k=2)
    assert mask.dtype == np.int32
    assert mask.asnumpy().tolist() == [[0, 0, 0], [0, 1, 1]]
    assert nd.topk(a, axis=1, ret_typ="mask", k=1).dtype == np.int32


def test_sum_with_a_dtype_returns_that_dtype():
    a = knp.array([1, 2, 3], dtype="int32")
    assert knp.sum(a, dtype="int32").dtype == np.int32      # as NumPy
    assert knp.sum(a).dtype == np.sum(np.array([1, 2, 3], dtype=np.int32)).dtype

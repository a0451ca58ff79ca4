"""Advanced indices apart from each other, integers among them, '...' and None beside them,
and tuples inside the key: NumPy's result shapes and values, recorded with gradients (the
traced/recorded path of kiln/_core/indexing.py; eager arrays use NumPy itself)."""
import numpy as onp
import pytest

import kiln
from kiln import np

KEYS = [([1, 0], slice(None), [2, 3]), ([[1]], [[1]], slice(0, 3), [1, 4]),
        (0, slice(None), [1, 2]), ([1], 1, [2]), (slice(None), [1, 2], 1),
        ([0, 1], None, [0, 1]), (None, [0, 1], [0, 1]), ([0, 1], Ellipsis, [0, 1]),
        (Ellipsis, [0, 1]), ([0], None), (1, None, (0, 2), Ellipsis, None)]


@pytest.mark.parametrize("key", KEYS, ids=[str(k) for k in KEYS])
def test_recorded_getitem_matches_numpy_with_its_gradient(key):
    a = onp.arange(120, dtype="float32").reshape(2, 3, 4, 5)
    x = np.array(a)
    x.attach_grad()
    with kiln.autograd.record():
        y = x[key]
    assert y.shape == a[key].shape and (y.asnumpy() == a[key]).all()
    y.backward()
    expected = onp.zeros_like(a)
    onp.add.at(expected, key, 1)
    assert (x.grad.asnumpy() == expected).all()

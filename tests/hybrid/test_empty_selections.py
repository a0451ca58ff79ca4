"""Selecting nothing from an empty axis is an empty result, as in NumPy, compiled as eager:
a boolean mask over an empty array (the fuzzer's size stage, seed 81533, found the compiled
program raising where eager returns [])."""
import numpy as onp
import pytest

import kiln
from kiln import np


def _masked(x):
    return x[x > 0] * 2


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_a_mask_over_an_empty_array_selects_nothing(backend):
    compiled = kiln.hybridize(_masked, backend=backend)
    for values in ([1.0, -2.0, 3.0, 0.5], [], [-1.0], []):
        x = np.array(onp.array(values, dtype="float32"))
        onp.testing.assert_array_equal(compiled(x).asnumpy(), _masked(x).asnumpy())


def test_take_of_no_indices_from_an_empty_axis_is_empty():
    from kiln.ops import REGISTRY
    from kiln._core.ndarray import ndarray
    x = ndarray._wrap(onp.zeros((0, 3), dtype="float32"))
    idx = ndarray._wrap(onp.zeros((0,), dtype="int64"))
    assert REGISTRY["take"](x, idx, axis=0).shape == (0, 3)
    with pytest.raises(kiln.KilnError, match="empty axis"):
        REGISTRY["take"](x, ndarray._wrap(onp.zeros((2,), dtype="int64")), axis=0)

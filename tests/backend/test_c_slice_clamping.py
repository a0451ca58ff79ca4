"""The generated C of `slice` and `slice_assign` clamps begin and end as the op does: a
begin past the axis (a reversed slice) or an end past it reads and writes only inside the
array, and the result equals eager."""
import numpy as onp
import pytest

import kiln
from kiln._core.ndarray import ndarray
from kiln.ops import REGISTRY

CASES = [  # (shape, begin, end, step)
    ((2,), (3,), (-1,), (-1,)),          # begin past the end, reversed: starts at the last
    ((5,), (9,), (1,), (-2,)),
    ((4, 3), (1, 7), (9, -1), (1, -1)),
    ((6,), (2,), (40,), (1,)),           # end past the axis
    ((6,), (7,), (9,), (1,)),            # nothing selected
]


@pytest.mark.parametrize("shape, begin, end, step", CASES)
def test_slice_clamps_like_eager(shape, begin, end, step):
    op = REGISTRY["slice"]
    x = ndarray._wrap(onp.arange(onp.prod(shape), dtype="float32").reshape(shape))
    compiled = kiln.hybridize(lambda a: op(a, begin=begin, end=end, step=step), backend="c")
    expected = op(x, begin=begin, end=end, step=step).asnumpy()
    onp.testing.assert_array_equal(compiled(x).asnumpy(), expected)


@pytest.mark.parametrize("shape, begin, end, step", CASES)
def test_slice_assign_clamps_like_eager(shape, begin, end, step):
    op, take = REGISTRY["slice_assign"], REGISTRY["slice"]
    x = ndarray._wrap(onp.arange(onp.prod(shape), dtype="float32").reshape(shape))
    window = take(x, begin=begin, end=end, step=step).shape
    v = ndarray._wrap(onp.full(window, -7.0, dtype="float32"))
    compiled = kiln.hybridize(lambda a, b: op(a, b, begin=begin, end=end, step=step),
                              backend="c")
    expected = op(x, v, begin=begin, end=end, step=step).asnumpy()
    onp.testing.assert_array_equal(compiled(x, v).asnumpy(), expected)

"""Sums and products over leading axes in generated C (kernels._leading_reduction walks the
rows a block of columns at a time) against NumPy, across the block boundary, dtypes, and the
axis forms that take that path and those that do not."""
import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.backend.c import build
from test_backend_c_control import assert_compiled


@pytest.fixture(autouse=True)
def _needs_compiler():
    if not build.available():
        pytest.skip("no working C compiler")


CASES = [((37, 300), 0), ((3, 5, 513), (0, 1)), ((4, 2, 3), 0), ((1, 257), 0),
         ((6, 7), 1), ((3, 4, 5), (0, 2)), ((5, 4), None)]


@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_compiled_reduction_equals_numpy(shape, axis, dtype, op):
    rng = onp.random.default_rng(0)
    if dtype == "bool":
        x = rng.random(shape) > 0.3
    elif dtype == "int32":
        x = rng.integers(-3, 4, shape).astype(dtype)
    else:     # near 1, so products of hundreds of rows stay finite
        x = (1 + 0.01 * rng.standard_normal(shape)).astype(dtype)
    if op == "prod" and dtype == "int32":
        x = onp.where(x == 0, 1, onp.sign(x)).astype(dtype)
    fn = kiln.hybridize(lambda a: getattr(np, op)(a, axis=axis), backend="c")
    got = fn(np.array(x)).asnumpy()
    assert_compiled(fn._cached)
    want = getattr(onp, op)(x, axis=axis)
    assert got.shape == want.shape
    onp.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_a_nan_in_one_row_reaches_only_its_column():
    x = onp.ones((40, 300), "float32")
    x[17, 299] = onp.nan
    got = kiln.hybridize(lambda a: np.sum(a, axis=0), backend="c")(np.array(x)).asnumpy()
    assert onp.isnan(got[299]) and not onp.isnan(got[:299]).any()
    onp.testing.assert_array_equal(got[:299], 40.0)

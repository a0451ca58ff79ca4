"""Integer ** integer: NumPy's integer power, which wraps on overflow, and for a negative
exponent (an error in NumPy) the float power truncated, element by element, on every
backend (fuzz seed 90210577, #272: eager took the float power of the whole array once any
exponent was negative, so a positive one that overflows gave INT_MIN, and C the wrapped
power)."""
import numpy as onp
import pytest

from kiln import np
from kiln.fuzz.compare import compare

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def inner_to_the_power_of_itself(a0):          # fuzz seed 90210577, #272
    v2 = np.inner(a0, a0).astype("int32")
    return v2 ** v2


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_each_element_is_numpys_power_or_the_truncated_float_power(dtype):
    a = onp.array([5, -3, 9, 13, 7, 1, -1, 2], dtype=dtype)
    b = onp.array([5, -3, 9, 13, 7, -4, -3, -1], dtype=dtype)
    with onp.errstate(over="ignore"):
        wrapped = onp.power(a, onp.where(b < 0, 0, b))
    want = onp.where(b < 0, onp.trunc(a.astype("float64") ** b.astype("float64")), wrapped)
    onp.testing.assert_array_equal((np.array(a) ** np.array(b)).asnumpy(), want.astype(dtype))


def test_compiled_equals_eager():
    a0 = np.array([[[1.0, -1.75, -1.75, 1.75], [-1.25, 1.5, -0.5, -2.0], [0.0, 1.5, -0.5, 0.5]],
                   [[0.75, 0.25, 0.25, 2.0], [2.0, 1.0, -2.0, 0.5],
                    [0.25, -1.25, -1.75, 1.25]]], dtype="float32")
    findings = compare(inner_to_the_power_of_itself, [a0], [a0 * -1.5], strict=True)
    assert not findings, "\n".join(map(repr, findings))

"""Property tests: elementwise, broadcasting and reduction ops on random shapes vs NumPy."""
import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from hypothesis.extra import numpy as hnp

from kiln import np
from conftest import assert_close, to_np

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

UNARY = {
    "exp": (np.exp, onp.exp, (-3, 3)),
    "log": (np.log, onp.log, (0.125, 5)),
    "sqrt": (np.sqrt, onp.sqrt, (0.0, 5)),
    "abs": (np.abs, onp.abs, (-5, 5)),
    "tanh": (np.tanh, onp.tanh, (-5, 5)),
    "sin": (np.sin, onp.sin, (-5, 5)),
    "negative": (np.negative, onp.negative, (-5, 5)),
    "square": (np.square, onp.square, (-5, 5)),
    "floor": (np.floor, onp.floor, (-5, 5)),
    "sign": (np.sign, onp.sign, (-5, 5)),
    "expm1": (np.expm1, onp.expm1, (-3, 3)),
    "log1p": (np.log1p, onp.log1p, (0, 3)),
}

BINARY = {
    "add": (np.add, onp.add), "subtract": (np.subtract, onp.subtract),
    "multiply": (np.multiply, onp.multiply), "maximum": (np.maximum, onp.maximum),
    "minimum": (np.minimum, onp.minimum), "less": (np.less, onp.less),
    "greater_equal": (np.greater_equal, onp.greater_equal), "equal": (np.equal, onp.equal),
    "power": (np.power, onp.power),
}

REDUCE = {"sum": (np.sum, onp.sum), "mean": (np.mean, onp.mean), "max": (np.max, onp.max),
          "min": (np.min, onp.min), "prod": (np.prod, onp.prod), "var": (np.var, onp.var),
          "std": (np.std, onp.std)}

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4)


def floats(shape, lo, hi, dtype=onp.float32):
    return hnp.arrays(dtype, shape, elements=st.floats(lo, hi, width=32))


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary(name, data):
    kfn, nfn, (lo, hi) = UNARY[name]
    x = data.draw(shapes.flatmap(lambda s: floats(s, lo, hi)))
    out = kfn(np.array(x))
    expected = nfn(x)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    assert_close(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4),
       data=st.data())
def test_binary_broadcast(name, shapes, data):
    kfn, nfn = BINARY[name]
    lo = 0.5 if name == "power" else -4
    a = data.draw(floats(shapes.input_shapes[0], lo, 4))
    b = data.draw(floats(shapes.input_shapes[1], -2, 2))
    out = kfn(np.array(a), np.array(b))
    expected = nfn(a, b)
    assert out.shape == expected.shape == shapes.result_shape
    assert out.dtype == expected.dtype
    assert_close(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REDUCE))
@SETTINGS
@given(data=st.data(), keepdims=st.booleans())
def test_reduce(name, data, keepdims):
    kfn, nfn = REDUCE[name]
    x = data.draw(shapes.flatmap(lambda s: floats(s, 0.5, 1.5)))
    axis = data.draw(st.none() | hnp.valid_tuple_axes(x.ndim, min_size=1)
                     if x.ndim else st.none())
    out = kfn(np.array(x), axis=axis, keepdims=keepdims)
    expected = nfn(x, axis=axis, keepdims=keepdims)
    assert out.shape == onp.shape(expected)
    assert out.dtype == onp.float32
    assert_close(out, expected, rtol=1e-4, atol=1e-5)


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from([onp.int32, onp.int64, onp.bool_]))
def test_integer_arrays_keep_dtype(shape, dtype):
    x = onp.ones(shape, dtype)
    k = np.array(x)
    assert k.dtype == dtype
    assert to_np(k + k).dtype == (x + x).dtype
    assert np.sum(k).dtype == onp.sum(x).dtype

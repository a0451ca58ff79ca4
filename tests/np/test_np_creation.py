"""Array creation, conversion and repr: MXNet's float32 defaults, NumPy dtypes kept."""
import numpy as onp
import pytest

from kiln import np, npx, KilnError
from conftest import assert_close, to_np


def test_arange_defaults_to_float32():
    x = np.arange(12)
    assert x.dtype == onp.float32 and x.shape == (12,)
    assert_close(x, onp.arange(12))
    assert np.arange(2, 10, 3).tolist() == [2.0, 5.0, 8.0]
    assert np.arange(0, 1, 0.25).shape == (4,)
    assert np.arange(5, dtype="int32").dtype == onp.int32


def test_array_from_lists_is_float32():
    assert np.array([1, 2]).dtype == onp.float32
    assert np.array([[1.5, 2], [3, 4]]).dtype == onp.float32
    assert np.array([True, False]).dtype == onp.bool_
    assert np.array([1, 2], dtype=np.int32).dtype == onp.int32
    assert np.array(3).shape == ()


@pytest.mark.parametrize("dtype", [onp.float64, onp.int64, onp.int32, onp.uint8, onp.bool_,
                                   onp.float16])
def test_numpy_arrays_keep_dtype(dtype):
    src = onp.arange(6).reshape(2, 3).astype(dtype)
    x = np.array(src)
    assert x.dtype == dtype
    assert onp.array_equal(x.asnumpy(), src)


def test_array_copies_its_input():
    src = onp.zeros(3, onp.float32)
    x = np.array(src)
    src[0] = 5
    assert x[0] == 0


def test_zeros_ones_full_eye_linspace():
    z = np.zeros((2, 3))
    assert z.dtype == onp.float32 and z.shape == (2, 3) and float(z.sum()) == 0
    o = np.ones((2, 3, 4))
    assert o.dtype == onp.float32 and float(o.sum()) == 24
    assert np.zeros(4).shape == (4,)
    assert np.zeros((2,), dtype="int32").dtype == onp.int32
    f = np.full((2, 2), 7.0)
    assert f.dtype == onp.float32 and f.tolist() == [[7, 7], [7, 7]]
    assert np.full((2,), 3).dtype == onp.int64
    e = np.eye(3)
    assert e.dtype == onp.float32 and onp.array_equal(e.asnumpy(), onp.eye(3))
    assert onp.array_equal(np.eye(2, 3, k=1).asnumpy(), onp.eye(2, 3, k=1))
    ls = np.linspace(0, 1, 5)
    assert ls.dtype == onp.float32
    assert_close(ls, onp.linspace(0, 1, 5))
    assert np.identity(2).shape == (2, 2)


def test_like_functions():
    x = np.array(onp.arange(6, dtype=onp.int32).reshape(2, 3))
    assert np.zeros_like(x).dtype == onp.int32
    assert float(np.ones_like(x).sum()) == 6
    assert np.full_like(x, 2.0, dtype="float32").dtype == onp.float32
    y = np.ones((2, 2))
    assert y.zeros_like().shape == (2, 2)


def test_random_creation():
    np.random.seed(1)
    a = np.random.normal(0, 1, size=(3, 4))
    assert a.shape == (3, 4) and a.dtype == onp.float32
    u = np.random.uniform(size=(1000,))
    assert 0 <= float(u.min()) and float(u.max()) < 1
    r = np.random.randint(0, 5, size=(10,))
    assert r.dtype == onp.int64 and 0 <= int(r.min()) and int(r.max()) < 5
    np.random.seed(3)
    x1 = np.random.normal(size=5).asnumpy()
    np.random.seed(3)
    assert onp.array_equal(x1, np.random.normal(size=5).asnumpy())


def test_scalar_conversions():
    x = np.array([3.5])
    assert x.item() == 3.5 and float(x) == 3.5 and int(x) == 3
    assert isinstance(x.item(), float)
    assert int(np.array(7, dtype="int64")) == 7
    with pytest.raises(KilnError):
        np.ones(3).item()
    with pytest.raises(KilnError):
        float(np.ones(2))
    a = onp.asarray(np.ones((2, 2)))
    assert isinstance(a, onp.ndarray) and a.dtype == onp.float32
    b = np.arange(3).asnumpy()
    b[0] = 9          # asnumpy is a copy
    assert isinstance(b, onp.ndarray)
    assert bool(np.array([1.0])) is True
    with pytest.raises(ValueError):
        bool(np.ones(2))


def test_repr_and_str():
    assert repr(np.array([1, 2])) == "array([1., 2.])"
    assert repr(np.array([1, 2], dtype="int32")) == "array([1, 2], dtype=int32)"
    assert "float64" in repr(np.array(onp.array([1.0, 2.0])))
    assert repr(np.zeros((2, 2))) == "array([[0., 0.],\n       [0., 0.]])"
    assert str(np.array([1, 2])) == "[1. 2.]"
    assert f"{np.array(2.5):.2f}" == "2.50"


def test_properties_and_context():
    x = np.ones((2, 3, 4))
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24 and len(x) == 2
    assert x.ctx == npx.cpu() and x.as_in_context(npx.cpu()) is x
    assert x.T.shape == (4, 3, 2)
    assert to_np(x.copy()).shape == (2, 3, 4)


def test_bad_creation_inputs():
    with pytest.raises(KilnError):
        np.zeros((2, -1))
    with pytest.raises(KilnError):
        np.array(["a", "b"])
    with pytest.raises(KilnError):
        np.arange(0, 5, 0)

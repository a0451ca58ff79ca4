"""The d2l MXNet-edition preliminaries (§2.1-2.3, §2.5), written as in the book with
`mxnet` replaced by `kiln`, asserting the book's printed results."""
import csv
import os

import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx


@pytest.fixture(autouse=True, scope="module")
def _numpy_shape_mode():
    npx.set_np()        # as the book's first cell does; kiln.mx's shape mode is global
    yield
    npx.reset_np()      # MXNet 1.x's legacy default again for the test modules after this


def same(a, text):
    assert repr(a) == text, repr(a)


# ---- §2.1 data manipulation ----------------------------------------------------------------

def test_ndarray_section():
    x = np.arange(12)
    same(x, "array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11.])")
    assert x.shape == (12,) and x.size == 12
    X = x.reshape(3, 4)
    same(X, "array([[ 0.,  1.,  2.,  3.],\n       [ 4.,  5.,  6.,  7.],\n"
            "       [ 8.,  9., 10., 11.]])")
    assert x.reshape(-1, 4).shape == x.reshape(3, -1).shape == (3, 4)
    assert np.zeros((2, 3, 4)).shape == (2, 3, 4) and float(np.ones((2, 3, 4)).sum()) == 24
    r = np.random.normal(0, 1, size=(3, 4))
    assert r.shape == (3, 4) and r.dtype == onp.float32
    same(np.array([[2, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]]),
         "array([[2., 1., 4., 3.],\n       [1., 2., 3., 4.],\n       [4., 3., 2., 1.]])")

    x = np.array([1, 2, 4, 8])
    y = np.array([2, 2, 2, 2])
    res = x + y, x - y, x * y, x / y, x ** y  # The ** operator is exponentiation
    assert [repr(r) for r in res] == [
        "array([ 3.,  4.,  6., 10.])", "array([-1.,  0.,  2.,  6.])",
        "array([ 2.,  4.,  8., 16.])", "array([0.5, 1. , 2. , 4. ])",
        "array([ 1.,  4., 16., 64.])"]
    # the book prints array([2.7182817e+00, 7.3890562e+00, 5.4598148e+01, 2.9809580e+03]);
    # the last float32 digits depend on the exp kernel
    assert np.exp(x).dtype == onp.float32
    onp.testing.assert_allclose(np.exp(x).asnumpy(), [2.7182817, 7.3890562, 54.598148, 2980.958],
                                rtol=1e-6)

    X = np.arange(12).reshape(3, 4)
    Y = np.array([[2, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]])
    c0, c1 = np.concatenate([X, Y], axis=0), np.concatenate([X, Y], axis=1)
    assert c0.shape == (6, 4) and c1.shape == (3, 8)
    same(c1[0], "array([0., 1., 2., 3., 2., 1., 4., 3.])")
    same(X == Y, "array([[False,  True, False,  True],\n       [False, False, False, False],\n"
                 "       [False, False, False, False]])")
    same(X.sum(), "array(66.)")

    a = np.arange(3).reshape(3, 1)
    b = np.arange(2).reshape(1, 2)
    same(a + b, "array([[0., 1.],\n       [1., 2.],\n       [2., 3.]])")

    same(X[-1], "array([ 8.,  9., 10., 11.])")
    same(X[1:3], "array([[ 4.,  5.,  6.,  7.],\n       [ 8.,  9., 10., 11.]])")
    X[1, 2] = 9
    same(X[1], "array([4., 5., 9., 7.])")
    X[0:2, :] = 12
    same(X, "array([[12., 12., 12., 12.],\n       [12., 12., 12., 12.],\n"
            "       [ 8.,  9., 10., 11.]])")

    before = id(Y)
    Y = Y + X
    assert (id(Y) == before) is False
    Z = np.zeros_like(Y)
    first = id(Z)
    Z[:] = X + Y
    assert id(Z) == first
    before = id(X)
    X += Y
    assert (id(X) == before) is True

    A = X.asnumpy()
    B = np.array(A)
    assert type(A) is onp.ndarray and type(B) is np.ndarray
    a = np.array([3.5])
    res = a, a.item(), float(a), int(a)
    assert repr(res) == "(array([3.5]), 3.5, 3.5, 3)"


# ---- §2.2 data preprocessing (csv + NumPy; the pandas variant runs when pandas is there) ---

def _write_house_tiny(tmp_path):
    data_file = os.path.join(tmp_path, "house_tiny.csv")
    with open(data_file, "w") as f:
        f.write("NumRooms,Alley,Price\n")  # Column names
        f.write("NA,Pave,127500\n")  # Each row represents a data example
        f.write("2,NA,106000\n")
        f.write("4,NA,178100\n")
        f.write("NA,NA,140000\n")
    return data_file


def test_preprocessing_with_numpy(tmp_path):
    with open(_write_house_tiny(tmp_path)) as f:
        rows = list(csv.DictReader(f))
    rooms = onp.array([float("nan") if r["NumRooms"] == "NA" else float(r["NumRooms"])
                       for r in rows])
    rooms[onp.isnan(rooms)] = onp.nanmean(rooms)
    alley = onp.array([[r["Alley"] == "Pave", r["Alley"] == "NA"] for r in rows], dtype=float)
    inputs = onp.column_stack([rooms, alley])
    outputs = onp.array([float(r["Price"]) for r in rows])
    X, y = np.array(inputs), np.array(outputs)
    same(X, "array([[3., 1., 0.],\n       [2., 0., 1.],\n       [4., 0., 1.],\n"
            "       [3., 0., 1.]], dtype=float64)")
    same(y, "array([127500., 106000., 178100., 140000.], dtype=float64)")


def test_preprocessing_with_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    data = pd.read_csv(_write_house_tiny(tmp_path))
    inputs, outputs = data.iloc[:, 0:2], data.iloc[:, 2]
    inputs = pd.get_dummies(inputs, dummy_na=True)
    inputs = inputs.fillna(inputs.mean())
    X, y = np.array(inputs.to_numpy(dtype=float)), np.array(outputs.to_numpy(dtype=float))
    assert X.shape == (4, 3) and X.dtype == onp.float64 and y.dtype == onp.float64


# ---- §2.3 linear algebra -------------------------------------------------------------------

def test_linear_algebra_section():
    x = np.array(3.0)
    y = np.array(2.0)
    assert repr((x + y, x * y, x / y, x ** y)) == \
        "(array(5.), array(6.), array(1.5), array(9.))"
    x = np.arange(4)
    same(x, "array([0., 1., 2., 3.])")
    same(x[3], "array(3.)")
    assert len(x) == 4 and x.shape == (4,)
    A = np.arange(20).reshape(5, 4)
    same(A.T, "array([[ 0.,  4.,  8., 12., 16.],\n       [ 1.,  5.,  9., 13., 17.],\n"
              "       [ 2.,  6., 10., 14., 18.],\n       [ 3.,  7., 11., 15., 19.]])")
    B = np.array([[1, 2, 3], [2, 0, 4], [3, 4, 5]])
    assert bool((B == B.T).all())
    X = np.arange(24).reshape(2, 3, 4)
    assert X.shape == (2, 3, 4)

    A = np.arange(20).reshape(5, 4)
    B = A.copy()  # Assign a copy of `A` to `B` by allocating new memory
    assert float((A + B)[4, 3]) == 38
    same((A * B)[1], "array([16., 25., 36., 49.])")
    a = 2
    X = np.arange(24).reshape(2, 3, 4)
    assert float((a + X)[0, 0, 0]) == 2 and (a * X).shape == (2, 3, 4)

    x = np.arange(4)
    same(x.sum(), "array(6.)")
    assert A.shape == (5, 4)
    same(A.sum(), "array(190.)")
    A_sum_axis0 = A.sum(axis=0)
    same(A_sum_axis0, "array([40., 45., 50., 55.])")
    assert A_sum_axis0.shape == (4,)
    A_sum_axis1 = A.sum(axis=1)
    same(A_sum_axis1, "array([ 6., 22., 38., 54., 70.])")
    assert A_sum_axis1.shape == (5,)
    same(A.sum(axis=[0, 1]), "array(190.)")  # Same as `A.sum()`
    same(A.mean(), "array(9.5)")
    same(A.sum() / A.size, "array(9.5)")
    same(A.mean(axis=0), "array([ 8.,  9., 10., 11.])")
    same(A.sum(axis=0) / A.shape[0], "array([ 8.,  9., 10., 11.])")
    sum_A = A.sum(axis=1, keepdims=True)
    same(sum_A, "array([[ 6.],\n       [22.],\n       [38.],\n       [54.],\n       [70.]])")
    assert (A / sum_A).shape == (5, 4)
    same(A.cumsum(axis=0), "array([[ 0.,  1.,  2.,  3.],\n       [ 4.,  6.,  8., 10.],\n"
                           "       [12., 15., 18., 21.],\n       [24., 28., 32., 36.],\n"
                           "       [40., 45., 50., 55.]])")

    y = np.ones(4)
    same(np.dot(x, y), "array(6.)")
    same(np.sum(x * y), "array(6.)")
    same(np.dot(A, x), "array([ 14.,  38.,  62.,  86., 110.])")
    B = np.ones(shape=(4, 3))
    same(np.dot(A, B), "array([[ 6.,  6.,  6.],\n       [22., 22., 22.],\n"
                       "       [38., 38., 38.],\n       [54., 54., 54.],\n"
                       "       [70., 70., 70.]])")
    u = np.array([3, -4])
    same(np.linalg.norm(u), "array(5.)")
    same(np.abs(u).sum(), "array(7.)")
    same(np.linalg.norm(np.ones((4, 9))), "array(6.)")


# ---- §2.5 automatic differentiation --------------------------------------------------------

def test_autograd_section():
    x = np.arange(4.0)
    same(x, "array([0., 1., 2., 3.])")
    # We allocate memory for a tensor's gradient by invoking `attach_grad`
    x.attach_grad()
    # After we calculate a gradient taken with respect to `x`, we will be able to
    # access it via the `grad` attribute, whose values are initialized with 0s
    same(x.grad, "array([0., 0., 0., 0.])")
    # Place our code inside an `autograd.record` scope to build the computational graph
    with autograd.record():
        y = 2 * np.dot(x, x)
    same(y, "array(28.)")
    y.backward()
    same(x.grad, "array([ 0.,  4.,  8., 12.])")
    same(x.grad == 4 * x, "array([ True,  True,  True,  True])")

    with autograd.record():
        y = x.sum()
    y.backward()
    same(x.grad, "array([1., 1., 1., 1.])")  # Overwritten by the newly calculated gradient

    # When we invoke `backward` on a vector-valued variable `y` (function of `x`), a new
    # scalar variable is created by summing the elements in `y`
    with autograd.record():
        y = x * x
    y.backward()
    same(x.grad, "array([0., 2., 4., 6.])")  # Equals to y = sum(x * x)

    with autograd.record():
        y = x * x
        u = y.detach()
        z = u * x
    z.backward()
    same(x.grad == u, "array([ True,  True,  True,  True])")

    y.backward()
    same(x.grad == 2 * x, "array([ True,  True,  True,  True])")


def f(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


@pytest.mark.parametrize("seed", range(5))
def test_autograd_control_flow(seed):
    np.random.seed(seed)
    a = np.random.normal()
    a.attach_grad()
    with autograd.record():
        d = f(a)
    d.backward()
    assert repr(a.grad == d / a) == "array(True)"

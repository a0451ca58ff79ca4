"""kiln.np math, reductions, comparisons, products and shape functions vs NumPy."""
import numpy as onp
import pytest

from kiln import np
from conftest import assert_close, to_np

R = onp.random.default_rng(5)
A = R.uniform(0.5, 2.0, (3, 4)).astype(onp.float32)
B = R.uniform(-1.0, 1.0, (3, 4)).astype(onp.float32)


def k(x):
    return np.array(x)


@pytest.mark.parametrize("name", [
    "exp", "log", "sqrt", "abs", "sign", "sin", "cos", "tan", "tanh", "sinh", "cosh", "floor",
    "ceil", "rint", "square", "reciprocal", "log2", "log10", "log1p", "expm1", "negative",
])
def test_unary_math(name):
    out = getattr(np, name)(k(A))
    assert out.dtype == onp.float32
    assert_close(out, getattr(onp, name)(A), rtol=1e-5)


@pytest.mark.parametrize("name", [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod",
    "floor_divide", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
])
def test_binary_math(name):
    out = getattr(np, name)(k(A), k(B))
    expected = getattr(onp, name)(A, B)
    assert out.dtype == expected.dtype
    assert_close(out, expected, rtol=1e-5, atol=1e-6)


def test_operators_and_scalars():
    x, a = k(A), A
    assert_close(x + 1, a + 1)
    assert_close(2 - x, 2 - a)
    assert_close(x * 2.5, a * 2.5)
    assert_close(1 / x, 1 / a)
    assert_close(x ** 2, a ** 2)
    assert_close(2 ** x, 2 ** a, rtol=1e-5)
    assert_close(-x, -a)
    assert_close(x // 0.3, a // onp.float32(0.3))
    assert_close(x % 0.3, a % onp.float32(0.3), atol=1e-5)
    assert (x + 1).dtype == onp.float32          # Python scalars do not promote
    assert (x * onp.float64(2)).dtype == onp.float32
    i = np.array(onp.arange(4))
    assert (i + 1).dtype == onp.int64 and (i / 2).dtype == onp.float32
    assert (i * 1.5).dtype == onp.float32
    assert_close((x > 1) == (a > 1), onp.ones_like(a, bool))
    assert (x < 1).dtype == onp.bool_
    assert_close((x > 1) & (x < 1.5), (a > 1) & (a < 1.5))
    assert_close(~(x > 1), ~(a > 1))
    assert_close(abs(k(B)), abs(B))


def test_numpy_operand_on_the_left():
    out = onp.ones(4, onp.float32) + np.ones(4)
    assert isinstance(out, np.ndarray) or isinstance(out, onp.ndarray)
    assert_close(out, onp.full(4, 2.0))


@pytest.mark.parametrize("fn", ["sum", "mean", "max", "min", "prod", "std", "var"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(fn, axis, keepdims):
    out = getattr(np, fn)(k(A), axis=axis, keepdims=keepdims)
    expected = getattr(onp, fn)(A, axis=axis, keepdims=keepdims)
    assert out.shape == onp.shape(expected)
    assert_close(out, expected, rtol=1e-5)
    method = getattr(k(A), fn)(axis=axis, keepdims=keepdims)
    assert_close(method, expected, rtol=1e-5)


def test_arg_and_logical_reductions():
    assert_close(np.argmax(k(B), axis=1), onp.argmax(B, axis=1))
    assert np.argmax(k(B)).item() == onp.argmax(B)
    assert_close(k(B).argmin(axis=0), onp.argmin(B, axis=0))
    assert np.argmax(k(B), axis=1).dtype == onp.int64
    assert bool(np.all(k(A) > 0)) and not bool(np.any(k(A) > 5))
    assert_close(np.any(k(B) > 0.5, axis=0), onp.any(B > 0.5, axis=0))
    assert int(np.count_nonzero(k(B) > 0)) == onp.count_nonzero(B > 0)
    assert_close(np.cumsum(k(A), axis=0), onp.cumsum(A, axis=0), rtol=1e-5)
    assert_close(np.cumsum(k(A)), onp.cumsum(A), rtol=1e-5)
    assert np.sum(np.ones((2, 3)), dtype="float64").dtype == onp.float64
    i = np.array(onp.arange(6).reshape(2, 3))
    assert np.mean(i).dtype == onp.float32 and float(np.mean(i)) == 2.5


def test_products():
    v, w = R.standard_normal(4).astype(onp.float32), R.standard_normal(4).astype(onp.float32)
    C = R.standard_normal((4, 5)).astype(onp.float32)
    for a, b in [(v, w), (A, v), (A, C), (v, C), (R.standard_normal((2, 3, 4)), C)]:
        assert_close(np.dot(k(a), k(b)), onp.dot(a, b), rtol=1e-4, atol=1e-5)
    assert_close(np.matmul(k(A), k(C)), A @ C, rtol=1e-5)
    assert_close(k(A) @ k(C), A @ C, rtol=1e-5)
    X = R.standard_normal((2, 3, 4))
    Y = R.standard_normal((2, 4, 5))
    assert_close(np.matmul(k(X), k(Y)), X @ Y, rtol=1e-5)
    Z = R.standard_normal((4, 3, 2))
    assert_close(np.tensordot(k(X), k(Z), axes=([1, 2], [1, 0])),
                 onp.tensordot(X, Z, axes=([1, 2], [1, 0])), rtol=1e-4)
    assert_close(np.tensordot(k(X), k(C), axes=1), onp.tensordot(X, C, axes=1), rtol=1e-4)
    assert_close(np.outer(k(v), k(w)), onp.outer(v, w), rtol=1e-5)
    assert_close(np.inner(k(A), k(B)), onp.inner(A, B), rtol=1e-5)
    assert_close(np.vdot(k(A), k(B)), onp.vdot(A, B), rtol=1e-5)
    assert_close(np.linalg.norm(k(A)), onp.linalg.norm(A), rtol=1e-5)
    assert_close(np.linalg.norm(k(A), axis=1), onp.linalg.norm(A, axis=1), rtol=1e-5)
    assert_close(np.linalg.norm(k(v), ord=1), onp.linalg.norm(v, ord=1), rtol=1e-5)


def test_where_clip_and_friends():
    assert_close(np.where(k(B) > 0, k(A), 0), onp.where(B > 0, A, 0))
    assert_close(np.where(k(B) > 0, 1.0, k(A)), onp.where(B > 0, 1.0, A))
    assert np.where(k(B) > 0, 1.0, k(A)).dtype == onp.float32
    assert_close(np.clip(k(B), -0.5, 0.5), onp.clip(B, -0.5, 0.5))
    assert_close(k(B).clip(0, None), onp.clip(B, 0, None))
    nan = np.array([1.0, onp.nan, onp.inf])
    assert to_np(np.isnan(nan)).tolist() == [False, True, False]
    assert to_np(np.isinf(nan)).tolist() == [False, False, True]
    assert to_np(np.isfinite(nan)).tolist() == [True, False, False]


def test_shape_functions():
    x, a = k(A), A
    assert_close(x.reshape(2, 6), a.reshape(2, 6))
    assert_close(x.reshape((-1, 2)), a.reshape(-1, 2))
    assert_close(np.reshape(x, (4, -1)), a.reshape(4, -1))
    assert_close(np.transpose(x), a.T)
    X = R.standard_normal((2, 3, 4)).astype(onp.float32)
    assert_close(np.transpose(k(X), (1, 0, 2)), X.transpose(1, 0, 2))
    assert_close(k(X).transpose(2, 0, 1), X.transpose(2, 0, 1))
    assert_close(np.swapaxes(k(X), 0, 2), X.swapaxes(0, 2))
    assert_close(np.moveaxis(k(X), 0, -1), onp.moveaxis(X, 0, -1))
    assert np.expand_dims(x, 1).shape == (3, 1, 4)
    assert np.squeeze(np.ones((1, 3, 1))).shape == (3,)
    assert np.broadcast_to(np.ones((3, 1)), (2, 3, 4)).shape == (2, 3, 4)
    assert_close(np.concatenate([x, x], axis=1), onp.concatenate([a, a], axis=1))
    assert_close(np.stack([x, x], axis=1), onp.stack([a, a], axis=1))
    assert_close(np.vstack([x, x]), onp.vstack([a, a]))
    assert_close(np.hstack([x, x]), onp.hstack([a, a]))
    for got, want in zip(np.split(x, 2, axis=1), onp.split(a, 2, axis=1)):
        assert_close(got, want)
    for got, want in zip(np.split(x, [1, 3], axis=1), onp.split(a, [1, 3], axis=1)):
        assert_close(got, want)
    assert_close(np.flip(x, 0), onp.flip(a, 0))
    assert_close(np.repeat(x, 2, axis=0), onp.repeat(a, 2, axis=0))
    assert_close(np.tile(x, (2, 1)), onp.tile(a, (2, 1)))
    assert_close(np.take(x, [0, 2], axis=1), onp.take(a, [0, 2], axis=1))
    assert_close(np.pad(x, ((1, 0), (0, 2))), onp.pad(a, ((1, 0), (0, 2))))
    assert_close(np.sort(k(B), axis=1), onp.sort(B, axis=1))
    assert_close(np.argsort(k(B), axis=0), onp.argsort(B, axis=0))
    assert_close(x.flatten(), a.flatten())
    idx = onp.argsort(B, axis=1)
    assert_close(np.take_along_axis(k(B), np.array(idx), 1), onp.take_along_axis(B, idx, 1))
    assert_close(np.tril(x), onp.tril(a))
    assert_close(np.diag(np.array([1.0, 2.0])), onp.diag([1.0, 2.0]))
    assert np.unique(np.array([3, 1, 3])).tolist() == [1, 3]


@pytest.mark.parametrize("join", [lambda x: np.concatenate([x]), lambda x: np.stack([x[0]]),
                                  lambda x: np.vstack([x]), lambda x: np.hstack([x])])
def test_joining_one_array_makes_a_new_one(join):
    """As in NumPy, joining a single array copies it: writing the result leaves the input
    (a foreach over one row returned the data itself, so `ys *= 2` changed it)."""
    x = k(A[:1])
    y = join(x)
    y *= 3
    assert_close(x, A[:1])
    out = np.zeros((1,) + A.shape[1:])
    np.concatenate([x], out=out)
    assert_close(out, A[:1])

"""Sums and max/min over contiguous rows in generated C (backend/c/row_reductions.py):
vector loops that equal eager, max/min exactly (the first NaN; among equal zeros the first,
as the scalar loop before them chose, where NumPy's own SIMD order decides), sums within
float rounding, at row lengths 1 and up, with NaN and infinities; and the
softmax and layer norm a training step keeps written out, forward and backward."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import autograd, np, npx
from conftest import compiled_c
from kiln.backend.c import build

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")


def _rows(shape, dtype, seed):
    rng = onp.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10
    flat = x.reshape(-1, shape[-1])
    flat[1, 0] = onp.nan                       # a NaN first in its row
    if shape[-1] > 3:
        flat[2, 3] = onp.nan                   # a NaN later, and a second NaN after it
        flat[2, -1] = onp.nan
        flat[3, 1] = onp.inf
        flat[4, 2] = -onp.inf
    flat[5] = 0.0
    flat[5, ::2] = -0.0                        # zeros of both signs: the first one counts
    flat[6] = -0.0
    flat[6, -1] = 0.0
    flat[7] = -1.0
    flat[7, 0] = 0.0                          # a row whose max is one +0
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [onp.float32, onp.float64])
@pytest.mark.parametrize("shape,axis", [((8, 1), -1), ((8, 5), -1), ((8, 4, 37), -1),
                                        ((8, 4, 37), (1, 2)), ((16, 200), None)])
@pytest.mark.parametrize("op", ["max", "min"])
def test_row_max_min_equal_eager_exactly(dtype, shape, axis, op):
    x = _rows(shape, dtype, 0)
    got, source = compiled_c(lambda v: getattr(np, op)(v, axis=axis), x)
    assert f"reduction({op}:acc)" in source
    want = getattr(np, op)(np.array(x), axis=axis).asnumpy()
    onp.testing.assert_array_equal(onp.isnan(got), onp.isnan(want))
    onp.testing.assert_array_equal(got, want)
    onp.testing.assert_array_equal(onp.signbit(got), onp.signbit(_scalar_loop(x, axis, op)))


def _scalar_loop(x, axis, op):
    """The scalar loop's result: the first NaN, else the first of the extreme values."""
    axes = tuple(range(x.ndim)) if axis is None else (
        tuple(a % x.ndim for a in axis) if isinstance(axis, tuple) else (axis % x.ndim,))
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = x.transpose(kept + list(axes)).reshape(-1, int(onp.prod([x.shape[d] for d in axes])))
    out = []
    for row in rows:
        acc = row[0]
        for v in row[1:]:
            if (v > acc if op == "max" else v < acc) or (v != v and acc == acc):
                acc = v
        out.append(acc)
    return onp.array(out, x.dtype).reshape([x.shape[d] for d in kept])


@pytest.mark.parametrize("dtype", [onp.float32, onp.float64])
@pytest.mark.parametrize("shape,axis", [((8, 1), -1), ((8, 5), -1), ((8, 4, 37), -1),
                                        ((8, 4, 37), (1, 2)), ((16, 200), None)])
def test_row_sums_equal_eager(dtype, shape, axis):
    x = _rows(shape, dtype, 1)
    got, source = compiled_c(lambda v: np.sum(v, axis=axis, keepdims=True), x)
    assert "reduction(+:acc)" in source
    want = np.sum(np.array(x), axis=axis, keepdims=True).asnumpy()
    onp.testing.assert_array_equal(onp.isnan(got), onp.isnan(want))
    onp.testing.assert_allclose(got, want, rtol=1e-5 if dtype == onp.float32 else 1e-12,
                                atol=1e-4)


def test_empty_rows_sum_to_zero():
    x = onp.zeros((3, 0), onp.float32)
    got, _ = compiled_c(lambda v: np.sum(v, axis=-1), x)
    onp.testing.assert_array_equal(got, onp.zeros(3, onp.float32))


def _train_grad(fn, x, compiled):
    v = np.array(x)
    v.attach_grad()
    f = kiln.hybridize(fn, backend="c") if compiled else fn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.record():
            y = f(v)
            loss = (y * np.array(onp.linspace(-1, 1, y.size).reshape(y.shape)
                                 .astype(x.dtype))).sum()
        loss.backward()
    return y.asnumpy(), v.grad.asnumpy()


@pytest.mark.parametrize("form", ["softmax", "layer_norm"])
@pytest.mark.parametrize("n", [1, 2, 128])
def test_softmax_and_layer_norm_in_training_equal_eager(form, n):
    x = onp.random.default_rng(n).standard_normal((6, n)).astype(onp.float32) * 3
    x[0, 0] = onp.nan
    if n > 1:
        x[1, 1] = onp.inf
    fn = (lambda v: npx.softmax(v, axis=-1)) if form == "softmax" else (
        lambda v: npx.layer_norm(v, np.ones(n), np.zeros(n), axis=-1, eps=1e-5))
    y, g = _train_grad(fn, x, True)
    y0, g0 = _train_grad(fn, x, False)
    onp.testing.assert_array_equal(onp.isnan(y), onp.isnan(y0))
    onp.testing.assert_array_equal(onp.isnan(g), onp.isnan(g0))
    onp.testing.assert_allclose(y, y0, rtol=1e-5, atol=1e-5)
    onp.testing.assert_allclose(g, g0, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_of_integers_equals_eager(log):
    """The row kernels read their input in the result's type; an int64 input (found by
    the fuzzer: its bits were read as doubles) runs where it is converted first."""
    def f(a):
        return npx.log_softmax(a.reshape(-1)) if log else npx.softmax(a.reshape(-1))
    x = np.array(onp.array([[0], [-1], [2]], dtype="int64"))
    compiled = kiln.hybridize(f, backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(x).asnumpy()
    onp.testing.assert_allclose(got, f(x).asnumpy(), rtol=1e-12)

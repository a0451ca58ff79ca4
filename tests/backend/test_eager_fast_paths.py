"""The shortcuts of kiln's eager per-op path give what the general path gives, and errors
stay as clear (bench/eager_ops.py measures what they save)."""
import numpy as onp
import pytest

from kiln import np
from kiln import autograd
from kiln.base import KilnError, normalize_axis
from kiln.ops.rules import broadcast_shapes


@pytest.mark.parametrize("shape", [(4, 3, 5), (2, 4, 3, 5), (0, 3, 5), (4, 0, 5), (4, 3, 0)])
@pytest.mark.parametrize("layout", ["contiguous", "swapaxes", "strided"])
def test_batch_times_matrix_matches_numpy(shape, layout):
    rng = onp.random.default_rng(0)
    if layout == "swapaxes":      # a (batch, steps, k) view of a (steps, batch, k) array
        base = rng.normal(size=(shape[1], shape[0]) + shape[2:]).astype("float32")
        a = base.swapaxes(0, 1)
    elif layout == "strided":
        a = rng.normal(size=shape[:-1] + (2 * shape[-1],)).astype("float32")[..., ::2]
    else:
        a = rng.normal(size=shape).astype("float32")
    w = rng.normal(size=(shape[-1], 6)).astype("float32")
    got = np.matmul(np.array(a), np.array(w.T).T)     # w as a transposed view, as Dense
    want = onp.matmul(a.astype("float64"), w.astype("float64"))
    assert got.shape == want.shape and got.dtype == onp.float32
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_batch_times_matrix_gradients_match_numpy():
    rng = onp.random.default_rng(1)
    av = rng.normal(size=(3, 4, 5)).astype("float32").swapaxes(0, 1)   # (4, 3, 5) view
    wv = rng.normal(size=(5, 2)).astype("float32")
    gv = rng.normal(size=(4, 3, 2)).astype("float32")
    a, w = np.array(av), np.array(wv)
    a.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = np.matmul(a, w)
    y.backward(np.array(gv))
    a64, w64, g64 = av.astype("float64"), wv.astype("float64"), gv.astype("float64")
    onp.testing.assert_allclose(a.grad.asnumpy(), g64 @ w64.T, rtol=1e-5, atol=1e-5)
    onp.testing.assert_allclose(w.grad.asnumpy(), onp.einsum("bsk,bsn->kn", a64, g64),
                                rtol=1e-5, atol=1e-5)


def test_unused_matmul_gradient_is_not_needed():
    x = np.ones((2, 3))          # data: no gradient wanted
    w = np.ones((3, 4))
    w.attach_grad()
    with autograd.record():
        y = np.matmul(x, w).sum()
    y.backward()
    assert x.grad is None
    onp.testing.assert_array_equal(w.grad.asnumpy(), onp.full((3, 4), 2.0))


def test_broadcast_shapes_shortcut_agrees_with_numpy():
    for a, b in [((2, 3), (2, 3)), ((), ()), ((0,), (0,)), ((2, 1), (1, 3)), ((3,), (2, 3))]:
        assert broadcast_shapes("add", a, b) == onp.broadcast_shapes(a, b)
    with pytest.raises(KilnError, match=r"add.*\(2, 3\) \(3, 2\)"):
        broadcast_shapes("add", (2, 3), (3, 2))


def test_binary_dtype_errors_raise_every_time():
    a = np.array([True, False])
    for _ in range(2):           # the promotion is remembered, the missing loop is not
        with pytest.raises(KilnError, match="subtract"):
            a - a
    for x, y in [("int32", "float32"), ("int8", "int64"), ("float32", "float64"),
                 ("bool", "int32")]:
        for _ in range(2):
            got = (np.ones((2,), dtype=x) + np.ones((2,), dtype=y)).dtype
            assert got == onp.result_type(x, y)


@pytest.mark.parametrize("axis,ndim,want", [(0, 1, 0), (-1, 3, 2), (2, 3, 2), (0, 0, 0),
                                            (onp.int64(-2), 2, 0)])
def test_normalize_axis_keeps_its_answers(axis, ndim, want):
    got = normalize_axis("op", axis, ndim)
    assert got == want and type(got) is int


@pytest.mark.parametrize("axis,ndim", [(3, 3), (-4, 3), (1, 0), (-1, 0), (True, 2),
                                       (1.0, 2)])
def test_normalize_axis_still_refuses(axis, ndim):
    with pytest.raises(KilnError, match="op"):
        normalize_axis("op", axis, ndim)


@pytest.mark.parametrize("cond", [[1.0, 0.0, onp.nan, -2.0, 0.0],
                                  [True, False, True, False, False]])
def test_where_gradient_is_where_of_the_gradient_to_the_bit(cond):
    """where's rule multiplies by the condition: the same bits as where(c, g, g * 0), an
    inf, NaN or -0.0 gradient included."""
    cv = onp.array(cond)
    gv = onp.array([onp.inf, onp.inf, -0.0, onp.nan, -3.0], "float32")
    a, b = np.ones((5,)), np.ones((5,))
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = np.where(np.array(cv), a, b)
    with onp.errstate(invalid="ignore"):
        y.backward(np.array(gv))
        c = cv.astype(bool)
        for got, want in [(a.grad, onp.where(c, gv, gv * 0)), (b.grad, onp.where(c, gv * 0, gv))]:
            got = got.asnumpy()
            assert onp.array_equal(got, want, equal_nan=True)
            assert onp.array_equal(onp.signbit(got), onp.signbit(want))


def test_where_gradient_compiled_equals_eager():
    from kiln.gluon import nn

    class Leaky(nn.HybridBlock):
        def forward(self, x):
            return np.where(x > 0, x, x * 0.2) * np.where(x < 0.5, 1.0, x)

    x0 = onp.random.default_rng(2).normal(size=(3, 4)).astype("float32")
    grads = []
    for hybrid in (False, True):
        net = Leaky()
        if hybrid:
            net.hybridize(backend="c")
        x = np.array(x0)
        x.attach_grad()
        with autograd.record():
            y = net(x).sum()
        y.backward()
        grads.append(x.grad.asnumpy())
    onp.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,axis", [((4, 7), -1), ((4, 7), 0), ((2, 3, 5), 1), ((9,), 0),
                                        ((3, 1), -1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("chunk", ["whole", "rows"])
def test_eager_softmax_shortcut_gives_the_composite_bits(shape, axis, dtype, name, chunk,
                                                         monkeypatch):
    from kiln import npx
    from kiln.npx import fused_softmax
    if chunk == "rows":     # blocks of 2 rows (big arrays go by blocks of rows)
        monkeypatch.setattr(fused_softmax, "CHUNK_BYTES", 2 * shape[-1] * 4)
    fn = getattr(npx, name)
    rng = onp.random.default_rng(3)
    xv = (rng.normal(size=shape) * 30).astype(dtype)
    xv.flat[0] = -onp.inf
    gv = rng.normal(size=shape).astype(dtype)

    def run():
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = fn(x, axis=axis)
        y.backward(np.array(gv))
        return fn(np.array(xv), axis=axis).asnumpy(), y.asnumpy(), x.grad.asnumpy()

    fast, fast_recorded, fast_grad = run()
    monkeypatch.setattr(fused_softmax, "concrete_float", lambda x: False)
    slow, slow_recorded, slow_grad = run()       # the primitives one by one
    assert slow.dtype == fast.dtype == onp.dtype(dtype)
    assert onp.array_equal(fast, slow, equal_nan=True)
    assert onp.array_equal(fast_recorded, slow_recorded, equal_nan=True)
    tol = 1e-5 if dtype == "float32" else 1e-12
    onp.testing.assert_allclose(fast_grad, slow_grad, rtol=tol, atol=tol)
    assert fn(np.array(xv), axis=axis, dtype="float16").dtype == onp.float16


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_eager_softmax_shortcut_gradients_match_finite_differences(name):
    from kiln import npx
    rng = onp.random.default_rng(4)
    xv, gv = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    f = lambda v: (getattr(npx, name)(np.array(v), axis=1).asnumpy() * gv).sum()  # noqa: E731
    x = np.array(xv)
    x.attach_grad()
    with autograd.record():
        y = getattr(npx, name)(x, axis=1)
    y.backward(np.array(gv))
    eps, fd = 1e-6, onp.zeros_like(xv)
    for i in onp.ndindex(xv.shape):
        d = onp.zeros_like(xv)
        d[i] = eps
        fd[i] = (f(xv + d) - f(xv - d)) / (2 * eps)
    onp.testing.assert_allclose(x.grad.asnumpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_eager_softmax_shortcut_second_derivative(name, monkeypatch):
    from kiln import npx
    from kiln.npx import fused_softmax
    rng = onp.random.default_rng(5)
    xv, gv = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))

    def second():
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = (getattr(npx, name)(x, axis=-1) * np.array(gv)).sum()
            (gx,) = autograd.grad(y, [x], create_graph=True)
            z = (gx * gx).sum()
        z.backward()
        return x.grad.asnumpy()

    fast = second()
    monkeypatch.setattr(fused_softmax, "concrete_float", lambda x: False)
    onp.testing.assert_allclose(fast, second(), rtol=1e-10, atol=1e-12)


def test_eager_softmax_shortcut_keeps_errors():
    from kiln import npx
    with pytest.raises(KilnError, match="max"):
        npx.softmax(np.ones((0, 3)), axis=0)
    with pytest.raises(KilnError, match="softmax"):
        npx.softmax(np.ones((2, 3)), axis=2)


@pytest.mark.parametrize("axes", [(), (1,)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eager_dropout_shortcut_gives_the_composite_bits(axes, dtype, monkeypatch):
    from kiln import npx
    from kiln.npx import fused_softmax
    rng = onp.random.default_rng(6)
    xv = rng.normal(size=(4, 6, 3)).astype(dtype)
    xv[0, 0, 0], xv[1, 1, 1] = onp.inf, -0.0
    gv = rng.normal(size=xv.shape).astype(dtype)

    def run():
        np.random.seed(11)
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = npx.dropout(x, p=0.3, axes=axes)
        y.backward(np.array(gv))
        return y.asnumpy(), x.grad.asnumpy()

    fast, fast_grad = run()
    monkeypatch.setattr(fused_softmax, "concrete_float", lambda x: False)
    slow, slow_grad = run()        # the composite: draw, compare, cast, two multiplies
    assert fast.dtype == slow.dtype == onp.dtype(dtype)
    assert onp.array_equal(fast, slow, equal_nan=True)
    assert onp.array_equal(onp.signbit(fast), onp.signbit(slow))
    assert onp.array_equal(fast_grad, slow_grad)
    assert 0 < (fast == 0).mean() < 1


@pytest.mark.parametrize("shape,label_shape", [((6, 9), (6,)), ((2, 3, 9), (2, 3)),
                                               ((5, 4), (5, 1))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("chunk", ["whole", "rows"])
def test_eager_softmax_cross_entropy_gives_the_composite_bits(shape, label_shape, dtype,
                                                              chunk, monkeypatch):
    """SoftmaxCrossEntropyLoss on sparse labels skips materializing log_softmax and pick's
    zero gradient; loss and gradient keep the composite's bits (clipped labels too)."""
    from kiln.gluon import loss as gloss
    from kiln.npx import fused_softmax
    if chunk == "rows":
        monkeypatch.setattr(fused_softmax, "CHUNK_BYTES", 2 * shape[-1] * 4)
    rng = onp.random.default_rng(7)
    xv = (rng.normal(size=shape) * 20).astype(dtype)
    lv = rng.integers(-1, shape[-1] + 2, size=label_shape).astype("float32")
    gv = rng.normal(size=shape[0]).astype(dtype)
    sw = rng.normal(size=shape[:1] + (1,) * (len(shape) - 1)).astype(dtype)

    def run():
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            loss = gloss.SoftmaxCrossEntropyLoss(weight=0.5)(x, np.array(lv), np.array(sw))
        loss.backward(np.array(gv))
        return loss.asnumpy(), x.grad.asnumpy()

    calls = []
    real = fused_softmax.softmax_cross_entropy
    monkeypatch.setattr(fused_softmax, "softmax_cross_entropy",
                        lambda *a: calls.append(1) or real(*a))
    fast, fast_grad = run()
    assert calls
    monkeypatch.setattr(fused_softmax, "cross_entropy_ok", lambda *a: False)
    slow, slow_grad = run()        # log_softmax (one rule), pick, negate
    assert fast.dtype == slow.dtype and fast.shape == slow.shape
    assert onp.array_equal(fast, slow)
    assert onp.array_equal(fast_grad, slow_grad)
    monkeypatch.setattr(fused_softmax, "concrete_float", lambda x: False)
    prim, prim_grad = run()        # every step a primitive with its own rule
    assert onp.array_equal(fast, prim)
    tol = 1e-6 if dtype == "float32" else 1e-13
    onp.testing.assert_allclose(fast_grad, prim_grad, rtol=tol, atol=tol)


def test_eager_softmax_cross_entropy_second_derivative(monkeypatch):
    from kiln.gluon import loss as gloss
    from kiln.npx import fused_softmax
    rng = onp.random.default_rng(8)
    xv, lv = rng.normal(size=(3, 5)), onp.array([0, 4, 2], dtype="float64")

    def second():
        x = np.array(xv)
        x.attach_grad()
        with autograd.record():
            y = gloss.SoftmaxCrossEntropyLoss()(x, np.array(lv)).sum()
            (gx,) = autograd.grad(y, [x], create_graph=True)
            z = (gx * gx).sum()
        z.backward()
        return x.grad.asnumpy()

    fast = second()
    monkeypatch.setattr(fused_softmax, "concrete_float", lambda x: False)
    onp.testing.assert_allclose(fast, second(), rtol=1e-10, atol=1e-12)

"""npx.foreach while hybridize traces becomes one `scan` node (not one copy of the body per
step), with values and gradients equal to the eager step-by-step loop."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np, npx


def _graph_ops(fn):
    entry = next(iter(fn._cached.entries.values()))
    return [n.op for n in entry.program.graph.nodes]


def rnn_like(xs, h, w):
    def body(x_t, state):
        new = np.tanh(np.matmul(state, w) + x_t)
        return new * 2, new
    ys, last = npx.foreach(body, xs, h)
    return ys, last


def two_in_two_out(a, b, s1, s2):
    def body(items, states):
        x, y = items
        acc, prod = states
        return [acc + x.sum(), prod * y], [acc + x.sum(), prod * y]
    (sums, prods), (acc, prod) = npx.foreach(body, [a, b], [s1, s2])
    return sums, prods, acc, prod


def _run(fn, values):
    arrays = [np.array(v) for v in values]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        outs = fn(*arrays)
        loss = sum((o * (k + 1.5)).sum() for k, o in enumerate(outs))
    loss.backward()
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in arrays]


@pytest.mark.parametrize("backend", ["numpy", "c"])
@pytest.mark.parametrize("case", ["rnn", "two"])
def test_hybridized_foreach_is_one_scan_equal_to_eager(backend, case):
    from kiln.backend.c import build as c_build
    if backend == "c" and not c_build.available():
        pytest.skip("no working C compiler")
    rng = onp.random.default_rng(1)
    if case == "rnn":
        fn, values = rnn_like, [rng.normal(size=s).astype("float32")
                                for s in ((5, 2, 3), (2, 3), (3, 3))]
    else:
        fn, values = two_in_two_out, [rng.normal(size=s).astype("float32")
                                      for s in ((4, 3), (4, 2, 2), (1,), (2, 2))]
    eager = _run(fn, values)
    hybrid = kiln.hybridize(fn, backend=backend)
    compiled = _run(hybrid, values)
    for c, e in zip(compiled, eager):
        assert c.shape == e.shape
        onp.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-5)
    ops = _graph_ops(hybrid)
    assert ops.count("scan") == 1
    assert ops.count("tanh") == 0  # the body is inside the scan node, not unrolled


def test_the_program_does_not_grow_with_the_length():
    rng = onp.random.default_rng(2)
    sizes = []
    for length in (3, 9):
        hybrid = kiln.hybridize(rnn_like)
        hybrid(*[np.array(rng.normal(size=s).astype("float32"))
                 for s in ((length, 2, 3), (2, 3), (3, 3))])
        sizes.append(len(_graph_ops(hybrid)))
    assert sizes[0] == sizes[1]


def test_mixed_dtypes_run_step_by_step_and_stay_correct():
    def counted(xs, h, n):
        def body(x_t, states):
            h, n = states
            return h + x_t, [h + x_t, n + 1]
        return npx.foreach(body, xs, [h, n])

    xs = np.array(onp.arange(6, dtype="float32").reshape(3, 2))
    args = (xs, np.zeros(2), np.array(0, dtype="int32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: the loop is just unrolled
        out, (h, n) = kiln.hybridize(counted)(*args)
    e_out, (e_h, e_n) = counted(*args)
    onp.testing.assert_allclose(out.asnumpy(), e_out.asnumpy())
    onp.testing.assert_allclose(h.asnumpy(), e_h.asnumpy())
    assert int(n.asnumpy()) == int(e_n.asnumpy()) == 3


def test_eager_foreach_gradient_reaches_every_row():
    xs = np.array(onp.arange(12, dtype="float32").reshape(4, 3))
    xs.attach_grad()
    with autograd.record():
        ys, last = npx.foreach(lambda x, s: (x * s, s + x), xs, np.ones(3))
        (ys.sum() + last.sum()).backward()
    # d/dx_t: s_t (its output) + 1 (last) + each later output's x_u
    x = xs.asnumpy()
    s = onp.cumsum(onp.vstack([onp.ones(3), x[:-1]]), axis=0)
    later = onp.cumsum(x[::-1], axis=0)[::-1] - x
    onp.testing.assert_allclose(xs.grad.asnumpy(), s + 1 + later)


def test_data_of_different_lengths_is_an_error():
    with pytest.raises(kiln.KilnError, match="share their first axis"):
        npx.foreach(lambda xs, s: (s, s), [np.zeros((3, 2)), np.zeros((4, 2))], np.zeros(2))


def test_a_random_body_runs_step_by_step_under_hybridize():
    def f(xs, h):
        return npx.foreach(lambda x, s: (npx.dropout(x + s, p=0.5), s + x), xs, h)
    hybrid = kiln.hybridize(f)
    with autograd.record():  # training mode: dropout draws masks
        ys, last = hybrid(np.ones((3, 4)), np.zeros(4))
    onp.testing.assert_allclose(last.asnumpy(), 3.0)
    kept = onp.arange(1, 4, dtype="float32")[:, None] * 2  # (x + s) / (1 - p) where kept
    assert onp.all((ys.asnumpy() == 0) | (ys.asnumpy() == kept))


def rows_of_any_width(xs):
    def body(x_t, states):
        a, b = states
        p = npx.relu(x_t * a + b)
        q = np.tanh(p - b) * a
        return q * a, [q, p]
    ys, (a, b) = npx.foreach(body, xs, [xs[0] * 0.5, xs[0] * 0 + 1])
    return ys, a, b


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_every_size_symbolic_values_and_gradients_equal_eager(backend):
    """dynamic=True names every size symbolic, the row width too: the NumPy executor's scan
    and scan_grad take the body's sizes from the call's values (they read the traced
    body's symbolic shapes and stopped)."""
    from kiln.backend.c import build as c_build
    if backend == "c" and not c_build.available():
        pytest.skip("no working C compiler")
    hybrid = kiln.hybridize(rows_of_any_width, backend=backend, dynamic=True)
    rng = onp.random.default_rng(4)
    for shape in ((2, 3), (1, 3), (5, 4), (3, 1)):
        values = [rng.normal(size=shape).astype("float32")]
        for got, want in zip(_run(hybrid, values), _run(rows_of_any_width, values)):
            onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

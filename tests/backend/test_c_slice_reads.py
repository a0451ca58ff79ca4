"""Slices in generated C that copy nothing: a slice whose items lie contiguously in its
input is a window, a pointer into it (backend/c/slice_views.py), and a slice read by one
elementwise node of its shape is read inside that node's loop (graph/passes/fuse.py),
as an LSTM step reads its four gates. Every form equals eager, forward and backward, at
fixed and at run-time sizes; the forms that must copy (a reversed slice, a slice with
two readers, a window that is the output) still do."""
import numpy as onp
import pytest

import kiln
from kiln import autograd, np, npx
from kiln.backend.c import build

pytestmark = [pytest.mark.skipif(not build.available(), reason="no C compiler"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]


def _two_readers(x):
    s = x[:, 1:3]
    return np.exp(s) + np.sin(s) * s


FORMS = {   # name: (function of x (rows, 12), slices the generated C still copies)
    "rows": (lambda x: np.exp(x[2:5]) * 2, 0),
    "one row": (lambda x: np.tanh(x[3]) + x[0], 0),
    "block of the flat array": (lambda x: x.reshape(-1)[4:16].reshape(3, 4) * x[:3, :4], 0),
    "gates": (lambda x: npx.sigmoid(x[:, :4]) * np.tanh(x[:, 4:8]) + npx.sigmoid(x[:, 8:]),
              0),
    "every other column": (lambda x: x[:, ::2] * 3 + x[:, 1::2], 0),
    "rows of a product": (lambda x: np.tanh((x @ x.T)[1:4]), 0),
    # a window into the value the loop reads and could write in place (graph/passes/memory.py)
    "a row of the value beside it": (lambda x: (lambda h: h - h[:1])(np.tanh(x)), 0),
    "a block of its flat self": (lambda x: (lambda h: h * 2 + h.reshape(-1)[3:15])(
        np.tanh(x)), 0),
    "reversed": (lambda x: x[::-1] + 1, 1),
    "two readers": (_two_readers, 1),
    "the output": (lambda x: (x * 2).reshape(-1)[4:16], 1),
}


def _x(rows, seed=0):
    return onp.random.RandomState(seed + rows).randn(rows, 12).astype("float32")


def _copies(compiled):
    source = kiln.programs(compiled).programs[0].entry.program.source
    return source.count("/* op: slice ->")


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_slice_form_equals_eager_and_copies_only_where_it_must(name):
    fn, copies = FORMS[name]
    compiled = kiln.hybridize(fn, backend="c", static_shape=True)
    x = np.array(_x(6))
    onp.testing.assert_allclose(compiled(x).asnumpy(), fn(x).asnumpy(), rtol=1e-5, atol=1e-6)
    assert _copies(compiled) == copies, kiln.programs(compiled).programs[0].entry.program.source


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_slice_form_at_run_time_sizes_equals_eager(name):
    fn, _ = FORMS[name]
    compiled = kiln.hybridize(fn, backend="c", dynamic_axes={0: {0: "rows"}})
    for rows in (6, 9, 7, 6):
        x = np.array(_x(rows))
        onp.testing.assert_allclose(compiled(x).asnumpy(), fn(x).asnumpy(), rtol=1e-5,
                                    atol=1e-6)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_slice_form_has_the_gradient_eager_has(name):
    fn, _ = FORMS[name]
    compiled = kiln.hybridize(fn, backend="c", static_shape=True)
    grads = []
    for f in (fn, compiled):
        x = np.array(_x(6))
        x.attach_grad()
        with autograd.record():
            y = f(x)
            head = np.array(onp.linspace(-1, 1, y.size, dtype="float32").reshape(y.shape))
            loss = (y * head).sum()
        loss.backward()
        grads.append(x.grad.asnumpy())
    onp.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_a_window_inside_a_loop_body_follows_each_step():
    """A scan's step reads the rows of its carried matrix through windows: each step's
    window points into that step's value."""
    def f(xs, h):
        def step(x, h):
            new = np.tanh(h[:2] * x + h[2:])
            return new, np.concatenate([new, h[:2]], axis=0)
        ys, h = npx.foreach(step, xs, h)
        return ys
    xs = np.array(onp.random.RandomState(1).randn(5, 2, 3).astype("float32"))
    h = np.array(onp.random.RandomState(2).randn(4, 3).astype("float32"))
    compiled = kiln.hybridize(f, backend="c")
    onp.testing.assert_allclose(compiled(xs, h).asnumpy(), f(xs, h).asnumpy(), rtol=1e-5,
                                atol=1e-6)

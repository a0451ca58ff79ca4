"""A scan step writes its results where they go (backend/c/scan.py, Sub's placed outputs):
the carried values into the next history row, the step outputs into their rows of the
result, the backward's carried gradients into the buffer the next step reads, its sequence
gradients and stacked rows into their rows. What the body cannot write there (a value it
passes through, returns twice, or swaps with another) is copied, and these forms check
that both paths give eager's values and gradients, at lengths 0, 1 and more, forward and
reversed, with a fixed and a run-time length."""
import re

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.backend.c import build
from kiln.gluon.rnn import time_loop
from conftest import outputs_and_gradients

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")


def swapped(xs, a, b, w):
    """Carried values swapped and passed through, one also the step's output."""
    def step(x_t, states):
        a, b = states
        new = np.tanh(np.matmul(a, w) + x_t)
        return new, [b + new, new]
    ys, (a_end, b_end) = time_loop.run(step, xs, [a, b])
    return ys, a_end, b_end


def row_through(xs, a, b, w):
    """The step's output is its input row; a carried value passes through unchanged."""
    def step(x_t, states):
        a, b = states
        return x_t, [np.tanh(np.matmul(a, w) * b + x_t), b]
    ys, (a_end, b_end) = time_loop.run(step, xs, [a, b])
    return ys, a_end, b_end


def lstm_like(xs, h, c, w):
    """The gates of one product sliced four ways, h the output and a carried value."""
    def step(x_t, states):
        h, c = states
        g = np.matmul(h, w) + x_t
        n = h.shape[1]
        i, f, u, o = (g[:, k * n:(k + 1) * n] for k in range(4))
        c = npx_sigmoid(f) * c + npx_sigmoid(i) * np.tanh(u)
        h = npx_sigmoid(o) * np.tanh(c)
        return h, [h, c]
    ys, (h_end, c_end) = time_loop.run(step, xs, [h, c])
    return ys, h_end, c_end


def npx_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reversed_form(xs, a, b, w):
    def step(x_t, states):
        a, b = states
        new = np.tanh(np.matmul(a, w) * b + x_t)
        return new * 2, [new, b]
    ys, (a_end, b_end) = time_loop.run(step, xs, [a, b], reverse=True)
    return ys, a_end, b_end


def values(form, length, rng):
    n = 3
    gates = 4 * n if form is lstm_like else n
    return [rng.normal(size=(length, 2, gates)).astype("float32"),
            rng.normal(size=(2, n)).astype("float32"),
            rng.normal(size=(2, n)).astype("float32"),
            rng.normal(size=(n, gates)).astype("float32") * 0.5]


FORMS = [swapped, row_through, lstm_like, reversed_form]


def no_steps(vals):
    """Values and gradients of a form over no steps (an eager loop cannot stack no rows):
    the states come out as they went in, and their gradients are the loss's weights."""
    xs, a, b, w = vals
    heads = [onp.linspace(-1, 1, v.size).reshape(v.shape).astype("float32") for v in (a, b)]
    return [onp.zeros((0,) + a.shape, "float32"), a, b, onp.zeros_like(xs), *heads,
            onp.zeros_like(w)]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("length", [1, 5])
def test_placed_and_copied_results_equal_eager(form, length):
    vals = values(form, length, onp.random.default_rng(length))
    eager = outputs_and_gradients(form, vals)
    compiled = outputs_and_gradients(kiln.hybridize(form, backend="c"), vals)
    for got, want in zip(compiled, eager):
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", FORMS)
def test_at_run_time_lengths_and_no_steps(form):
    f = kiln.hybridize(form, backend="c", dynamic_axes={"xs": {0: "steps"}})
    programs = []
    for length in (4, 0, 1, 6, 9):
        vals = values(form, length, onp.random.default_rng(10 + length))
        want = outputs_and_gradients(form, vals) if length else no_steps(vals)
        for got, expected in zip(outputs_and_gradients(f, vals), want):
            onp.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        programs.append(len(kiln.programs(f).programs))
    assert programs[-1] == programs[-2] == programs[-3]     # 1, 6 and 9 steps: one program


def loop_bodies(source):
    """The text of each `for (int64_t i ...)` time loop of a scan in the source."""
    return re.findall(r"  for \(int64_t i = [^\n]*\n(.*?)\n  \}\n", source, re.S)


def test_an_lstm_step_copies_only_its_output_twice_returned():
    vals = values(lstm_like, 5, onp.random.default_rng(0))
    f = kiln.hybridize(lstm_like, backend="c")
    outputs_and_gradients(f, vals)
    (entry,) = f._cached.entries.values()
    forward, backward = loop_bodies(entry.program.source), loop_bodies(entry.grad[0].source)
    assert forward and backward
    # h is both the carried value (written into the next history row) and the output row
    # (a copy of it); the backward step writes everything where it goes
    assert [b.count("memcpy") for b in forward] == [1]
    assert [b.count("memcpy") for b in backward] == [0]

"""Elementwise steps of a loop body merged into one loop (backend/c/loop_merge.py), and a
merged loop storing what a concatenation joins straight into its result: each form equals
eager forward and backward, and the generated bodies have the loops they should."""
import re

import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.backend.c import build
from kiln.gluon.rnn import time_loop
from conftest import outputs_and_gradients

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")


def cell(xs, h, c, w):
    """A cell whose new state is also read by the output's loop (a stored result)."""
    def step(x_t, states):
        h, c = states
        a, b = npx.sigmoid(x_t), np.tanh(x_t)
        c = a * c + b
        h = np.tanh(c) * a + np.matmul(h, w) * 0
        return h, [h, c]
    ys, (h, c) = time_loop.run(step, xs, [h, c])
    return ys, h, c


def reader_between(xs, h, c, w):
    """A row sum reads an early loop's result; a later loop reads it too, one reads the
    sum: the first two run as one loop before the sum, the last after it."""
    def step(x_t, states):
        h, c = states
        u = np.tanh(x_t + h)
        s = u.sum(axis=1, keepdims=True)
        v = u * 2 + c
        return np.matmul(h, w) + s * v, [v, u]
    ys, (h, c) = time_loop.run(step, xs, [h, c])
    return ys, h, c


def sliced_result(xs, h, c, w):
    """A loop reading another's result through a slice is not merged with it."""
    def step(x_t, states):
        h, c = states
        u = np.tanh(x_t * h)
        v = np.concatenate([u[:, 1:], u[:, :1]], axis=1) * c
        return v + np.matmul(h, w), [v, u]
    ys, (h, c) = time_loop.run(step, xs, [h, c])
    return ys, h, c


def joined(xs, h, c, w):
    """Two loop results joined along columns and read by a matmul, as an LSTM step's gate
    gradients are: written into the concatenation's places."""
    def step(x_t, states):
        h, c = states
        p, q = npx.sigmoid(x_t) * c, np.tanh(x_t) * h
        g = np.concatenate([p, q], axis=1)
        return np.matmul(g, w), [np.tanh(h), c * 0.9]
    ys, (h, c) = time_loop.run(step, xs, [h, c])
    return ys, h, c


def joined_and_read(xs, h, c, w):
    """A concatenation of results one of which is also read elsewhere copies them."""
    def step(x_t, states):
        h, c = states
        p, q = npx.sigmoid(x_t) * c, np.tanh(x_t) * h
        g = np.concatenate([p, q], axis=1)
        return np.matmul(g, w), [p * 3, q]
    ys, (h, c) = time_loop.run(step, xs, [h, c])
    return ys, h, c


def in_place(xs, h, c, w):
    """The merged loop's result may take the place of an input that dies there, which its
    other members read at the same element."""
    def step(x_t, states):
        h, c = states
        m = np.matmul(h, w[:, :3]) + x_t
        p = np.tanh(m)
        q = npx.sigmoid(m) * p + c
        return q * 2, [q, p]
    ys, (h, c) = time_loop.run(step, xs, [h, c])
    return ys, h, c


FORMS = [cell, reader_between, sliced_result, joined, joined_and_read, in_place]


def values(form, rng):
    w = rng.normal(size=(3, 6 if form in (joined, joined_and_read) else 3)) * 0.5
    if form in (joined, joined_and_read):
        w = rng.normal(size=(6, 3)) * 0.5
    return [rng.normal(size=(5, 2, 3)).astype("float32"),
            rng.normal(size=(2, 3)).astype("float32"),
            rng.normal(size=(2, 3)).astype("float32"), w.astype("float32")]


def bodies(source):
    """{function name: its text} of the subgraph functions (loop bodies) of a source."""
    return dict(re.findall(r"static int (kiln_sub\d+)\(void \*\*P\) \{\n(.*?)\n  return 0;",
                           source, re.S))


def programs(form, vals):
    f = kiln.hybridize(form, backend="c")
    got = outputs_and_gradients(f, vals)
    (entry,) = f._cached.entries.values()
    return got, bodies(entry.program.source), bodies(entry.grad[0].source)


@pytest.mark.parametrize("form", FORMS)
def test_merged_loops_equal_eager(form):
    vals = values(form, onp.random.default_rng(3))
    got, _, _ = programs(form, vals)
    for a, b in zip(got, outputs_and_gradients(form, vals)):
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def loops(body):
    return body.count("/* fused:")


def test_a_cell_is_one_loop_forward_and_backward():
    _, forward, backward = programs(cell, values(cell, onp.random.default_rng(0)))
    assert [loops(b) for b in forward.values()] == [1]
    assert [loops(b) for b in backward.values()] == [1]


def test_a_loop_runs_before_the_first_reader_of_its_results():
    _, forward, _ = programs(reader_between, values(reader_between,
                                                    onp.random.default_rng(0)))
    (body,) = forward.values()
    # tanh and the v loop merged before the sum; s * v after it (in the matmul's epilogue)
    assert loops(body) == 1
    assert body.index("/* fused:") < body.index("sum") < body.index("matmul")


def test_a_slice_of_a_result_is_not_read_in_the_same_loop():
    _, forward, _ = programs(sliced_result, values(sliced_result, onp.random.default_rng(0)))
    (body,) = forward.values()
    assert loops(body) >= 2


def test_a_concatenation_read_only_by_the_matmul_is_written_in_place():
    _, forward, backward = programs(joined, values(joined, onp.random.default_rng(0)))
    (body,) = forward.values()
    assert "concatenate" not in body.replace("/* fused:", "")
    _, forward, _ = programs(joined_and_read, values(joined_and_read,
                                                     onp.random.default_rng(0)))
    (body,) = forward.values()
    assert "op: concatenate" in body

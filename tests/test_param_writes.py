"""New parameter values computed straight into the parameter (backend/c/param_writes.py)."""
import numpy as onp
import pytest

from kiln import np, gluon, init
from kiln.backend.c import build
from kiln.backend.c.program import CProgram
from kiln.fit import make_step
from kiln.gluon import nn
from kiln.graph.ir import Graph, Node

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")
F32 = onp.dtype("float32")


def node(op, *inputs, **attrs):
    return Node(op, inputs, attrs, inputs[0].shape, F32)


def program(outputs, state_outputs, w, g):
    graph = Graph([g], [w], outputs)
    graph.state_outputs = state_outputs
    return CProgram(graph)


def leaves(shape=(6, 5)):
    return (Node("param", (), {}, shape, F32, name="w"),
            Node("input", (), {}, shape, F32, name="g"))


def values(shape=(6, 5)):
    rng = onp.random.default_rng(0)
    return (rng.standard_normal(shape).astype(F32), rng.standard_normal(shape).astype(F32))


def test_an_update_nothing_else_needs_is_written_in_place():
    w, g = leaves()
    loss = node("exp", g)
    new_w = node("subtract", w, node("multiply", g, g))
    prog = program([loss, new_w], {1: 0}, w, g)
    assert prog._written == {1}
    wv, gv = values()
    before = wv.copy()
    out = prog([gv], [wv])
    assert out[1] is None
    onp.testing.assert_allclose(out[0], onp.exp(gv), rtol=1e-6)
    onp.testing.assert_allclose(wv, before - gv * gv, rtol=1e-6)


def test_a_later_reader_of_the_old_value_keeps_the_copy():
    w, g = leaves()
    new_w = node("subtract", w, g)
    reads_w = Node("sum", (node("multiply", node("exp", g), w),), {"axis": None}, (), F32)
    # outputs in this order put the update first, the other reader of w after it
    prog = program([new_w, reads_w], {0: 0}, w, g)
    assert prog._written == set()
    wv, gv = values()
    before = wv.copy()
    out = prog([gv], [wv])
    onp.testing.assert_allclose(out[1], (onp.exp(gv) * before).sum(), rtol=1e-5)
    onp.testing.assert_allclose(out[0], before - gv, rtol=1e-6)
    onp.testing.assert_array_equal(wv, before)


def test_returning_the_parameter_blocks_the_write():
    w, g = leaves()
    new_w = node("subtract", w, g)
    prog = program([new_w, w], {0: 0}, w, g)
    assert prog._written == set()
    wv, gv = values()
    before = wv.copy()
    out = prog([gv], [wv])
    onp.testing.assert_array_equal(out[1], before)
    onp.testing.assert_allclose(out[0], before - gv, rtol=1e-6)


def test_a_converted_parameter_returns_its_new_value():
    w, g = leaves()
    new_w = node("subtract", w, node("multiply", g, g))
    prog = program([new_w], {0: 0}, w, g)
    assert prog._written == {0}
    wv, gv = values()
    strided = onp.zeros((6, 10), F32)
    strided[:, ::2] = wv
    view = strided[:, ::2]             # not contiguous: bound through a copy
    out = prog([gv], [view])
    onp.testing.assert_allclose(out[0], wv - gv * gv, rtol=1e-6)
    onp.testing.assert_array_equal(view, wv)   # the program wrote the copy, not the view


def test_compiled_sgd_step_updates_the_parameter_arrays_in_place():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(4))
    net.initialize(init.Xavier())
    x = np.random.normal(size=(8, 12))
    y = np.array(onp.arange(8) % 4, dtype="float32")
    net(x)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    step = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, backend="c")
    arrays = [p.data()._data for p in net.collect_params().values()]
    before = [a.copy() for a in arrays]
    step(x, y)
    prog = next(iter(step._cached.entries.values())).program
    assert isinstance(prog, CProgram)
    assert len(prog._written) == len(arrays)
    for p, a, b in zip(net.collect_params().values(), arrays, before):
        assert p.data()._data is a and not onp.array_equal(a, b)

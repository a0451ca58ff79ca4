"""Donated inputs (kiln/graph/passes/memory.py): a training step's backward program takes
the activations its forward returned, nothing else reads them, so once read for the last
time their memory holds the backward's own values, as MXNet's backward reuses its
forward's memory."""
import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln import autograd
from kiln.backend.c import build
from kiln.hybrid.cached import cached_function_of
from kiln._core.ir import Graph, Node
from kiln.graph.passes.memory import plan_memory
from kiln.gluon import nn

F32 = onp.dtype("float32")


def _chain():
    """x -> a -> b -> c -> d (same size); outputs d + small, c tiled to twice x's size, and the
    input `small` itself."""
    x = Node("input", (), {}, (64,), F32, name="x")
    small = Node("input", (), {}, (8,), F32, name="small")
    a = Node("exp", (x,), {}, (64,), F32)
    b = Node("negative", (a,), {}, (64,), F32)
    c = Node("exp", (b,), {}, (64,), F32)
    d = Node("negative", (c,), {}, (64,), F32)
    big = Node("tile", (d,), {"reps": (2,)}, (128,), F32)
    out = Node("add", (d, small), {}, (64,), F32)
    return Graph([x, small], [], [out, big, small], "chain"), (a, b, c, big, out)


def test_a_donated_input_holds_later_values_but_never_grows_or_holds_an_output():
    g, (a, b, c, big, out) = _chain()
    x, small = g.inputs
    plan = plan_memory(g, inplace_ok=lambda n: False, donated=[x, small])
    donated = {id(v): k for k, v in plan.donated.items()}
    assert id(x) in donated and id(small) not in donated   # small is an output
    bx = donated[id(x)]
    assert plan.capacities[bx] == 64 * 4                      # never grown
    assert plan.buffer_of[id(b)] == bx      # x dies at a, so b (after a) takes its memory
    for o in (out, big):
        assert plan.buffer_of[id(o)] != bx
    assert sum(c for k, c in enumerate(plan.capacities) if k not in plan.donated) \
        < sum(plan_memory(g, inplace_ok=lambda n: False).capacities)


def _net():
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu"), nn.Dense(32), nn.Activation("tanh"), nn.Dense(3))
    net.initialize(kiln.init.Xavier())
    return net


def _grads(net):
    return [p.grad().asnumpy().copy() for p in net.collect_params().values()]


@pytest.mark.skipif(not build.available(), reason="no working C compiler")
def test_backward_reuses_its_residuals_and_matches_eager_also_when_retained():
    x = np.array(onp.random.default_rng(0).standard_normal((256, 16)).astype("float32"))
    net = _net()
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    eager = _grads(net)
    net.hybridize(backend="c")
    for _ in range(2):
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        for e, h in zip(eager, _grads(net)):
            onp.testing.assert_allclose(h, e, rtol=1e-4, atol=1e-4)
    entry = next(e for e in cached_function_of(net).entries.values() if e.grad is not None)
    backward = entry.grad[0]
    assert backward.graph.memory_plan.donated      # it does write into its residuals
    # retain_graph: the second pass reads the same residuals again, unchanged
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward(retain_graph=True)
    first = _grads(net)
    loss.backward()
    for a, b in zip(first, _grads(net)):
        onp.testing.assert_array_equal(b, a)
    for e, h in zip(eager, first):
        onp.testing.assert_allclose(h, e, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not build.available(), reason="no working C compiler")
def test_autograd_grad_with_create_graph_keeps_the_residuals():
    x = np.array(onp.random.default_rng(1).standard_normal((64, 16)).astype("float32"))
    net = _net()
    net.hybridize(backend="c")
    x.attach_grad()
    with autograd.record():
        y = npx.relu(net(x)).sum()
    g1 = autograd.grad(y, [x], retain_graph=True)[0].asnumpy().copy()
    g2 = autograd.grad(y, [x])[0].asnumpy()
    onp.testing.assert_array_equal(g2, g1)

"""graph/split.py: a mask whose inputs backward has anyway (a ReLU's, from the ReLU's
output the next layer's weight gradient reads) is computed again by the backward program
rather than returned by the forward one."""
import numpy as onp

import kiln
from kiln import np
from kiln import autograd
from kiln.hybrid.cached import cached_function_of
from kiln._core.ir import Graph, Node
from kiln.graph.split import split_forward_backward
from kiln.gluon import nn

F32 = onp.dtype("float32")


def test_a_mask_of_a_kept_residual_is_recomputed_other_values_are_kept():
    x = Node("input", (), {}, (8,), F32, name="x")
    g = Node("input", (), {}, (8,), F32, name="g")
    zero = Node("const", (), {}, (), F32, value=onp.float32(0))
    r = Node("exp", (x,), {}, (8,), F32)               # backward reads it
    mask = Node("greater", (r, zero), {}, (8,), onp.dtype(bool))
    twice = Node("add", (r, r), {}, (8,), F32)
    gx = Node("multiply", (Node("multiply", (g, mask), {}, (8,), F32), twice), {}, (8,), F32)
    gr = Node("multiply", (gx, r), {}, (8,), F32)
    joint = Graph([x, g], [], [r, gr], "joint")
    forward, backward, n_res = split_forward_backward(joint, 1, 1)
    residuals = forward.outputs[1:]
    assert sorted(o.op for o in residuals) == ["add", "exp"] and n_res == 2
    assert "greater" in {n.op for n in backward.nodes}    # computed there
    from kiln.backend.numpy_exec import NumpyProgram
    xv, gv = onp.linspace(-2, 2, 8, dtype=F32), onp.linspace(1, 3, 8, dtype=F32)
    whole = NumpyProgram(joint)([xv, gv], [])
    fwd = NumpyProgram(forward)([xv], [])
    got = NumpyProgram(backward)(list(fwd[1:]) + [gv, xv], [])
    onp.testing.assert_array_equal(got[0], whole[1])


def test_a_relu_nets_forward_returns_no_mask_and_its_gradients_match_eager():
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(3))
    net.initialize(kiln.init.Xavier())
    x = np.array(onp.random.default_rng(0).standard_normal((32, 16)).astype("float32"))
    results = []
    for hybridized in (False, True):
        if hybridized:
            net.hybridize()
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        results.append([p.grad().asnumpy().copy() for p in net.collect_params().values()])
    for e, h in zip(*results):
        onp.testing.assert_allclose(h, e, rtol=1e-5, atol=1e-5)
    entry = next(e for e in cached_function_of(net).entries.values() if e.grad is not None)
    returned = entry.program.graph.outputs
    assert not any(o.dtype == onp.dtype(bool) for o in returned)

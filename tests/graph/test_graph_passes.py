"""Each optimization pass on its own, on hand-built graphs."""
import numpy as onp
import pytest

from kiln._core.ir import Graph, Node
from kiln.graph.passes import (eliminate_dead_code, fold_constants,
                               eliminate_common_subexpressions, group_elementwise, plan_memory)
from kiln.graph.passes.simplify import simplify
from kiln.backend.numpy_exec import NumpyProgram, is_view, writes_into

F32 = onp.dtype("float32")


def inp(shape, name="x"):
    return Node("input", (), {}, shape, F32, name=name)


def const(value):
    v = onp.asarray(value, dtype=F32)
    return Node("const", (), {}, v.shape, F32, value=v)


def op(name, *inputs, out=None, dtype=F32, **attrs):
    """A node; its shape is `out`, else the largest input shape."""
    if out is None:
        out = max((i.shape for i in inputs), key=len)
    return Node(name, inputs, attrs, out, dtype)


def run(graph, *inputs):
    return NumpyProgram(graph)([onp.asarray(i, F32) for i in inputs], [])


def test_dead_code_is_dropped():
    x = inp((3,))
    live = op("exp", x)
    dead = op("log", x)
    g = Graph([x], [], [live])
    assert dead not in g.nodes
    g2 = eliminate_dead_code(Graph([x], [], [live, dead]))
    assert g2.ops == ["exp", "log"]
    assert eliminate_dead_code(Graph([x], [], [live])).ops == ["exp"]


def test_constant_folding_collapses_constant_subgraphs():
    a, b, c, d = const(1), const(2), const(3), const(4)
    e = op("add", a, b)
    f = op("add", c, d)
    g = fold_constants(Graph([], [], [op("add", e, f)]))
    assert g.ops == []
    assert g.outputs[0].op == "const" and g.outputs[0].value == 10


def test_constant_folding_keeps_inputs_and_random_ops():
    x = inp((2,))
    r = Node("random_uniform", (), {"shape": (2,), "dtype": F32}, (2,), F32)
    g = fold_constants(Graph([x], [], [op("add", op("add", x, const(1.0)), r)]))
    assert sorted(g.ops) == ["add", "add", "random_uniform"]


def test_cse_merges_identical_nodes_but_not_random_draws():
    x = inp((3,))
    a1, a2 = op("exp", x), op("exp", x)
    g = eliminate_common_subexpressions(Graph([x], [], [op("add", a1, a2)]))
    assert g.ops == ["exp", "add"]
    r1 = Node("random_normal", (), {"shape": (3,), "dtype": F32}, (3,), F32)
    r2 = Node("random_normal", (), {"shape": (3,), "dtype": F32}, (3,), F32)
    g = eliminate_common_subexpressions(Graph([x], [], [op("add", r1, r2)]))
    assert g.ops.count("random_normal") == 2


def test_cse_distinguishes_attributes():
    x = inp((2, 3))
    s0 = op("sum", x, out=(3,), axis=(0,), keepdims=False)
    s1 = op("sum", x, out=(2,), axis=(1,), keepdims=False)
    g = eliminate_common_subexpressions(Graph([x], [], [s0, s1]))
    assert g.ops == ["sum", "sum"]


@pytest.mark.parametrize("build", [
    lambda x: op("multiply", x, const(1.0)),
    lambda x: op("multiply", const(1.0), x),
    lambda x: op("add", x, const(0.0)),
    lambda x: op("subtract", x, const(0.0)),
    lambda x: op("divide", x, const(1.0)),
    lambda x: op("negative", op("negative", x)),
    lambda x: op("transpose", op("transpose", x, out=(3, 2), axes=(1, 0)), out=(2, 3),
                 axes=(1, 0)),
    lambda x: op("reshape", op("reshape", x, out=(6,), shape=(6,)), out=(2, 3), shape=(2, 3)),
    lambda x: op("cast", x, dtype=F32),
])
def test_simplify_removes_identities(build):
    x = inp((2, 3))
    g = simplify(Graph([x], [], [build(x)]))
    assert g.ops == []
    assert g.outputs[0] is x


def test_simplify_keeps_broadcasting_identities():
    x = inp((3,))
    y = op("multiply", x, const(onp.ones((2, 3))), out=(2, 3))
    g = simplify(Graph([x], [], [y]))
    assert g.ops == ["multiply"]


def test_simplify_merges_reshape_chains():
    x = inp((2, 3))
    y = op("reshape", op("reshape", x, out=(3, 2), shape=(3, 2)), out=(6,), shape=(6,))
    g = simplify(Graph([x], [], [y]))
    assert g.ops == ["reshape"]
    assert onp.allclose(run(g, onp.arange(6).reshape(2, 3))[0], onp.arange(6))


def test_fusion_groups_chain_and_matmul_epilogue():
    x, w = inp((4, 3)), inp((3, 5), "w")
    mm = op("matmul", x, w, out=(4, 5))
    h = op("relu", op("add", mm, const(onp.ones(5))))
    other = op("exp", h)
    g = group_elementwise(Graph([x, w], [], [other]))
    assert [[n.op for n in grp] for grp in g.fusion_groups] == [["matmul", "add", "relu", "exp"]]


def test_matmul_heads_the_elementwise_group_it_merges_with():
    # SGD momentum: 0.9 * m comes first in node order, then the weight gradient's matmul;
    # the add joins both. Headed by the multiply, the merged group was not one kernel.
    m, x, dy = inp((3, 5), "m"), inp((4, 3), "x"), inp((4, 5), "dy")
    scaled = op("multiply", m, const(0.9))
    grad = op("matmul", op("transpose", x, out=(3, 4), axes=(1, 0)), dy, out=(3, 5))
    g = group_elementwise(Graph([m, x, dy], [], [op("add", scaled, grad)]))
    assert [[n.op for n in grp] for grp in g.fusion_groups] == [["matmul", "multiply", "add"]]


def test_fused_momentum_step_equals_eager_on_both_backends():
    import kiln
    from kiln import np as knp
    rng = onp.random.default_rng(0)
    m, x, dy = (knp.array(rng.standard_normal(s).astype("float32"))
                for s in ((3, 5), (4, 3), (4, 5)))

    def step(m, x, dy):
        return 0.9 * m + knp.dot(x.T, dy)
    want = step(m, x, dy).asnumpy()
    for backend in ("numpy", "c"):
        got = kiln.hybridize(step, backend=backend)(m, x, dy).asnumpy()
        onp.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_fusion_stops_at_values_with_two_readers():
    x = inp((4,))
    a = op("exp", x)
    b = op("add", a, a)
    c = op("log", a)
    g = group_elementwise(Graph([x], [], [op("multiply", b, c)]))
    for grp in g.fusion_groups:
        assert a not in grp[1:]


def _mlp_chain(n_layers, width=16):
    x = inp((1, width))
    h = x
    for k in range(n_layers):
        w = inp((width, width), f"w{k}")
        h = op("relu", op("add", op("matmul", h, w, out=(1, width)), const(onp.ones(width))))
    return h


@pytest.mark.parametrize("n_layers", [2, 3, 8, 20])
def test_memory_plan_of_dense_relu_chain_uses_two_buffers(n_layers):
    out = _mlp_chain(n_layers)
    ins = [n for n in _walk(out) if n.op == "input"]
    g = Graph(ins, [], [out])
    plan = plan_memory(g, is_view, writes_into)
    assert plan.num_buffers <= 2
    assert plan.bytes < plan.naive_bytes


def test_memory_plan_never_overlaps_live_values():
    x = inp((8,))
    a = op("exp", x)
    b = op("log", x)
    c = op("add", a, b)
    d = op("multiply", c, a)
    g = Graph([x], [], [d])
    v = onp.linspace(0.5, 2, 8).astype(F32)
    assert onp.allclose(run(g, v)[0], (onp.exp(v) + onp.log(v)) * onp.exp(v), rtol=1e-6)


def _walk(node, seen=None):
    seen = set() if seen is None else seen
    if id(node) in seen:
        return []
    seen.add(id(node))
    out = [node]
    for i in node.inputs:
        out += _walk(i, seen)
    return out


def test_simplify_transposed_product_becomes_product_of_transposes():
    a, b = inp((4, 3), "a"), inp((3, 5), "b")
    mm = op("matmul", a, b, out=(4, 5))
    t = op("transpose", mm, out=(5, 4), axes=(1, 0))
    g = simplify(Graph([a, b], [], [t]))
    assert g.ops == ["transpose", "transpose", "matmul"]
    av, bv = onp.random.rand(4, 3), onp.random.rand(3, 5)
    onp.testing.assert_allclose(run(g, av, bv)[0], (av.astype("f4") @ bv.astype("f4")).T,
                                rtol=1e-5)
    # a transposed operand cancels instead of stacking a second transpose
    at = op("transpose", inp((3, 4), "a2"), out=(4, 3), axes=(1, 0))
    g2 = simplify(Graph([at.inputs[0], b], [], [op("transpose", op("matmul", at, b, out=(4, 5)),
                                                   out=(5, 4), axes=(1, 0))]))
    assert g2.ops == ["transpose", "matmul"]
    # not when the product has another reader: that would compute it twice
    g3 = simplify(Graph([a, b], [], [t, mm]))
    assert g3.ops.count("matmul") == 1

"""The layout pass (kiln/graph/passes/layout.py) on hand-built graphs: heavy ops go
channels-last, the transposes between them cancel, and every value the graph returns is
unchanged (run on the NumPy executor, which runs channels-last ops through their NCHW
kernels)."""
import numpy as onp
import pytest

from kiln._core.ir import Graph, Node
from kiln.graph.passes import run_pipeline
from kiln.graph.passes.layout import assign_layouts, channels_last_pays
from kiln.backend.numpy_exec import NumpyProgram
from kiln.ops.registry import REGISTRY

F32 = onp.dtype("float32")
CONV = dict(stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1), groups=1)
POOL = dict(kind="max", kernel=(2, 2), stride=(2, 2), pad=(0, 0, 0, 0))


def inp(shape, name="x"):
    return Node("input", (), {}, shape, F32, name=name)


def node(op, *inputs, **attrs):
    shape, dtype = REGISTRY[op].shape(*inputs, **attrs)
    return Node(op, inputs, attrs, shape, dtype)


def conv_bias_relu(x, w, b):
    y = node("conv", x, w, **CONV)
    return node("relu", node("add", y, node("reshape", b, shape=(1, b.shape[0], 1, 1))))


def laid_out(inputs, outputs):
    """(original graph, laid-out graph after the usual clean-up passes)."""
    g = Graph(inputs, [], outputs)
    return g, run_pipeline("generic", assign_layouts(g))


def values(graph, arrays):
    return NumpyProgram(graph)([onp.asarray(a, F32) for a in arrays], [])


def check_same(g, laid, arrays):
    for a, b in zip(values(g, arrays), values(laid, arrays)):
        assert a.shape == b.shape
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def channel_transposes(graph):
    return [n for n in graph.nodes if n.op == "transpose" and n.ndim >= 3]


def arrays_for(*nodes, seed=0):
    rng = onp.random.default_rng(seed)
    return [rng.normal(size=n.shape).astype(F32) for n in nodes]


def test_conv_pool_conv_chain_stays_channels_last():
    x, w1, b1, w2 = inp((2, 3, 8, 8)), inp((4, 3, 3, 3), "w1"), inp((4,), "b1"), \
        inp((5, 4, 3, 3), "w2")
    h = node("pool", conv_bias_relu(x, w1, b1), **POOL)
    out = node("conv", h, w2, **CONV)
    g, laid = laid_out([x, w1, b1, w2], [out])
    heavy = [n for n in laid.nodes if n.op in ("conv", "pool")]
    assert len(heavy) == 3 and all(n.attrs.get("channels_last") for n in heavy)
    # one transpose into channels-last at the input, one back at the output
    assert len(channel_transposes(laid)) == 2
    assert laid.outputs[0].shape == (2, 5, 4, 4)
    check_same(g, laid, arrays_for(x, w1, b1, w2))


def test_residual_add_and_batch_norm_stay_channels_last():
    x, w1, w2 = inp((2, 4, 6, 6)), inp((4, 4, 3, 3), "w1"), inp((4, 4, 3, 3), "w2")
    gamma, beta = inp((4,), "gamma"), inp((4,), "beta")
    y = node("conv", x, w1, **CONV)
    y = node("relu", node("batch_norm_train", y, gamma, beta, eps=1e-5, axis=1))
    stats = node("batch_norm_stats", y, axis=1)
    y = node("relu", node("add", node("conv", y, w2, **CONV), x))
    out = node("conv", y, w2, **CONV)
    g, laid = laid_out([x, w1, w2, gamma, beta], [out, stats])
    assert len(channel_transposes(laid)) == 2          # x in, out back
    bn = [n for n in laid.nodes if n.op.startswith("batch_norm")]
    assert bn and all(n.attrs["axis"] == 3 for n in bn)
    check_same(g, laid, arrays_for(x, w1, w2, gamma, beta))


def test_a_value_read_by_a_heavy_op_and_a_reshape():
    x, w = inp((2, 3, 4, 4)), inp((6, 3, 3, 3), "w")
    h = node("relu", node("conv", x, w, **CONV))
    pooled = node("pool", h, **POOL)
    flat = node("reshape", h, shape=(2, 96))          # needs NCHW order
    g, laid = laid_out([x, w], [pooled, flat])
    reshape = [n for n in laid.nodes if n.op == "reshape" and n.shape == (2, 96)][0]
    assert reshape.inputs[0].op == "transpose"
    check_same(g, laid, arrays_for(x, w))


def test_outputs_and_reductions_keep_their_layout():
    x, w = inp((2, 3, 5, 5)), inp((4, 3, 3, 3), "w")
    y = node("conv", x, w, **CONV)
    outs = [y, node("sum", y, axis=(0, 2, 3), keepdims=False),
            node("max", y, axis=(2, 3), keepdims=True), node("sum", y, axis=(1,), keepdims=False)]
    g, laid = laid_out([x, w], outs)
    assert [o.shape for o in laid.outputs] == [o.shape for o in outs]
    check_same(g, laid, arrays_for(x, w))


def test_gradients_of_conv_and_pool_stay_channels_last():
    x, w, gy = inp((2, 3, 6, 6)), inp((4, 3, 3, 3), "w"), inp((2, 4, 3, 3), "gy")
    y = node("relu", node("conv", x, w, **CONV))
    g_pool = node("pool_grad", gy, y, **POOL)
    g_relu = node("multiply", g_pool, node("greater", y, Node(
        "const", (), {}, (), F32, value=onp.zeros((), F32))))
    gx = node("conv_grad_data", g_relu, w, in_shape=(6, 6), **CONV)
    gw = node("conv_grad_weight", x, g_relu, kernel=(3, 3), **CONV)
    gb = node("sum", g_relu, axis=(0, 2, 3), keepdims=False)
    g, laid = laid_out([x, w, gy], [gx, gw, gb])
    assert len(channel_transposes(laid)) == 3          # x and gy in, gx out
    check_same(g, laid, arrays_for(x, w, gy))


def test_small_broadcast_inputs_are_permuted_large_plain_ones_are_not():
    x, w = inp((2, 3, 4, 4)), inp((3, 3, 3, 3), "w")
    small = inp((2, 3, 1, 1), "small")
    spread = node("broadcast_to", small, shape=(2, 3, 4, 4))
    plain = inp((2, 3, 4, 4), "plain")
    y = node("conv", x, w, **CONV)
    a = node("conv", node("multiply", node("add", y, spread), small), w, **CONV)
    b = node("add", y, plain)                           # stays NCHW: plain is full-size
    g, laid = laid_out([x, w, small, plain], [a, b])
    add_plain = [n for n in laid.nodes if n.op == "add" and plain in n.inputs][0]
    assert add_plain.shape == (2, 3, 4, 4)
    check_same(g, laid, arrays_for(x, w, small, plain))


def test_nothing_changes_without_heavy_ops_the_library_takes():
    x, w = inp((2, 3, 4, 4)), inp((4, 3, 3, 3), "w")
    g = Graph([x, w], [], [node("relu", node("conv", x, w, **CONV))])
    assert assign_layouts(g, takes=lambda n: False) is g
    m, k = inp((3, 4)), inp((5, 4), "k")
    t = node("transpose", k, axes=(1, 0))
    g2 = Graph([m, k], [], [node("exp", node("matmul", m, t))])
    assert assign_layouts(g2) is g2


@pytest.mark.parametrize("nsp", [1, 3])
def test_other_spatial_ranks(nsp):
    x, w = inp((2, 3) + (5,) * nsp), inp((4, 3) + (3,) * nsp, "w")
    attrs = dict(stride=(1,) * nsp, dilation=(1,) * nsp, pad=(1, 1) * nsp, groups=1)
    y = node("relu", node("conv", x, w, **attrs))
    out = node("pool", y, kind="avg", kernel=(2,) * nsp, stride=(2,) * nsp, pad=(0, 0) * nsp)
    g, laid = laid_out([x, w], [out])
    assert all(n.attrs.get("channels_last") for n in laid.nodes if n.op in ("conv", "pool"))
    check_same(g, laid, arrays_for(x, w))


def test_the_layout_pays_for_chains_not_for_a_lone_conv_between_nchw_edges():
    x, w = inp((2, 8, 6, 6)), inp((8, 8, 3, 3), "w")
    lone = Graph([x, w], [], [node("relu", node("conv", x, w, **CONV))])
    assert not channels_last_pays(run_pipeline("generic", assign_layouts(lone)))
    y = x
    for _ in range(3):
        y = node("relu", node("conv", y, w, **CONV))
    chain = Graph([x, w], [], [node("pool", y, **POOL)])
    assert channels_last_pays(run_pipeline("generic", assign_layouts(chain)))

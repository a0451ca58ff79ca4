"""The bfloat16 mixed-precision pass (graph/passes/amp.py) on its own, and the programs
it makes: compiled (C with oneDNN's bfloat16 matmul, C without oneDNN, the NumPy
executor) equal eager code computing the same rounding (matmul_bf16 eagerly), and a
float32 reference within bfloat16's rounding."""
import numpy as onp
import pytest

from kiln import np, npx
from kiln._core.ir import Graph, Node
from kiln.backend import dnnl
from kiln.graph.passes import run_pipeline
from kiln.graph.passes.amp import to_bfloat16
from kiln.hybrid.cached import hybridize
from kiln.ops import REGISTRY
from kiln.ops.lowp import round_to_bfloat16

R = onp.random.default_rng(5)


def _dense_graph():
    x = Node("input", (), {}, (8, 6), "float32", name="x")
    w = Node("param", (), {}, (4, 6), "float32", name="w")
    wt = Node("transpose", (w,), {"axes": (1, 0)}, (6, 4), "float32")
    y = Node("matmul", (x, wt), {}, (8, 4), "float32", name="dense0")
    s = Node("softmax", (y,), {"axis": -1}, (8, 4), "float32")
    z = Node("matmul", (s, Node("input", (), {}, (4, 2), "float32", name="v")), {},
             (8, 2), "float32", name="dense1")
    ints = Node("matmul", (Node("input", (), {}, (2, 2), "int32", name="i"),) * 2, {},
                (2, 2), "int32")
    return Graph([x, z.inputs[1], ints.inputs[0]], [w], [z, ints], "amp")


def test_the_pass_puts_matmuls_in_bfloat16_and_reads_the_weight_in_place():
    g = to_bfloat16(_dense_graph())
    ops = [n.op for n in g.nodes if not n.is_source]
    assert ops.count("matmul_bf16") == 2 and "softmax" in ops
    first = next(n for n in g.nodes if n.name == "dense0")
    assert first.op == "matmul_bf16" and first.attrs == {"transpose_b": True}
    assert first.inputs[1].op == "param"        # the transpose is read, not computed
    assert [n.op for n in g.nodes if n.dtype == "int32" and not n.is_source] == ["matmul"]


def test_a_bias_added_to_a_bfloat16_matmul_becomes_its_argument():
    x = Node("input", (), {}, (8, 6), "float32", name="x")
    w = Node("param", (), {}, (4, 6), "float32", name="w")
    b = Node("param", (), {}, (4,), "float32", name="b")
    wt = Node("transpose", (w,), {"axes": (1, 0)}, (6, 4), "float32")
    y = Node("matmul", (x, wt), {}, (8, 4), "float32", name="dense0")
    z = Node("add", (y, b), {}, (8, 4), "float32")
    g = to_bfloat16(Graph([x], [w, b], [Node("relu", (z,), {}, (8, 4), "float32")], "bias"))
    (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
    assert [i.name for i in mm.inputs] == ["x", "w", "b"] and mm.attrs == {"transpose_b": True}
    assert "add" not in {n.op for n in g.nodes}
    # a matmul another node reads too keeps its own output and the add
    g = to_bfloat16(Graph([x], [w, b], [z, y], "both"))
    assert "add" in {n.op for n in g.nodes}


def test_a_weight_transposed_twice_is_read_as_it_lies():
    """Dense's input gradient reads W.T.T: the pass reads W, so no transposed copy of the
    weight is made (a training step's forward made one for its backward)."""
    g_in = Node("input", (), {}, (8, 4), "float32", name="g")
    w = Node("param", (), {}, (4, 6), "float32", name="w")
    wt = Node("transpose", (w,), {"axes": (1, 0)}, (6, 4), "float32")
    wtt = Node("transpose", (wt,), {"axes": (1, 0)}, (4, 6), "float32")
    y = Node("matmul", (g_in, wtt), {}, (8, 6), "float32", name="dx")
    g = to_bfloat16(Graph([g_in], [w], [y], "dx"))
    (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
    assert mm.inputs[1] is w and mm.attrs == {}
    assert "transpose" not in {n.op for n in g.nodes}


def _weight_gradient_graph(keep_product=False):
    x = Node("input", (), {}, (8, 6), "float32", name="x")
    g_in = Node("input", (), {}, (8, 4), "float32", name="g")
    xt = Node("transpose", (x,), {"axes": (1, 0)}, (6, 8), "float32")
    p = Node("matmul", (xt, g_in), {}, (6, 4), "float32", name="dw")
    gw = Node("transpose", (p,), {"axes": (1, 0)}, (4, 6), "float32")
    return Graph([x, g_in], [], [gw, p] if keep_product else [gw], "dw")


def test_a_weight_gradient_reads_its_operands_transposed_in_place():
    """(X.T @ G).T, Dense's weight gradient, is G.T @ X: one matmul_bf16 reading G
    transposed (transpose_a), with no copy of X.T and no transpose of the product."""
    g = to_bfloat16(_weight_gradient_graph())
    (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
    assert [i.name for i in mm.inputs] == ["g", "x"] and mm.attrs == {"transpose_a": True}
    assert mm.shape == (4, 6) and g.outputs == [mm]
    assert "transpose" not in {n.op for n in g.nodes}
    # a product something else reads too is computed as X.T @ G (X read in place) and
    # transposed for the other reader
    g = to_bfloat16(_weight_gradient_graph(keep_product=True))
    (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
    assert [i.name for i in mm.inputs] == ["x", "g"] and mm.attrs == {"transpose_a": True}
    assert [n.op for n in g.nodes if n.op == "transpose"] == ["transpose"]


@pytest.mark.parametrize("backend,onednn", [("c", True), ("c", False), ("numpy", True)])
def test_compiled_transposed_products_equal_eager(backend, onednn):
    """The two forms above compiled (oneDNN reading strides; without oneDNN the
    decomposition) equal the eager primitive, NaN and infinity included."""
    x = R.standard_normal((8, 6)).astype("float32")
    gv = R.standard_normal((8, 4)).astype("float32")
    w = R.standard_normal((4, 6)).astype("float32")
    x[3, 2], gv[5, 1], w[2, 0] = onp.nan, onp.inf, -onp.inf
    args = [np.array(a) for a in (x, gv, w)]

    p = R.standard_normal((2, 3, 8, 8)).astype("float32")
    p[1, 0, 2, 5] = onp.nan
    args.append(np.array(p))

    def f(x, g, w, p):        # attention's P.T @ dO: a stack read transposed in place
        return np.dot(x.T, g).T, np.dot(g, w.T.T), np.matmul(p.swapaxes(-1, -2), p)
    mm = REGISTRY["matmul_bf16"]
    want = [mm(args[1], args[0], transpose_a=True).asnumpy(), mm(args[1], args[2]).asnumpy(),
            mm(args[3], args[3], transpose_a=True).asnumpy()]
    h = hybridize(f, backend=backend)
    h._cached.precision = ("amp-bfloat16", {})
    if onednn:
        got = [o.asnumpy() for o in h(*args)]
    else:
        with dnnl.disabled():
            got = [o.asnumpy() for o in h(*args)]
    for a, b in zip(got, want):
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert onp.isnan(got[0]).any() and onp.isinf(got[1]).any()
    if backend == "c" and onednn:
        (entry,) = h._cached.entries.values()
        mms = [n for n in entry.program.graph.nodes if n.op == "matmul_bf16"]
        assert sorted(tuple(n.attrs) for n in mms) == [(), ("transpose_a",), ("transpose_a",)]


def test_deny_keeps_ops_and_named_nodes_in_float32():
    assert not any(n.op == "matmul_bf16" for n in to_bfloat16(_dense_graph(),
                                                              deny={"matmul"}).nodes)
    g = to_bfloat16(_dense_graph(), deny={"dense1"})
    assert [n.name for n in g.nodes if n.op == "matmul_bf16"] == ["dense0"]
    assert not any(n.op == "matmul_bf16"
                   for n in to_bfloat16(_dense_graph(), allow=frozenset()).nodes)


def test_the_pipeline_runs_the_pass_with_its_options():
    g = run_pipeline("amp-bfloat16", _dense_graph(), amp_allow=frozenset({"matmul"}),
                     amp_deny=frozenset({"dense0"}))
    assert [n.name for n in g.nodes if n.op == "matmul_bf16"] == ["dense1"]


def _mlp(x, w1, w2):
    h = npx.relu(np.dot(x, w1.T))
    return npx.softmax(np.matmul(h, w2), axis=-1), h.sum()


def _amp_mlp(x, w1, w2):
    """What the pass makes of _mlp, written with the primitive (the eager reference)."""
    mm = REGISTRY["matmul_bf16"]
    h = npx.relu(mm(x, w1, transpose_b=True))
    return npx.softmax(mm(h, w2), axis=-1), h.sum()


def _args(rows=32):
    return [np.array(R.standard_normal(s).astype("float32")) for s in
            ((rows, 64), (48, 64), (48, 16))]


@pytest.mark.parametrize("backend,onednn", [("c", True), ("c", False), ("numpy", True)])
def test_compiled_amp_equals_eager_bfloat16(backend, onednn):
    args = _args()
    want = [o.asnumpy() for o in _amp_mlp(*args)]
    f = hybridize(_mlp, backend=backend)
    f._cached.precision = ("amp-bfloat16", {})
    if onednn:
        got = [o.asnumpy() for o in f(*args)]
    else:
        with dnnl.disabled():
            got = [o.asnumpy() for o in f(*args)]
    (entry,) = f._cached.entries.values()
    ops = [n.op for n in entry.program.graph.nodes] if hasattr(entry.program, "graph") else []
    assert entry.program.backend == backend
    # with oneDNN the C program calls its bfloat16 matmul; without, casts and a float32 one
    assert ("matmul_bf16" in ops) == (backend == "c" and onednn) or backend == "numpy"
    for g, w in zip(got, want):
        onp.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    # and a float32 computation within bfloat16's rounding of the operands
    x, w1, w2 = [a.asnumpy().astype("float64") for a in args]
    h = onp.maximum(round_to_bfloat16(x).astype("float64") @ round_to_bfloat16(w1).T, 0)
    onp.testing.assert_allclose(got[1], h.sum(), rtol=1e-4)
    loose = onp.maximum(x @ w1.T, 0).sum()
    assert abs(got[1] - loose) <= 2 ** -7 * onp.abs(onp.maximum(x @ w1.T, 0)).sum()


def _cnn(x, w1, w2):
    h = npx.relu(npx.convolution(x, w1, kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True))
    return npx.convolution(h, w2, kernel=(3, 3), stride=(2, 2), num_filter=4, no_bias=True)


def _amp_cnn(x, w1, w2):
    cb = REGISTRY["conv_bf16"]
    h = npx.relu(cb(x, w1, stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1)))
    return cb(h, w2, stride=(2, 2), dilation=(1, 1), pad=(0, 0, 0, 0))


@pytest.mark.parametrize("backend,onednn", [("c", True), ("c", False), ("numpy", True)])
def test_compiled_amp_convolutions_equal_eager_bfloat16(backend, onednn):
    args = [np.array(R.standard_normal(s).astype("float32")) for s in
            ((2, 3, 10, 10), (8, 3, 3, 3), (4, 8, 3, 3))]
    want = _amp_cnn(*args).asnumpy()
    f = hybridize(_cnn, backend=backend)
    f._cached.precision = ("amp-bfloat16", {})
    if onednn:
        got = f(*args).asnumpy()
    else:
        with dnnl.disabled():
            got = f(*args).asnumpy()
    (entry,) = f._cached.entries.values()
    assert entry.program.backend == backend
    if backend == "c" and onednn:
        assert "conv_bf16" in [n.op for n in entry.program.graph.nodes]
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _product_then(op, other, shape=(8, 4)):
    """x @ w.T followed by `op` with `other` (a node, or a scalar made a constant)."""
    x = Node("input", (), {}, (8, 6), "float32", name="x")
    w = Node("param", (), {}, (4, 6), "float32", name="w")
    wt = Node("transpose", (w,), {"axes": (1, 0)}, (6, 4), "float32")
    y = Node("matmul", (x, wt), {}, (8, 4), "float32", name="dense0")
    if not isinstance(other, Node):
        other = Node("const", (), {}, (), "float32", value=onp.array(other, "float32"))
    return x, w, y, Node(op, (y, other), {}, shape, "float32")


def test_a_scale_is_folded_when_its_reciprocal_is_exact():
    for op, c, folded in (("divide", 8.0, 0.125), ("multiply", 0.3, 0.3), ("divide", 3.0, None)):
        x, w, _, z = _product_then(op, c)
        g = to_bfloat16(Graph([x], [w], [z], "scaled"))
        (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
        if folded is None:      # 1/3 is no float: the divide stays, the graph's own values
            assert "scale" not in mm.attrs and op in {n.op for n in g.nodes}
        else:
            assert mm.attrs["scale"] == onp.float32(folded) and g.outputs == [mm]


def test_a_residual_is_folded_unless_the_product_is_read_elsewhere():
    r = Node("input", (), {}, (8, 4), "float32", name="r")
    x, w, y, z = _product_then("add", r)
    g = to_bfloat16(Graph([x, r], [w], [z], "residual"))
    (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
    assert mm.attrs.get("residual") and mm.inputs[-1] is r and g.outputs == [mm]
    g = to_bfloat16(Graph([x, r], [w], [z, y], "both"))
    assert not any(n.attrs.get("residual") for n in g.nodes if n.op == "matmul_bf16")
    # a bias after a fused scale would be added before it: kept as its own add
    x, w, _, z = _product_then("multiply", 2.0)
    b = Node("param", (), {}, (4,), "float32", name="b")
    g = to_bfloat16(Graph([x], [w, b], [Node("add", (z, b), {}, (8, 4), "float32")], "sb"))
    assert "add" in {n.op for n in g.nodes}


def _gelu_graph(keep_piece):
    """npx.gelu of a Dense layer, as it traces (with the piece erf reads an output when
    keep_piece: a training step keeps it for the gradient)."""
    x, w, b = (Node("input", (), {}, (8, 6), "float32", name="x"),
                               Node("param", (), {}, (4, 6), "float32", name="w"),
                               Node("param", (), {}, (4,), "float32", name="b"))
    wt = Node("transpose", (w,), {"axes": (1, 0)}, (6, 4), "float32")
    h = Node("add", (Node("matmul", (x, wt), {}, (8, 4), "float32"), b), {}, (8, 4),
             "float32")

    def const(v):
        return Node("const", (), {}, (), "float32", value=onp.array(v, "float32"))
    half = Node("multiply", (const(0.5), h), {}, (8, 4), "float32")
    inner = Node("multiply", (h, const(1 / onp.sqrt(2))), {}, (8, 4), "float32")
    e = Node("erf", (inner,), {}, (8, 4), "float32")
    y = Node("multiply", (half, Node("add", (const(1.0), e), {}, (8, 4), "float32")), {},
             (8, 4), "float32")
    return Graph([x], [w, b], [y, e] if keep_piece else [y], "gelu")


def test_gelu_of_a_product_is_folded_when_nothing_else_reads_its_pieces():
    g = to_bfloat16(_gelu_graph(False))
    (mm,) = [n for n in g.nodes if n.op == "matmul_bf16"]
    assert mm.attrs.get("gelu") and [i.name for i in mm.inputs] == ["x", "w", "b"]
    assert g.outputs == [mm]
    g = to_bfloat16(_gelu_graph(True))
    assert not any(n.attrs.get("gelu") for n in g.nodes if n.op == "matmul_bf16")

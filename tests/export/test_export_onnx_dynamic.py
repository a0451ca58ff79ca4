"""ONNX export with symbolic sizes: named dimensions (dim_param), size attributes computed
in-graph, and ONNX Runtime equal to kiln at three batch sizes and three lengths."""
import json

import numpy as onp
import pytest

from kiln import gluon, np
from kiln._core.base import KilnError
from kiln.export.onnx import export

from dynamic_models import model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

BATCHES = (1, 3, 7)
LENGTHS = (1, 4, 9)


def _sizes(kind):
    if kind in ("mlp", "cnn"):
        return [(b, 1) for b in BATCHES]
    return [(b, s) for b in BATCHES for s in LENGTHS]


def _check(path, net, shape, sizes):
    sess = ort.InferenceSession(str(path))
    for b, s in sizes:
        x = np.random.normal(size=shape(b, s))
        (y,) = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})
        onp.testing.assert_allclose(y, net(x).asnumpy(), rtol=1e-5, atol=1e-5)
    return sess


@pytest.mark.parametrize("kind", ["mlp", "cnn", "encoder", "fold"])
def test_onnxruntime_equals_kiln_at_every_size(kind, tmp_path):
    net, axes, shape = model(kind)
    path = tmp_path / f"{kind}.onnx"
    export(net, [np.random.normal(size=shape(2, 5))], str(path), dynamic_axes=axes)
    sess = _check(path, net, shape, _sizes(kind))
    dims = sess.get_inputs()[0].shape
    assert dims[0] == "batch" and (kind in ("mlp", "cnn") or dims[1] == "seq")
    assert all(isinstance(d, int) for d in dims[len(axes["data"]):])
    assert sess.get_outputs()[0].shape[0] == "batch"


@pytest.mark.parametrize("opset", [13, 17])
def test_sizes_are_computed_in_graph_where_no_code_says_it(opset, tmp_path):
    net, axes, shape = model("fold")
    path = tmp_path / "fold.onnx"
    export(net, [np.random.normal(size=shape(2, 2))], str(path), opset=opset,
           dynamic_axes=axes)
    _check(path, net, shape, [(1, 1), (3, 2), (2, 5)])
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    # (batch * seq, 16) is [-1, 16]; (batch, seq, 8) from it and seq // 2 need Shape
    assert ops.count("Shape") == 1 and "Gather" in ops and "Div" in ops and "Concat" in ops


def test_reshape_codes_where_they_say_the_same(tmp_path):
    net, axes, shape = model("cnn")
    path = tmp_path / "cnn.onnx"
    export(net, [np.random.normal(size=shape(2, 1))], str(path), dynamic_axes=axes)
    m = onnx.load(str(path))
    ops = [n.op_type for n in m.graph.node]
    assert "Shape" not in ops and "Conv" in ops
    consts = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    targets = [consts[n.input[1]].tolist() for n in m.graph.node if n.op_type == "Reshape"]
    assert [0, 24] in targets           # Flatten: the batch copied, the rest fixed


def test_symbolic_symbol_file_converts(tmp_path):
    net, axes, shape = model("encoder")
    net.hybridize(backend="numpy", dynamic_axes={"x": {0: "batch", 1: "seq"}})
    net(np.random.normal(size=shape(2, 3)))
    sym, par = net.export(str(tmp_path / "enc"))
    assert json.load(open(sym))["inputs"][0]["shape"] == ["batch", "seq", 16]
    path = tmp_path / "enc.onnx"
    export(sym, [np.ones(shape(4, 6))], str(path))      # any size the file serves
    _check(path, net, shape, [(2, 2), (3, 5), (6, 3)])
    with pytest.raises(KilnError, match="exported for"):
        export(sym, [np.ones((4, 6, 8))], str(tmp_path / "bad.onnx"))


def test_block_hybridized_dynamic_exports_named_dims(tmp_path):
    net, axes, shape = model("mlp")
    net.hybridize(backend="numpy", dynamic=True)
    x = np.random.normal(size=shape(2, 1))
    net(x)
    path = tmp_path / "m.onnx"
    export(net, None, str(path))
    sess = _check(path, net, shape, [(1, 1), (5, 1), (8, 1)])
    dims = sess.get_inputs()[0].shape
    assert isinstance(dims[0], str) and dims[1] == 12


def test_fixed_sizes_stay_fixed(tmp_path):
    net, axes, shape = model("mlp")
    path = tmp_path / "m.onnx"
    export(net, [np.ones(shape(2, 1))], str(path))
    assert ort.InferenceSession(str(path)).get_inputs()[0].shape == [2, 12]


def test_a_lowering_that_needs_a_size_is_an_error(tmp_path, monkeypatch):
    # a lowering that reads a symbolic size's value would make a file for that size only
    from kiln.export import onnx_ops
    relu = onnx_ops.LOWERINGS["relu"]

    def reads_the_batch(em, node, ins):
        int(node.shape[0])
        return relu(em, node, ins)
    monkeypatch.setitem(onnx_ops.LOWERINGS, "relu", reads_the_batch)
    net, axes, shape = model("mlp")
    with pytest.raises(KilnError, match=r"only the sizes where batch == 2"):
        export(net, [np.ones(shape(2, 1))], str(tmp_path / "m.onnx"), dynamic_axes=axes)


def test_size_arithmetic_in_graph_follows_python():
    # floor division and modulo of sizes that may be negative, as kiln's sizes compute them
    from kiln._core.ir import Node
    from kiln._core.symdim import SymInt
    from kiln.export.onnx import Emitter
    from kiln.export.onnx_sizes import SizeTensors
    n, m = SymInt.symbol("n", 5), SymInt.symbol("m", 3)
    exprs = [(n - 7) // 3, (n - 7) % 3, (n * m - 20) // (m - 4), (m - 4) % (n - 6),
             (n + 1) // 2, n * m - m]
    x = Node("input", (), {}, (n, m), onp.dtype("float32"), name="x")
    em = Emitter(17)
    sizes = SizeTensors(em, [x], {id(x): "x"})
    outs = [sizes.scalar(e.expr) for e in exprs]
    h = em.helper
    graph = h.make_graph(em.nodes, "sizes", [h.make_tensor_value_info("x", 1, ["n", "m"])],
                         [h.make_tensor_value_info(o, 7, [1]) for o in outs],
                         initializer=em.initializers)
    model_proto = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model_proto.ir_version = 8
    sess = ort.InferenceSession(model_proto.SerializeToString())
    for nv, mv in [(0, 1), (1, 7), (5, 3), (8, 2), (13, 9)]:     # no divisor is 0
        got = [int(v[0]) for v in sess.run(None, {"x": onp.zeros((nv, mv), "float32")})]
        assert got == [e.evaluate({"n": nv, "m": mv}) for e in exprs], (nv, mv)


class Take(gluon.HybridBlock):
    def forward(self, x):
        idx = np.array([0, 2, 5, -1, 40], dtype="int32")
        return np.take(x, idx, axis=0, mode="clip") + np.take(x, idx, axis=0, mode="wrap")


def test_take_along_a_symbolic_axis(tmp_path):
    # clip and wrap need the axis' size: computed in-graph
    net = Take()
    path = tmp_path / "take.onnx"
    export(net, [np.ones((6, 3))], str(path), dynamic_axes={0: {0: "n"}})
    _check(path, net, lambda b, s: (b, 3), [(1, 1), (4, 1), (9, 1)])

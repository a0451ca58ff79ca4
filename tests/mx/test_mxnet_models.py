"""Models and files written by real MXNet 1.9.1 (tests/fixtures/mxnet, made by
make_fixtures.py there): they load through SymbolBlock.imports and Module, and give
MXNet's own outputs, eager, hybridized and compiled; they re-export to kiln and ONNX."""
import os
from collections import namedtuple

import numpy as np
import pytest

import kiln
from kiln import nd, sym, gluon
from kiln.export import mxnet_params
from paths import FIXTURES

FIX = os.path.join(FIXTURES, "mxnet")
Batch = namedtuple("Batch", ["data"])


def _files(name):
    io = np.load(os.path.join(FIX, f"{name}-io.npz"))
    return (os.path.join(FIX, f"{name}-symbol.json"), os.path.join(FIX, f"{name}-0000.params"),
            io["x"], io["y"])


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_symbolblock_imports_matches_mxnet(name, tmp_path):
    sym_file, par_file, x, y = _files(name)
    net = gluon.SymbolBlock.imports(sym_file, ["data"], par_file)
    np.testing.assert_allclose(net(nd.array(x)).asnumpy(), y, atol=1e-4, rtol=0)
    net.hybridize()
    for _ in range(2):     # the tracing call, then the compiled program
        np.testing.assert_allclose(net(nd.array(x)).asnumpy(), y, atol=1e-4, rtol=0)
    # re-export to kiln's own format and load that back
    net.export(str(tmp_path / "again"))
    again = gluon.SymbolBlock.imports(str(tmp_path / "again-symbol.json"), ["data"],
                                      str(tmp_path / "again-0000.params"))
    np.testing.assert_allclose(again(nd.array(x)).asnumpy(), y, atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_module_matches_mxnet(name):
    sym_file, par_file, x, y = _files(name)
    mod = kiln.mod.Module(symbol=sym.load(sym_file), context=kiln.cpu(), label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.load_params(par_file)
    mod.forward(Batch([nd.array(x)]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), y, atol=1e-4, rtol=0)
    assert mod.output_shapes == [(mod.output_names[0], y.shape)]


def test_compiled_symbol_of_mxnet_cnn_uses_kiln_passes():
    sym_file, par_file, x, y = _files("cnn")
    s = sym.load(sym_file)
    params = nd.load(par_file)
    values = {k.split(":", 1)[1]: v for k, v in params.items()}
    f = sym.compile(s)
    (out,) = f(data=x, **values)
    np.testing.assert_allclose(out.asnumpy(), y, atol=1e-4, rtol=0)
    graph = f.graph(data=x, **values)
    # with oneDNN off, convolutions are expanded into kiln's windows + matmul form; with it,
    # each stays one op (conv_bias when its bias add folds in)
    from kiln.backend import dnnl
    if dnnl.available():
        assert {"conv", "conv_bias"} & set(graph.ops) and "windows" not in graph.ops
    else:
        assert "windows" in graph.ops
    assert all(op in kiln.ops.registry.REGISTRY for op in graph.ops)


def test_onnx_export_of_mxnet_model(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import kiln.onnx
    sym_file, par_file, x, y = _files("cnn")
    net = gluon.SymbolBlock.imports(sym_file, ["data"], par_file)
    kiln.onnx.export(net, [nd.array(x)], str(tmp_path / "cnn.onnx"))
    session = ort.InferenceSession(str(tmp_path / "cnn.onnx"))
    (out,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(out, y, atol=1e-4, rtol=0)


def test_ops_symbol_forward_and_gradients_match_mxnet():
    """Reshape codes, transpose, Concat, LeakyReLU, 'full' avg Pooling, FullyConnected,
    reductions, elementwise ops and SoftmaxOutput's gradient rule, against MXNet."""
    f = np.load(os.path.join(FIX, "ops.npz"))
    s = sym.load(os.path.join(FIX, "ops-symbol.json"))
    assert s.infer_shape(data=(2, 12), softmax_label=(2,)) == (
        [(2, 12), (5, 6), (5,), (2,)], [(2, 5)], [])
    ex = s.simple_bind(kiln.cpu(), data=(2, 12), softmax_label=(2,))
    for name, key in (("data", "data"), ("softmax_label", "label"),
                      ("fc_weight", "fc_weight"), ("fc_bias", "fc_bias")):
        ex.arg_dict[name][:] = f[key]
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), f["out"], atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), f["g_w"], atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["fc_bias"].asnumpy(), f["g_b"], atol=1e-5)
    # MXNet's backward of 'full' avg pooling divides the clipped edge windows by the whole
    # kernel, unlike its forward; kiln's data gradient is the derivative of the forward,
    # checked by finite differences of the cross-entropy whose gradient SoftmaxOutput is.
    ex.forward(is_train=False)
    base = dict((k, v.asnumpy().astype("float64")) for k, v in ex.arg_dict.items())
    feed = dict(base)
    g = ex.grad_dict["data"].asnumpy()
    onehot = np.eye(5)[f["label"].astype(int)]

    def ce(values):
        (p,) = s.eval(**{k: v.astype("float32") for k, v in values.items()})
        return float(-(onehot * np.log(p.asnumpy().astype("float64"))).sum())
    eps = 1e-2
    for idx in [(0, 0), (0, 5), (1, 7), (1, 11)]:
        plus, minus = dict(feed), dict(feed)
        plus["data"] = base["data"].copy()
        minus["data"] = base["data"].copy()
        plus["data"][idx] += eps
        minus["data"][idx] -= eps
        fd = (ce(plus) - ce(minus)) / (2 * eps)
        assert abs(fd - g[idx]) < 2e-3 + 2e-2 * abs(fd), (idx, fd, g[idx])


def test_nd_save_writes_mxnet_bytes(tmp_path):
    """nd.load reads what MXNet's nd.save wrote, and nd.save writes the same bytes."""
    loaded = nd.load(os.path.join(FIX, "ndsave.params"))
    assert list(loaded) == ["a", "b", "c"]
    assert loaded["b"].dtype == np.int32 and loaded["c"].dtype == np.float64
    np.testing.assert_array_equal(loaded["a"].asnumpy(), np.arange(6).reshape(2, 3))
    nd.save(str(tmp_path / "again.params"), loaded)
    assert (tmp_path / "again.params").read_bytes() == \
        open(os.path.join(FIX, "ndsave.params"), "rb").read()
    as_list = nd.load(os.path.join(FIX, "ndsave-list.params"))
    assert isinstance(as_list, list) and as_list[0].shape == (1, 2)
    for name in ("cnn", "mlp"):
        path = os.path.join(FIX, f"{name}-0000.params")
        arrays, names = mxnet_params.read(path)
        assert mxnet_params.encode(arrays, names) == open(path, "rb").read()


def test_mxnet_params_into_gluon_parameter_dict(tmp_path):
    """ParameterDict.load/save and load_parameters read MXNet's binary format."""
    sym_file, par_file, x, y = _files("mlp")
    net = gluon.SymbolBlock.imports(sym_file, ["data"], par_file)
    net.collect_params().save(str(tmp_path / "p.params"))
    fresh = gluon.SymbolBlock.imports(sym_file, ["data"])
    fresh.collect_params().load(str(tmp_path / "p.params"))
    np.testing.assert_allclose(fresh(nd.array(x)).asnumpy(), y, atol=1e-4)
    with pytest.raises(kiln.KilnError, match="dense0_weight"):
        fresh.collect_params().load(str(tmp_path / "p.params"), restore_prefix="x_")

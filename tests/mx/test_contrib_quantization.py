"""MXNet 1.9's `mx.contrib.quantization.quantize_net(_v2)` on kiln: int8 Dense and
convolution layers calibrated on the traced graph. The quantized graph equals the
reference quantize -> integer product -> dequantize, bit for bit where oneDNN's int8
matmul computes it; a digits CNN keeps its float32 accuracy within a point."""
import numpy as onp
import pytest

from kiln import autograd, gluon, init, np
from kiln.base import KilnError
from kiln.contrib import quantization
from kiln.data.digits import load_arrays
from kiln.gluon import nn
from kiln.hybrid import calibrate
from kiln.ops import REGISTRY
from mx_alias_fixture import mx  # noqa: F401  (the fixture)

R = onp.random.default_rng(17)


def _ops(block):
    ops = set()
    for entry in block._kiln_cached.entries.values():
        ops.update(n.op for n in entry.program.graph.nodes)
    return ops


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(48, activation="relu", in_units=40), nn.Dense(10, in_units=48))
    net.initialize(init.Xavier())
    return net


def _reference_dense(x, w, b, x_scale, dtype, relu):
    """quantize -> int32 product -> dequantize, written out with NumPy."""
    wq, ws = calibrate.quantize_weight(w)
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    xq = onp.clip(onp.rint(x / onp.float32(x_scale)), lo, hi).astype(onp.int32)
    acc = xq @ wq.astype(onp.int32).T
    y = acc.astype(onp.float32) * (onp.float32(x_scale) * ws).astype(onp.float32) + b
    return onp.maximum(y, 0) if relu else y


@pytest.mark.parametrize("calib_mode", ["naive", "entropy"])
def test_quantized_dense_layers_equal_the_reference_computation(calib_mode):
    net = _mlp()
    x = R.standard_normal((64, 40)).astype("float32")
    quantization.quantize_net(net, calib_data=[np.array(x)], calib_mode=calib_mode)
    net.hybridize()
    got = net(np.array(x)).asnumpy()
    assert {"dense_int8"} <= _ops(net) and "matmul" not in _ops(net)
    # generated C quantizes the activations and calls oneDNN's int8 matmul
    assert [e.program.backend for e in net._kiln_cached.entries.values()] == ["c"]
    l0, l1 = net[0], net[1]
    s0 = net._kiln_cached.precision[1]["int8_layers"]
    spec0, spec1 = s0["0.weight"], s0["1.weight"]
    assert spec0["dtype"] == "int8" and spec1["dtype"] == "uint8"   # after ReLU: unsigned
    h = _reference_dense(x, l0.weight.data().asnumpy(), l0.bias.data().asnumpy(),
                         spec0["x_scale"], "int8", True)
    want = _reference_dense(h, l1.weight.data().asnumpy(), l1.bias.data().asnumpy(),
                            spec1["x_scale"], "uint8", False)
    onp.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_int8_matmul_on_onednn_is_the_integer_product_bit_for_bit():
    from kiln.backend.dnnl import lowp
    a = R.integers(-128, 128, (33, 70)).astype(onp.int8)
    w = R.integers(-127, 128, (70, 19)).astype(onp.int8)
    scale = R.uniform(1e-3, 1e-2, 19).astype(onp.float32)
    got = lowp.matmul_int8(a, w, scale)
    if got is None:
        pytest.skip("oneDNN has no int8 matmul here")
    want = (a.astype(onp.int32) @ w.astype(onp.int32)).astype(onp.float32) * scale
    assert onp.array_equal(got, want)


def test_dynamic_quantization_without_calibration():
    net = _mlp()
    x = R.standard_normal((8, 40)).astype("float32")
    y32 = net(np.array(x)).asnumpy()
    quantization.quantize_net_v2(net, calib_mode="none", data_shapes=[(8, 40)])
    net.hybridize()
    y8 = net(np.array(x)).asnumpy()
    assert "dense_int8" in _ops(net)
    onp.testing.assert_allclose(y8, y32, atol=0.05 * onp.abs(y32).max())


def test_exclusions_keep_layers_float32():
    net = _mlp()
    x = np.array(R.standard_normal((8, 40)).astype("float32"))
    quantization.quantize_net(net, calib_data=[x], calib_mode="naive", exclude_layers=["1"])
    assert net._kiln_quantized_layers == ["0.weight"]
    quantization.quantize_net(net, calib_data=[x], calib_mode="naive",
                              exclude_operators=["FullyConnected"])
    assert net._kiln_quantized_layers == []
    with pytest.raises(KilnError, match="calib_mode"):
        quantization.quantize_net(net, calib_mode="percentile", calib_data=[x])
    with pytest.raises(KilnError, match="needs calib_data"):
        quantization.quantize_net(net, calib_mode="naive")


def _cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1, activation="relu", in_channels=1),
            nn.Conv2D(32, 3, padding=1, activation="relu", in_channels=16),
            nn.MaxPool2D(2), nn.Flatten(), nn.Dense(64, activation="relu", in_units=512),
            nn.Dense(10, in_units=64))
    net.initialize(init.Xavier())
    return net


def _accuracy(net, x, y):
    return float((net(np.array(x)).asnumpy().argmax(axis=1) == y).mean())


def test_digits_cnn_int8_within_one_point_of_float32():
    xtr, ytr = load_arrays(train=True, flatten=False)
    xte, yte = load_arrays(train=False, flatten=False)
    net = _cnn()
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 3e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    order = onp.random.default_rng(0)
    for epoch in range(8):
        perm = order.permutation(len(xtr))
        for k in range(0, len(xtr), 64):
            idx = perm[k:k + 64]
            with autograd.record():
                loss = loss_fn(net(np.array(xtr[idx])), np.array(ytr[idx].astype("float32")))
            loss.backward()
            trainer.step(len(idx))
    f32 = _accuracy(net, xte, yte)
    assert f32 > 0.95
    calib = [np.array(xtr[k:k + 64]) for k in range(0, 640, 64)]
    for mode in ("naive", "entropy"):
        quantization.quantize_net(net, calib_data=calib, calib_mode=mode,
                                  num_calib_batches=10)
        assert {"conv_int8", "dense_int8"} <= _ops_after_call(net, xte)
        int8 = _accuracy(net, xte, yte)
        assert int8 >= f32 - 0.01, (mode, int8, f32)


def _ops_after_call(net, x):
    net(np.array(x))
    return _ops(net)


def test_mxnet_alias_serves_contrib_quantization(mx):
    assert mx.contrib.quantization.quantize_net is quantization.quantize_net
    assert REGISTRY["dense_int8"].lowerings.get("eager") is not None


def test_quantized_network_exports_reloads_and_runs_in_onnxruntime(tmp_path):
    from kiln.export import onnx as kiln_onnx
    from kiln.export.standalone_c import build_c
    from kiln.gluon import SymbolBlock
    net = _cnn()
    xtr, _ = load_arrays(train=True, flatten=False)
    calib = [np.array(xtr[:64])]
    quantization.quantize_net(net, calib_data=calib, calib_mode="naive")
    net.hybridize()
    x = np.array(xtr[64:80])
    want = net(x).asnumpy()
    sym, par = net.export(str(tmp_path / "q"))
    text = open(sym).read()
    assert '"conv_int8"' in text and '"dense_int8"' in text
    back = SymbolBlock.imports(sym, ["data"], par)
    onp.testing.assert_array_equal(back(x).asnumpy(), want)
    with pytest.raises(KilnError, match="low-precision graph"):
        build_c(sym, par, str(tmp_path / "c"))
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    path = kiln_onnx.export(net, [x], str(tmp_path / "q.onnx"))
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    sess = ort.InferenceSession(path)
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * onp.abs(want).max())

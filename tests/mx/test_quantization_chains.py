"""int8 chains (graph/passes/quantize.py, ops/quantized.py's conv_int8): a quantized
residual network keeps its activations int8 from one convolution to the next, with its
BatchNorm folded into the weights and the residual add and ReLU as oneDNN post-ops.

The reference is written out with NumPy from the float32 parameters: BatchNorm folded,
weights quantized per channel, x quantized on the calibrated scale, the integer
convolution, dequantized, residual, ReLU, and requantized on the next layer's scale
(times the float32 reciprocal, rounded to nearest even: oneDNN's rounding). oneDNN's
int8 convolution computes exactly that, bit for bit, for every form the op takes;
generated C equals the NumPy executor and the reference."""
import numpy as onp
import pytest

from kiln import init, np, npx
from kiln.contrib import quantization
from kiln.gluon import nn
from kiln.hybrid import calibrate
from kiln.ops import REGISTRY
from kiln.ops.conv import conv_by_windows
from kiln.ops.quantized import quantize_values
from mx_alias_fixture import mx  # noqa: F401  (the fixture)

R = onp.random.default_rng(41)
EPS = 1e-5


class Block(nn.HybridBlock):
    """ResNet's basic block: conv-BN-ReLU, conv-BN, + shortcut (identity or 1x1 conv)."""

    def __init__(self, channels, down=False):
        super().__init__()
        self.conv1 = nn.Conv2D(channels, 3, padding=1, strides=2 if down else 1)
        self.bn1 = nn.BatchNorm()
        self.conv2 = nn.Conv2D(channels, 3, padding=1)
        self.bn2 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, 1, strides=2) if down else None

    def forward(self, x):
        y = self.bn2(self.conv2(npx.relu(self.bn1(self.conv1(x)))))
        return npx.relu(y + (self.conv3(x) if self.conv3 is not None else x))


def _net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            Block(16), Block(16), Block(32, down=True), Block(32))
    net.initialize(init.Xavier())
    x = np.array(R.standard_normal((4, 3, 12, 12)).astype("float32"))
    net(x)
    for p in net.collect_params().values():     # BatchNorm statistics far from 0 and 1
        if p.name.endswith(("running_mean", "beta")):
            p.set_data(np.array(R.uniform(-0.5, 0.5, p.shape).astype("float32")))
        elif p.name.endswith(("running_var", "gamma")):
            p.set_data(np.array(R.uniform(0.5, 2.0, p.shape).astype("float32")))
    return net


def _program_graph(net):
    """The graph of the program the network's latest call compiled."""
    return list(net._kiln_cached.entries.values())[-1].program.graph


def _quantized(calib_mode="naive"):
    net = _net()
    x = R.standard_normal((4, 3, 12, 12)).astype("float32")
    want32 = net(np.array(x)).asnumpy()
    quantization.quantize_net(net, calib_data=[np.array(x)], calib_mode=calib_mode)
    return net, x, want32


def _conv(x, w, stride, pad):
    acc = conv_by_windows(x.astype(onp.float64), w.astype(onp.float64), stride=stride,
                          dilation=(1, 1), pad=(pad,) * 4)
    return onp.rint(acc._data if hasattr(acc, "_data") else acc)


def _fold(conv, bn):
    """(weight, bias) of a conv with its inference BatchNorm folded in, by hand:
    ((conv + b - mean) / sqrt(var + eps)) * gamma + beta, the float32 square root as
    BatchNorm takes it, the rest in float64."""
    f64 = onp.float64
    w, b = conv.weight.data().asnumpy(), conv.bias.data().asnumpy().astype(f64)
    g, beta = bn.gamma.data().asnumpy().astype(f64), bn.beta.data().asnumpy().astype(f64)
    mean, var = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    root = onp.sqrt(var + onp.float32(EPS)).astype(f64)
    scale = 1.0 / root * g
    return (w * scale[:, None, None, None]).astype(onp.float32), (
        (b - mean) / root * g + beta).astype(onp.float32)


def _layer(x, wb, spec, stride=1, pad=1, residual=None, relu=True, out=None):
    """One reference layer: x float32 (quantized here) or (q, scale) already quantized."""
    w, b = wb
    wq, ws = calibrate.quantize_weight(w)
    s = onp.float32(spec["x_scale"])
    q = x[0] if isinstance(x, tuple) else quantize_values(x, s, spec["dtype"])
    y = _conv(q, wq, (stride, stride), pad).astype(onp.float32) * (s * ws).astype(
        onp.float32)[:, None, None] + b[:, None, None]
    if residual is not None:
        y = y + (residual[0].astype(onp.float32) * onp.float32(residual[1])
                 if isinstance(residual, tuple) else residual)
    if relu:
        y = onp.maximum(y, 0)
    if out is None:
        return y
    inverse = onp.float32(1) / onp.float32(out["x_scale"])
    lo, hi = (0, 255) if out["dtype"] == "uint8" else (-128, 127)
    return onp.clip(onp.rint(y * inverse), lo, hi).astype(out["dtype"]), out["x_scale"]


def _reference(net, x, specs):
    names = {id(p): name for name, p in net.collect_params().items()}

    def spec(layer):
        return specs[names[id(layer.weight)]]
    stem, blocks = net[0], [net[3], net[4], net[5], net[6]]
    h = _layer(x, _fold(stem, net[1]), spec(stem), out=spec(blocks[0].conv1))
    for k, blk in enumerate(blocks):
        nxt = spec(blocks[k + 1].conv1) if k + 1 < len(blocks) else None
        y = _layer(h, _fold(blk.conv1, blk.bn1), spec(blk.conv1), stride=2 if blk.conv3 else 1,
                   out=spec(blk.conv2))
        shortcut = h
        if blk.conv3 is not None:
            w3 = (blk.conv3.weight.data().asnumpy(), blk.conv3.bias.data().asnumpy())
            shortcut = _layer(h, w3, spec(blk.conv3), stride=2, pad=0, relu=False)
        h = _layer(y, _fold(blk.conv2, blk.bn2), spec(blk.conv2), residual=shortcut, out=nxt)
    return h


def test_a_quantized_residual_network_stays_int8_between_its_convolutions():
    net, x, want32 = _quantized()
    net.hybridize()
    got = net(np.array(x)).asnumpy()
    graph = _program_graph(net)
    ops = [n.op for n in graph.nodes if not n.is_source]
    # every convolution is one conv_int8: BatchNorm folded, the add and ReLU post-ops
    assert ops.count("conv_int8") == 10
    assert not {"conv", "conv_bias", "batch_norm_train", "divide", "sqrt", "relu"} & set(ops)
    ints = [n for n in graph.nodes if n.op == "conv_int8" and n.dtype != onp.float32]
    # each block's conv1 and conv2 write int8, and so does the stem; the 1x1 shortcut and
    # the last conv (a network output) write float32
    assert len(ints) == 8, [str(n.dtype) for n in graph.nodes if n.op == "conv_int8"]
    assert any(len(n.inputs) == 5 and n.inputs[4].dtype != onp.float32 for n in ints)
    assert all(n.attrs.get("channels_last") for n in graph.nodes if n.op == "conv_int8")
    specs = net._kiln_cached.precision[1]["int8_layers"]
    want = _reference(net, x, specs)
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * onp.abs(want).max())
    # and it is still the float32 network, within int8's error
    assert onp.abs(got - want32).max() < 0.1 * onp.abs(want32).max()



def test_the_int8_chain_in_onnxruntime_equals_kiln(tmp_path):
    """The exported residual network (folded BatchNorm, residual add, int8 between the
    convolutions) runs in ONNX Runtime with kiln's outputs: the requantization between
    layers is written as the kernel rounds (times the reciprocal of the scale), so no
    value lands one int8 step away (QuantizeLinear's division did, by up to 1% here)."""
    ort = pytest.importorskip("onnxruntime")
    from kiln.export import onnx as kiln_onnx
    net, x, _ = _quantized()
    net.hybridize()
    batch = np.array(x)
    want = net(batch).asnumpy()
    path = kiln_onnx.export(net, [batch], str(tmp_path / "chain.onnx"))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    sess = ort.InferenceSession(path, options)
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * onp.abs(want).max())

@pytest.mark.parametrize("calib_mode", ["naive", "entropy"])
def test_generated_c_equals_the_numpy_executor(calib_mode):
    net, x, _ = _quantized(calib_mode)
    net.hybridize()
    compiled = net(np.array(x)).asnumpy()
    assert _program_graph(net) is not None and [
        e.program.backend for e in net._kiln_cached.entries.values()] == ["c"]
    net.hybridize(backend="numpy")
    onp.testing.assert_allclose(net(np.array(x)).asnumpy(), compiled, rtol=1e-6, atol=1e-6)


def _int8_cases():
    x = R.standard_normal((2, 16, 7, 7)).astype("float32")
    w = R.standard_normal((24, 16, 3, 3)).astype("float32")
    wq, ws = calibrate.quantize_weight(w)
    b = R.standard_normal(24).astype("float32")
    res = R.standard_normal((2, 24, 7, 7)).astype("float32")
    res_q = quantize_values(res, 0.04, "int8")
    xq = quantize_values(x, 0.03, "uint8")
    a = dict(x_scale=0.03, stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1))
    out = dict(out_scale=0.05, out_dtype="uint8")
    return [((x, wq, ws, b), dict(a)),
            ((x, wq, ws, b), dict(a, relu=True, out_scale=0.05, out_dtype="int8")),
            ((xq, wq, ws, b), dict(a, dtype="uint8", **out)),
            ((x, wq, ws, b, res), dict(a, relu=True)),
            ((x, wq, ws, b, res), dict(a, relu=True, **out)),       # float residual, int8 y
            ((x, wq, ws, b, res_q), dict(a, residual_scale=0.04)),
            ((xq, wq, ws, b, res_q), dict(a, dtype="uint8", relu=True, residual_scale=0.04,
                                          **out))]


@pytest.mark.parametrize("case", range(7))
def test_onednn_int8_conv_is_the_reference_bit_for_bit(case):
    from kiln.backend.dnnl import lowp
    if lowp.isa() not in lowp.VNNI_ISAS:
        pytest.skip("oneDNN has no int8 convolution with VNNI here")
    args, attrs = _int8_cases()[case]
    prim = REGISTRY["conv_int8"]
    got = prim.impl(*args, **attrs)
    fast = prim.lowerings.pop("eager")
    try:
        want = prim.impl(*args, **attrs)        # NumPy: the definition
    finally:
        prim.lowerings["eager"] = fast
    assert got.dtype == want.dtype and onp.array_equal(got, want)
    assert not any(k[0] == "int8 conv" for k in lowp._refused), lowp._refused


def test_digits_cnn_with_batchnorm_int8_within_one_point_of_float32():
    """The accuracy row, small: BatchNorm folded, naive and entropy calibration."""
    from kiln import autograd, gluon
    from kiln.data.digits import load_arrays
    xtr, ytr = load_arrays(train=True, flatten=False)
    xte, yte = load_arrays(train=False, flatten=False)
    onp.random.seed(5)
    np.random.seed(5)          # kiln's generator draws the initial weights
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1, in_channels=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(16, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Flatten(), nn.Dense(10))
    net.initialize(init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 3e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    order = onp.random.default_rng(0)
    for _ in range(4):
        perm = order.permutation(len(xtr))
        for k in range(0, len(xtr) - 63, 64):
            idx = perm[k:k + 64]
            with autograd.record():
                loss = loss_fn(net(np.array(xtr[idx])), np.array(ytr[idx].astype("float32")))
            loss.backward()
            trainer.step(len(idx))

    def accuracy():
        return float((net(np.array(xte)).asnumpy().argmax(axis=1) == yte).mean())
    f32 = accuracy()
    assert f32 > 0.9
    calib = [np.array(xtr[k:k + 64]) for k in range(0, 640, 64)]
    for mode in ("naive", "entropy"):
        quantization.quantize_net(net, calib_data=calib, calib_mode=mode)
        int8 = accuracy()
        ops = {n.op for n in _program_graph(net).nodes}
        assert "conv_int8" in ops and not {"conv", "sqrt", "divide"} & ops, ops
        assert int8 >= f32 - 0.01, (mode, int8, f32)


def test_quantize_net_returns_a_symbol_block_as_mxnet_does(mx):
    """MXNet 1.9's Gluon flow (docs: quantize_net_v2(model, quantize_mode='smart',
    calib_data=a DataLoader, calib_mode='naive', num_calib_examples=...)): the returned
    SymbolBlock runs the quantized graph; the network is converted in place as well."""
    from kiln.gluon import SymbolBlock
    from kiln.gluon.data import ArrayDataset, DataLoader
    net = _net()
    x = R.standard_normal((32, 3, 12, 12)).astype("float32")
    labels = onp.zeros(32, "float32")
    loader = DataLoader(ArrayDataset(x, labels), batch_size=8)
    qnet = mx.contrib.quantization.quantize_net_v2(net, quantize_mode="smart",
                                                   calib_data=loader, calib_mode="naive",
                                                   num_calib_examples=16)
    assert isinstance(qnet, SymbolBlock)
    batch = np.array(x[:8])
    want = net(batch).asnumpy()
    assert "conv_int8" in {n.op for n in _program_graph(net).nodes}
    qnet.hybridize()
    onp.testing.assert_array_equal(qnet(batch).asnumpy(), want)



def test_quantize_nets_symbol_block_takes_any_batch_size(mx):
    """MXNet's returned SymbolBlock is not tied to the calibration batch: neither is
    kiln's (its inputs' leading axis is exported symbolic), eagerly or hybridized."""
    net = _net()
    x = R.standard_normal((16, 3, 12, 12)).astype("float32")
    qnet = mx.contrib.quantization.quantize_net(net, calib_data=[np.array(x[:8])],
                                                calib_mode="naive")
    for hybrid in (False, True):
        if hybrid:
            qnet.hybridize()
        for b in (8, 5, 1, 16):
            batch = np.array(x[:b])
            onp.testing.assert_array_equal(qnet(batch).asnumpy(), net(batch).asnumpy())

def test_entropy_calibration_is_not_pulled_down_by_a_relus_zeros():
    """Half of a ReLU's outputs are exact zeros, exact at every scale: the entropy threshold
    of such an activation equals that of its nonzero part alone (before, the one tall zero
    bin pulled it to a tenth of the range and cost 20 points of accuracy on digits)."""
    from kiln._core.ir import Graph, Node
    from kiln.hybrid import calibrate
    values = R.exponential(0.5, 200_000).astype("float32")

    def threshold(x):
        inp = Node("input", [], {}, x.shape, "float32", name="x")
        relu = Node("relu", [inp], {}, x.shape, "float32", name="relu")
        w = Node("param", [], {}, (4, x.shape[1]), "float32", name="w")
        dense = Node("matmul", [relu, Node("transpose", [w], {"axes": (1, 0)},
                                            (x.shape[1], 4), "float32")], {},
                     (x.shape[0], 4), "float32")
        graph = Graph([inp], [w], [dense], "probe")
        stats = calibrate.collect(graph, [onp.zeros((4, x.shape[1]), "float32")], [[x]], True)
        return calibrate.entropy_threshold(next(iter(stats.values())))

    dense_part = values.reshape(1000, 200)
    with_zeros = onp.concatenate([dense_part, onp.zeros_like(dense_part)], axis=1)
    assert threshold(with_zeros) == pytest.approx(threshold(dense_part), rel=0.02)
    assert threshold(with_zeros) > 0.5 * values.max()

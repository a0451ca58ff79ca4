"""bfloat16 saved and loaded: npx.save/load, Block.save/load_parameters, MXNet's binary
params (dtype flag 12, mshadow's kBfloat16), kiln's symbol JSON + params reloaded by
SymbolBlock.imports, and ONNX (bfloat16 initializers and casts, run by ONNX Runtime)."""
import numpy as onp
import pytest

from kiln import np, npx
from kiln.base import KilnError
from kiln.export import onnx as kiln_onnx
from kiln.export.mxnet_params import encode, read_dict
from kiln.gluon import SymbolBlock, nn

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = onp.dtype(ml_dtypes.bfloat16)


def _bf16_dense():
    net = nn.Dense(4, in_units=3)
    net.initialize()
    net.cast("bfloat16")
    return net


def _bits(a):
    return onp.asarray(a).view(onp.uint16)


def test_npx_save_load_keeps_bfloat16(tmp_path):
    a = np.array([1.0, -2.5, 1 / 3], dtype="bfloat16")
    npx.save(str(tmp_path / "a.npz"), {"a": a, "b": np.ones(2)})
    back = npx.load(str(tmp_path / "a.npz"))
    assert sorted(back) == ["a", "b"] and back["a"].dtype == BF16
    assert (_bits(back["a"].asnumpy()) == _bits(a.asnumpy())).all()


def test_save_and_load_parameters_in_bfloat16(tmp_path):
    net = _bf16_dense()
    net.save_parameters(str(tmp_path / "d.params"))
    other = _bf16_dense()
    other.load_parameters(str(tmp_path / "d.params"))
    assert other.weight.data().dtype == BF16
    assert (_bits(other.weight.data().asnumpy()) == _bits(net.weight.data().asnumpy())).all()


def test_mxnet_binary_params_carry_flag_12(tmp_path):
    w = (onp.arange(6).reshape(2, 3) / 3).astype(BF16)
    data = encode([w], ["arg:w"])
    # list header (24 bytes), record magic/stype/rank (12), shape (16), dev type and id (8)
    assert onp.frombuffer(data[60:64], "<i4")[0] == 12
    (tmp_path / "m.params").write_bytes(data)
    back = read_dict(str(tmp_path / "m.params"))
    assert back["arg:w"].dtype == BF16 and (_bits(back["arg:w"]) == _bits(w)).all()


def test_a_forged_bfloat16_marker_is_refused(tmp_path):
    onp.savez(tmp_path / "f.npz", a=onp.ones(2, "float32"), __kiln_bfloat16__=onp.array(["a"]))
    with pytest.raises(KilnError, match="bfloat16 entry 'a'"):
        npx.load(str(tmp_path / "f.npz"))


def test_symbol_json_and_params_reload_with_symbolblock_imports(tmp_path):
    net = _bf16_dense()
    net.hybridize()
    x = np.array(onp.random.default_rng(0).standard_normal((2, 3)).astype(BF16))
    y = net(x)
    net.export(str(tmp_path / "net"))
    assert '"bfloat16"' in (tmp_path / "net-symbol.json").read_text()
    back = SymbolBlock.imports(str(tmp_path / "net-symbol.json"), ["data"],
                               str(tmp_path / "net-0000.params"))
    got = back(x)
    assert got.dtype == BF16 and (_bits(got.asnumpy()) == _bits(y.asnumpy())).all()


class _RoundTrip(nn.HybridBlock):
    """float32 in and out, through bfloat16 between: AMP's casts (ONNX Runtime's Python
    API has no NumPy type for a bfloat16 output)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, in_units=3)

    def forward(self, x):
        h = self.dense(x.astype("bfloat16").astype("float32"))
        return h.astype("bfloat16").astype("float32")


def test_onnx_writes_bfloat16_casts_and_initializers_that_onnxruntime_runs(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    net = _RoundTrip()
    net.initialize()
    net.hybridize()
    x = np.array(onp.random.default_rng(1).standard_normal((2, 3)).astype("float32"))
    y = net(x)
    path = kiln_onnx.export(net, [x], str(tmp_path / "rt.onnx"))
    model = onnx.load(path)
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert any(a.i == onnx.TensorProto.BFLOAT16 for n in casts for a in n.attribute)
    sess = ort.InferenceSession(path)
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})
    # the matmul may round differently in its last float32 bit; the bfloat16 rounding after
    # it then moves a value by at most one bfloat16 step
    onp.testing.assert_allclose(got, y.asnumpy(), rtol=2 ** -7)
    bf16_net = _bf16_dense()
    bf16_net.hybridize()
    xb = x.astype("bfloat16")
    bf16_net(xb)
    model = onnx.load(kiln_onnx.export(bf16_net, [xb], str(tmp_path / "bf.onnx")))
    assert {i.data_type for i in model.graph.initializer} == {onnx.TensorProto.BFLOAT16}


def test_an_amp_converted_conv_network_runs_in_onnxruntime_with_kilns_outputs(tmp_path):
    """convert_hybrid_block's bfloat16 convolutions (bias and ReLU as oneDNN post-ops, so
    the graph holds conv_bf16 nodes) export as casts through bfloat16 that ONNX Runtime
    runs to kiln's values."""
    ort = pytest.importorskip("onnxruntime")
    from kiln import init
    from kiln.contrib import amp
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(8, 3, padding=1, activation="relu"), nn.GlobalAvgPool2D(),
            nn.Dense(5))
    net.initialize(init.Xavier())
    x = onp.random.default_rng(3).standard_normal((4, 3, 10, 10)).astype("float32")
    net(np.array(x))
    net.hybridize()
    amp.convert_hybrid_block(net, target_dtype="bfloat16")
    want = net(np.array(x)).asnumpy()
    path = kiln_onnx.export(net, [np.array(x)], str(tmp_path / "amp.onnx"))
    sess = ort.InferenceSession(path)
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    onp.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -7 * onp.abs(want).max())

"""MXNet 1.9's `mx.contrib.amp` on kiln (kiln.contrib.amp): bfloat16 mixed precision for
Gluon blocks, inference and training, with MXNet's names, as its examples use them."""
import numpy as onp
import pytest

from kiln import autograd, gluon, init, np
from kiln.base import KilnError
from kiln.contrib import amp
from kiln.gluon import nn
from kiln.hybrid import precision
from mx_alias_fixture import mx  # noqa: F401  (the fixture)

R = onp.random.default_rng(9)


def _net():
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation="relu", in_units=32), nn.Dense(10, in_units=64))
    net.initialize(init.Xavier())
    return net


def _compiled_ops(block):
    ops = set()
    for entry in block._kiln_cached.entries.values():
        ops.update(n.op for n in entry.program.graph.nodes)
    return ops


def test_convert_hybrid_block_runs_dense_layers_in_bfloat16():
    net = _net()
    net.hybridize()
    x = np.array(R.standard_normal((16, 32)).astype("float32"))
    y32 = net(x).asnumpy()
    assert amp.convert_hybrid_block(net, target_dtype="bfloat16") is net
    y16 = net(x).asnumpy()
    assert y16.dtype == onp.float32 and "matmul_bf16" in _compiled_ops(net)
    assert not onp.array_equal(y16, y32)
    onp.testing.assert_allclose(y16, y32, rtol=0.05, atol=0.05)


def test_a_converted_block_exports_at_once(tmp_path):
    """amp_model_conversion.py --use-gluon-model: net.forward(x), net.export, convert, then
    net.export again with no call between (MXNet's converted block has its shapes)."""
    net = _net()
    net.hybridize()
    x = np.array(R.standard_normal((16, 32)).astype("float32"))
    net.forward(x)
    net.export(str(tmp_path / "fp32"))
    amp.convert_hybrid_block(net)           # kiln's default target: bfloat16
    sym_file, params_file = net.export(str(tmp_path / "amp"), remove_amp_cast=False)
    assert "matmul_bf16" in open(sym_file).read()
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    onp.testing.assert_allclose(back(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)
    fresh = _net()      # never called: nothing to trace until it is
    assert amp.convert_hybrid_block(fresh) is fresh and "_kiln_cached" not in fresh.__dict__


def test_excluded_and_fp32_ops_stay_float32():
    net = _net()
    net.hybridize()
    amp.convert_hybrid_block(net, "bfloat16", fp32_ops=["FullyConnected"])
    net(np.ones((4, 32)))
    assert "matmul_bf16" not in _compiled_ops(net) and "matmul" in _compiled_ops(net)


def test_float16_and_unknown_ops_are_refused_clearly():
    with pytest.raises(KilnError, match="float16 is a GPU format"):
        amp.convert_hybrid_block(_net(), target_dtype="float16")
    with pytest.raises(KilnError, match="cannot run in bfloat16"):
        amp.convert_hybrid_block(_net(), "bfloat16", target_dtype_ops=["Pooling"])


def test_amp_training_keeps_float32_master_weights_and_learns():
    """amp.init + init_trainer + scale_loss, as MXNet's AMP tutorial trains."""
    X = R.standard_normal((256, 32)).astype("float32")
    labels = (X[:, :10].argmax(axis=1)).astype("float32")
    try:
        amp.init(target_dtype="bfloat16")
        net = _net()
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        amp.init_trainer(trainer)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        losses = []
        for epoch in range(15):
            for k in range(0, 256, 64):
                x, t = np.array(X[k:k + 64]), np.array(labels[k:k + 64])
                with autograd.record():
                    loss = loss_fn(net(x), t)
                    with amp.scale_loss(loss, trainer) as scaled:
                        autograd.backward(scaled)
                trainer.step(64)
                losses.append(float(loss.mean()))
    finally:
        precision.set_default_precision_pipeline(None)
    assert "matmul_bf16" in _compiled_ops(net)
    assert all(p.data().dtype == onp.float32 for p in net.collect_params().values())
    assert losses[-1] < 0.2 * losses[0]


def test_mxnet_alias_serves_contrib_amp(mx):
    from mxnet.contrib import amp as mx_amp
    assert mx_amp.convert_hybrid_block is amp.convert_hybrid_block
    assert "FullyConnected" in mx_amp.list_lp16_ops("bfloat16")


def test_amp_network_exports_reloads_and_runs_in_onnxruntime(tmp_path):
    from kiln.export import onnx as kiln_onnx
    from kiln.export.standalone_c import build_c
    from kiln.gluon import SymbolBlock
    net = _net()
    net.hybridize()
    amp.convert_hybrid_block(net, "bfloat16")
    x = np.array(R.standard_normal((8, 32)).astype("float32"))
    want = net(x).asnumpy()
    sym, par = net.export(str(tmp_path / "amp"))
    assert '"matmul_bf16"' in open(sym).read()
    back = SymbolBlock.imports(sym, ["data"], par)
    onp.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(KilnError, match="low-precision graph"):
        build_c(sym, par, str(tmp_path / "c"))
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    path = kiln_onnx.export(net, [x], str(tmp_path / "amp.onnx"))
    casts = [n for n in onnx.load(path).graph.node if n.op_type == "Cast"]
    assert any(a.i == onnx.TensorProto.BFLOAT16 for n in casts for a in n.attribute)
    sess = ort.InferenceSession(path)
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x.asnumpy()})
    onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * onp.abs(want).max())


def _digits_cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1, activation="relu", in_channels=1),
            nn.Conv2D(32, 3, padding=1, activation="relu", in_channels=16),
            nn.MaxPool2D(2), nn.Flatten(), nn.Dense(64, activation="relu", in_units=512),
            nn.Dense(10, in_units=64))
    net.initialize(init.Xavier())
    return net


def _train_digits(convert):
    from kiln.data.digits import load_arrays
    xtr, ytr = load_arrays(train=True, flatten=False)
    xte, yte = load_arrays(train=False, flatten=False)
    onp.random.seed(3)
    import kiln
    kiln.npx.random.seed(3)
    net = _digits_cnn()
    net.hybridize()
    if convert:
        amp.convert_hybrid_block(net, "bfloat16")
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 3e-3})
    if convert:
        amp.init_trainer(trainer)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    order = onp.random.default_rng(0)
    for epoch in range(6):
        perm = order.permutation(len(xtr))
        for k in range(0, len(xtr), 64):
            idx = perm[k:k + 64]
            x, t = np.array(xtr[idx]), np.array(ytr[idx].astype("float32"))
            with autograd.record():
                loss = loss_fn(net(x), t)
                if convert:
                    with amp.scale_loss(loss, trainer) as scaled:
                        autograd.backward(scaled)
            if not convert:
                loss.backward()
            trainer.step(len(idx))
    acc = float((net(np.array(xte)).asnumpy().argmax(axis=1) == yte).mean())
    return acc, _compiled_ops(net)


def test_amp_training_reaches_float32_accuracy_on_digits():
    """The same CNN, data order and epochs: bfloat16 AMP within a point of float32."""
    f32, _ = _train_digits(False)
    bf16, ops = _train_digits(True)
    assert {"conv_bf16", "matmul_bf16"} <= ops
    assert f32 > 0.95 and bf16 >= f32 - 0.01, (f32, bf16)


def test_a_compiled_training_step_of_a_converted_net_runs_in_bfloat16():
    # make_step traces forward, backward and the update as one program: the converted net's
    # mixed precision must hold there too (it ran float32 when only the net's own
    # programs were converted), and the step must still train
    from kiln.fit import make_step

    def build(convert):
        np.random.seed(0)
        net = nn.HybridSequential()
        net.add(nn.Dense(32, activation="relu"), nn.Dense(4))
        net.initialize(init.Xavier())
        x = np.array(onp.random.default_rng(0).normal(size=(16, 8)).astype("float32"))
        # a target the net can fit: a fixed linear map of x
        y = np.array(x.asnumpy() @ onp.random.default_rng(1).normal(size=(8, 4))
                     .astype("float32"))
        net(x)
        net.hybridize()
        if convert:
            amp.convert_hybrid_block(net, "bfloat16")
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
        step = make_step(net, gluon.loss.L2Loss(), trainer, compiled=True)
        losses = [float(step(x, y).mean()) for _ in range(60)]
        return step, losses

    step, losses = build(True)
    ops = {n.op for e in step._cached.entries.values() for n in e.program.graph.nodes}
    assert "matmul_bf16" in ops
    _, reference = build(False)
    assert losses[-1] < 0.2 * losses[0]
    onp.testing.assert_allclose(losses, reference, rtol=0.05, atol=0.02)

"""kiln.nd (MXNet 1.x's NDArray namespace), kiln.io and kiln.mod.Module training."""
import os

import numpy as np
import pytest

import kiln
from kiln import nd, sym
from paths import FIXTURES


def test_nd_namespace_follows_mxnet_1x():
    assert nd.array(np.ones(3)).dtype == np.float32          # float32 by default
    assert nd.array([1, 2], dtype="int32").dtype == np.int32
    assert nd.random.normal(shape=(2, 3)).shape == (2, 3)
    assert nd.random.uniform(-1, 1, shape=4).shape == (4,)
    assert nd.zeros((2, 2)).dtype == np.float32 and nd.full((2,), 7).asnumpy().tolist() == [7, 7]
    np.testing.assert_array_equal(nd.arange(3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    a, b = nd.ones((2, 3)), nd.zeros((2, 1))
    assert nd.concat(a, b, dim=1).shape == (2, 4)
    assert nd.concat(a, a, dim=0).shape == (4, 3)
    assert nd.stack(a, a, axis=0).shape == (2, 2, 3)
    x3 = nd.array(np.arange(24).reshape(2, 3, 4))
    w = nd.array(np.arange(20).reshape(4, 5))
    np.testing.assert_array_equal(nd.dot(x3, w).asnumpy(),
                                  np.tensordot(np.arange(24).reshape(2, 3, 4),
                                               np.arange(20).reshape(4, 5), axes=1))
    assert nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 4, 5))).shape == (2, 3, 5)
    np.testing.assert_allclose(nd.softmax(nd.zeros((1, 4))).asnumpy(), 0.25)
    assert nd.relu(nd.array([-1, 2])).asnumpy().tolist() == [0, 2]
    assert nd.Reshape(nd.ones((2, 3, 4)), shape=(-3, 0)).shape == (6, 4)
    assert nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.zeros(4),
                             num_hidden=4).shape == (2, 4)
    assert nd.sum(nd.ones((2, 3)), axis=1).shape == (2,)
    nd.waitall()
    assert kiln.nd is kiln.ndarray and nd.NDArray is kiln.ndarray.ndarray


def test_nd_save_load_roundtrip(tmp_path):
    data = {"w": nd.ones((2, 3)), "i": nd.array([1, 2], dtype="int64")}
    nd.save(str(tmp_path / "d.params"), data)
    back = nd.load(str(tmp_path / "d.params"))
    assert back["i"].dtype == np.int64
    np.testing.assert_array_equal(back["w"].asnumpy(), np.ones((2, 3)))
    nd.save(str(tmp_path / "l.params"), [nd.zeros((1,))])
    assert isinstance(nd.load(str(tmp_path / "l.params")), list)
    with pytest.raises(kiln.KilnError, match="strings"):
        nd.save(str(tmp_path / "bad.params"), {1: nd.ones(1)})


def test_ndarray_iter_pads_and_discards():
    x = np.arange(10, dtype="float32").reshape(5, 2)
    it = kiln.io.NDArrayIter(x, np.arange(5), batch_size=2)
    batches = list(it)
    assert len(batches) == 3 and batches[-1].pad == 1
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (2, 2)
    assert len(list(kiln.io.NDArrayIter(x, batch_size=2, last_batch_handle="discard"))) == 2


def _classifier():
    data = sym.var("data")
    h = sym.Activation(sym.FullyConnected(data, num_hidden=16, name="fc1"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=2, name="fc2"), name="softmax")


def test_module_trains_predicts_scores_and_checkpoints(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("float32")
    train = kiln.io.NDArrayIter(x, y, batch_size=16, shuffle=False)
    mod = kiln.mod.Module(_classifier(), context=kiln.cpu())
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(initializer=kiln.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.5),))
    first = mod.score(train, "acc")[0][1]
    for _ in range(15):
        train.reset()
        for batch in train:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
    acc = mod.score(train, "acc")[0][1]
    assert acc > 0.9 and acc > first
    pred = mod.predict(train)
    assert pred.shape == (64, 2)
    np.testing.assert_allclose(pred.asnumpy().sum(axis=1), 1, rtol=1e-5)
    mod.save_checkpoint(str(tmp_path / "clf"), 3)
    back = kiln.mod.Module.load(str(tmp_path / "clf"), 3)
    back.bind(data_shapes=[("data", (64, 4))], for_training=False)
    back.forward(kiln.io.DataBatch([nd.array(x)]))
    np.testing.assert_allclose(back.get_outputs()[0].asnumpy(), pred.asnumpy(), rtol=1e-5,
                               atol=1e-6)
    args, aux = mod.get_params()
    assert sorted(args) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"] and aux == {}


def test_module_errors_are_clear():
    mod = kiln.mod.Module(_classifier())
    with pytest.raises(kiln.KilnError, match="bind"):
        mod.forward(kiln.io.DataBatch([nd.ones((2, 4))]))
    with pytest.raises(kiln.KilnError, match="not an argument"):
        kiln.mod.Module(_classifier(), data_names=["pixels"])
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(kiln.KilnError, match="not parameters"):
        mod.set_params({"fc1_weight": nd.ones((16, 4)), "junk": nd.ones(1)}, {},
                       allow_missing=True)


def test_module_trains_a_kiln_export_without_touching_its_statistics(tmp_path):
    """A kiln export loaded as a symbol: BatchNorm's running statistics and the graph's
    constants stay fixed while Module trains the weights."""
    from kiln.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(4), nn.BatchNorm(), nn.Dense(1))
    net.initialize()
    net.hybridize()
    x = nd.random.normal(shape=(8, 3))
    net(x)
    net.export(str(tmp_path / "k"))
    s = sym.LinearRegressionOutput(sym.load(str(tmp_path / "k-symbol.json")),
                                   sym.var("label"), name="lro")
    mod = kiln.mod.Module(s, label_names=["label"])
    mod.bind(data_shapes=[("data", (8, 3))], label_shapes=[("label", (8, 1))])
    mod.load_params(str(tmp_path / "k-0000.params"))
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.1),))
    mod.forward(kiln.io.DataBatch([x], [nd.ones((8, 1))]), is_train=True)
    mod.backward()
    mod.update()
    after = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    fixed = [k for k in before if "running" in k or k.startswith("__const__")]
    assert fixed and all((before[k] == after[k]).all() for k in fixed)
    assert not (before["0.weight"] == after["0.weight"]).all()


def test_model_checkpoint_roundtrip(tmp_path):
    s, args, aux = kiln.model.load_checkpoint(
        os.path.join(FIXTURES, "mxnet", "cnn"), 0)
    assert sorted(aux) == ["batchnorm0_running_mean", "batchnorm0_running_var"]
    kiln.model.save_checkpoint(str(tmp_path / "c"), 5, s, args, aux)
    s2, args2, aux2 = kiln.model.load_checkpoint(str(tmp_path / "c"), 5)
    assert s2.tojson() == s.tojson()
    for k in args:
        np.testing.assert_array_equal(args2[k].asnumpy(), args[k].asnumpy())


def test_nd_function_writes_its_result_into_out():
    x = nd.array([[-1.0, 2.0]])
    y = nd.zeros((1, 2))
    r = nd.Activation(x, act_type="relu", out=y)
    assert r is y
    np.testing.assert_array_equal(y.asnumpy(), [[0.0, 2.0]])
    with pytest.raises(kiln.KilnError, match="out= has shape"):
        nd.Activation(x, act_type="relu", out=nd.zeros((2, 2)))


@pytest.mark.parametrize("batch_size", [0, -2, 1.5])
def test_ndarrayiter_refuses_a_batch_size_that_never_advances(batch_size):
    # batch_size 0 used to yield empty batches forever
    with pytest.raises(kiln.KilnError, match="batch_size"):
        kiln.io.NDArrayIter(np.ones((4, 2), "float32"), batch_size=batch_size)


def test_module_init_params_refuses_a_given_value_of_another_shape():
    mod = kiln.mod.Module(_classifier(), context=kiln.cpu())
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    given = {"fc1_weight": nd.ones((16, 4)), "fc1_bias": nd.ones((1,)),   # would broadcast
             "fc2_weight": nd.ones((2, 16)), "fc2_bias": nd.ones((2,))}
    with pytest.raises(kiln.KilnError, match="'fc1_bias' has shape"):
        mod.init_params(arg_params=given)


def test_nd_broadcast_to_needs_the_input_rank():
    np.testing.assert_array_equal(nd.broadcast_to(nd.ones((1, 3)), shape=(2, 0)).asnumpy(),
                                  np.ones((2, 3)))
    with pytest.raises(kiln.KilnError, match="broadcast_to"):    # was cut to (2, 3)
        nd.broadcast_to(nd.ones((1, 3)), shape=(2, 3, 4))


def test_nd_deconvolution_target_shape_sets_the_output_size_not_ignored():
    x, w = nd.ones((1, 2, 3, 3)), nd.ones((2, 4, 3, 3))
    assert nd.Deconvolution(x, w, kernel=(3, 3), num_filter=4).shape == (1, 4, 5, 5)
    # was ignored ((1, 4, 5, 5)), then refused; MXNet 1.9.1 gives (1, 4, 6, 6)
    assert nd.Deconvolution(x, w, kernel=(3, 3), num_filter=4, stride=(2, 2),
                            target_shape=(6, 6)).shape == (1, 4, 6, 6)


def test_nd_pooling_and_deconvolution_refuse_channels_last():
    # layout was ignored: NHWC data was pooled over (H, W) = (W, C)
    with pytest.raises(kiln.KilnError, match="Pooling: layout 'NHWC'"):
        nd.Pooling(nd.ones((1, 4, 4, 2)), kernel=(2, 2), layout="NHWC")
    with pytest.raises(kiln.KilnError, match="Deconvolution: layout 'NHWC'"):
        nd.Deconvolution(nd.ones((1, 3, 3, 2)), nd.ones((2, 4, 3, 3)), kernel=(3, 3),
                         num_filter=4, layout="NHWC")


def test_variables_declare_storage_and_modules_hold_such_params():
    # real MXNet 1.9.1: var(stype=) is the attribute '__storage_type__' (the type's id), an
    # int shape is one dimension, and Module's params take their variable's storage
    v = sym.var("v", shape=(3), stype="row_sparse")
    assert v.list_attr()["__storage_type__"] == "1"
    assert v.infer_shape()[0] == [(3,)]
    x = sym.var("data", stype="csr")
    w = sym.var("w", shape=(4, 1), stype="row_sparse", init=kiln.init.Uniform(1.0))
    out = sym.LinearRegressionOutput(sym.dot(x, w), sym.var("label"), name="out")
    mod = kiln.mod.Module(out, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("label", (2, 1))])
    mod.init_params()
    params = mod.get_params()[0]
    assert params["w"].stype == "row_sparse" and np.abs(params["w"].asnumpy()).sum() > 0


def test_module_optimizer_takes_the_symbols_multipliers():
    # real MXNet 1.9.1: an op's lr_mult/wd_mult reach the variables it makes, an explicit
    # variable keeps its own, and biases get no weight decay
    data = sym.var("data")
    bias = sym.var("fc1_bias", lr_mult=1.0)
    fc1 = sym.FullyConnected(data=data, bias=bias, name="fc1", num_hidden=10, lr_mult=0)
    fc2 = sym.FullyConnected(data=fc1, name="fc2", num_hidden=10, wd_mult=0.5)
    mod = kiln.mod.Module(symbol=fc2, label_names=None)
    mod.bind(data_shapes=[("data", (5, 10))])
    mod.init_params(initializer=kiln.init.Uniform(1.0))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    assert mod._optimizer.lr_mult == {"fc1_bias": 1.0, "fc1_weight": 0.0}
    assert mod._optimizer.wd_mult == {"fc2_bias": 0.5, "fc2_weight": 0.5, "fc1_bias": 0.0}

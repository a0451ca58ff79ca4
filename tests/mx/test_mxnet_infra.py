"""MXNet's non-array surface through the alias: util, test_utils, engine, runtime, name,
AttrScope, kvstore (values as MXNet 1.9.1 gives them on the same calls)."""
import numpy as np
import pytest

import kiln
from mx_alias_fixture import mx  # noqa: F401  (the fixture)
from kiln.base import KilnError


def test_np_switches_and_decorators(mx):
    @mx.util.use_np
    class Net(kiln.gluon.nn.HybridBlock):
        pass

    @mx.use_np_shape
    def f(x):
        return x + 1

    assert issubclass(Net, kiln.gluon.HybridBlock) and f(1) == 2
    # NumPy shape semantics are a switch (MXNet 1.x's legacy mode when off); arrays are
    # always NumPy-style
    previous = mx.set_np_shape(True)
    assert mx.is_np_array() and mx.util.is_np_shape() and mx.set_np_shape(True)
    with mx.util.np_shape(False), mx.np_array():
        assert not mx.util.is_np_shape()
    assert mx.util.is_np_shape()
    mx.set_np_shape(previous)
    with pytest.raises(KilnError, match="NumPy semantics"):
        mx.util.set_np_array(False)
    assert mx.initializer is kiln.init and mx.initializer.Xavier is kiln.init.Xavier


def test_engine_bulk_restores_size(mx):
    before = mx.engine.set_bulk_size(7)
    with mx.engine.bulk(30):
        assert mx.engine.set_bulk_size(30) == 30
    assert mx.engine.set_bulk_size(before) == 7


def test_runtime_features(mx):
    feats = mx.runtime.Features()
    assert not feats.is_enabled("CUDA") and feats.is_enabled("CPU_SSE2")
    from kiln.backend.dnnl import library
    assert feats.is_enabled("MKLDNN") == library.available() == feats.is_enabled("onednn")
    assert "✖ CUDA" in repr(feats)
    assert [f.name for f in mx.runtime.feature_list()][:3] == ["CUDA", "CUDNN", "NCCL"]
    with pytest.raises(RuntimeError, match="unknown"):
        feats.is_enabled("WARP_DRIVE")


def test_name_prefix_and_attr_scope(mx):
    data = mx.sym.var("data")
    with mx.name.Prefix("mynet_"):
        net = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
    assert net.list_arguments() == ["data", "mynet_fc1_weight", "mynet_fc1_bias"]
    with mx.name.NameManager():
        a = mx.sym.FullyConnected(data, num_hidden=2)
        b = mx.sym.FullyConnected(data, num_hidden=2)
    assert (a.name, b.name) == ("fullyconnected0", "fullyconnected1")
    with mx.AttrScope(ctx_group="dev1"):
        with mx.AttrScope(lr_mult="0.5"):
            w = mx.sym.var("w", attr={"mine": "1"})
        fc = mx.sym.FullyConnected(w, num_hidden=3)
    assert w.list_attr() == {"ctx_group": "dev1", "lr_mult": "0.5", "mine": "1"}
    assert fc.attr("ctx_group") == "dev1" and mx.sym.var("v").list_attr() == {}
    with pytest.raises(KilnError, match="strings"):
        mx.AttrScope(ctx_group=1)


def test_test_utils(mx):
    tu = mx.test_utils
    tu.assert_almost_equal(mx.np.ones(3), np.ones(3, "float32") * 1.00001)
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ"):
        tu.assert_almost_equal(np.array([1.0, 2, 3], "float32"), np.array([1.0, 2, 3.1]))
    assert tu.almost_equal(np.ones(2), np.ones(2)) and not tu.almost_equal(1.0, 1.001)
    assert tu.same(mx.nd.ones((2,)), np.ones(2)) and not tu.same(np.ones(2), np.ones(3))
    shape = tu.rand_shape_nd(3, dim=4)
    assert len(shape) == 3 and all(1 <= d <= 4 for d in shape)
    arr = tu.rand_ndarray((2, 3))
    assert arr.shape == (2, 3) and 0 <= float(arr.min()) and float(arr.max()) < 1
    assert tu.default_context() == mx.cpu()
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s = x * y + mx.sym.sin(x)
    loc = {"x": np.random.rand(2, 3), "y": np.random.rand(2, 3)}
    tu.check_numeric_gradient(s, loc)
    tu.check_symbolic_forward(s, loc, [loc["x"] * loc["y"] + np.sin(loc["x"])])
    tu.check_symbolic_backward(s, loc, [np.ones((2, 3))],
                               {"x": loc["y"] + np.cos(loc["x"]), "y": loc["x"]})
    with pytest.raises(AssertionError):   # a wrong gradient must be caught
        tu.check_symbolic_backward(s, loc, [np.ones((2, 3))], {"x": loc["y"]})


def test_kvstore_local_matches_mxnet(mx):
    # expected values: the same calls on MXNet 1.9.1
    kv = mx.kv.create("local")
    assert (kv.type, kv.rank, kv.num_workers) == ("local", 0, 1)
    kv.init(3, mx.nd.ones((2, 3)))
    kv.push(3, [mx.nd.ones((2, 3)) * 2, mx.nd.ones((2, 3)) * 3])
    out = mx.nd.zeros((2, 3))
    kv.pull(3, out=out)
    assert (out.asnumpy() == 5).all()
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.init(4, mx.nd.ones((2, 3)))
    kv.pushpull(4, mx.nd.ones((2, 3)) * 5, out=out)
    np.testing.assert_allclose(out.asnumpy(), 0.5)
    outs = [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
    dev = mx.kvstore.create("device")
    dev.broadcast("k", mx.nd.ones(2) * 7, out=outs)
    assert all((o.asnumpy() == 7).all() for o in outs)

    def updater(key, merged, stored):
        stored[:] += merged * 2
    dev._set_updater(updater)
    dev.push("k", [mx.nd.ones(2), mx.nd.ones(2)])
    dev.pull("k", out=outs[0])
    assert (outs[0].asnumpy() == 11).all()


def test_kvstore_errors_and_states(mx, tmp_path):
    kv = mx.kv.create()
    kv.init("a", mx.nd.ones(2))
    with pytest.raises(KilnError, match="duplicate init"):
        kv.init("a", mx.nd.ones(2))
    with pytest.raises(KilnError, match="mixed key types"):
        kv.init(1, mx.nd.ones(2))
    with pytest.raises(KilnError, match="does not exist"):
        kv.pull("zz", out=mx.nd.ones(2))
    with pytest.raises(KilnError, match="shape"):
        kv.push("a", mx.nd.ones(3))
    with pytest.raises(KilnError, match="dist_async"):
        mx.kv.create("dist_async")
    kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
    kv.push("a", mx.nd.ones(2))
    kv.save_optimizer_states(str(tmp_path / "s"))
    kv2 = mx.kv.create()
    kv2.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
    kv2.load_optimizer_states(str(tmp_path / "s"))
    (m1, v1), (m2, v2) = kv._updater.states["a"], kv2._updater.states["a"]
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(v1, v2)
    (tmp_path / "bad").write_bytes(b"not npz")
    with pytest.raises(KilnError, match="not kiln updater states"):
        kv2.load_optimizer_states(str(tmp_path / "bad"))


def test_trainer_accepts_kvstore_object(mx):
    from mxnet import autograd, gluon
    net = gluon.nn.Dense(2, in_units=4)
    net.initialize()
    x = mx.np.ones((3, 4))
    trainers = []
    for kvstore in (mx.kv.create("device"), mx.kv.create("dist_sync")):
        trainers.append(gluon.Trainer(net.collect_params(), "sgd",
                                      {"learning_rate": 0.1}, kvstore=kvstore))
    w0 = net.weight.data().asnumpy().copy()
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainers[1].step(3)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w0 - 0.1, rtol=1e-6)


def test_more_test_utils(mx, monkeypatch):
    from mxnet import gluon
    tu = mx.test_utils

    def build():
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(3), gluon.nn.Activation("tanh"))
        return net
    x = mx.np.array(np.random.RandomState(0).rand(2, 4).astype("float32"))
    tu.check_gluon_hybridize_consistency(build, [x])
    with pytest.raises(AssertionError):     # a wrong NumPy reference is caught
        tu.check_gluon_hybridize_consistency(build, [x], numpy_func=lambda a: a[:, :3])
    monkeypatch.delenv("KILN_TEST_ENV_X", raising=False)
    with tu.environment("KILN_TEST_ENV_X", "1"):
        assert mx.util.getenv("KILN_TEST_ENV_X") == "1"
    assert mx.util.getenv("KILN_TEST_ENV_X") is None
    a = mx.nd.ones((3,))
    assert tu.same_array(a, a) and not tu.same_array(a, a.copy())
    s = mx.sym.var("x") * 2
    np.testing.assert_allclose(tu.simple_forward(s, x=np.ones(2)), [2.0, 2.0])
    assert list(tu.list_gpus()) == [] and tu.get_tolerance(np.ones(1, "float32"), None,
                                                           tu.default_rtols()) == 1e-4


def test_metric_register_log_and_deprecated_names(mx, tmp_path):
    @mx.metric.register
    @mx.metric.alias("always_one")
    class One(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("one")

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 1
    assert isinstance(mx.metric.create("one"), One)
    assert isinstance(mx.metric.create("always_one"), One)
    assert type(mx.optimizer.create("ccsgd")).__name__ == "ccSGD"
    log = mx.log.get_logger("kiln-test-log", filename=str(tmp_path / "log.txt"),
                            level=mx.log.INFO)
    log.info("hello")
    assert "hello" in (tmp_path / "log.txt").read_text()
    mx.profiler.profiler_set_config(mode="all", filename=str(tmp_path / "p.json"))
    mx.profiler.profiler_set_state("run")
    mx.profiler.profiler_set_state("stop")


def test_current_name_manager_and_attr_scope(mx):
    auto = mx.name.NameManager.current.get(None, "fc")
    assert auto.startswith("fc") and mx.name.NameManager.current.get("mine", "fc") == "mine"
    with mx.name.Prefix("p_"):
        assert mx.name.NameManager.current.get(None, "fc") == "p_fc0"
    assert mx.AttrScope.current.get({"a": "1"}) == {"a": "1"}
    with mx.AttrScope(group="g"):
        assert mx.AttrScope.current.get(None) == {"group": "g"}

    @mx.util.set_module("mxnet.numpy")
    def f(x):
        return x
    assert f.__module__ == "mxnet.numpy"
    g = mx.util.wrap_np_unary_func(lambda x, **kw: x)
    assert g(3, out=None) == 3
    with pytest.raises(KilnError, match="not supported"):
        g(3, casting="unsafe")


def test_short_module_names(mx):
    assert mx.img is kiln.image and mx.rnd.seed is kiln.random.seed
    assert isinstance(mx.nd.ones(2), mx.gluon.tensor_types)
    assert isinstance(mx.sym.var("x"), mx.gluon.tensor_types)

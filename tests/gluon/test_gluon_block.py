"""Block / HybridBlock: registration, structural names, sharing, save/load, hooks, F."""
import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np, init
from kiln.gluon import nn
from kiln._core import trace


class Net(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.features = nn.HybridSequential()
        self.features.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                          nn.MaxPool2D(), nn.Flatten())
        self.hidden = nn.Dense(8, activation="relu")
        self.out = nn.Dense(3)

    def forward(self, x):
        return self.out(self.hidden(self.features(x)))


def _build():
    net = Net()
    net.initialize()
    net(np.ones((2, 1, 6, 6)))
    return net


def test_structural_names_equal_across_builds():
    a, b = _build(), _build()
    keys = list(a.collect_params())
    assert keys == list(b.collect_params())
    assert keys == ["features.0.weight", "features.0.bias", "features.1.gamma",
                    "features.1.beta", "features.1.running_mean", "features.1.running_var",
                    "hidden.weight", "hidden.bias", "out.weight", "out.bias"]
    assert a.name != b.name                      # display names may differ; keys may not


def test_save_load_round_trip_into_a_fresh_uninitialized_net(tmp_path):
    a = _build()
    x = np.random.uniform(size=(2, 1, 6, 6))
    with autograd.record():                      # move BatchNorm's running stats too
        a(x)
    path = str(tmp_path / "net.params")
    a.save_parameters(path)
    raw = onp.load(path, allow_pickle=False)
    assert "features.1.running_var" in raw.files
    b = Net()                                    # never initialized, shapes unknown
    b.load_parameters(path)
    assert b.hidden.weight.shape == (8, 36)
    assert onp.allclose(a(x).asnumpy(), b(x).asnumpy())
    c = _build()
    w = c.out.weight.data()
    c.load_parameters(path)
    assert c.out.weight.data() is w              # loads into the existing arrays
    assert onp.array_equal(w.asnumpy(), a.out.weight.data().asnumpy())


def test_load_is_strict_and_lists_missing_and_unexpected(tmp_path):
    a = _build()
    path = str(tmp_path / "net.params")
    a.save_parameters(path)
    other = nn.Sequential()
    other.add(nn.Dense(3, in_units=16), nn.Dense(2, in_units=3))
    with pytest.raises(kiln.KilnError) as err:
        other.load_parameters(path)
    text = str(err.value)
    assert "'0.weight'" in text and "'1.bias'" in text and "missing" in text
    assert "'hidden.weight'" in text and "not in the network" in text

    # subsets load with the flags
    small = nn.HybridSequential()
    small.add(nn.Dense(8, in_units=36))
    net = Net()
    net.hidden = small[0]
    net.load_parameters(path, ignore_extra=True, allow_missing=True)


def test_load_shape_mismatch_names_parameter_and_shapes(tmp_path):
    a = nn.Dense(4, in_units=3)
    a.initialize()
    path = str(tmp_path / "d.params")
    a.save_parameters(path)
    b = nn.Dense(5, in_units=3)
    b.initialize()
    with pytest.raises(kiln.KilnError, match=r"'weight'.*\(4, 3\).*\(5, 3\)"):
        b.load_parameters(path)


def test_save_refuses_uninitialized_and_files_are_not_pickles(tmp_path):
    net = nn.Dense(4)
    net.initialize()
    with pytest.raises(kiln.KilnError, match="weight"):
        net.save_parameters(str(tmp_path / "x.params"))
    bad = tmp_path / "bad.params"
    with open(bad, "wb") as f:                   # a file holding a pickled object array
        onp.savez(f, weight=onp.array([object()], dtype=object))
    with pytest.raises(kiln.KilnError, match="pickled"):
        nn.Dense(1).load_parameters(str(bad))


def test_shared_parameters_accumulate_gradients():
    shared = nn.Dense(4, in_units=4, use_bias=False)
    net = nn.Sequential()
    net.add(shared, nn.Dense(4, in_units=4, use_bias=False, params=shared.params))
    net.initialize(init.Constant(0.5))
    assert net[0].weight is net[1].weight
    assert list(net.collect_params()) == ["0.weight"]        # listed once
    x = np.ones((1, 4))
    with autograd.record():
        y = net(x).sum()
    y.backward()
    # d/dW sum(W (W x)) has contributions from both uses
    w = onp.full((4, 4), 0.5, onp.float32)
    xn = onp.ones((4,), onp.float32)
    g_second = onp.outer(onp.ones(4), w @ xn)
    g_first = onp.outer(w.T @ onp.ones(4), xn)
    assert onp.allclose(net[0].weight.grad().asnumpy(), g_first + g_second)


def test_share_parameters_method_by_structural_name():
    a, b = _build(), Net()
    b.share_parameters(a.collect_params())
    assert b.features[0].weight is a.features[0].weight
    assert b.out.bias is a.out.bias
    x = np.ones((1, 1, 6, 6))
    assert onp.allclose(a(x).asnumpy(), b(x).asnumpy())


def test_children_registration_order_and_replacement():
    class Blk(nn.Block):
        def __init__(self):
            super().__init__()
            self.b = nn.Dense(2)
            self.a = nn.Dense(3)
            self.scale = self.params.get("scale", shape=(1,), init=init.One())

        def forward(self, x):
            return self.a(self.b(x)) * self.scale.data()

    blk = Blk()
    assert list(blk._children) == ["b", "a"]
    assert list(blk.params) == ["scale"]
    blk.a = nn.Dense(5)
    blk.initialize()
    assert blk(np.ones((1, 4))).shape == (1, 5)
    assert list(blk.collect_params()) == ["scale", "b.weight", "b.bias", "a.weight", "a.bias"]
    blk.a = None
    assert "a" not in blk._children

    class Early(nn.Block):
        def __init__(self):
            self.d = nn.Dense(1)

    with pytest.raises(kiln.KilnError, match="super"):
        Early()


def test_sequential_indexing_slices_len_iter():
    net = nn.HybridSequential()
    net.add(nn.Dense(4), nn.Dense(3), nn.Dense(2))
    assert len(net) == 3 and net[-1] is list(net)[2]
    sub = net[1:]
    assert isinstance(sub, nn.HybridSequential) and len(sub) == 2 and sub[0] is net[1]
    assert list(sub._children) == ["0", "1"]


def test_hybrid_forward_gets_F_and_params():
    seen = []

    class Scale(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.weight = self.params.get("weight", shape=(3,), init=init.Constant(2.0))

        def hybrid_forward(self, F, x, weight):
            seen.append(F)
            return F.np.sum(x * weight, axis=-1) + F.relu(x).sum()

    blk = Scale()
    blk.initialize()
    out = blk(np.ones((2, 3)))
    assert seen[-1] is kiln.ndarray
    assert onp.allclose(out.asnumpy(), [12.0, 12.0])
    # while tracing, F is kiln.symbol and the weight is the trace's stand-in
    tc = trace.TraceContext()
    trace.push(tc)
    try:
        from kiln._core.ir import Node
        x = kiln.ndarray.ndarray._from_node(tc.add(Node("input", (), {}, (2, 3), "float32")))
        y = blk(x)
    finally:
        trace.pop()
    assert seen[-1] is kiln.symbol and y.is_symbolic and y.shape == (2,)
    assert id(blk.weight) in tc.params


def test_deferred_init_inside_a_trace_runs_eagerly():
    net = nn.HybridSequential()
    net.add(nn.Dense(4), nn.BatchNorm())
    net.initialize()
    tc = trace.TraceContext()
    trace.push(tc)
    try:
        from kiln._core.ir import Node
        x = kiln.ndarray.ndarray._from_node(tc.add(Node("input", (), {}, (2, 5), "float32")))
        y = net(x)
    finally:
        trace.pop()
    assert y.shape == (2, 4) and y.is_symbolic
    assert net[0].weight.shape == (4, 5)
    assert not net[0].weight._data.is_symbolic         # concrete data, made eagerly
    assert net[1].gamma.shape == (4,)


def test_hybridize_stores_options_and_recurses():
    net = nn.HybridSequential()
    net.add(nn.Dense(4), nn.Dense(2))
    net.hybridize(static_alloc=True, backend="numpy")
    assert net._hybrid_active and net[0]._hybrid_active
    assert net._hybrid_opts["static_alloc"] is True
    assert net._hybrid_opts["backend"] == "numpy"
    net.hybridize(False)
    assert not net._hybrid_active and not net[1]._hybrid_active


def test_hooks_apply_cast_zero_grad_and_repr(capsys):
    net = nn.Sequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    calls = []
    h1 = net[0].register_forward_pre_hook(lambda blk, args: calls.append(("pre", args[0].shape)))
    h2 = net[0].register_forward_hook(lambda blk, args, out: calls.append(("post", out.shape)))
    net(np.ones((3, 5)))
    assert calls == [("pre", (3, 5)), ("post", (3, 4))]
    h1.detach()
    h2.detach()
    net(np.ones((3, 5)))
    assert len(calls) == 2
    names = []
    net.apply(lambda b: names.append(type(b).__name__))
    assert names == ["Activation", "Dense", "Dense", "Sequential"]
    with autograd.record():
        net(np.ones((3, 5))).sum().backward()
    net.zero_grad()
    assert float(np.abs(net[1].weight.grad()).sum()) == 0
    net.cast("float64")
    assert net[0].weight.data().dtype == onp.float64
    assert repr(net) == ("Sequential(\n  (0): Dense(5 -> 4, Activation(relu))\n"
                         "  (1): Dense(4 -> 2, linear)\n)")
    net.cast("float32")
    net.summary(np.ones((3, 5)))
    assert "Trainable params: 34" in capsys.readouterr().out


def test_dense_wrong_input_size_names_layer_and_shapes():
    d = nn.Dense(3, in_units=4)
    d.initialize()
    with pytest.raises(kiln.KilnError, match=r"dense\d+.*4 features.*\(2, 5\)"):
        d(np.ones((2, 5)))
    c = nn.Conv2D(2, 3, in_channels=3)
    c.initialize()
    with pytest.raises(kiln.KilnError, match=r"3 channels.*\(1, 2, 5, 5\)"):
        c(np.ones((1, 2, 5, 5)))


def test_lambda_and_hybrid_lambda_and_concatenate():
    assert onp.allclose(nn.Lambda("relu")(np.array([-1.0, 2.0])).asnumpy(), [0, 2])
    assert onp.allclose(nn.Lambda(lambda x: x * 2)(np.ones(2)).asnumpy(), 2)
    hl = nn.HybridLambda(lambda F, x: F.npx.relu(x) + 1)
    assert onp.allclose(hl(np.array([-1.0, 2.0])).asnumpy(), [1, 3])
    assert onp.allclose(nn.HybridLambda("tanh")(np.zeros(2)).asnumpy(), 0)
    cat = nn.HybridConcatenate(axis=1)
    cat.add(nn.Dense(2), nn.Identity())
    cat.initialize()
    assert cat(np.ones((3, 4))).shape == (3, 6)
    with pytest.raises(kiln.KilnError, match="no function named"):
        nn.Lambda("not_a_function")


def test_conv_layers_deferred_in_channels():
    net = nn.Sequential()
    net.add(nn.Conv2D(6, kernel_size=5, activation="sigmoid"), nn.AvgPool2D(pool_size=2),
            nn.Conv2D(16, kernel_size=5, activation="sigmoid"), nn.AvgPool2D(pool_size=2),
            nn.Dense(120, activation="sigmoid"), nn.Dense(10))
    assert "(6, 0, 5, 5)" in repr(net.collect_params())
    net.initialize(init=init.Xavier())
    X = np.random.uniform(size=(1, 1, 28, 28))
    shapes = []
    for layer in net:
        X = layer(X)
        shapes.append(X.shape)
    assert shapes == [(1, 6, 24, 24), (1, 6, 12, 12), (1, 16, 8, 8), (1, 16, 4, 4),
                      (1, 120), (1, 10)]
    assert net[2].weight.shape == (16, 6, 5, 5)
    assert "Conv2D(1 -> 6, kernel_size=(5, 5)" in repr(net)


def test_mxnet1_style_constructor_arguments():
    class OldStyle(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.dense = nn.Dense(2, in_units=3)

        def hybrid_forward(self, F, x):
            return self.dense(x)

    a = OldStyle(prefix="model_")
    b = OldStyle(prefix="model_")
    # prefix= and name_scope() give MXNet 1.x's names (gluon/naming.py), the same for both
    assert list(a.collect_params()) == list(b.collect_params()) == ["model_dense0_weight",
                                                                    "model_dense0_bias"]
    d1 = nn.Dense(3, in_units=2)
    d2 = nn.Dense(3, in_units=2, params=d1.params)
    assert d2.weight is d1.weight and d2.bias is d1.bias


def test_hybridized_matches_eager():
    pytest.importorskip("kiln.hybrid.cached")
    import warnings

    class Block2(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.body = nn.HybridSequential()
            self.body.add(nn.Conv2D(3, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                          nn.GlobalAvgPool2D(), nn.Flatten())
            self.scale = self.params.get("scale", shape=(1,), init=init.Constant(2.0))

        def hybrid_forward(self, F, x, scale):
            return F.npx.relu(self.body(x)) * scale

    x = np.random.uniform(size=(2, 2, 5, 5))
    eager, compiled = Block2(), Block2()
    eager.initialize()
    eager(x)
    compiled.share_parameters(eager.collect_params())
    compiled.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(x)
    assert onp.allclose(got.asnumpy(), eager(x).asnumpy(), atol=1e-6)


def test_hooks_run_once_per_call_when_hybridized():
    pytest.importorskip("kiln.hybrid.cached")
    import warnings
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=2))
    net.initialize()
    calls = []
    net.register_forward_hook(lambda blk, args, out: calls.append(out.shape))
    net.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net(np.ones((4, 2)))
        net(np.ones((4, 2)))
    assert calls == [(4, 3), (4, 3)]


def test_misspelled_layer_argument_is_an_error():
    with pytest.raises(TypeError, match="activaton"):
        nn.Dense(10, activaton="relu")

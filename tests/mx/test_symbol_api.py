"""kiln.sym: build, inspect, save/load, evaluate, bind, differentiate and compile user
symbols; they are the same graphs hybridize traces (checked against eager and NumPy)."""
import numpy as np
import pytest

import kiln
from kiln import autograd
from kiln import nd, sym
from kiln import gluon
from kiln.gluon import nn


def _mlp():
    data = sym.var("data")
    h = sym.FullyConnected(data=data, num_hidden=8, name="fc1")
    h = sym.Activation(h, act_type="relu", name="relu1")
    h = sym.BatchNorm(h, name="bn", fix_gamma=False)
    out = sym.FullyConnected(h, num_hidden=3, name="fc2")
    return sym.SoftmaxOutput(out, name="softmax")


def test_inspecting_follows_mxnet_order():
    s = _mlp()
    assert s.list_arguments() == ["data", "fc1_weight", "fc1_bias", "bn_gamma", "bn_beta",
                                  "fc2_weight", "fc2_bias", "softmax_label"]
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert s.list_outputs() == ["softmax_output"]
    args, outs, aux = s.infer_shape(data=(4, 5))
    assert args == [(4, 5), (8, 5), (8,), (8,), (8,), (3, 8), (3,), (4,)]
    assert outs == [(4, 3)] and aux == [(8,), (8,)]
    assert sym.var("x").infer_shape() == (None, None, None)
    arg_types, out_types, aux_types = s.infer_type(data="float32")
    assert set(arg_types) == {np.float32} and out_types == [np.float32]
    internals = s.get_internals()
    assert "fc1_output" in internals.list_outputs()
    assert internals["relu1_output"].list_arguments() == ["data", "fc1_weight", "fc1_bias"]


def test_json_roundtrip_and_arithmetic():
    a, b = sym.var("a"), sym.var("b")
    c = sym.Constant(np.arange(6).reshape(2, 3))      # nested values survive the JSON
    s = sym.Group([(a * b + 1) / (a - 2.5), 2 ** a - b, -a * c, sym.Reshape(a, shape=(0, -1))])
    again = sym.fromjson(s.tojson())
    assert again.tojson() == s.tojson()
    va = np.arange(6, dtype="float32").reshape(2, 3)
    vb = np.full((2, 3), 0.5, "float32")
    got = [o.asnumpy() for o in again.eval(a=va, b=vb)]
    want = [(va * vb + 1) / (va - 2.5), 2 ** va - vb, -va * np.arange(6).reshape(2, 3), va]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_compile_equals_eval_and_uses_the_optimizer():
    x, w = sym.var("x"), sym.var("w")
    s = sym.relu(sym.dot(x, w) * 2 + 1)
    xv = np.random.RandomState(0).randn(3, 4).astype("float32")
    wv = np.random.RandomState(1).randn(4, 5).astype("float32")
    f = sym.compile(s)
    (got,) = f(x=xv, w=wv)
    (want,) = s.eval(x=xv, w=wv)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.asnumpy(), np.maximum(xv @ wv * 2 + 1, 0), rtol=1e-5,
                               atol=1e-5)
    graph = f.graph(x=xv, w=wv)
    assert "matmul" in graph.ops and graph.fusion_groups is not None
    with pytest.raises(kiln.KilnError, match="missing"):
        f(x=xv)


def test_grad_symbols_match_autograd():
    x, w = sym.var("x"), sym.var("w")
    loss = sym.sum(sym.tanh(sym.dot(x, w)))
    gx, gw = loss.grad(wrt=[x, w])
    xv = np.random.RandomState(2).randn(3, 4).astype("float32")
    wv = np.random.RandomState(3).randn(4, 2).astype("float32")
    got = sym.compile([gx, gw])(x=xv, w=wv)
    ax, aw = nd.array(xv), nd.array(wv)
    ax.attach_grad()
    aw.attach_grad()
    with autograd.record():
        y = kiln.np.tanh(kiln.np.dot(ax, aw)).sum()
    y.backward()
    np.testing.assert_allclose(got[0].asnumpy(), ax.grad.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1].asnumpy(), aw.grad.asnumpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.KilnError, match="not an input"):
        loss.grad(wrt=["nope"])
    with pytest.raises(kiln.KilnError, match="gradient symbol"):
        gx.tojson()


def test_bind_forward_backward_grad_req():
    x, w = sym.var("x"), sym.var("w")
    s = sym.FullyConnected(x, w, num_hidden=2, no_bias=True)
    xv, wv = np.ones((2, 3), "float32"), np.full((2, 3), 0.5, "float32")
    gw = nd.zeros((2, 3))
    ex = s.bind(kiln.cpu(), args={"x": nd.array(xv), "w": nd.array(wv)},
                args_grad={"w": gw}, grad_req={"x": "null", "w": "add"})
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(nd.ones((2, 2)))
    np.testing.assert_allclose(gw.asnumpy(), 2 * np.full((2, 3), 2.0))
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), xv @ wv.T)
    with pytest.raises(kiln.KilnError, match="shape"):
        ex.forward(x=np.ones((5, 3), "float32"))


def test_unknown_op_and_bad_input_are_clear():
    with pytest.raises(kiln.KilnError, match="NoSuchOp"):
        sym.load_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}, '
                      '{"op": "NoSuchOp", "name": "y", "inputs": [[0, 0, 0]]}], '
                      '"heads": [[1, 0, 0]]}')
    with pytest.raises(kiln.KilnError, match="no value for variable 'b'"):
        (sym.var("a") + sym.var("b")).eval(a=np.ones(2))
    # Dense on Symbols builds MXNet's graph now (test_sym_block_params.py); a block with
    # parameters of its own and only a forward() has no MXNet op to become

    class OwnForward(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.scale = gluon.Parameter("scale", shape=(3,))

        def forward(self, x):
            return x * self.scale.data()
    block = OwnForward()
    block.initialize()
    with pytest.raises(kiln.KilnError, match="from_block"):
        block(sym.var("data"))


class _Legacy(nn.HybridBlock):
    """MXNet 1.x style: F.FullyConnected with the block's own parameters."""

    def __init__(self):
        super().__init__()
        self.weight = self.params.get("weight", shape=(4, 3))
        self.bias = self.params.get("bias", shape=(4,))

    def hybrid_forward(self, F, x, weight, bias):
        h = F.FullyConnected(x, weight, bias, num_hidden=4)
        return F.softmax(F.Activation(h, act_type="tanh"), axis=-1) + F.sum(x, axis=1,
                                                                              keepdims=True)


def test_hybrid_forward_with_mxnet_ops_eager_equals_hybridized():
    net = _Legacy()
    net.initialize()
    x = nd.random.normal(shape=(2, 3))
    eager = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_symbolblock_over_user_symbol_trains():
    data = sym.var("data")
    out = sym.FullyConnected(sym.relu(sym.FullyConnected(data, num_hidden=6, name="h")),
                             num_hidden=1, name="o")
    net = nn.SymbolBlock(out, data)
    net.initialize(kiln.init.Xavier())
    trainer = kiln.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = nd.random.normal(shape=(16, 3))
    y = x.sum(axis=1, keepdims=True)
    losses = []
    for _ in range(30):
        with autograd.record():
            loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        trainer.step(1)
        losses.append(float(loss.asnumpy()))
    assert losses[-1] < 0.5 * losses[0]


def test_a_hybridized_block_is_a_symbol(tmp_path):
    """from_block gives the traced graph as a Symbol; it evaluates, compiles, saves and
    loads like any symbol, and its variables are the block's structural names."""
    net = nn.HybridSequential()
    net.add(nn.Conv2D(3, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.Flatten(), nn.Dense(2))
    net.initialize()
    x = nd.random.normal(shape=(2, 1, 5, 5))
    want = net(x).asnumpy()
    s = sym.from_block(net, x)
    params = {k: p.data() for k, p in net.collect_params().items()}
    assert set(s.list_arguments()) == {"data"} | set(params)
    (got,) = s.eval(data=x, **params)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    (compiled,) = sym.compile(s)(data=x, **params)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=1e-5, atol=1e-5)
    s.save(str(tmp_path / "block.json"))
    (again,) = sym.load(str(tmp_path / "block.json")).eval(data=x, **params)
    np.testing.assert_allclose(again.asnumpy(), want, rtol=1e-5, atol=1e-6)

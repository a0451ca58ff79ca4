"""Gluon blocks with parameters called on Symbols build MXNet's graph: parameters are
variables named as collect_params() names them, layers are MXNet ops named prefix + 'fwd'.
Every expected list and shape below is real MXNet 1.9.1's answer for the same code."""
import json

import numpy as np

from kiln.gluon import nn
from kiln.mx import nd, sym


def _net():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, activation="relu"), nn.BatchNorm(), nn.Dense(5, activation="tanh"))
    return net


def test_named_layers_give_mxnet_arguments_outputs_and_shapes():
    y = _net()(sym.var("data"))
    assert y.list_arguments() == [
        "data", "net_conv0_weight", "net_conv0_bias", "net_batchnorm0_gamma",
        "net_batchnorm0_beta", "net_dense0_weight", "net_dense0_bias"]
    assert y.list_auxiliary_states() == ["net_batchnorm0_running_mean",
                                         "net_batchnorm0_running_var"]
    assert y.list_outputs() == ["net_dense0_tanh_fwd_output"]
    assert y.infer_shape(data=(2, 3, 10, 10)) == (
        [(2, 3, 10, 10), (8, 3, 3, 3), (8,), (8,), (8,), (5, 512), (5,)], [(2, 5)],
        [(8,), (8,)])
    nodes = json.loads(y.tojson())["nodes"]
    assert [n["op"] for n in nodes if n["op"] != "null"] == [
        "Convolution", "Activation", "BatchNorm", "FullyConnected", "Activation"]


def test_hybrid_forward_block_gets_sym_and_parameter_variables():
    class Own(nn.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.w = self.params.get("w", shape=(4, 6))

        def hybrid_forward(self, F, x, w):
            return F.dot(x, w)

    s = Own(prefix="own_")(sym.var("x"))
    assert s.list_arguments() == ["x", "own_w"]
    assert s.infer_shape(x=(3, 4)) == ([(3, 4), (4, 6)], [(3, 6)], [])


def test_symbol_of_an_initialized_block_computes_what_the_block_does():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize()
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    expected = net(nd.array(x)).asnumpy()
    y = net(sym.var("data"))
    params = {name: p.data() for name, p in net.collect_params().items()}
    assert sorted(y.list_arguments()) == sorted(["data"] + list(params))
    out = y.eval(data=nd.array(x), **params)[0].asnumpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_parameter_grad_buffers_follow_grad_req():
    layer = nn.Dense(3, in_units=2)
    assert layer.weight._grad is None
    layer.initialize()
    assert layer.weight._grad is not None
    layer.collect_params().setattr("grad_req", "null")
    assert layer.weight._grad is None

"""HybridBlock.register_op_hook: a hybridized block's ops are reported under MXNet's names,
with the op's name; Activation blocks are named by their act_type. The expected list is
real MXNet 1.9.1's for the same network (where MXNet gives a C handle, kiln the array)."""
import numpy as np

from kiln.gluon import nn
from kiln.mx import nd


def _net():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(3), nn.Activation("tanh"), nn.Activation("relu"))
    net.initialize()
    return net


def _names(seen):
    return [(n.decode(), o.decode()) for n, o, _ in seen]


def test_monitor_all_names_inputs_and_outputs_as_mxnet():
    net = _net()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda n, o, a: seen.append((n, o, a)), monitor_all=True)
    out = net(nd.ones((2, 5)))
    assert _names(seen) == [
        ("net_dense0_fwd_data", "FullyConnected"), ("net_dense0_fwd_weight", "FullyConnected"),
        ("net_dense0_fwd_bias", "FullyConnected"), ("net_dense0_fwd_output", "FullyConnected"),
        ("net_tanh0_fwd_input0", "Activation"), ("net_tanh0_fwd_output", "Activation"),
        ("net_relu0_fwd_input0", "Activation"), ("net_relu0_fwd_output", "Activation")]
    assert out.shape == (2, 3)
    np.testing.assert_allclose(seen[-1][2].asnumpy(), out.asnumpy())


def test_outputs_only_and_the_same_result_as_without_the_hook():
    net = _net()
    x = nd.array(np.random.default_rng(0).standard_normal((4, 5)))
    expected = net(x).asnumpy()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda n, o, a: seen.append((n, o, a)))
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-6)
    assert [n for n, _ in _names(seen)] == ["net_dense0_fwd_output", "net_tanh0_fwd_output",
                                            "net_relu0_fwd_output"]


def test_a_block_without_mxnet_ops_runs_as_without_the_hook():
    class Plain(nn.HybridBlock):
        def forward(self, x):
            return x * 2

    block = Plain()
    block.hybridize()
    seen = []
    block.register_op_hook(lambda *a: seen.append(a))
    assert (block(nd.ones((2,))).asnumpy() == 2).all()
